"""Context between agents (output keys, instruction placeholders, include_contents,
return_reasoning_contents), ParallelAgent merges and concurrency, LoopAgent modes and
AgentTool schemas, ported from Spring AI Alibaba's spring-ai-alibaba-agent-framework
tests (each test names its Java file and method). Spring's tests call DashScope; here a
scripted model (``FunctionChatModel``) answers, so each assertion is exact.

Differences from Spring, asserted as graphagent behaves:
- an ``output_key`` holds the answer's text (Spring: the AssistantMessage);
- the instruction is a sub-agent's own prompt: with ``return_reasoning_contents=False``
  only the answer reaches the parent (Spring also hands back the instruction message).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel

from checkpoint.base import CheckpointSaver
from graphagent.agent import (
    AgentTool,
    ConcatenationMergeStrategy,
    DefaultMergeStrategy,
    ListMergeStrategy,
    LoopAgent,
    ParallelAgent,
    ReactAgent,
    SequentialAgent,
)
from graphagent.errors import InvalidUpdateError, StructuredOutputError, UserError
from graphagent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import FunctionChatModel
from graphagent.tools import tool


def _echo(prefix: str) -> FunctionChatModel:
    """A model answering ``prefix: <the last system or user text it was sent>``."""

    def answer(messages: list[Message], tools: Any) -> str:
        asked = [m for m in messages if isinstance(m, (SystemMessage, UserMessage))]
        return f"{prefix}: {asked[-1].text}" if asked else prefix

    return FunctionChatModel(answer)


def _writer_and_reviewer(**kw: Any) -> tuple[ReactAgent, ReactAgent]:
    writer = ReactAgent(
        name="writer_agent",
        model=FunctionChatModel(lambda m, t: "An essay about West Lake."),
        description="writes essays",
        instruction="You are a famous writer. Answer the user's request.",
        output_key="article",
        **kw,
    )
    reviewer = ReactAgent(
        name="reviewer_agent",
        model=_echo("reviewed"),
        description="reviews essays",
        instruction="Review this article and return only the revision: {article}",
        output_key="reviewed_article",
        **kw,
    )
    return writer, reviewer


# origin: spring-ai-alibaba SequentialAgentTest.java::testSequentialAgent
def test_sequential_output_keys_and_placeholders() -> None:
    """Each sub-agent's answer lands under its output key, and the next sub-agent's
    instruction placeholder reads it."""
    writer, reviewer = _writer_and_reviewer()
    state = SequentialAgent("blog_agent", [writer, reviewer]).invoke("Write an essay")
    assert state["article"] == "An essay about West Lake."
    assert state["reviewed_article"] == (
        "reviewed: Review this article and return only the revision: An essay about West Lake."
    )
    # user + the two answers: the sub-agents' instructions stay their own
    assert [type(m).__name__ for m in state["messages"]] == [
        "UserMessage",
        "AssistantMessage",
        "AssistantMessage",
    ]


def _agent_with_a_tool(name: str, key: str, reasoning: bool) -> ReactAgent:
    @tool(name=f"{name}_lookup")
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return f"facts about {topic}"

    def answer(messages: list[Message], tools: Any) -> Any:
        if not isinstance(messages[-1], ToolResponseMessage):
            call = ToolCall(id=f"{name}-1", name=f"{name}_lookup", arguments='{"topic": "lake"}')
            return AssistantMessage(tool_calls=[call])
        return f"{name} used {messages[-1].text}"

    return ReactAgent(
        name=name,
        model=FunctionChatModel(answer),
        tools=[lookup],
        instruction=f"You are {name}.",
        output_key=key,
        return_reasoning_contents=reasoning,
    )


# origin: spring-ai-alibaba SequentialAgentTest.java::testSequentialWithSubAgentReasoningContents
def test_sequential_with_reasoning_contents_hands_back_every_message() -> None:
    """return_reasoning_contents=True: the instruction, tool call, tool result and answer
    of each sub-agent reach the parent's conversation."""
    a = _agent_with_a_tool("writer_agent", "article", True)
    b = _agent_with_a_tool("reviewer_agent", "reviewed_article", True)
    state = SequentialAgent("blog_agent", [a, b]).invoke("Write an essay")
    kinds = [type(m).__name__ for m in state["messages"]]
    per_agent = ["SystemMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage"]
    assert kinds == ["UserMessage", *per_agent, *per_agent]  # 9, as in Spring
    assert state["article"] == "writer_agent used facts about lake"
    assert state["reviewed_article"] == "reviewer_agent used facts about lake"


