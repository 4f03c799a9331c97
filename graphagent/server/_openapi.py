"""The OpenAPI document (``/openapi.json``) and its page (``/docs``), made from the routes.

The page is plain HTML served by the package: no script from elsewhere, so it works on a
machine with no network.
"""

from __future__ import annotations

import html
import inspect
import re
from importlib import metadata
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route

__all__ = ["docs_page", "openapi", "version"]


def version() -> str:
    """The installed graphagent's version (the package root sits above this layer)."""
    try:
        return metadata.version("graphagent")
    except metadata.PackageNotFoundError:
        return "0"


_TAGS = (("/assistants", "assistants"), ("/threads", "threads"), ("/runs", "runs"))


def _tag(path: str) -> str:
    if "/runs" in path:
        return "runs"
    for prefix, tag in _TAGS:
        if path.startswith(prefix):
            return tag
    return "store" if path.startswith("/store") else "server"


def _summary(route: Route) -> str:
    doc = inspect.getdoc(route.endpoint) or ""
    name = route.endpoint.__name__.replace("_", " ")
    return doc.splitlines()[0] if doc else name[:1].upper() + name[1:]


def openapi(app: Starlette) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the app's API routes."""
    paths: dict[str, dict[str, Any]] = {}
    for route in app.routes:
        if not isinstance(route, Route) or not route.include_in_schema:
            continue
        for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
            params = [
                {"name": p, "in": "path", "required": True, "schema": {"type": "string"}}
                for p in re.findall(r"{(\w+)}", route.path)
            ]
            op: dict[str, Any] = {
                "summary": _summary(route),
                "operationId": f"{route.endpoint.__name__}_{method.lower()}",
                "tags": [_tag(route.path)],
                "parameters": params,
                "responses": {"200": {"description": "OK"}, "404": {"description": "Not found"}},
            }
            if method in ("POST", "PUT", "PATCH"):
                op["requestBody"] = {
                    "content": {"application/json": {"schema": {"type": "object"}}}
                }
            paths.setdefault(route.path, {})[method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "graphagent Agent Protocol server",
            "version": version(),
            "description": "Threads, runs and store, compatible with the langgraph-sdk client.",
        },
        "paths": paths,
    }


def docs_page(app: Starlette) -> str:
    """The API reference as one HTML page."""
    doc = openapi(app)
    rows = []
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            rows.append(
                f"<tr><td class=m>{method.upper()}</td><td><code>{html.escape(path)}</code></td>"
                f"<td>{html.escape(op['tags'][0])}</td><td>{html.escape(op['summary'])}</td></tr>"
            )
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>graphagent API</title>"
        "<style>body{font:14px system-ui;margin:2em}td{padding:2px 10px}"
        ".m{font-weight:bold}</style></head><body>"
        f"<h1>{html.escape(doc['info']['title'])}</h1><p>{html.escape(doc['info']['description'])}"
        " The machine-readable document: <a href='/openapi.json'>/openapi.json</a>.</p>"
        "<table><tr><th>method</th><th>path</th><th>group</th><th>what</th></tr>"
        + "".join(rows)
        + "</table></body></html>"
    )
