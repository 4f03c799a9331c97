"""The built-in hooks and interceptors Spring AI Alibaba ships, their tool options and
the cancellation token, ported from spring-ai-alibaba-agent-framework's tests (each test
names its Java file and method). Spring's versions call DashScope and print; here a
scripted model answers and each test asserts what the Spring test checks or prints.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.agent import (
    ContextEditingInterceptor,
    ModelRequest,
    PIIDetectionHook,
    ReactAgent,
    TodoListInterceptor,
    ToolEmulatorInterceptor,
    ToolSelectionInterceptor,
    before_model,
)
from graphagent.errors import PIIDetectionError, ToolCancelledError
from graphagent.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import FakeChatModel, FunctionChatModel
from graphagent.tools import CancellationToken, ToolContext, tool


def _seen_by_model() -> tuple[list[list[Message]], FunctionChatModel]:
    seen: list[list[Message]] = []

    def answer(messages: list[Message], tools: Any) -> str:
        seen.append(list(messages))
        return "Noted: " + messages[-1].text

    return seen, FunctionChatModel(answer)


# origin: spring-ai-alibaba hooks/pii/PIIDectionHookTest.java::testPIIDetectionWithRedactStrategy
def test_pii_redact_on_input_and_output() -> None:
    """An email in the user's message is redacted before the model sees it, in the
    stored thread too; the model's echo is redacted as well."""
    seen, model = _seen_by_model()
    hook = PIIDetectionHook("email", strategy="redact", apply_to_output=True)
    agent = ReactAgent(name="test-pii-redact-agent", model=model, hooks=[hook])
    state = agent.invoke("My email is test@example.com, remember it.")
    assert seen[0][-1].text == "My email is [REDACTED_EMAIL], remember it."
    assert [m.text for m in state["messages"]] == [
        "My email is [REDACTED_EMAIL], remember it.",
        "Noted: My email is [REDACTED_EMAIL], remember it.",
    ]


def test_pii_output_only_redacts_what_the_model_says() -> None:
    """apply_to_input=False, apply_to_output=True: the answer is redacted, the input not."""
    model = FunctionChatModel(lambda m, t: "Write to admin@corp.example for help.")
    hook = PIIDetectionHook("email", apply_to_input=False, apply_to_output=True)
    state = ReactAgent(name="a", model=model, hooks=[hook]).invoke("me@x.io asks")
    assert state["messages"][0].text == "me@x.io asks"
    assert state["messages"][-1].text == "Write to [REDACTED_EMAIL] for help."


# origin: spring-ai-alibaba hooks/pii/PIIDectionHookTest.java::testPIIDetectionWithMaskStrategy
def test_pii_mask_credit_card() -> None:
    """A card number (Luhn-valid) is masked but for its last four digits; a number that
    fails the Luhn check is left alone."""
    seen, model = _seen_by_model()
    hook = PIIDetectionHook("credit_card", strategy="mask")
    ReactAgent(name="test-pii-mask-agent", model=model, hooks=[hook]).invoke(
        "My card is 4111 1111 1111 1111, order 1234 5678 9012 3456."
    )
    assert seen[0][-1].text == "My card is ***************1111, order 1234 5678 9012 3456."


# origin: spring-ai-alibaba hooks/pii/PIIDectionHookTest.java::testPIIDetectionWithBlockStrategy
def test_pii_block_ip() -> None:
    """Block: the run stops with PIIDetectionError naming the kind, not the address;
    the model is never called."""
    seen, model = _seen_by_model()
    hook = PIIDetectionHook("ip", strategy="block")
    agent = ReactAgent(name="test-pii-block-agent", model=model, hooks=[hook])
    with pytest.raises(PIIDetectionError) as caught:
        agent.invoke("My server is 192.168.1.100, keep it secret.")
    assert caught.value.pii_types == ("ip",)
    assert "192.168" not in str(caught.value)
    assert seen == []
    agent.invoke("Version 999.1.1.1 is out")  # not an address: passes


# origin: spring-ai-alibaba hooks/pii/PIIDectionHookTest.java::testWithoutPIIDetection
def test_without_pii_detection_nothing_changes() -> None:
    """Without the hook the text is untouched."""
    seen, model = _seen_by_model()
    ReactAgent(name="test-no-pii-agent", model=model).invoke("Mail a@b.co")
    assert seen[0][-1].text == "Mail a@b.co"


