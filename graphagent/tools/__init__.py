"""Tools: plain Python functions and methods a model can call.

Define with ``@tool`` (schema from the signature and docstring), provide and resolve
them, and execute a model's tool calls with :class:`ToolCallingManager`. A parameter
annotated :class:`ToolContext` gives a tool the run's state, config and metadata,
and is never shown to the model.
"""

from __future__ import annotations

from graphagent._internal.results import ResultConverter, ToolOutput, default_result_converter
from graphagent.tools._cancel import CancellationToken
from graphagent.tools._context import ToolContext
from graphagent.tools._definition import (
    ToolCallback,
    ToolDefinition,
    ToolMetadata,
    ToolParam,
    acall_tool,
    call_tool,
)
from graphagent.tools._function import FunctionToolCallback, method_tools, tool
from graphagent.tools._manager import (
    DefaultToolExecutionExceptionProcessor,
    ToolCallingManager,
    ToolExecutionExceptionProcessor,
    ToolExecutionResult,
)
from graphagent.tools._resolve import (
    DelegatingToolCallbackResolver,
    StaticToolCallbackProvider,
    StaticToolCallbackResolver,
    ToolCallbackProvider,
    ToolCallbackResolver,
    collect_tools,
)

__all__ = [
    "CancellationToken",
    "DefaultToolExecutionExceptionProcessor",
    "DelegatingToolCallbackResolver",
    "FunctionToolCallback",
    "ResultConverter",
    "StaticToolCallbackProvider",
    "StaticToolCallbackResolver",
    "ToolCallback",
    "ToolCallbackProvider",
    "ToolCallbackResolver",
    "ToolCallingManager",
    "ToolContext",
    "ToolDefinition",
    "ToolExecutionExceptionProcessor",
    "ToolExecutionResult",
    "ToolMetadata",
    "ToolOutput",
    "ToolParam",
    "acall_tool",
    "call_tool",
    "collect_tools",
    "default_result_converter",
    "method_tools",
    "tool",
]
