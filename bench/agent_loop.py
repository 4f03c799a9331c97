"""Per-iteration time of a ReAct loop: graphagent's ReactAgent vs LangGraph's prebuilt agent.

Ten model -> tool iterations with a scripted model and one trivial tool, in-memory
saver, a fresh thread per run. Run: ``make bench`` or
``.venv/bin/python bench/agent_loop.py``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import best_of, have_langgraph, machine, ratio

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FunctionChatModel
from graphagent.tools import tool

ITERATIONS = 10
ROUNDS = 7


def ours() -> Any:
    @tool
    def add_one(x: int) -> int:
        """Add one."""
        return x + 1

    def script(messages: list[Any], tools: Any) -> AssistantMessage:
        done = sum(1 for m in messages if m.role == "tool")
        if done >= ITERATIONS:
            return AssistantMessage("done")
        call = ToolCall(id=f"c{done}", name="add_one", arguments=f'{{"x": {done}}}')
        return AssistantMessage(tool_calls=(call,))

    agent = ReactAgent(
        name="bench",
        model=FunctionChatModel(script),
        tools=[add_one],
        saver=MemorySaver(),
        max_iterations=ITERATIONS + 2,
    )
    threads = itertools.count()

    def run() -> None:
        assert agent.call("go", thread_id=f"t{next(threads)}").text == "done"

    return run


def theirs() -> Any:
    import warnings

    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    # LangGraph 1.x deprecates this name in favour of langchain.agents.create_agent,
    # which needs the full langchain package; the prebuilt agent is the same loop.
    warnings.filterwarnings("ignore", message="create_react_agent has been moved")

    @lc_tool
    def add_one(x: int) -> int:
        """Add one."""
        return x + 1

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            from langchain_core.outputs import ChatGeneration, ChatResult

            done = sum(1 for m in messages if m.type == "tool")
            if done >= ITERATIONS:
                msg = AIMessage("done")
            else:
                call = {"id": f"c{done}", "name": "add_one", "args": {"x": done}}
                msg = AIMessage("", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=msg)])

    agent = create_react_agent(
        Scripted(responses=[AIMessage("unused")]), [add_one], checkpointer=InMemorySaver()
    )
    threads = itertools.count()

    def run() -> None:
        cfg = {"configurable": {"thread_id": f"t{next(threads)}"}, "recursion_limit": 100}
        out = agent.invoke({"messages": [("user", "go")]}, cfg)
        assert out["messages"][-1].content == "done"

    return run


def main() -> None:
    print(f"ReAct loop, {ITERATIONS} iterations, in-memory saver ({machine()})")
    mine = ours()
    peer = theirs() if have_langgraph() else None
    # rounds alternate between the two, so a busy spell of a shared machine slows both
    a: float | None = None
    b: float | None = None
    for _ in range(ROUNDS):
        t = best_of(mine, repeat=1, number=20) / ITERATIONS
        a = t if a is None else min(a, t)
        if peer is not None:
            t = best_of(peer, repeat=1, number=3) / ITERATIONS
            b = t if b is None else min(b, t)
    assert a is not None
    theirs_text = f"{b * 1e3:.3f} ms" if b is not None else "-"
    print(f"per iteration: graphagent {a * 1e3:.3f} ms, LangGraph {theirs_text}: {ratio(b, a)}")


if __name__ == "__main__":
    main()