# origin: spring-ai-alibaba hooks/pii/PIIDectionHookTest.java::testCustomPIIDetector
def test_custom_regex_detector() -> None:
    """A custom kind with a regex: redacted as [REDACTED_<KIND>]."""
    seen, model = _seen_by_model()
    hook = PIIDetectionHook("phone", detector=r"\b1[3-9]\d{9}\b")
    ReactAgent(name="test-custom-pii-agent", model=model, hooks=[hook]).invoke(
        "My number is 13812345678, save it."
    )
    assert seen[0][-1].text == "My number is [REDACTED_PHONE], save it."


def test_pii_hash_and_tool_results_on_every_saver(saver: CheckpointSaver) -> None:
    """Hash: equal values hash alike; tool results are processed before the model sees
    them, and the stored thread holds only the processed text."""

    @tool
    def lookup_user(name: str) -> str:
        """Look a user up."""
        return f"{name}: ada@example.com"

    seen: list[list[Message]] = []

    def answer(messages: list[Message], tools: Any) -> Any:
        seen.append(list(messages))
        if not isinstance(messages[-1], ToolResponseMessage):
            call = ToolCall(id="1", name="lookup_user", arguments='{"name": "ada"}')
            return AssistantMessage(tool_calls=[call])
        return "found"

    hook = PIIDetectionHook("email", strategy="hash", apply_to_tool_results=True)
    agent = ReactAgent(
        name="a", model=FunctionChatModel(answer), tools=[lookup_user], hooks=[hook], saver=saver
    )
    agent.invoke("who is ada@example.com?", thread_id="pii-1")
    stored = agent.get_state(thread_id="pii-1").values["messages"]
    hashed = stored[0].text.split()[-1].rstrip("?")
    assert hashed.startswith("<email_hash:") and hashed.endswith(">")
    assert stored[2].text == f"ada: {hashed}"  # the same address, the same hash
    assert seen[1][2].text == f"ada: {hashed}"
    assert not any("ada@example.com" in m.text for m in stored)


def _tool_turns(n: int, size: int) -> list[Message]:
    messages: list[Message] = [UserMessage("Write a poem, then review it.")]
    for i in range(n):
        call = ToolCall(id=f"call-{i}", name="poem", arguments='{"topic": "' + "x" * size + '"}')
        messages.append(AssistantMessage(tool_calls=[call]))
        messages.append(ToolResponseMessage("y" * size, tool_call_id=f"call-{i}", name="poem"))
    return messages


# origin: spring-ai-alibaba interceptors/ContextEditingTest.java::testContextEditingCompaction
def test_context_editing_clears_old_tool_results_in_the_request_only() -> None:
    """Past the trigger, old tool results are cleared from what the model is sent (the
    newest `keep` stay); the thread keeps them whole."""
    sent: list[list[Message]] = []
    history = _tool_turns(4, 400)

    def answer(messages: list[Message], tools: Any) -> str:
        sent.append(list(messages))
        return "done"

    edit = ContextEditingInterceptor(trigger=180, keep=1)
    agent = ReactAgent(name="a", model=FunctionChatModel(answer), interceptors=[edit])
    state = agent.invoke({"messages": history})
    results = [m.text for m in sent[0] if isinstance(m, ToolResponseMessage)]
    assert results == ["[cleared]", "[cleared]", "[cleared]", "y" * 400]
    assert all(m.text == "y" * 400 for m in state["messages"] if isinstance(m, ToolResponseMessage))


def _request(messages: list[Message]) -> ModelRequest:
    return ModelRequest(FakeChatModel(["x"]), messages, [], None, {}, None)  # type: ignore[arg-type]


def _captured(edit: ContextEditingInterceptor, messages: list[Message]) -> list[Message]:
    captured: list[ModelRequest] = []

    def handler(request: ModelRequest) -> AssistantMessage:
        captured.append(request)
        return AssistantMessage("Task completed.")

    edit.intercept_model(_request(messages), handler)
    return captured[0].messages


