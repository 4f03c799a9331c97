"""The state-graph engine: build with :class:`StateGraph`, run a :class:`CompiledGraph`;
or write a workflow as plain Python with :func:`entrypoint` and :func:`task`."""

from __future__ import annotations

from checkpoint.base import Change
from graphagent.graph._builder import StateGraph
from graphagent.graph._command import (
    Command,
    Interrupt,
    TaskScope,
    current_task,
    get_stream_writer,
    interrupt,
    path_key,
)
from graphagent.graph._compiled import CompiledGraph
from graphagent.graph._constants import END, START, is_private
from graphagent.graph._control import IsLastStep, Overwrite, RemainingSteps, Send
from graphagent.graph._func import Entrypoint, Final, Task, TaskFuture, entrypoint, task
from graphagent.graph._listen import GraphLifecycleListener
from graphagent.graph._policies import CachePolicy, RetryPolicy, default_cache_key, default_retry_on
from graphagent.graph._push import push_message
from graphagent.graph._runtime import Runtime, get_runtime
from graphagent.graph._snapshot import (
    StateHistory,
    StateSnapshot,
    StateTask,
    listed_snapshots,
    message_count,
)
from graphagent.graph._state import OverAllState
from graphagent.graph._strategies import (
    MISSING,
    AppendStrategy,
    KeyStrategy,
    MergeStrategy,
    RemoveValue,
    ReplaceAll,
    ReplaceStrategy,
)
from graphagent.graph.draw._formats import Drawing

__all__ = [
    "END",
    "MISSING",
    "START",
    "AppendStrategy",
    "CachePolicy",
    "Change",
    "Command",
    "CompiledGraph",
    "Drawing",
    "Entrypoint",
    "Final",
    "GraphLifecycleListener",
    "Interrupt",
    "IsLastStep",
    "KeyStrategy",
    "MergeStrategy",
    "OverAllState",
    "Overwrite",
    "RemainingSteps",
    "RemoveValue",
    "ReplaceAll",
    "ReplaceStrategy",
    "RetryPolicy",
    "Runtime",
    "Send",
    "StateGraph",
    "StateHistory",
    "StateSnapshot",
    "StateTask",
    "Task",
    "TaskFuture",
    "TaskScope",
    "current_task",
    "default_cache_key",
    "default_retry_on",
    "entrypoint",
    "get_runtime",
    "get_stream_writer",
    "interrupt",
    "is_private",
    "listed_snapshots",
    "message_count",
    "path_key",
    "push_message",
    "task",
]