# origin: spring-ai-alibaba SequentialAgentTest.java::testSequentialWithoutSubAgentReasoningContents
def test_sequential_without_reasoning_contents_hands_back_the_answer_only() -> None:
    """The default: tool calls and results stay in the sub-agent; only answers go up."""
    a = _agent_with_a_tool("writer_agent", "article", False)
    b = _agent_with_a_tool("reviewer_agent", "reviewed_article", False)
    state = SequentialAgent("blog_agent", [a, b]).invoke("Write an essay")
    assert [m.text for m in state["messages"]] == [
        "Write an essay",
        "writer_agent used facts about lake",
        "reviewer_agent used facts about lake",
    ]
    assert not any(isinstance(m, ToolResponseMessage) for m in state["messages"])


def _sees(seen: dict[str, list[str]], name: str, answer: str) -> FunctionChatModel:
    def fn(messages: list[Message], tools: Any) -> str:
        seen[name] = [m.text for m in messages]
        return answer

    return FunctionChatModel(fn)


# origin: spring-ai-alibaba SequentialAgentTest.java::testEmbeddedSequentialAgent
def test_embedded_sequential_parallel_and_include_contents_false() -> None:
    """A sequential agent nested in a sequential agent next to a parallel agent: every
    output key reaches the outermost state; include_contents=False sub-agents see only
    their instruction (placeholders filled) and the user's request."""
    seen: dict[str, list[str]] = {}
    writer, reviewer = _writer_and_reviewer()
    signer = ReactAgent(
        name="signature_agent",
        model=FunctionChatModel(lambda m, t: "Signed article."),
        instruction="Sign the article.",
        output_key="signed_article",
    )
    inner = SequentialAgent("blog_agent", [writer, reviewer, signer])
    prose = ReactAgent(
        name="prose_writer", model=_sees(seen, "prose", "prose"), output_key="prose_result"
    )
    poem = ReactAgent(
        name="poem_writer", model=_sees(seen, "poem", "poem"), output_key="poem_result"
    )
    both = ParallelAgent("parallel_creative_agent", [prose, poem])
    reviser = ReactAgent(
        name="revise_agent",
        model=_sees(seen, "revise", "revised"),
        include_contents=False,
        instruction="Revise this article: {reviewed_article}",
        output_key="revised_article",
    )
    censor = ReactAgent(
        name="censor_agent",
        model=_sees(seen, "censor", "censored"),
        include_contents=False,
        instruction="Check this article: {reviewed_article}",
        output_key="censored_article",
    )
    outer = SequentialAgent("blog_parent", [inner, both, reviser, censor])
    state = outer.invoke("Write a 100-word essay")
    for key in (
        "article",
        "reviewed_article",
        "signed_article",
        "prose_result",
        "poem_result",
        "revised_article",
        "censored_article",
    ):
        assert key in state, key
    assert seen["revise"] == [
        "Write a 100-word essay",
        "Revise this article: " + state["reviewed_article"],
    ]
    # include_contents=True: the conversation so far (the inner sequential agent handed
    # back its final answer only)
    assert seen["prose"] == ["Write a 100-word essay", "Signed article."]


class SqlAnswer(BaseModel):
    query: str
    output: str


_SQL_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "output": {"type": "string"}},
    "required": ["query", "output"],
}


# origin: spring-ai-alibaba SequentialAgentTest.java::testOutputSchema
def test_output_schema_then_score_agent() -> None:
    """A raw JSON output_schema: the answer is parsed into a dict, written to the
    output key, and the next agent's instruction reads it."""
    sql = ReactAgent(
        name="sql_agent",
        model=FunctionChatModel(
            lambda m, t: '{"query": "users starting with s", "output": "SELECT 1"}'
        ),
        output_schema=_SQL_SCHEMA,
        output_key="sql",
    )
    score = ReactAgent(
        name="score_agent",
        model=_echo("0.9"),
        instruction="Score this SQL: {sql}",
        output_key="score",
    )
    state = SequentialAgent("sql_flow", [sql, score]).invoke("All users starting with s")
    assert state["sql"] == {"query": "users starting with s", "output": "SELECT 1"}
    assert state["structured_response"] == state["sql"]
    assert state["score"].startswith("0.9: Score this SQL: {")