# origin: spring-ai-alibaba interceptors/ContextEditingTest.java::
# testContextEditingUsesConfiguredTokenCounterForCandidateBudget
def test_context_editing_token_counter_budget_for_results() -> None:
    """The configured token counter decides: 100 tokens per result, clear_at_least=100
    clears exactly one."""
    edit = ContextEditingInterceptor(
        trigger=50,
        keep=0,
        clear_at_least=100,
        token_counter=lambda ms: sum(100 for m in ms if isinstance(m, ToolResponseMessage)),
    )
    messages: list[Message] = [UserMessage("Use the tool responses.")]
    messages += [ToolResponseMessage(t, tool_call_id=f"call-{t}", name="search") for t in "abc"]
    out = _captured(edit, messages)
    assert sum(m.text == "[cleared]" for m in out) == 1


# origin: spring-ai-alibaba interceptors/ContextEditingTest.java::
# testContextEditingUsesConfiguredTokenCounterForToolCallBudget
def test_context_editing_token_counter_budget_for_calls() -> None:
    """With clear_tool_inputs, old tool calls are candidates: one call's arguments cleared."""
    edit = ContextEditingInterceptor(
        trigger=50,
        keep=0,
        clear_at_least=100,
        clear_tool_inputs=True,
        token_counter=lambda ms: sum(100 for m in ms if isinstance(m, AssistantMessage)),
    )
    messages: list[Message] = [UserMessage("Use the tool calls.")]
    for t in "abc":
        call = ToolCall(id=f"call-{t}", name="search", arguments=json.dumps({"q": t}))
        messages.append(AssistantMessage(tool_calls=[call]))
    out = _captured(edit, messages)
    cleared = [
        m for m in out if isinstance(m, AssistantMessage) and m.tool_calls[0].arguments == "{}"
    ]
    assert len(cleared) == 1


def _tools(names: list[str]) -> list[Any]:
    made = []
    for name in names:

        def fn(query: str) -> str:
            return query

        fn.__doc__ = f"The {name} tool."
        made.append(tool(name=name)(fn))
    return made


def _offered_by(interceptor: ToolSelectionInterceptor, names: list[str], ask: str) -> list[str]:
    offered: list[list[str]] = []

    def answer(messages: list[Message], tools: Any) -> str:
        offered.append([t.name for t in tools])
        return "ok"

    agent = ReactAgent(
        name="a", model=FunctionChatModel(answer), tools=_tools(names), interceptors=[interceptor]
    )
    agent.invoke(ask)
    return offered[0]


# origin: spring-ai-alibaba interceptors/ToolSelectionTest.java::testToolSelectionWithMaxTools
def test_tool_selection_with_max_tools() -> None:
    """The selection model's picks, cut to max_tools, are all the main model is offered."""
    selector = FakeChatModel(['{"tools": ["weather", "calendar", "search"]}'])
    pick = ToolSelectionInterceptor(selector, max_tools=2)
    names = ["search", "weather", "calendar", "email", "calculator"]
    assert _offered_by(pick, names, "Weather and my calendar?") == ["weather", "calendar"]
    asked = selector.calls[0].messages[-1].text
    assert "- email: The email tool." in asked and "User query: Weather and my calendar?" in asked


# origin: spring-ai-alibaba interceptors/ToolSelectionTest.java::testToolSelectionWithAlwaysInclude
def test_tool_selection_with_always_include() -> None:
    """always_include tools are offered too, and not counted against max_tools."""
    pick = ToolSelectionInterceptor(
        FakeChatModel(['{"tools": ["weather"]}']), max_tools=1, always_include=["search"]
    )
    assert _offered_by(pick, ["search", "weather", "email"], "Weather?") == ["search", "weather"]


# origin: spring-ai-alibaba interceptors/ToolSelectionTest.java::testToolSelectionRelevanceFiltering
def test_tool_selection_unusable_answer_offers_everything() -> None:
    """A selector answering nonsense (or failing) leaves every tool offered."""
    pick = ToolSelectionInterceptor(FakeChatModel(["I cannot decide."]), max_tools=1)
    assert _offered_by(pick, ["search", "weather"], "Weather?") == ["search", "weather"]


