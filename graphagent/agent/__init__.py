"""Agents built as state graphs: ``ReactAgent``, hooks, interceptors, multi-agent patterns."""

from __future__ import annotations

from graphagent.agent._agent_tool import AgentTool
from graphagent.agent._base import BaseAgent
from graphagent.agent._builtins import (
    ModelCallLimitHook,
    ModelFallbackInterceptor,
    ModelRetryInterceptor,
    SummarizationHook,
    ToolCallLimitHook,
    ToolErrorInterceptor,
    ToolRetryInterceptor,
    approximate_tokens,
)
from graphagent.agent._editing import ContextEditingInterceptor, ToolSelectionInterceptor
from graphagent.agent._emulator import ToolEmulatorInterceptor
from graphagent.agent._hitl import HumanInTheLoopHook
from graphagent.agent._hooks import (
    AgentHook,
    Hook,
    ModelHook,
    after_agent,
    after_model,
    before_agent,
    before_model,
)
from graphagent.agent._interceptors import (
    ModelInterceptor,
    ModelRequest,
    ToolInterceptor,
    ToolRequest,
)
from graphagent.agent._memory import MemoryRecallInterceptor, memory_namespace, memory_tools
from graphagent.agent._multi import (
    ConcatenationMergeStrategy,
    DefaultMergeStrategy,
    ListMergeStrategy,
    LlmRoutingAgent,
    LoopAgent,
    MergeStrategy,
    ParallelAgent,
    SequentialAgent,
    json_array,
)
from graphagent.agent._pii import PII_DETECTORS, PIIDetectionHook, PIIMatch, regex_detector
from graphagent.agent._react import ReactAgent, pending_tool_calls
from graphagent.agent._record import AgentRecord, answer_tool_calls
from graphagent.agent._structured import schema_problem
from graphagent.agent._todo import TODOS_KEY, Todo, TodoListInterceptor, write_todos_tool

__all__ = [
    "PII_DETECTORS",
    "TODOS_KEY",
    "AgentHook",
    "AgentRecord",
    "AgentTool",
    "BaseAgent",
    "ConcatenationMergeStrategy",
    "ContextEditingInterceptor",
    "DefaultMergeStrategy",
    "Hook",
    "HumanInTheLoopHook",
    "ListMergeStrategy",
    "LlmRoutingAgent",
    "LoopAgent",
    "MemoryRecallInterceptor",
    "MergeStrategy",
    "ModelCallLimitHook",
    "ModelFallbackInterceptor",
    "ModelHook",
    "ModelInterceptor",
    "ModelRequest",
    "ModelRetryInterceptor",
    "PIIDetectionHook",
    "PIIMatch",
    "ParallelAgent",
    "ReactAgent",
    "SequentialAgent",
    "SummarizationHook",
    "Todo",
    "TodoListInterceptor",
    "ToolCallLimitHook",
    "ToolEmulatorInterceptor",
    "ToolErrorInterceptor",
    "ToolInterceptor",
    "ToolRequest",
    "ToolRetryInterceptor",
    "ToolSelectionInterceptor",
    "after_agent",
    "after_model",
    "answer_tool_calls",
    "approximate_tokens",
    "before_agent",
    "before_model",
    "json_array",
    "memory_namespace",
    "memory_tools",
    "pending_tool_calls",
    "regex_detector",
    "schema_problem",
    "write_todos_tool",
]