def test_output_schema_rejects_a_bad_answer_twice() -> None:
    """An answer missing a required field is sent back once, then refused by name."""
    agent = ReactAgent(
        name="sql_agent",
        model=FunctionChatModel(lambda m, t: '{"query": "q"}'),
        output_schema=_SQL_SCHEMA,
    )
    with pytest.raises(StructuredOutputError, match="missing required field\\(s\\) output"):
        agent.invoke("x")


# origin: spring-ai-alibaba flow/ParallelAgentTest.java::testParallelAgentValidation
def test_parallel_needs_two_agents() -> None:
    """Fewer than two sub-agents is refused."""
    only = ReactAgent(name="a", model=_echo("a"))
    with pytest.raises(UserError, match="at least two"):
        ParallelAgent("p", [only])


# origin: spring-ai-alibaba flow/ParallelAgentTest.java::testUniqueOutputKeyValidation
def test_parallel_refuses_shared_output_keys() -> None:
    """Two sub-agents writing one output key would overwrite each other: refused."""
    a = ReactAgent(name="agent1", model=_echo("a"), output_key="same_output")
    b = ReactAgent(name="agent2", model=_echo("b"), output_key="same_output")
    with pytest.raises(UserError, match="same_output"):
        ParallelAgent("p", [a, b])


# origin: spring-ai-alibaba flow/ParallelAgentTest.java::testMergeStrategies
def test_merge_strategies() -> None:
    """Default merges into a dict, List into a list, Concatenation into one text."""
    results = {"key1": "value1", "key2": "value2"}
    assert DefaultMergeStrategy().merge(results, {}) == results
    assert ListMergeStrategy().merge(results, {}) == ["value1", "value2"]
    assert ConcatenationMergeStrategy(" | ").merge(results, {}) == "value1 | value2"


# origin: spring-ai-alibaba flow/ParallelAgentTest.java::testContentCreationParallelAgent
def test_parallel_merge_output_key() -> None:
    """merge_output_key holds the merged answers, keyed by each sub-agent's output key."""
    prose = ReactAgent(name="prose", model=_echo("prose"), output_key="prose_result")
    poem = ReactAgent(name="poem", model=_echo("poem"))
    both = ParallelAgent("creative", [prose, poem], merge_output_key="merged")
    state = both.invoke("Spring")
    assert state["merged"] == {"prose_result": "prose: Spring", "poem": "poem: Spring"}
    assert state["prose_result"] == "prose: Spring"


def _slow_agents(n: int, live: list[int], peak: list[int], lock: threading.Lock) -> list[Any]:
    def slow(messages: list[Message], tools: Any) -> str:
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.15)
        with lock:
            live[0] -= 1
        return "completed"

    return [
        ReactAgent(
            name=f"slowAgent{i}", model=FunctionChatModel(slow), output_key=f"agent{i}_result"
        )
        for i in range(n)
    ]


# origin: spring-ai-alibaba flow/ParallelAgentTest.java::testMaxConcurrencyLimitsExecution
def test_max_concurrency_limits_execution() -> None:
    """With max_concurrency=2, five sub-agents never run more than two at once."""
    live, peak, lock = [0], [0], threading.Lock()
    agent = ParallelAgent("p", _slow_agents(5, live, peak, lock), max_concurrency=2)
    state = agent.invoke("go")
    assert 1 <= peak[0] <= 2  # the bound (how many overlap below it is the scheduler's)
    assert all(state[f"agent{i}_result"] == "completed" for i in range(5))


class _AsyncSlow(FunctionChatModel):
    def __init__(self, live: list[int], peak: list[int]) -> None:
        super().__init__(lambda m, t: "completed")
        self.live, self.peak = live, peak

    async def agenerate(self, messages: Any, *, tools: Any = (), options: Any = None) -> Any:
        self.live[0] += 1
        self.peak[0] = max(self.peak[0], self.live[0])
        await asyncio.sleep(0.1)
        self.live[0] -= 1
        return AssistantMessage("completed")


# origin: spring-ai-alibaba flow/ParallelAgentTest.java::testMaxConcurrencyLimitsExecution
def test_max_concurrency_limits_async_execution() -> None:
    """Under ainvoke the bound holds for sub-agents running as asyncio tasks."""
    live, peak = [0], [0]
    agents = [ReactAgent(name=f"a{i}", model=_AsyncSlow(live, peak)) for i in range(5)]
    asyncio.run(ParallelAgent("p", agents, max_concurrency=2).ainvoke("go"))
    assert peak[0] == 2
    asyncio.run(ParallelAgent("q", agents).ainvoke("go"))
    assert peak[0] == 5