# origin: spring-ai-alibaba interceptors/ToolSelectionTest.java::testToolSelectionWithFewTools
def test_tool_selection_with_few_tools_skips_the_selector() -> None:
    """With no more tools than max_tools, the selection model is not asked."""
    selector = FakeChatModel(['{"tools": []}'])
    pick = ToolSelectionInterceptor(selector, max_tools=3)
    assert _offered_by(pick, ["search", "weather"], "Weather?") == ["search", "weather"]
    assert selector.calls == []


# origin: spring-ai-alibaba interceptors/TodolistTest.java::testReactAgent
def test_todo_list_on_every_saver(saver: CheckpointSaver) -> None:
    """The interceptor offers write_todos and explains it; the list the model writes is
    kept in the thread's state (checkpointed), and a later write replaces it."""
    plans = [
        [{"content": "Draft", "status": "in_progress"}, {"content": "Review", "status": "pending"}],
        [{"content": "Draft", "status": "completed"}, {"content": "Review", "status": "pending"}],
    ]
    prompts: list[str] = []

    def answer(messages: list[Message], tools: Any) -> Any:
        prompts.append(messages[0].text)
        written = sum(isinstance(m, ToolResponseMessage) for m in messages)
        if written < len(plans):
            args = json.dumps({"todos": plans[written]})
            return AssistantMessage(
                tool_calls=[ToolCall(id=f"t{written}", name="write_todos", arguments=args)]
            )
        return "Drafted."

    changes: list[int] = []
    agent = ReactAgent(
        name="planner",
        model=FunctionChatModel(answer),
        system_prompt="You write essays.",
        interceptors=[TodoListInterceptor(on_change=lambda todos: changes.append(len(todos)))],
        saver=saver,
    )
    agent.invoke("Write an essay", thread_id="todo-1")
    assert agent.get_state(thread_id="todo-1").values["todos"] == plans[1]
    assert prompts[0].startswith("You write essays.\n\n## `write_todos`")
    assert changes == [2, 2]


def test_todo_list_refuses_a_bad_status() -> None:
    """A todo with an unknown status goes back to the model as an argument error."""
    bad = ToolCall(
        id="t", name="write_todos", arguments='{"todos": [{"content": "x", "status": "done"}]}'
    )
    model = FakeChatModel([AssistantMessage(tool_calls=[bad]), "ok"])
    state = ReactAgent(name="p", model=model, interceptors=[TodoListInterceptor()]).invoke("go")
    assert "status" in state["messages"][2].text and "todos" not in state


# origin: spring-ai-alibaba interceptors/ToolEmulatorTest.java::testToolEmulatorWithWeatherTool
def test_tool_emulator_answers_for_the_tool() -> None:
    """The emulating model's text is the tool result; the real tool never runs; the
    emulator is told the tool's description and arguments."""
    ran: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        ran.append(city)
        return "real"

    emulator = FakeChatModel(["Sunny, 21 C"])
    call = ToolCall(id="1", name="get_weather", arguments='{"city": "Paris"}')
    model = FakeChatModel([AssistantMessage(tool_calls=[call]), "It is sunny."])
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[get_weather],
        interceptors=[ToolEmulatorInterceptor(emulator)],
    )
    state = agent.invoke("Weather in Paris?")
    assert state["messages"][2].text == "Sunny, 21 C" and ran == []
    prompt = emulator.calls[0].messages[0].text
    assert "Get the weather for a city." in prompt and '{"city": "Paris"}' in prompt


# origin: spring-ai-alibaba interceptors/ToolEmulatorTest.java::testToolEmulatorSelectiveEmulation
def test_tool_emulator_selective() -> None:
    """Only the named tools are emulated; the others run (sync and async)."""

    @tool
    def real_tool(x: str) -> str:
        """Runs."""
        return f"real {x}"

    @tool
    def fake_tool(x: str) -> str:
        """Emulated."""
        return "never"

    calls = [
        ToolCall(id="1", name="real_tool", arguments='{"x": "a"}'),
        ToolCall(id="2", name="fake_tool", arguments='{"x": "b"}'),
    ]
    for run in ("sync", "async"):
        model = FakeChatModel([AssistantMessage(tool_calls=calls), "ok"])
        agent = ReactAgent(
            name="a",
            model=model,
            tools=[real_tool, fake_tool],
            interceptors=[
                ToolEmulatorInterceptor(FakeChatModel(["emulated"]), tools=["fake_tool"])
            ],
        )
        state = agent.invoke("go") if run == "sync" else asyncio.run(agent.ainvoke("go"))
        assert [m.text for m in state["messages"][2:4]] == ["real a", "emulated"]


