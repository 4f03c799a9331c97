"""``McpToolCallback``: one tool of an MCP server, callable like any graphagent tool."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

from mcp import types

from graphagent.errors import ToolArgumentsError
from graphagent.mcp._names import is_safe
from graphagent.tools import ToolContext, ToolDefinition, ToolMetadata, ToolOutput

__all__ = ["McpToolCallback", "MetaMapper"]

MetaMapper = Callable[[ToolContext], Mapping[str, Any] | None]
"""Builds a call's ``_meta`` from its ToolContext: the only way context reaches a server."""


class _Owner(Protocol):
    """What a tool needs from its provider."""

    meta: MetaMapper | None

    @property
    def label(self) -> str: ...

    def _call(
        self, tool: McpToolCallback, arguments: dict[str, Any], meta: dict[str, Any] | None
    ) -> Coroutine[Any, Any, ToolOutput]: ...

    def _run_sync(self, coro: Coroutine[Any, Any, ToolOutput]) -> ToolOutput: ...

    async def _run_async(self, coro: Coroutine[Any, Any, ToolOutput]) -> ToolOutput: ...


class McpToolCallback:
    """One tool of an MCP server, callable like any graphagent tool.

    Spring AI's ``SyncMcpToolCallback`` / ``AsyncMcpToolCallback`` in one: ``call``
    and ``acall`` both work. The server's input schema is given to the model unchanged.

    Attributes:
        tool: the server's description of the tool.
    """

    def __init__(self, provider: _Owner, tool: types.Tool, name: str) -> None:
        self._provider = provider
        self.tool = tool
        description = tool.description or tool.title or tool.name
        if not is_safe(tool.name):
            # the model sees a made-up name: the description says which tool it is
            description = f"{description} (MCP tool {tool.name!r})"
        self._definition = ToolDefinition(name, description, dict(tool.inputSchema))

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to models."""
        return self._definition

    @property
    def metadata(self) -> ToolMetadata:
        """How the result is used (never ``return_direct``)."""
        return ToolMetadata()

    def _arguments(self, tool_input: str) -> dict[str, Any]:
        try:
            value = json.loads(tool_input) if tool_input.strip() else {}
        except ValueError as exc:
            raise ToolArgumentsError(
                f"arguments for {self._definition.name!r} are not valid JSON: {exc}."
            ) from exc
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                f"arguments for {self._definition.name!r} must be a JSON object, "
                f"got {type(value).__name__}."
            )
        return value

    def _request(
        self, tool_input: str, context: ToolContext | None
    ) -> Coroutine[Any, Any, ToolOutput]:
        arguments = self._arguments(tool_input)
        mapper = self._provider.meta
        meta = dict(mapper(context) or {}) if mapper is not None and context is not None else None
        return self._provider._call(self, arguments, meta)

    def call(self, tool_input: str, context: ToolContext | None = None) -> ToolOutput:
        """Call the server's tool with the model's JSON arguments; the result as text
        (and, when the server sent images, the text followed by ``ImagePart`` items).

        Raises:
            ToolExecutionError: the server flagged the result as an error.
            McpServerError: the server exited, timed out or refused the call.
        """
        return self._provider._run_sync(self._request(tool_input, context))

    async def acall(self, tool_input: str, context: ToolContext | None = None) -> ToolOutput:
        """Async :meth:`call`."""
        return await self._provider._run_async(self._request(tool_input, context))

    def __repr__(self) -> str:
        return f"<McpToolCallback {self._definition.name!r} of {self._provider.label!r}>"
