"""graphagent: agents as state graphs. Small, fast per step, cheap to persist.

The names users need most are re-exported here; each lives in its own module
(``graphagent.graph``, ``graphagent.messages``, ``graphagent.config``, ...).
"""

from __future__ import annotations

import logging as _logging

from graphagent.agent import ReactAgent
from graphagent.config import RunnableConfig
from graphagent.errors import GraphAgentError
from graphagent.graph import (
    END,
    START,
    AppendStrategy,
    CachePolicy,
    Command,
    CompiledGraph,
    MergeStrategy,
    Overwrite,
    ReplaceStrategy,
    RetryPolicy,
    Send,
    StateGraph,
    StateHistory,
    StateSnapshot,
    interrupt,
)
from graphagent.messages import (
    AssistantMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.tools import ToolContext, tool

__all__ = [
    "END",
    "START",
    "AppendStrategy",
    "AssistantMessage",
    "CachePolicy",
    "Command",
    "CompiledGraph",
    "GraphAgentError",
    "MergeStrategy",
    "Overwrite",
    "ReactAgent",
    "RemoveMessage",
    "ReplaceStrategy",
    "RetryPolicy",
    "RunnableConfig",
    "Send",
    "StateGraph",
    "StateHistory",
    "StateSnapshot",
    "SystemMessage",
    "ToolCall",
    "ToolContext",
    "ToolResponseMessage",
    "UserMessage",
    "interrupt",
    "tool",
]

__version__ = "0.1.0"

# a library logs, the application decides where logs go: silent until logging is configured
_logging.getLogger("graphagent").addHandler(_logging.NullHandler())