# origin: spring-ai-alibaba tool/DefaultCancellationTokenTest.java (all nested cases)
def test_cancellation_token() -> None:
    """Starts uncancelled; cancel is idempotent; callbacks run once, or at once when
    registered after; raise_if_cancelled raises ToolCancelledError only when cancelled."""
    token = CancellationToken()
    assert not token.cancelled
    token.raise_if_cancelled()
    fired: list[str] = []
    token.on_cancel(lambda: fired.append("first"))
    token.on_cancel(lambda: fired.append("second"))
    token.cancel("timed out")
    token.cancel("again")
    assert token.cancelled and token.reason == "timed out"
    assert fired == ["first", "second"]
    token.on_cancel(lambda: fired.append("late"))
    assert fired[-1] == "late"
    with pytest.raises(ToolCancelledError, match="timed out"):
        token.raise_if_cancelled()


# origin: spring-ai-alibaba tool/CancellableAsyncToolCallbackTest.java (sync tools: a token)
def test_sync_tool_past_timeout_sees_its_token() -> None:
    """A sync tool past tool_timeout: the model is told it timed out at once, and the
    tool, still running in its thread, sees its token set and stops."""
    stopped = threading.Event()

    @tool
    def crawl(ctx: ToolContext) -> str:
        """Crawl until cancelled."""
        while not ctx.cancellation.wait(0.01):
            pass
        stopped.set()
        ctx.cancellation.raise_if_cancelled()
        return "never"

    call = ToolCall(id="1", name="crawl", arguments="{}")
    model = FakeChatModel([AssistantMessage(tool_calls=[call]), "gave up"])
    agent = ReactAgent(name="a", model=model, tools=[crawl], tool_timeout=0.1)
    began = time.monotonic()
    state = agent.invoke("crawl")
    assert time.monotonic() - began < 5
    assert "did not finish within 0.1 s" in state["messages"][2].text
    assert stopped.wait(5)


# origin: spring-ai-alibaba node/AgentToolNodeParallelExecutionTest.java (ordering) and
# ReactAgent.Builder#parallelToolExecution / #maxParallelTools
@pytest.mark.parametrize("run", ["sync", "async"])
def test_parallel_tool_execution_off_and_bounded(run: str) -> None:
    """parallel_tool_execution=False runs calls one at a time, in order;
    max_parallel_tools=2 never runs more than two; results keep call order."""
    lock = threading.Lock()
    live, peak, order = [0], [0], []

    @tool
    def work(n: int) -> str:
        """Work a while."""
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
            order.append(n)
        time.sleep(0.03)
        with lock:
            live[0] -= 1
        return f"done {n}"

    calls = [ToolCall(id=str(i), name="work", arguments=json.dumps({"n": i})) for i in range(5)]
    for options, most in (({"parallel_tool_execution": False}, 1), ({"max_parallel_tools": 2}, 2)):
        live[0] = peak[0] = 0
        order.clear()
        model = FakeChatModel([AssistantMessage(tool_calls=calls), "ok"])
        agent = ReactAgent(name="a", model=model, tools=[work], **options)
        state = agent.invoke("go") if run == "sync" else asyncio.run(agent.ainvoke("go"))
        assert 1 <= peak[0] <= most  # the bound; sequential runs are exactly one at a time
        assert [m.text for m in state["messages"][2:7]] == [f"done {i}" for i in range(5)]
        if most == 1:
            assert order == [0, 1, 2, 3, 4]


def test_hook_order_by_priority() -> None:
    """Hooks run by order (lower first), ties in list order; after_* hooks in reverse
    (Spring AI Alibaba's Prioritized#getOrder on hooks)."""
    ran: list[str] = []

    def make(name: str, order: int) -> Any:
        @before_model(name=name, order=order)
        def hook(state: Any) -> None:
            ran.append(name)

        return hook

    hooks = [make("c", 5), make("a", -10), make("b", 0), make("d", 0)]
    ReactAgent(name="x", model=FakeChatModel(["ok"]), hooks=hooks).invoke("go")
    assert ran == ["a", "b", "d", "c"]


