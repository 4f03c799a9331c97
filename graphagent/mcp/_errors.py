"""The error an MCP server's faults become."""

from __future__ import annotations

from graphagent.errors import RunError

__all__ = ["McpServerError"]


class McpServerError(RunError):
    """An MCP server failed: it did not start, exited, timed out, refused a request or
    answered with something that is not valid MCP.

    The message names the server and, for a local server, ends with the last lines it
    wrote to stderr.

    Attributes:
        server: the server's name.
        tool: the server's name of the tool being called, if the fault was in a call.
    """

    def __init__(self, message: str, *, server: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool
