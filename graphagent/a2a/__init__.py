"""A2A (Agent2Agent): serve an agent to any A2A client, and call remote A2A agents.

Needs the ``a2a`` extra (``pip install -e '.[a2a]'`` in a clone): the official ``a2a-sdk``.
Both sides are built from the SDK's own server and client classes.

- :func:`a2a_app` turns an agent into an ASGI app speaking A2A (JSON-RPC and HTTP+JSON,
  streaming, the agent card); :func:`serve` runs it (also ``graphagent a2a serve
  module:agent``).
- :class:`A2aRemoteAgent` is a remote A2A agent used as a local one.

Guide: docs/a2a.md.
"""

from __future__ import annotations

try:
    import a2a as _sdk  # noqa: F401
    import starlette as _starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "graphagent.a2a needs the A2A SDK: pip install 'a2a-sdk[http-server]>=1.3,<2' "
        "(the a2a extra)"
    ) from exc

from graphagent.a2a._card import agent_card
from graphagent.a2a._errors import A2aAgentError
from graphagent.a2a._remote import A2aRemoteAgent
from graphagent.a2a._server import a2a_app, serve

__all__ = ["A2aAgentError", "A2aRemoteAgent", "a2a_app", "agent_card", "serve"]