# origin: spring-ai-alibaba flow/ParallelAgentTest.java::
# testUnlimitedConcurrencyWhenMaxConcurrencyNotSet
def test_unlimited_concurrency_when_not_set() -> None:
    """Without max_concurrency the sub-agents run at once (more than any bound above)."""
    live, peak, lock = [0], [0], threading.Lock()
    ParallelAgent("p", _slow_agents(5, live, peak, lock)).invoke("go")
    assert peak[0] >= 3


# origin: spring-ai-alibaba flow/LoopAgentTest.java::testCountMode
def test_loop_count_mode() -> None:
    """A count loop runs the agent max_iterations times on the growing conversation."""
    loop = LoopAgent("loop_agent", ReactAgent(name="sql", model=_echo("sql")), max_iterations=3)
    state = loop.invoke("users starting with s")
    assert [m.text for m in state["messages"][1:]] == [
        "sql: users starting with s",
        "sql: users starting with s",
        "sql: users starting with s",
    ]


# origin: spring-ai-alibaba flow/LoopAgentTest.java::testConditionMode
def test_loop_condition_mode() -> None:
    """A condition loop stops once the condition holds on the state."""
    scores = iter(["0.2", "0.4", "0.8", "0.9"])
    scorer = ReactAgent(name="score", model=FunctionChatModel(lambda m, t: next(scores)))

    def good(state: Any) -> bool:
        return float(state["messages"][-1].text) > 0.5

    state = LoopAgent("loop_agent", scorer, max_iterations=10, until=good).invoke("score it")
    assert [m.text for m in state["messages"][1:]] == ["0.2", "0.4", "0.8"]


# origin: spring-ai-alibaba flow/LoopAgentTest.java::testArrayMode
def test_loop_array_mode_from_a_json_message() -> None:
    """Array mode: the last message read as a JSON array; one round per item, each item
    added as a user message before the agent answers it."""
    items = ["users starting with s", "users starting with t", "all users"]
    loop = LoopAgent(
        "loop_agent",
        ReactAgent(name="sql", model=_echo("sql")),
        items=LoopAgent.json_array,
        max_iterations=10,
    )
    state = loop.invoke(json.dumps(items))
    assert [m.text for m in state["messages"][1:]] == [
        "users starting with s",
        "sql: users starting with s",
        "users starting with t",
        "sql: users starting with t",
        "all users",
        "sql: all users",
    ]


def test_loop_array_mode_refuses_what_is_not_a_list() -> None:
    """Items that are not a list fail naming what was found and the fix."""
    loop = LoopAgent("loop_agent", ReactAgent(name="sql", model=_echo("sql")), items="topics")
    with pytest.raises(InvalidUpdateError, match="state key 'topics' gave str"):
        loop.invoke({"messages": ["go"], "topics": "not a list"})


def test_loop_array_mode_on_every_saver(saver: CheckpointSaver) -> None:
    """Array mode on a thread: items, rounds and answers are checkpointed, and a new
    input loops over its own items from the start."""
    loop = LoopAgent(
        "each",
        ReactAgent(name="upper", model=FunctionChatModel(lambda m, t: m[-1].text.upper())),
        items="words",
        max_iterations=10,
        saver=saver,
    )
    loop.invoke({"messages": [], "words": ["a", "b"]}, thread_id="loop-1")
    state = loop.invoke({"messages": [], "words": ["c"]}, thread_id="loop-1")
    assert [m.text for m in state["messages"]] == ["a", "A", "b", "B", "c", "C"]
    assert loop.get_state(thread_id="loop-1").values["loop_items"] == ["c"]


class WriterInput(BaseModel):
    topic: str
    wordCount: int  # Spring's field name
    style: str


def _coordinator(sub: ReactAgent, arguments: dict[str, Any], **tool_kw: Any) -> ReactAgent:
    def answer(messages: list[Message], tools: Any) -> Any:
        if not isinstance(messages[-1], ToolResponseMessage):
            call = ToolCall(id="c1", name=sub.name, arguments=json.dumps(arguments))
            return AssistantMessage(tool_calls=[call])
        return f"tool said: {messages[-1].text}"

    return ReactAgent(
        name="coordinator_agent",
        model=FunctionChatModel(answer),
        tools=[AgentTool(sub, **tool_kw)],
    )