def test_release_thread_on_every_saver(saver: CheckpointSaver) -> None:
    """release_thread=True: a finished run leaves nothing in the saver; a run paused for
    a human keeps its thread until it finishes."""
    from graphagent.agent import HumanInTheLoopHook

    agent = ReactAgent(
        name="a", model=FakeChatModel(["one", "two"]), saver=saver, release_thread=True
    )
    agent.invoke("hi", thread_id="rel-1")
    assert agent.get_state(thread_id="rel-1").values == {}
    assert list(saver.list("rel-1")) == []

    @tool
    def send(to: str) -> str:
        """Send."""
        return "sent"

    call = ToolCall(id="1", name="send", arguments='{"to": "bob"}')
    asker = ReactAgent(
        name="h",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "done"]),
        tools=[send],
        hooks=[HumanInTheLoopHook({"send": "sends mail"})],
        saver=saver,
        release_thread=True,
    )
    paused = asker.invoke("send it", thread_id="rel-2")
    assert "__interrupt__" in paused and asker.get_state(thread_id="rel-2").values
    from graphagent.graph import Command

    asker.invoke(Command(resume={"1": "approve"}), thread_id="rel-2")
    assert list(saver.list("rel-2")) == []


def test_release_thread_in_a_stream() -> None:
    """A streamed run releases its thread once the stream is used up."""
    from checkpoint import MemorySaver

    saver = MemorySaver()
    agent = ReactAgent(name="a", model=FakeChatModel(["one"]), saver=saver, release_thread=True)
    list(agent.stream("hi", thread_id="s-1"))
    assert list(saver.list("s-1")) == []


# origin: spring-ai-alibaba graph-core Issue4538ReproductionTest.java (an agent with
# releaseThread run from another graph's node still hands back its final values)
def test_release_thread_inside_another_graphs_node() -> None:
    """An agent with release_thread called from a node on its own thread returns its
    values to the node, and its thread is gone; a call on the parent's thread (a nested
    run) never drops the parent's thread."""
    from checkpoint import MemorySaver
    from graphagent.graph import END, START, ReplaceStrategy, StateGraph

    saver = MemorySaver()
    inner = ReactAgent(
        name="inner", model=FakeChatModel(["inner-ok"] * 2), saver=saver, release_thread=True
    )

    def outer_node(state: Any, config: Any) -> dict[str, Any]:
        own = inner.invoke("go", thread_id="issue-4538-inner-thread")
        nested = inner.invoke("go", config)  # same thread as the parent: runs nested
        return {"payload": own["messages"][-1].text, "nested": nested["messages"][-1].text}

    g = StateGraph({"payload": ReplaceStrategy(), "nested": ReplaceStrategy()})
    g.add_node("outer", outer_node).add_edge(START, "outer").add_edge("outer", END)
    outer = g.compile(saver=saver)
    out = outer.invoke({}, thread_id="issue-4538-outer-thread")
    assert out["payload"] == "inner-ok" and out["nested"] == "inner-ok"
    assert list(saver.list("issue-4538-inner-thread")) == []
    assert outer.get_state(thread_id="issue-4538-outer-thread").values["payload"] == "inner-ok"


def test_pii_hook_added_to_an_existing_thread_cleans_its_history() -> None:
    """A thread written before the hook existed is cleaned on the next run's first call."""
    from checkpoint import MemorySaver

    saver = MemorySaver()
    plain = ReactAgent(name="a", model=FakeChatModel(["ok"]), saver=saver)
    plain.invoke("I am bob@example.com", thread_id="old-1")
    seen, model = _seen_by_model()
    guarded = ReactAgent(name="a", model=model, saver=saver, hooks=[PIIDetectionHook("email")])
    guarded.invoke("hello again", thread_id="old-1")
    assert seen[0][0].text == "I am [REDACTED_EMAIL]"
    stored = guarded.get_state(thread_id="old-1").values["messages"]
    assert stored[0].text == "I am [REDACTED_EMAIL]"
