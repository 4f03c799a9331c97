"""The README's demo: build a graph, talk to it on a thread, resume the thread, draw it.

Run with ``make demo`` (or ``python -m graphagent.demo``). Threads live in memory,
or in Redis when ``REDIS_URL`` is set (then a second run continues the same thread).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from checkpoint import MemorySaver, RedisSaver
from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, AppendStrategy, CompiledGraph, OverAllState, StateGraph
from graphagent.messages import AssistantMessage, UserMessage

THREAD = "demo-user-42"


def classify(state: OverAllState) -> dict[str, Any]:
    """Tag the last user message with a topic (a stand-in for a model call)."""
    text = state["messages"][-1].text.lower()
    topic = "billing" if any(w in text for w in ("invoice", "refund", "charge")) else "general"
    return {"topic": topic}


def billing(state: OverAllState) -> dict[str, Any]:
    """Answer billing questions."""
    return {"messages": [AssistantMessage("I have opened a billing ticket for you.")]}


def general(state: OverAllState) -> dict[str, Any]:
    """Answer everything else, remembering what was said earlier in the thread."""
    said = [m.text for m in state["messages"] if isinstance(m, UserMessage)]
    return {"messages": [AssistantMessage(f"You have said {len(said)} thing(s) so far: {said}.")]}


def build(saver: CheckpointSaver) -> CompiledGraph:
    """A three-node support graph with a conditional route."""
    g = StateGraph({"messages": AppendStrategy()})
    g.add_node("classify", classify).add_node("billing", billing).add_node("general", general)
    g.add_edge(START, "classify")
    g.add_conditional_edges("classify", lambda s: s["topic"], ["billing", "general"])
    g.add_edge("billing", END).add_edge("general", END)
    return g.compile(saver=saver, name="support")


def make_saver() -> CheckpointSaver:
    """Redis when REDIS_URL is set (threads expire after an hour), else memory."""
    url = os.environ.get("REDIS_URL")
    if url:
        return RedisSaver.from_url(url, prefix="graphagent-demo", ttl=3600)
    return MemorySaver()


def main() -> int:
    """Run the demo; returns the exit code."""
    url = os.environ.get("REDIS_URL")
    print("graphagent demo")
    print("  model: none yet - this demo runs a plain StateGraph with scripted replies")
    print(f"  threads: {'Redis at ' + url if url else 'in memory (set REDIS_URL to use Redis)'}")
    saver = make_saver()
    cfg = {"thread_id": THREAD, "metadata": {"user_id": "u42"}}

    app = build(saver)
    print("\n--- turn 1")
    out = app.invoke({"messages": [UserMessage("Hi! Where is my parcel?")]}, cfg)
    print("assistant:", out["messages"][-1].text)

    print("\n--- turn 2: a freshly built graph resumes the thread by its id")
    resumed = build(saver if isinstance(saver, MemorySaver) else make_saver())
    out = resumed.invoke({"messages": [UserMessage("Also, I was charged twice.")]}, cfg)
    print("assistant:", out["messages"][-1].text)
    print(f"thread {THREAD!r} now holds {len(out['messages'])} messages")

    print("\n--- history (newest first)")
    for snap in resumed.get_state_history(cfg, limit=4):
        print(f"  step {snap.step:>2}  {snap.metadata['source']:<6} next={list(snap.next)}")

    print("\n--- the graph")
    print(resumed.draw("ascii"))
    print(resumed.draw("mermaid"))
    if url:
        print("(the thread stays in Redis for an hour: run the demo again to continue it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