_WRITER_SCHEMA = {
    "type": "object",
    "properties": {
        "topic": {"type": "string"},
        "wordCount": {"type": "integer"},
        "style": {"type": "string"},
    },
    "required": ["topic", "wordCount", "style"],
}


# origin: spring-ai-alibaba AgentToolTest.java::testAgentToolWithInputSchema
def test_agent_tool_with_input_schema() -> None:
    """The agent's input_schema is the tool's schema; the sub-agent gets the JSON."""
    writer = ReactAgent(
        name="structured_writer_agent",
        model=_echo("wrote"),
        description="writes to order",
        input_schema=_WRITER_SCHEMA,
    )
    args = {"topic": "spring", "wordCount": 150, "style": "prose"}
    coordinator = _coordinator(writer, args)
    assert coordinator.toolset[writer.name].definition.input_schema == _WRITER_SCHEMA
    answer = coordinator.call("Write about spring in 150 words")
    assert json.loads(answer.text.removeprefix("tool said: wrote: ")) == args


# origin: spring-ai-alibaba AgentToolTest.java::testAgentToolWithInputType
def test_agent_tool_with_input_type() -> None:
    """A pydantic input type: its schema is offered and bad arguments go back to the
    model as a tool error naming the field."""
    writer = ReactAgent(name="typed_writer", model=_echo("wrote"), description="writes")
    bad = _coordinator(writer, {"topic": "spring", "wordCount": "many"}, input_schema=WriterInput)
    assert bad.toolset["typed_writer"].definition.input_schema["required"] == [
        "topic",
        "wordCount",
        "style",
    ]
    text = bad.call("Write").text
    assert "invalid arguments for 'typed_writer'" in text and "wordCount" in text


# origin: spring-ai-alibaba AgentToolTest.java::testAgentToolWithOutputSchema
def test_agent_tool_with_output_schema() -> None:
    """A sub-agent with a raw output_schema answers its caller with the JSON object."""
    article = {"title": "Winter", "content": "Snow.", "characterCount": 5}
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "content": {"type": "string"},
            "characterCount": {"type": "integer"},
        },
        "additionalProperties": False,
    }
    writer = ReactAgent(
        name="writer_with_output_schema",
        model=FunctionChatModel(lambda m, t: json.dumps(article)),
        description="writes and returns structured output",
        output_schema=schema,
    )
    answer = _coordinator(writer, {"input": "winter"}).call("Write about winter")
    assert json.loads(answer.text.removeprefix("tool said: ")) == article


class ArticleOutput(BaseModel):
    title: str
    content: str


# origin: spring-ai-alibaba AgentToolTest.java::testAgentToolWithOutputType
def test_agent_tool_with_output_type() -> None:
    """A sub-agent with an output_type answers its caller with the model as JSON."""
    writer = ReactAgent(
        name="typed_out",
        model=FunctionChatModel(lambda m, t: '{"title": "T", "content": "C"}'),
        description="writes",
        output_type=ArticleOutput,
    )
    answer = _coordinator(writer, {"input": "x"}).call("Write")
    assert ArticleOutput.model_validate_json(answer.text.removeprefix("tool said: ")) == (
        ArticleOutput(title="T", content="C")
    )


def test_output_key_strategy_across_turns_on_every_saver(saver: CheckpointSaver) -> None:
    """An output key with AppendStrategy keeps each turn's answer in the thread, and the
    next turn's instruction reads the list stored by the saver."""
    from graphagent.graph import AppendStrategy

    drafts = iter(["draft one", "draft two"])
    writer = ReactAgent(
        name="writer",
        model=FunctionChatModel(lambda m, t: next(drafts)),
        output_key="drafts",
        output_key_strategy=AppendStrategy(),
    )
    counter = ReactAgent(
        name="counter",
        model=_echo("count"),
        instruction="Drafts so far: {drafts}",
        include_contents=False,
    )
    flow = SequentialAgent("flow", [writer, counter], saver=saver)
    flow.invoke("write", thread_id="keys-1")
    state = flow.invoke("write again", thread_id="keys-1")
    assert state["drafts"] == ["draft one", "draft two"]
    assert state["messages"][-1].text == "count: Drafts so far: ['draft one', 'draft two']"
    assert flow.get_state(thread_id="keys-1").values["drafts"] == ["draft one", "draft two"]
