"""Hooks, interceptors, built-ins, human in the loop, multi-agent."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from graphagent.agent import (
    AgentHook,
    AgentTool,
    HumanInTheLoopHook,
    LlmRoutingAgent,
    LoopAgent,
    ModelCallLimitHook,
    ModelFallbackInterceptor,
    ModelHook,
    ModelInterceptor,
    ModelRetryInterceptor,
    ParallelAgent,
    ReactAgent,
    SequentialAgent,
    SummarizationHook,
    ToolCallLimitHook,
    ToolErrorInterceptor,
    ToolInterceptor,
    ToolRetryInterceptor,
    after_model,
    before_agent,
    before_model,
)
from graphagent.errors import LimitExceededError, ModelHTTPError, UserError
from graphagent.graph import Command, interrupt
from graphagent.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import FakeChatModel, FunctionChatModel
from graphagent.tools import ToolCallingManager, tool


def calls(*items: tuple[str, str, str], text: str = "") -> AssistantMessage:
    return AssistantMessage(
        text, tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in items]
    )


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}: {body}"


# -- hooks ----------------------------------------------------------------------------------


def test_hook_order_is_an_onion_and_each_hook_is_a_node() -> None:
    """before_* run in list order, after_* in reverse; each point is a named node."""
    log: list[str] = []

    class Outer(AgentHook):
        def before_agent(self, state: Any, config: Any) -> None:
            log.append("outer.before_agent")

        def after_agent(self, state: Any, config: Any) -> None:
            log.append("outer.after_agent")

    class Inner(ModelHook):
        def before_model(self, state: Any, config: Any) -> None:
            log.append("inner.before_model")

        def after_model(self, state: Any, config: Any) -> None:
            log.append("inner.after_model")

    @before_model
    def second(state: Any) -> None:
        log.append("second.before_model")

    @after_model(name="second_after")
    def second_after(state: Any) -> None:
        log.append("second.after_model")

    agent = ReactAgent(
        name="a", model=FakeChatModel(["hi"]), hooks=[Outer(), Inner(), second, second_after]
    )
    agent.call("x")
    assert log == [
        "outer.before_agent",
        "inner.before_model",
        "second.before_model",
        "second.after_model",
        "inner.after_model",
        "outer.after_agent",
    ]
    nodes = set(agent.graph.nodes)
    assert {
        "outer.before_agent",
        "outer.after_agent",
        "inner.before_model",
        "second",
        "second_after",
    } <= nodes
    assert agent.graph.graph.nodes["second"]["kind"] == "hook"


def test_hooks_update_state_and_jump() -> None:
    """A hook's dict updates state; Command(goto='end') skips the model."""

    @before_agent(can_jump_to=("end",))
    def guard(state: Any) -> Any:
        if "forbidden" in state["messages"][-1].text:
            return Command(
                goto="end", update={"messages": [AssistantMessage("I can't help with that.")]}
            )
        return {"results": {"checked": True}}

    model = FakeChatModel(["fine"])
    agent = ReactAgent(name="a", model=model, hooks=[guard])
    assert agent.call("forbidden stuff").text == "I can't help with that."
    assert model.calls == []
    assert agent.invoke("ok")["results"] == {"checked": True}


def test_jump_to_model_and_undeclared_jump() -> None:
    """after_model can send the model back; undeclared jumps are refused."""
    seen = {"n": 0}

    @after_model(can_jump_to=("model",))
    def insist(state: Any) -> Any:
        seen["n"] += 1
        if seen["n"] == 1:
            return Command(goto="model", update={"messages": [UserMessage("Try harder.")]})
        return None

    model = FakeChatModel(["meh", "great answer"])
    assert ReactAgent(name="a", model=model, hooks=[insist]).call("q").text == "great answer"

    @before_model
    def rogue(state: Any) -> Any:
        return Command(goto="end")

    with pytest.raises(UserError, match="does not declare it"):
        ReactAgent(name="b", model=FakeChatModel(["x"]), hooks=[rogue]).call("q")


