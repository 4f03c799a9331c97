"""The run's context object and ``Runtime``, ported from LangGraph's
libs/langgraph/tests/test_runtime.py (the context and runtime tests; run control,
drains, execution and server info are LangGraph server features graphagent does not have).

graphagent's ``Runtime`` carries ``context``, ``store``, ``stream_writer`` and the run's
``config`` (so ``runtime.metadata`` and ``runtime.thread_id``); tools reach it as
``ToolContext.runtime``.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from pydantic import BaseModel, ValidationError

from checkpoint.base import CheckpointSaver
from graphagent.errors import UserError
from graphagent.graph import END, START, Runtime, StateGraph, get_runtime, interrupt
from graphagent.graph import Command as GraphCommand
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.tools import ToolContext, tool


@dataclass
class Context:
    api_key: str


class State(TypedDict):
    message: str


def _one(node: Any, context_schema: Any = Context, **compile_kw: Any) -> Any:
    g = StateGraph(State, context_schema=context_schema).add_node("node", node)
    return g.add_edge(START, "node").add_edge("node", END).compile(**compile_kw)


# origin: langgraph tests/test_runtime.py::test_injected_runtime
def test_injected_runtime() -> None:
    """A node's ``runtime: Runtime[Ctx]`` parameter carries the run's context object."""

    def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"message": f"api key: {runtime.context.api_key}"}

    result = _one(node).invoke({"message": "hello"}, context=Context(api_key="sk_123456"))
    assert result == {"message": "api key: sk_123456"}


# origin: langgraph tests/test_runtime.py::test_context_runtime
def test_get_runtime_inside_a_node() -> None:
    """``get_runtime()`` reaches the same runtime from a node that declares nothing."""

    def node(state: State) -> dict[str, Any]:
        return {"message": f"api key: {get_runtime(Context).context.api_key}"}

    assert _one(node).invoke({"message": "x"}, context=Context("sk_1")) == {
        "message": "api key: sk_1"
    }


def test_get_runtime_outside_a_run_is_refused() -> None:
    """Outside a running graph there is no runtime: a clear error, not ``None``."""
    with pytest.raises(UserError, match="inside a node"):
        get_runtime()


# origin: langgraph tests/test_runtime.py::test_override_runtime
def test_override_runtime() -> None:
    """``override`` returns a copy with the given fields replaced."""
    prev = Runtime(context=Context(api_key="abc"))
    new = prev.override(context=Context(api_key="def"))
    assert new.context.api_key == "def" and prev.context.api_key == "abc"


# origin: langgraph tests/test_runtime.py::test_merge_runtime
def test_merge_runtime() -> None:
    """``merge`` takes the other runtime's set fields; a ``None`` context keeps ours."""
    one, two, empty = Runtime(context=Context("abc")), Runtime(context=Context("def")), Runtime()
    assert one.merge(two).context.api_key == "def"
    assert one.merge(empty).context.api_key == "abc"


# origin: langgraph tests/test_runtime.py::test_runtime_propogated_to_subgraph
def test_runtime_reaches_a_subgraph() -> None:
    """A subgraph node's nodes see the parent run's context."""

    class S(TypedDict, total=False):
        subgraph: str
        main: str

    def sub_node(state: S, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"subgraph": f"{runtime.context.api_key}!"}

    sub = StateGraph(S, context_schema=Context).add_node("sub_node", sub_node)
    subgraph = sub.add_edge(START, "sub_node").add_edge("sub_node", END).compile()

    def main_node(state: S, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"main": f"{runtime.context.api_key}!"}

    g = StateGraph(S, context_schema=Context).add_node("main_node", main_node)
    g.add_node("node_1", subgraph).add_edge(START, "main_node").add_edge("main_node", "node_1")
    app = g.add_edge("node_1", END).compile()
    assert app.invoke({}, context=Context("Alice")) == {"subgraph": "Alice!", "main": "Alice!"}


