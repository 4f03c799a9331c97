"""Agents built as state graphs: ``ReactAgent``, hooks, interceptors, multi-agent patterns."""

from __future__ import annotations

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
    AgentTool,
    LlmRoutingAgent,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
)
from graphagent.agent._react import ReactAgent, pending_tool_calls
from graphagent.agent._record import AgentRecord, answer_tool_calls

__all__ = [
    "AgentHook",
    "AgentRecord",
    "AgentTool",
    "BaseAgent",
    "Hook",
    "HumanInTheLoopHook",
    "LlmRoutingAgent",
    "LoopAgent",
    "MemoryRecallInterceptor",
    "ModelCallLimitHook",
    "ModelFallbackInterceptor",
    "ModelHook",
    "ModelInterceptor",
    "ModelRequest",
    "ModelRetryInterceptor",
    "ParallelAgent",
    "ReactAgent",
    "SequentialAgent",
    "SummarizationHook",
    "ToolCallLimitHook",
    "ToolErrorInterceptor",
    "ToolInterceptor",
    "ToolRequest",
    "ToolRetryInterceptor",
    "after_agent",
    "after_model",
    "answer_tool_calls",
    "approximate_tokens",
    "before_agent",
    "before_model",
    "memory_namespace",
    "memory_tools",
    "pending_tool_calls",
]
