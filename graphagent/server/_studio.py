"""The studio page at ``/``: assistants, threads, a conversation, interrupts, a chat box."""

from __future__ import annotations

from importlib import resources

__all__ = ["studio_page"]


def studio_page() -> str:
    """The page's HTML (one file shipped with the package; its script talks to the API)."""
    return resources.files("graphagent.server").joinpath("studio.html").read_text("utf-8")
