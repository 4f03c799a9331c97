"""The HTTP endpoints of runs: background, wait, stream (SSE), join, cancel."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from checkpoint import CheckpointStorageError
from graphagent.server._errors import ApiError
from graphagent.server._modes import thread_modes
from graphagent.server._routes import body_of, json_response, service_of, user_of
from graphagent.server._thread_stream import follow_thread

__all__ = ["run_routes"]

log = logging.getLogger("graphagent.server")


def _where(run: dict[str, Any], stateless: bool) -> str:
    if stateless:
        return f"/runs/{run['run_id']}"
    return f"/threads/{run['thread_id']}/runs/{run['run_id']}"


async def _created(request: Request) -> tuple[dict[str, Any], bool]:
    """Create the run the request asks for (on its thread, or stateless)."""
    service, user = service_of(request), await user_of(request)
    thread_id = request.path_params.get("thread_id")
    run = await service.runs.create(user, thread_id, await body_of(request))
    return run, thread_id is None


async def create_run(request: Request) -> Response:
    run, stateless = await _created(request)
    await service_of(request).runs.submit(run)
    public = {k: v for k, v in run.items() if not k.startswith("_")}
    return json_response(public, headers={"Content-Location": _where(run, stateless)})


async def wait_run(request: Request) -> Response:
    service = service_of(request)
    run, stateless = await _created(request)
    outcome = asyncio.ensure_future(service.runs.outcome(run, "-1"))
    await asyncio.sleep(0)  # the reader is listening before the run can start
    await service.runs.submit(run)
    try:
        result = await outcome
    except asyncio.CancelledError:
        if (await body_of(request)).get("on_disconnect") == "cancel":
            await service.runs.stop(run, "interrupt")
        raise
    where = _where(run, stateless)
    return json_response(result, headers={"Content-Location": where})


def _sse(events: AsyncIterator[tuple[str, str, Any]]) -> AsyncIterator[ServerSentEvent]:
    async def body() -> AsyncIterator[ServerSentEvent]:
        try:
            async for ident, event, data in events:
                text = json.dumps(data, separators=(",", ":"), default=str)
                yield ServerSentEvent(text, event=event, id=ident)
        except CheckpointStorageError as exc:
            # the cluster's store stayed down past its outage limit: the client is told
            # why its stream ends (it may reconnect with Last-Event-ID later), not cut off
            log.error("a stream ended: %s", exc)
            error = {"error": type(exc).__name__, "message": str(exc)}
            yield ServerSentEvent(json.dumps(error, separators=(",", ":")), event="error")

    return body()


def _stream(
    request: Request, run: dict[str, Any], after: str | None, cancel: bool, where: str
) -> Response:
    service = service_of(request)

    async def events() -> AsyncIterator[tuple[str, str, Any]]:
        finished = False
        try:
            async for event in service.runs.sse(run, after):
                yield event
            finished = True
        finally:
            if not finished and cancel:
                # the client went away from a run it asked to end with its connection
                with contextlib.suppress(Exception):
                    fresh = await service.docs.get("run", run["run_id"])
                    if fresh is not None:
                        await asyncio.shield(service.runs.stop(fresh, "interrupt"))

    headers = {"Location": f"{where}/stream", "Content-Location": where}
    return EventSourceResponse(_sse(events()), headers=headers, ping=10)


async def stream_run(request: Request) -> Response:
    service = service_of(request)
    body = await body_of(request)
    run, stateless = await _created(request)
    response = _stream(
        request, run, "-1", body.get("on_disconnect") == "cancel", _where(run, stateless)
    )
    await service.runs.submit(run)
    return response


async def get_run(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    p = request.path_params
    run = await service.runs.load(user, p.get("thread_id"), p["run_id"])
    return json_response({k: v for k, v in run.items() if not k.startswith("_")})


async def list_runs(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    tid = request.path_params["thread_id"]
    return json_response(await service.runs.list(user, tid, request.query_params))


async def delete_run(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    p = request.path_params
    await service.runs.delete(user, p["thread_id"], p["run_id"])
    return Response(status_code=204)


async def join_run(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    p = request.path_params
    run = await service.runs.load(user, p.get("thread_id"), p["run_id"])
    return json_response(await service.runs.outcome(run, "-1"))


async def join_stream(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    p = request.path_params
    run = await service.runs.load(user, p.get("thread_id"), p["run_id"])
    after = request.headers.get("last-event-id") or None
    cancel = request.query_params.get("cancel_on_disconnect", "false").lower() == "true"
    return _stream(request, run, after, cancel, _where(run, "thread_id" not in p))


async def thread_stream(request: Request) -> Response:
    """``threads.join_stream``: the thread's runs' events as they happen (``stream_mode``
    ``run_modes`` or ``lifecycle``; ``Last-Event-ID`` resumes)."""
    service, user = service_of(request), await user_of(request)
    tid = request.path_params["thread_id"]
    thread = await service.threads.load(user, tid)
    query = request.query_params
    modes = thread_modes([*query.getlist("stream_mode"), *query.getlist("stream_modes")])
    after = request.headers.get("last-event-id") or None
    events = follow_thread(service.runs, thread, after, modes)
    headers = {"Location": f"/threads/{tid}/stream"}
    return EventSourceResponse(_sse(events), headers=headers, ping=10)


async def cancel_run(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    p = request.path_params
    run = await service.runs.load(user, p.get("thread_id"), p["run_id"])
    action = request.query_params.get("action", "interrupt")
    await service.runs.stop(run, action)
    if request.query_params.get("wait") in ("1", "true", "True"):
        return json_response(await service.runs.outcome(run, "-1"))
    return Response(status_code=202)


async def cancel_many(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    body = await body_of(request)
    action = request.query_params.get("action", "interrupt")
    wanted = body.get("status", "all")
    if body.get("thread_id"):
        thread = await service.threads.load(user, body["thread_id"])
        runs = await service.docs.children("run", thread["_key"])
    elif body.get("run_ids"):
        runs = [await service.runs.load(user, None, r) for r in body["run_ids"]]
    else:
        raise ApiError(422, "name a thread_id or run_ids to cancel")
    for run in runs:
        if wanted == "all" or run["status"] == wanted:
            await service.runs.stop(run, action)
    return Response(status_code=204)


async def create_batch(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    raw = json.loads(await request.body() or b"[]")
    if not isinstance(raw, list):
        raise ApiError(422, "runs/batch takes a JSON list of runs")
    out = []
    for body in raw:
        run = await service.runs.create(user, None, body)
        await service.runs.submit(run)
        out.append({k: v for k, v in run.items() if not k.startswith("_")})
    return json_response(out)


def run_routes() -> list[Route]:
    """The routes of this module."""
    t, r = "/threads/{thread_id}/runs", "/threads/{thread_id}/runs/{run_id}"
    return [
        Route(t, create_run, methods=["POST"]),
        Route(t, list_runs, methods=["GET"]),
        Route(f"{t}/wait", wait_run, methods=["POST"]),
        Route(f"{t}/stream", stream_run, methods=["POST"]),
        Route(r, get_run, methods=["GET"]),
        Route(r, delete_run, methods=["DELETE"]),
        Route(f"{r}/join", join_run, methods=["GET"]),
        Route(f"{r}/stream", join_stream, methods=["GET"]),
        Route(f"{r}/cancel", cancel_run, methods=["POST"]),
        Route("/threads/{thread_id}/stream", thread_stream, methods=["GET"]),
        Route("/runs", create_run, methods=["POST"]),
        Route("/runs/wait", wait_run, methods=["POST"]),
        Route("/runs/stream", stream_run, methods=["POST"]),
        Route("/runs/batch", create_batch, methods=["POST"]),
        Route("/runs/cancel", cancel_many, methods=["POST"]),
        Route("/runs/{run_id}", get_run, methods=["GET"]),
        Route("/runs/{run_id}/stream", join_stream, methods=["GET"]),
        Route("/runs/{run_id}/join", join_run, methods=["GET"]),
    ]