def test_duplicate_hook_names_are_an_error() -> None:
    """Two hooks with one name are refused, naming both."""

    @before_model
    def same(state: Any) -> None: ...

    with pytest.raises(UserError, match="two hooks are named 'same'"):
        ReactAgent(name="a", model=FakeChatModel([]), hooks=[same, same])


def test_custom_interrupting_hook(saver: CheckpointSaver) -> None:
    """A user's own hook can pause with interrupt() and resume with Command(resume=...)."""

    @before_agent
    def confirm(state: Any) -> Any:
        ok = interrupt({"question": "Start?"})
        return None if ok == "yes" else Command(goto="end")

    model = FakeChatModel(["started"])
    agent = ReactAgent(name="a", model=model, hooks=[confirm], saver=saver)
    agent.call("go", thread_id="c1")
    assert agent.get_state(thread_id="c1").interrupts[0].value == {"question": "Start?"}
    assert agent.call(Command(resume="yes"), thread_id="c1").text == "started"


# -- interceptors -----------------------------------------------------------------------------


def test_model_interceptors_order_change_short_circuit() -> None:
    """The first interceptor is outermost; interceptors may change or answer requests."""
    log: list[str] = []

    class Tag(ModelInterceptor):
        def __init__(self, tag: str) -> None:
            self.tag = tag

        def intercept_model(self, request: Any, handler: Any) -> AssistantMessage:
            log.append(f"{self.tag} in")
            extra = [*request.messages, SystemMessage(f"tag {self.tag}")]
            response = handler(request.override(messages=extra))
            log.append(f"{self.tag} out")
            return response.model_copy(update={"content": response.content + f"+{self.tag}"})

    model = FakeChatModel(["answer"])
    agent = ReactAgent(name="a", model=model, interceptors=[Tag("A"), Tag("B")])
    assert agent.call("q").text == "answer+B+A"
    assert log == ["A in", "B in", "B out", "A out"]
    assert [m.text for m in model.calls[0].messages][-2:] == ["tag A", "tag B"]

    class Cache(ModelInterceptor):
        def intercept_model(self, request: Any, handler: Any) -> AssistantMessage:
            return AssistantMessage("from cache")

    unused = FakeChatModel([])
    assert ReactAgent(name="b", model=unused, interceptors=[Cache()]).call("q").text == "from cache"


def test_tool_interceptor_changes_arguments_and_short_circuits() -> None:
    """Tool interceptors see each call and may rewrite it or answer it."""

    class Redact(ToolInterceptor):
        def intercept_tool_call(self, request: Any, handler: Any) -> ToolResponseMessage:
            call = request.tool_call
            if call.name == "send_email":
                return ToolResponseMessage(
                    "blocked by policy", tool_call_id=call.id, name=call.name
                )
            fixed = call.model_copy(update={"arguments": '{"query": "safe"}'})
            return handler(request.override(tool_call=fixed))

    model = FakeChatModel(
        [
            calls(
                ("1", "search", '{"query": "x"}'), ("2", "send_email", '{"to": "a", "body": "b"}')
            ),
            "done",
        ]
    )
    agent = ReactAgent(name="a", model=model, tools=[search, send_email], interceptors=[Redact()])
    agent.call("go")
    results = [m.content for m in model.calls[1].messages if isinstance(m, ToolResponseMessage)]
    assert results == ["results for safe", "blocked by policy"]