# origin: langgraph tests/test_runtime.py::test_context_coercion_dataclass
def test_dict_context_becomes_the_dataclass() -> None:
    """A dict context is built into the dataclass ``context_schema`` (defaults apply)."""

    @dataclass
    class Ctx:
        api_key: str
        timeout: int = 30

    def node(state: State, runtime: Runtime[Ctx]) -> dict[str, Any]:
        return {"message": f"{runtime.context.api_key}/{runtime.context.timeout}"}

    app = _one(node, Ctx)
    assert app.invoke({"message": ""}, context={"api_key": "a", "timeout": 60}) == {
        "message": "a/60"
    }
    assert app.invoke({"message": ""}, context={"api_key": "b"}) == {"message": "b/30"}
    assert app.invoke({"message": ""}, context=Ctx("c", 90)) == {"message": "c/90"}


# origin: langgraph tests/test_runtime.py::test_context_coercion_pydantic
def test_dict_context_becomes_the_pydantic_model() -> None:
    """A dict context is validated into the pydantic ``context_schema``."""

    class Ctx(BaseModel):
        api_key: str
        timeout: int = 30

    def node(state: State, runtime: Runtime[Ctx]) -> dict[str, Any]:
        return {"message": f"{runtime.context.api_key}/{runtime.context.timeout}"}

    app = _one(node, Ctx)
    assert app.invoke({"message": ""}, context={"api_key": "a", "timeout": "7"}) == {
        "message": "a/7"
    }


# origin: langgraph tests/test_runtime.py::test_context_coercion_typeddict
def test_typeddict_context_stays_a_dict() -> None:
    """A TypedDict ``context_schema`` keeps the dict as it is."""

    class Ctx(TypedDict):
        api_key: str

    def node(state: State, runtime: Runtime[Ctx]) -> dict[str, Any]:
        return {"message": runtime.context["api_key"]}

    assert _one(node, Ctx).invoke({"message": ""}, context={"api_key": "k"}) == {"message": "k"}


# origin: langgraph tests/test_runtime.py::test_context_coercion_none
def test_no_context_is_none() -> None:
    """Without ``context=`` (or with ``None``) ``runtime.context`` is ``None``."""

    def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"message": f"none: {runtime.context is None}"}

    app = _one(node)
    assert app.invoke({"message": ""}, context=None) == {"message": "none: True"}
    assert app.invoke({"message": ""}) == {"message": "none: True"}


# origin: langgraph tests/test_runtime.py::test_context_coercion_errors
def test_context_that_does_not_fit_is_refused_before_the_run() -> None:
    """A dict missing a field or naming an unknown one is refused, naming the schema."""
    ran: list[str] = []
    app = _one(lambda s: ran.append("node") or {"message": "no"})
    with pytest.raises(TypeError, match="context_schema Context"):
        app.invoke({"message": ""}, context={"timeout": 60})
    with pytest.raises(TypeError, match="invalid_field"):
        app.invoke({"message": ""}, context={"api_key": "k", "invalid_field": 1})
    assert ran == []


# origin: langgraph tests/test_runtime.py::test_context_coercion_pydantic_validation_errors
def test_pydantic_context_validation_errors_surface() -> None:
    """A value the pydantic context refuses raises its ``ValidationError``."""

    class Ctx(BaseModel):
        api_key: str
        timeout: int

    app = _one(lambda s: {"message": "no"}, Ctx)
    with pytest.raises(ValidationError):
        app.invoke({"message": ""}, context={"api_key": "k", "timeout": "not_an_int"})


# origin: langgraph tests/test_runtime.py::test_context_coercion_async
def test_context_in_async_nodes() -> None:
    """``ainvoke(context=...)`` reaches async nodes too."""

    async def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"message": f"async {runtime.context.api_key}"}

    app = _one(node)
    out = asyncio.run(app.ainvoke({"message": ""}, context={"api_key": "a"}))
    assert out == {"message": "async a"}


# origin: langgraph tests/test_runtime.py::test_context_coercion_stream
def test_context_in_stream_and_astream() -> None:
    """``stream(context=...)`` and ``astream(context=...)`` coerce and pass it the same."""

    def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"message": f"stream {runtime.context.api_key}"}

    app = _one(node)
    assert list(app.stream({"message": ""}, context={"api_key": "s"})) == [
        {"node": {"message": "stream s"}}
    ]

    async def collect() -> list[Any]:
        return [c async for c in app.astream({"message": ""}, context={"api_key": "t"})]

    assert asyncio.run(collect()) == [{"node": {"message": "stream t"}}]


