"""The ASGI application: routes, errors as JSON, the OpenAPI document and the studio page."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from graphagent.server._errors import ApiError
from graphagent.server._openapi import docs_page, openapi
from graphagent.server._routes import routes
from graphagent.server._run_routes import run_routes
from graphagent.server._service import Service
from graphagent.server._studio import studio_page

__all__ = ["build_app"]

log = logging.getLogger("graphagent.server")


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse({"detail": exc.message}, status_code=exc.status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)


async def _crash(request: Request, exc: Exception) -> Response:
    # a bug or a storage fault: the caller gets its name, the log the traceback
    log.exception("%s %s failed", request.method, request.url.path)
    return JSONResponse({"detail": f"{type(exc).__name__}: {exc}"}, status_code=500)


def build_app(service: Service) -> Starlette:
    """The Starlette app serving ``service`` (started and closed with the app)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.close()

    async def openapi_json(request: Request) -> Response:
        return JSONResponse(openapi(app))

    async def docs(request: Request) -> Response:
        return HTMLResponse(docs_page(app))

    async def studio(request: Request) -> Response:
        return HTMLResponse(studio_page())

    extra = [
        Route("/", studio, include_in_schema=False),
        Route("/openapi.json", openapi_json, include_in_schema=False),
        Route("/docs", docs, include_in_schema=False),
    ]
    app = Starlette(
        routes=[*routes(), *run_routes(), *extra],
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _crash},
        lifespan=lifespan,
    )
    app.state.service = service
    return app