def test_retry_and_fallback_interceptors() -> None:
    """Model retries then falls back to another model; tool retries and error wording."""
    attempts = {"n": 0}

    def flaky(messages: Any, tools: Any) -> str:
        attempts["n"] += 1
        raise ModelHTTPError("down", status_code=503)

    backup = FakeChatModel(["from backup"])
    agent = ReactAgent(
        name="a",
        model=FunctionChatModel(flaky),
        interceptors=[ModelFallbackInterceptor(backup), ModelRetryInterceptor(2, backoff=0)],
    )
    assert agent.call("q").text == "from backup"
    assert attempts["n"] == 3

    tries = {"n": 0}

    @tool
    def shaky() -> str:
        """Sometimes fails."""
        tries["n"] += 1
        if tries["n"] < 3:
            raise ConnectionError("blip")
        return "worked"

    @tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    model = FakeChatModel([calls(("1", "shaky", "{}"), ("2", "broken", "{}")), "ok"])
    agent = ReactAgent(
        name="b",
        model=model,
        tools=[shaky, broken],
        interceptors=[
            ToolErrorInterceptor(lambda n, e: f"{n} is down"),
            ToolRetryInterceptor(2, backoff=0, tools=["shaky"]),
        ],
    )
    agent.call("go")
    results = [m.content for m in model.calls[1].messages if isinstance(m, ToolResponseMessage)]
    assert results == ["worked", "broken is down"]


# -- built-in hooks ---------------------------------------------------------------------------


def test_model_call_limits_per_run_and_per_thread() -> None:
    """Run limits end the run politely; thread limits persist across runs; 'error' raises."""
    looping = FunctionChatModel(lambda m, t: calls((str(len(m)), "search", '{"query": "q"}')))
    agent = ReactAgent(
        name="a", model=looping, tools=[search], hooks=[ModelCallLimitHook(run_limit=2)]
    )
    assert "run limit of 2" in agent.call("go").text
    assert len(looping.calls) == 2

    model = FakeChatModel(["1", "2", "3"])
    limited = ReactAgent(
        name="b", model=model, saver=MemorySaver(), hooks=[ModelCallLimitHook(thread_limit=2)]
    )
    limited.call("a", thread_id="t")
    limited.call("b", thread_id="t")
    assert "thread limit of 2" in limited.call("c", thread_id="t").text
    strict = ReactAgent(
        name="c",
        model=FakeChatModel(["1"]),
        hooks=[ModelCallLimitHook(run_limit=0, exit_behavior="error")],
    )
    with pytest.raises(LimitExceededError):
        strict.call("x")


def test_tool_call_limit_per_tool() -> None:
    """Calls past a tool's limit are not run; the model is told why, in call order."""
    model = FakeChatModel(
        [calls(("1", "search", '{"query": "a"}'), ("2", "search", '{"query": "b"}')), "ok"]
    )
    agent = ReactAgent(
        name="a", model=model, tools=[search], hooks=[ToolCallLimitHook(1, tool_name="search")]
    )
    agent.call("go")
    results = [m.content for m in model.calls[1].messages if isinstance(m, ToolResponseMessage)]
    assert results[0] == "results for a"
    assert results[1].startswith("Not run: the run limit of 1 calls to tool 'search'")


def test_summarization_keeps_tool_pairs_together() -> None:
    """Old messages become one summary; a tool result is never cut from its call."""
    summarizer = FakeChatModel(["they talked about owls"])
    hook = SummarizationHook(summarizer, max_tokens=10, keep_last=2)
    history = [
        UserMessage("a long question about owls " * 5),
        AssistantMessage("a long answer " * 5),
        UserMessage("search for owls"),
        calls(("1", "search", '{"query": "owls"}')),
        ToolResponseMessage("owls live in trees", tool_call_id="1", name="search"),
    ]
    assert hook.cut_point(history) == 3
    model = FakeChatModel(["Owls live in trees."])
    agent = ReactAgent(name="a", model=model, tools=[search], hooks=[hook])
    out = agent.invoke({"messages": history})
    texts = [m.text for m in out["messages"]]
    assert texts[0] == "Summary of the earlier conversation: they talked about owls"
    assert isinstance(out["messages"][1], AssistantMessage) and out["messages"][1].tool_calls
    assert texts[-1] == "Owls live in trees."


# -- human in the loop ----------------------------------------------------------------------


