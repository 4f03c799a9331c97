"""The HTTP endpoints of assistants, threads and the store (runs: ``_run_routes``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graphagent.server._copy import drawn_over
from graphagent.server._errors import ApiError
from graphagent.server._openapi import version
from graphagent.server._service import Service

__all__ = ["body_of", "json_response", "routes", "service_of", "user_of"]

Handler = Callable[[Request], Awaitable[Response]]


def service_of(request: Request) -> Service:
    """The server the request reached."""
    service: Service = request.app.state.service
    return service


async def user_of(request: Request) -> str:
    """Who sent the request (401/403 if the auth function refuses it)."""
    return await service_of(request).user(request.headers)


async def body_of(request: Request) -> dict[str, Any]:
    """The JSON object the request carries (``{}`` when empty; 422 when not JSON)."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ApiError(422, f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(422, f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def json_response(
    content: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """JSON, compact (``null`` for ``None``)."""
    text = json.dumps(content, separators=(",", ":"), default=str)
    return Response(text, status, headers=headers, media_type="application/json")


# -- assistants ----------------------------------------------------------------------------


async def search_assistants(request: Request) -> Response:
    await user_of(request)
    return json_response(service_of(request).assistants.search(await body_of(request)))


async def count_assistants(request: Request) -> Response:
    await user_of(request)
    body = await body_of(request)
    return json_response(len(service_of(request).assistants.search({**body, "limit": 10**6})))


async def get_assistant(request: Request) -> Response:
    await user_of(request)
    found = service_of(request).assistants.get(request.path_params["assistant_id"])
    return json_response(found.to_wire())


async def get_graph(request: Request) -> Response:
    """The graph as LangGraph's JSON (nodes and edges); ``?format=svg|mermaid|dot`` draws
    it (with ``&thread_id=``, that thread's run over it)."""
    service, user = service_of(request), await user_of(request)
    assistant = service.assistants.get(request.path_params["assistant_id"])
    fmt = request.query_params.get("format")
    if fmt is not None:
        if fmt not in ("svg", "mermaid", "dot", "ascii"):
            raise ApiError(422, f"format {fmt!r}: use svg, mermaid, dot or ascii")
        media = "image/svg+xml" if fmt == "svg" else "text/plain"
        tid = request.query_params.get("thread_id")
        if tid is None:
            return Response(str(assistant.graph.draw(fmt)), media_type=media)
        # the thread's run drawn over the graph: the path taken, where it waits
        thread = await service.threads.load(user, tid)
        return Response(await drawn_over(assistant.graph, fmt, thread), media_type=media)
    digraph = assistant.graph.graph
    nodes = [
        {"id": n, "type": "runnable", "data": {"id": ["graphagent", n], "name": n}}
        for n in digraph.nodes
    ]
    edges = [
        {
            "source": s,
            "target": t,
            "conditional": bool(a.get("conditional")),
            **({"data": a["label"]} if a.get("label") else {}),
        }
        for s, t, a in digraph.edges(data=True)
    ]
    return json_response({"nodes": nodes, "edges": edges})


_FIXED = (
    "this server's assistants are the agents and graphs it serves, one per graph, fixed "
    "when it starts (graphagent serve module:obj ...); configured assistants and their "
    "versions are not served: pass config= or context= to each run instead"
)


async def create_assistant(request: Request) -> Response:
    """``assistants.create``: a served graph's own assistant with ``if_exists="do_nothing"``
    (a client making sure it exists); any other assistant is a 422 saying why."""
    service = service_of(request)
    await user_of(request)
    body = await body_of(request)
    wanted = str(body.get("assistant_id") or body.get("graph_id") or "")
    found = service.assistants.find(wanted)
    same_graph = found is not None and body.get("graph_id") in (None, found.name)
    if found is not None and same_graph and body.get("if_exists") == "do_nothing":
        return json_response(found.to_wire())
    graph = body.get("graph_id")
    raise ApiError(422, f"cannot create an assistant of graph {graph!r}: {_FIXED}")


async def change_assistant(request: Request) -> Response:
    """``assistants.update/delete/set_latest/get_versions``: a 404 for an unknown
    assistant, else a 422 saying why assistants are fixed here."""
    service = service_of(request)
    await user_of(request)
    found = service.assistants.get(request.path_params["assistant_id"])
    raise ApiError(422, f"cannot change assistant {found.name!r}: {_FIXED}")


async def get_schemas(request: Request) -> Response:
    await user_of(request)
    assistant = service_of(request).assistants.get(request.path_params["assistant_id"])
    keys: dict[str, Any] = {k: {} for k in assistant.graph.schema.strategies}
    state = {"title": assistant.name, "type": "object", "properties": keys}
    return json_response(
        {
            "graph_id": assistant.name,
            "input_schema": state,
            "output_schema": state,
            "state_schema": state,
            "config_schema": None,
            "context_schema": None,
        }
    )


async def get_subgraphs(request: Request) -> Response:
    await user_of(request)
    service_of(request).assistants.get(request.path_params["assistant_id"])
    return json_response({})


# -- threads -------------------------------------------------------------------------------


