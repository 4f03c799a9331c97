"""The error an MCP server's faults become."""

from __future__ import annotations

from graphagent.errors import RunError

__all__ = ["McpServerError"]


class McpServerError(RunError):
    """An MCP server failed: it did not start, exited, timed out or refused a request.

    The message names the server and, for a local server, ends with the last lines it
    wrote to stderr.

    Attributes:
        server: the server's name.
    """

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server