def test_runtime_carries_store_writer_and_metadata() -> None:
    """The runtime has the run's store, its custom-stream writer and config metadata."""
    store = object()

    def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        runtime.stream_writer({"progress": 1})
        assert runtime.store is store
        return {"message": f"{runtime.metadata['user']}@{runtime.thread_id}"}

    app = _one(node, store=store)
    events = list(
        app.stream({"message": ""}, {"metadata": {"user": "ada"}}, mode=["custom", "updates"])
    )
    assert events == [("custom", {"progress": 1}), ("updates", {"node": {"message": "ada@None"}})]


def test_runtime_parameter_beside_config_and_store() -> None:
    """``(state, config, *, store, runtime)`` get each its own value."""

    def node(state: State, config: Any, *, store: Any, runtime: Runtime[Context]) -> Any:
        return {"message": f"{config.thread_id}/{store}/{runtime.context.api_key}"}

    app = _one(node, store="S")
    assert app.invoke({"message": ""}, thread_id="t", context=Context("k")) == {"message": "t/S/k"}


def test_context_is_per_run_and_never_stored(saver: CheckpointSaver) -> None:
    """Two runs on one thread see each its own context; nothing of it is checkpointed."""

    def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"message": runtime.context.api_key}

    app = _one(node, saver=saver)
    thread = uuid.uuid4().hex
    assert app.invoke({"message": ""}, thread_id=thread, context=Context("one"))["message"] == "one"
    assert app.invoke({"message": ""}, thread_id=thread, context=Context("two"))["message"] == "two"
    for snapshot in app.get_state_history(thread_id=thread):
        assert "one" not in repr(snapshot.metadata) and "two" not in repr(snapshot.metadata)


def test_context_survives_an_interrupt_when_given_again(saver: CheckpointSaver) -> None:
    """A resumed run sees the context its resume call passes (context is per call)."""

    def node(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        answer = interrupt("ok?")
        return {"message": f"{answer}:{runtime.context.api_key}"}

    app = _one(node, saver=saver)
    thread = uuid.uuid4().hex
    app.invoke({"message": ""}, thread_id=thread, context=Context("first"))
    out = app.invoke(GraphCommand(resume="yes"), thread_id=thread, context={"api_key": "again"})
    assert out["message"] == "yes:again"

    async def arun() -> dict[str, Any]:
        other = uuid.uuid4().hex
        await app.ainvoke({"message": ""}, thread_id=other, context=Context("a1"))
        return await app.ainvoke(GraphCommand(resume="y"), thread_id=other, context=Context("a2"))

    assert asyncio.run(arun())["message"] == "y:a2"


def test_tools_read_the_runtime_through_tool_context() -> None:
    """A tool run by an agent reads the run's context as ``ctx.runtime.context``."""
    from graphagent.agent import ReactAgent

    seen: list[Any] = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Say who the user is."""
        seen.append(ctx.runtime.context)
        return ctx.runtime.context.api_key

    model = FakeChatModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="whoami", arguments="{}")]),
            AssistantMessage("done"),
        ]
    )
    agent = ReactAgent(name="a", model=model, tools=[whoami])
    agent.invoke("who am I?", {"context": Context("user-7")})
    assert seen == [Context("user-7")]


def test_a_router_reads_the_context_from_its_config() -> None:
    """A router taking ``config`` sees the run's context as ``config.context``."""
    g = StateGraph(State, context_schema=Context)
    g.add_node("a", lambda s: {"message": "a"}).add_node("b", lambda s: {"message": "b"})
    g.add_conditional_edges(START, lambda s, config: config.context.api_key, ["a", "b"])
    app = g.add_edge("a", END).add_edge("b", END).compile()
    assert app.invoke({"message": ""}, context=Context("b")) == {"message": "b"}