def hitl_agent(saver: CheckpointSaver, model: Any) -> ReactAgent:
    return ReactAgent(
        name="mailer",
        model=model,
        tools=[send_email, search],
        hooks=[HumanInTheLoopHook(approval_on={"send_email": "emails leave the company"})],
        saver=saver,
    )


def test_hitl_approve_edit_reject_from_another_process(
    saver: CheckpointSaver, make_saver: Any
) -> None:
    """The run pauses with the pending calls; a new agent object resumes with decisions."""
    model = FakeChatModel(
        [
            calls(
                ("e1", "send_email", '{"to": "boss", "body": "hi"}'),
                ("e2", "send_email", '{"to": "all", "body": "party"}'),
                ("s1", "search", '{"query": "x"}'),
            ),
            "Sent one, skipped one.",
        ]
    )
    agent = hitl_agent(saver, model)
    agent.call("email people", thread_id="h1")
    [pause] = agent.get_state(thread_id="h1").interrupts
    requests = pause.value["action_requests"]
    assert [(r["id"], r["name"], r["description"]) for r in requests] == [
        ("e1", "send_email", "emails leave the company"),
        ("e2", "send_email", "emails leave the company"),
    ]
    assert requests[0]["arguments"] == {"to": "boss", "body": "hi"}

    other = hitl_agent(make_saver(), model)
    decisions = {
        "e1": {"type": "edit", "arguments": {"to": "boss", "body": "hello"}},
        "e2": {"type": "reject", "reason": "no parties"},
    }
    assert other.call(Command(resume=decisions), thread_id="h1").text == "Sent one, skipped one."
    results = {
        m.tool_call_id: m.content
        for m in model.calls[1].messages
        if isinstance(m, ToolResponseMessage)
    }
    assert results == {
        "e1": "sent to boss: hello",
        "e2": "The user rejected this call: no parties",
        "s1": "results for x",
    }


def test_hitl_missing_decision_and_stream_resume(saver: CheckpointSaver) -> None:
    """Missing decisions are a clear error (the thread stays paused); stream can resume."""
    model = FakeChatModel([calls(("e1", "send_email", '{"to": "a", "body": "b"}')), "done"])
    agent = hitl_agent(saver, model)
    agent.invoke("mail", thread_id="h2")
    with pytest.raises(UserError, match="no decision for tool call"):
        agent.invoke(Command(resume={}), thread_id="h2")
    assert agent.get_state(thread_id="h2").interrupts
    events = list(
        agent.stream(Command(resume=[{"type": "approve"}]), thread_id="h2", mode="values")
    )
    assert events[-1]["messages"][-1].text == "done"


# -- multi-agent ------------------------------------------------------------------------------


def test_agent_tool_runs_on_its_own_sub_thread() -> None:
    """An agent used as a tool answers on '<thread>/<agent>' and remembers it."""
    saver = MemorySaver()
    researcher_model = FakeChatModel(["Owls are birds.", "They hunt at night."])
    researcher = ReactAgent(
        name="researcher", model=researcher_model, description="Finds facts.", saver=saver
    )
    boss_model = FakeChatModel(
        [
            calls(("1", "researcher", '{"input": "What are owls?"}')),
            calls(("2", "researcher", '{"input": "When do they hunt?"}')),
            "Owls are nocturnal birds.",
        ]
    )
    boss = ReactAgent(name="boss", model=boss_model, tools=[AgentTool(researcher)], saver=saver)
    assert boss.call("Tell me about owls", thread_id="u1").text == "Owls are nocturnal birds."
    sub = researcher.get_state(thread_id="u1/researcher").values["messages"]
    assert [m.text for m in sub] == [
        "What are owls?",
        "Owls are birds.",
        "When do they hunt?",
        "They hunt at night.",
    ]
    with pytest.raises(UserError, match="needs a description"):
        AgentTool(ReactAgent(name="x", model=FakeChatModel([])))