async def create_thread(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    return json_response(await service.threads.create(user, await body_of(request)))


async def search_threads(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    return json_response(await service.threads.search(user, await body_of(request)))


async def count_threads(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    return json_response(await service.threads.count(user, await body_of(request)))


async def get_thread(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    return json_response(await service.threads.get(user, request.path_params["thread_id"]))


async def patch_thread(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    tid = request.path_params["thread_id"]
    return json_response(await service.threads.patch(user, tid, await body_of(request)))


async def copy_thread(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    return json_response(await service.threads.copy(user, request.path_params["thread_id"]))


async def delete_thread(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    doc = await service.threads.load(user, request.path_params["thread_id"])
    for run in await service.docs.children("run", doc["_key"]):
        await service.runs.stop(run, "interrupt")
    await service.threads.delete(doc)
    return Response(status_code=204)


async def get_state(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    tid, cid = request.path_params["thread_id"], request.path_params.get("checkpoint_id")
    return json_response(await service.threads.state(user, tid, cid))


async def post_state_checkpoint(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    body = await body_of(request)
    checkpoint = body.get("checkpoint") or {}
    tid = request.path_params["thread_id"]
    return json_response(await service.threads.state(user, tid, checkpoint.get("checkpoint_id")))


async def update_state(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    tid = request.path_params["thread_id"]
    return json_response(await service.threads.update_state(user, tid, await body_of(request)))


async def history(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    body = await body_of(request) if request.method == "POST" else dict(request.query_params)
    tid = request.path_params["thread_id"]
    return json_response(await service.threads.history(user, tid, body))


# -- store ---------------------------------------------------------------------------------


async def store_items(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    api = service.store_api
    if request.method == "PUT":
        await api.put(user, await body_of(request))
        return Response(status_code=204)
    if request.method == "DELETE":
        await api.delete(user, await body_of(request))
        return Response(status_code=204)
    return json_response(await api.get(user, request.query_params))


async def search_items(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    return json_response(await service.store_api.search(user, await body_of(request)))


async def list_namespaces(request: Request) -> Response:
    service, user = service_of(request), await user_of(request)
    return json_response(await service.store_api.namespaces(user, await body_of(request)))


async def crons(request: Request) -> Response:
    """``crons.*``: a 422 saying runs are not scheduled here."""
    await user_of(request)
    raise ApiError(
        422,
        "crons are not served: this server runs what clients ask when they ask; schedule "
        "runs.create calls from your scheduler (cron, Kubernetes CronJob, Celery beat)",
    )


async def prune_threads(request: Request) -> Response:
    """``threads.prune``: a 422 naming the call that removes threads."""
    await user_of(request)
    raise ApiError(
        422, "threads.prune is not served: delete each thread with threads.delete(thread_id)"
    )


async def ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def info(request: Request) -> Response:
    return JSONResponse({"version": version(), "flags": {"assistants": True, "crons": False}})


def routes() -> list[Route]:
    """The routes of this module."""
    a, t = "/assistants/{assistant_id}", "/threads/{thread_id}"
    return [
        Route("/ok", ok),
        Route("/info", info),
        Route("/assistants", create_assistant, methods=["POST"]),
        Route("/assistants/search", search_assistants, methods=["POST"]),
        Route("/assistants/count", count_assistants, methods=["POST"]),
        Route(a, get_assistant, methods=["GET"]),
        Route(a, change_assistant, methods=["PATCH", "DELETE"]),
        Route(f"{a}/versions", change_assistant, methods=["POST"]),
        Route(f"{a}/latest", change_assistant, methods=["POST"]),
        Route(f"{a}/graph", get_graph),
        Route(f"{a}/schemas", get_schemas),
        Route(f"{a}/subgraphs", get_subgraphs),
        Route(a + "/subgraphs/{namespace}", get_subgraphs),
        Route("/threads", create_thread, methods=["POST"]),
        Route("/threads/search", search_threads, methods=["POST"]),
        Route("/threads/count", count_threads, methods=["POST"]),
        Route("/threads/prune", prune_threads, methods=["POST"], include_in_schema=False),
        Route(t, get_thread, methods=["GET"]),
        Route(t, patch_thread, methods=["PATCH"]),
        Route(t, delete_thread, methods=["DELETE"]),
        Route(f"{t}/copy", copy_thread, methods=["POST"]),
        Route(f"{t}/state", get_state, methods=["GET"]),
        Route(f"{t}/state", update_state, methods=["POST"]),
        Route(f"{t}/state/checkpoint", post_state_checkpoint, methods=["POST"]),
        Route(t + "/state/{checkpoint_id}", get_state, methods=["GET"]),
        Route(f"{t}/history", history, methods=["GET", "POST"]),
        Route("/store/items", store_items, methods=["GET", "PUT", "DELETE"]),
        Route("/store/items/search", search_items, methods=["POST"]),
        Route("/store/namespaces", list_namespaces, methods=["POST"]),
        # refusals that name the reason: not part of the served API's document
        Route("/runs/crons", crons, methods=["POST"], include_in_schema=False),
        Route(
            "/runs/crons/{rest:path}",
            crons,
            methods=["GET", "POST", "PATCH", "DELETE"],
            include_in_schema=False,
        ),
        Route(t + "/runs/crons", crons, methods=["POST"], include_in_schema=False),
    ]
