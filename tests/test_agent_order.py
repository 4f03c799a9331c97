"""One ordering rule for hooks and interceptors: lower ``order`` first (a hook's node runs
earlier, an interceptor wraps the others: it sees the request first and the response
last), equal orders keep list order; an ``order`` that is not an int is refused."""

from __future__ import annotations

from typing import Any

import pytest

from graphagent import ReactAgent
from graphagent.agent import (
    ModelInterceptor,
    ModelRequest,
    ToolInterceptor,
    ToolRequest,
    before_model,
)
from graphagent.agent._interceptors import ModelHandler, ToolHandler
from graphagent.errors import UserError
from graphagent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graphagent.models import FakeChatModel
from graphagent.tools import tool


class Both(ModelInterceptor, ToolInterceptor):
    """Logs entering and leaving model and tool calls."""

    def __init__(self, label: str, log: list[str], order: int | None = None) -> None:
        self.label = label
        self.log = log
        if order is not None:
            self.order = order

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        self.log.append(f"model>{self.label}")
        try:
            return handler(request)
        finally:
            self.log.append(f"model<{self.label}")

    def intercept_tool_call(
        self, request: ToolRequest, handler: ToolHandler
    ) -> ToolResponseMessage:
        self.log.append(f"tool>{self.label}")
        try:
            return handler(request)
        finally:
            self.log.append(f"tool<{self.label}")


class Early(Both):
    """An interceptor class that declares its place (as Spring's ``getOrder()``)."""

    order = -100


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def _agent(interceptors: list[Any], hooks: list[Any] = ()) -> ReactAgent:  # type: ignore[assignment]
    model = FakeChatModel(
        [AssistantMessage(tool_calls=[ToolCall(id="c1", name="ping")]), AssistantMessage("done")]
    )
    return ReactAgent(
        name="ordered", model=model, tools=[ping], interceptors=interceptors, hooks=hooks
    )


@pytest.mark.parametrize("use_async", [False, True])
async def test_interceptors_wrap_by_order_then_list_order(use_async: bool) -> None:
    """Given [b(10), c, a(-10), d, Early] the chain is Early, a, c, d, b from the outside
    in, for model calls and tool calls alike, sync and async."""
    log: list[str] = []
    given = [
        Both("b", log, 10),
        Both("c", log),
        Both("a", log, -10),
        Both("d", log),
        Early("e", log),
    ]
    agent = _agent(given)
    if use_async:
        await agent.acall("go")
    else:
        agent.call("go")
    outside_in = ["e", "a", "c", "d", "b"]
    model_in = [x.split(">")[1] for x in log if x.startswith("model>")][:5]
    model_out = [x.split("<")[1] for x in log if x.startswith("model<")][:5]
    tool_in = [x.split(">")[1] for x in log if x.startswith("tool>")]
    tool_out = [x.split("<")[1] for x in log if x.startswith("tool<")]
    assert model_in == outside_in and model_out == outside_in[::-1]
    assert tool_in == outside_in and tool_out == outside_in[::-1]
    assert [i.label for i in agent.model_interceptors] == outside_in


def test_hooks_and_interceptors_share_the_rule() -> None:
    """The same orders put hooks and interceptors in the same sequence."""
    ran: list[str] = []
    hooks = [
        before_model(lambda s: ran.append("late"), name="late", order=10),
        before_model(lambda s: ran.append("mid"), name="mid"),
        before_model(lambda s: ran.append("early"), name="early", order=-10),
    ]
    log: list[str] = []
    interceptors = [Both("late", log, 10), Both("mid", log), Both("early", log, -10)]
    _agent(interceptors, hooks).call("go")
    assert ran[:3] == ["early", "mid", "late"]
    assert [x.split(">")[1] for x in log if x.startswith("model>")][:3] == ran[:3]


def test_an_order_that_is_not_an_int_is_refused() -> None:
    """order="high" fails when the agent is built, naming the interceptor and the fix."""
    bad = Both("x", [])
    bad.order = "high"  # type: ignore[assignment]
    with pytest.raises(UserError, match=r"interceptor .* has order 'high'; order must be an int"):
        _agent([bad])
