"""Who calls a served tool: the principal the transport authenticated, else its session.

The owner key decides which threads a caller reaches (see ``graphagent._internal.tenancy``). Over
streamable HTTP behind authentication (the SDK's bearer auth, or any Starlette
``AuthenticationMiddleware`` setting ``request.user``) it is the principal, so a user
keeps their threads across sessions. Otherwise it is the MCP session: one stdio
connection, or one HTTP ``mcp-session-id``, each given a random key of its own here.
"""

from __future__ import annotations

import secrets
import weakref
from dataclasses import dataclass
from typing import Any

__all__ = ["Call", "caller_of"]

_SESSIONS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Call:
    """One call of a served tool: the request's ``_meta`` and who made it."""

    meta: dict[str, Any] | None
    caller: str


def _principal(request: Any) -> str | None:
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    token = getattr(user, "access_token", None)  # the SDK's AuthenticatedUser
    if token is not None:
        issuer = (getattr(token, "claims", None) or {}).get("iss", "")
        subject = getattr(token, "subject", None)
        return f"{issuer}|{subject}" if subject else f"client|{token.client_id}"
    name = getattr(user, "display_name", "")
    return f"user|{name}" if name else None


def caller_of(context: Any) -> str:
    """The owner key of the request in ``context`` (the SDK's ``RequestContext``)."""
    principal = _principal(context.request)
    if principal is not None:
        return f"principal:{principal}"
    session = context.session
    key = _SESSIONS.get(session)
    if key is None:
        key = _SESSIONS[session] = secrets.token_hex(16)
    return f"session:{key}"
