"""The errors an HTTP caller sees: a status and a message naming the problem."""

from __future__ import annotations

from graphagent.errors import UserError

__all__ = ["ApiError", "not_found"]


class ApiError(UserError):
    """A request the server refuses: answered with ``status`` and ``{"detail": message}``.

    Attributes:
        status: the HTTP status (404 unknown thread, 409 busy thread, 422 bad body...).
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def not_found(what: str, ident: str) -> ApiError:
    """The one answer for a thread, run, assistant or item that is not there (or not
    the caller's: the two look the same, so nothing leaks)."""
    return ApiError(404, f"{what} {ident!r} not found")
