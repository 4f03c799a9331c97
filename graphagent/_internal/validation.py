"""pydantic's validation errors as text a model or a person can act on."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["readable"]


def readable(exc: ValidationError, whole: str = "arguments") -> str:
    """pydantic's errors as one line per problem, without echoing the input.

    ``whole`` names the value itself when an error is not about one field.
    """
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(x) for x in err["loc"]) or whole
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