def test_sequential_parallel_routing_loop_agents(saver: CheckpointSaver) -> None:
    """The composite agents run their sub-agents as graph nodes, checkpoint and draw."""
    draft = ReactAgent(name="draft", model=FakeChatModel(["draft v1"]), description="Drafts.")
    edit = ReactAgent(
        name="edit",
        model=FunctionChatModel(lambda m, t: f"edited: {m[-1].text}"),
        description="Edits.",
    )
    seq = SequentialAgent("writer", [draft, edit], saver=saver)
    assert seq.call("write", thread_id="s").text == "edited: draft v1"
    assert [m.text for m in seq.get_state(thread_id="s").values["messages"]] == [
        "write",
        "draft v1",
        "edited: draft v1",
    ]
    assert "draft" in seq.draw("mermaid")

    fr = ReactAgent(name="fr", model=FakeChatModel(["bonjour"]), description="French.")
    de = ReactAgent(name="de", model=FakeChatModel(["hallo"]), description="German.")
    par = ParallelAgent(
        "translate", [fr, de], merge=lambda r: " / ".join(m.text for m in r.values())
    )
    out = par.invoke("hello")
    assert out["messages"][-1].text == "bonjour / hallo"
    assert set(out["results"]) == {"fr", "de"}

    router = LlmRoutingAgent(
        "desk",
        FakeChatModel(['["de"]']),
        [
            ReactAgent(name="fr", model=FakeChatModel(["salut"]), description="French."),
            ReactAgent(name="de", model=FakeChatModel(["servus"]), description="German."),
        ],
    )
    assert router.call("say hi in German").text == "servus"

    critic_model = FunctionChatModel(lambda m, t: "APPROVED" if len(m) > 3 else "needs work")
    loop = LoopAgent(
        "review",
        ReactAgent(name="critic", model=critic_model),
        max_iterations=5,
        until=lambda s: s["messages"][-1].text == "APPROVED",
    )
    final = loop.invoke("review this")
    assert final["messages"][-1].text == "APPROVED" and final["loop_rounds"] == 4


def test_tool_interceptors_see_each_calls_context() -> None:
    """An interceptor around a tool that takes no ToolContext still gets the call's
    context: its id, the conversation so far and the agent's tool_context."""
    seen: list[Any] = []

    class Look(ToolInterceptor):
        def intercept_tool_call(self, request: Any, handler: Any) -> ToolResponseMessage:
            ctx = request.context
            seen.append((ctx.tool_call_id, [m.role for m in ctx.history], dict(ctx.context)))
            return handler(request)

    model = FakeChatModel([calls(("1", "search", '{"query": "x"}')), "done"])
    agent = ReactAgent(
        name="a", model=model, tools=[search], interceptors=[Look()], tool_context={"t": 1}
    )
    assert agent.call("go").text == "done"
    assert seen == [("1", ["user", "assistant"], {"t": 1})]


def test_a_replaced_tool_manager_is_used_through_its_public_method() -> None:
    """An agent whose manager is a subclass overriding execute_tool_calls goes through
    that override (the public method, no back door), with the documented context
    function that makes the call's context, and its results reach the model."""
    seen: list[Any] = []

    class Counting(ToolCallingManager):
        def execute_tool_calls(self, messages: Any, assistant_message: Any, **kw: Any) -> Any:
            made = kw["context"]()  # context= is a function that makes the ToolContext
            seen.append((kw["calls"][0].id, made.history[-1].id))
            return super().execute_tool_calls(messages, assistant_message, **kw)

    model = FakeChatModel([calls(("1", "search", '{"query": "x"}')), "done"])
    agent = ReactAgent(name="a", model=model, tools=[search])
    agent.manager = Counting()
    assert agent.call("go").text == "done"
    asked = model.calls[1].messages[-2]
    assert seen == [("1", asked.id)]
    assert model.calls[1].messages[-1].text == "results for x"
