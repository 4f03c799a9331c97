"""What Jupyter shows of a thread (issue 16 items 6 and 8): the run drawn over its graph,
the state card, the approval card and the timeline."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from checkpoint import MemorySaver
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.errors import UserError
from graphagent.graph import END, START, AppendStrategy, Command, CompiledGraph, StateGraph
from graphagent.graph import interrupt as ask
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel

SVG = "{http://www.w3.org/2000/svg}"
TIMES = "\u00d7"  # the multiplication sign of visit counts


def review_loop() -> CompiledGraph:
    """write -> review, which sends the draft back twice, then asks a human to publish."""

    def review(state: Any) -> dict[str, Any]:
        return {"rounds": state.get("rounds", 0) + 1, "log": ["review"]}

    def publish(state: Any) -> dict[str, Any]:
        answer = ask({"question": "publish this?", "draft": state.get("draft", "")})
        return {"log": [f"publish:{answer}"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("write", lambda s: {"log": ["write"], "draft": "x" * 500, "__seen": 1})
    g.add_node("review", review).add_node("publish", publish).add_node("unused", lambda s: {})
    g.add_edge(START, "write").add_edge("write", "review")
    g.add_conditional_edges(
        "review",
        lambda s: "ok" if s["rounds"] >= 3 else "again",
        {"again": "write", "ok": "publish", "never": "unused"},
    )
    g.add_edge("publish", END).add_edge("unused", END)
    return g.compile(saver=MemorySaver(), name="review_loop")


def _nodes(svg: str) -> dict[str, str]:
    """Node name -> its class list, from the SVG."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        text = g.find(f"{SVG}text")
        if "node" in (g.get("class") or "").split() and text is not None:
            out[str(text.text)] = str(g.get("class"))
    return out


def _edges(svg: str) -> dict[str, tuple[str, str]]:
    """Edge title -> (stroke colour, width)."""
    root = ET.fromstring(svg)
    out = {}
    for p in root.iter(f"{SVG}path"):
        title = p.find(f"{SVG}title")
        if p.get("class") == "edge" and title is not None:
            out[str(title.text).split(" (")[0]] = (str(p.get("stroke")), str(p.get("stroke-width")))
    return out


def test_run_overlay_shows_the_path_counts_and_a_waiting_pause() -> None:
    """draw(thread_id=) marks the path taken, counts the loop, and the paused node."""
    app = review_loop()
    app.invoke({"log": []}, {"thread_id": "t1"})
    svg = app.draw(thread_id="t1")
    nodes, edges = _nodes(svg), _edges(svg)
    assert "waiting" in nodes["publish"].split()
    assert "unvisited" in nodes["unused"].split()
    assert "visited" in nodes["write"].split() or "current" in nodes["write"].split()
    taken = {e for e, (colour, _) in edges.items() if colour == "#1565c0"}
    assert taken == {"START → write", "write → review", "review → write"}
    assert edges["review → publish"][0] == "#ef6c00"  # chosen, waiting to run
    root = ET.fromstring(svg)
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "edge-label"]
    assert f"again {TIMES}2" in labels  # the loop edge, taken twice
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert "review → write (taken 2 times)" in titles
    badges = [t.text for g in root.iter(f"{SVG}g") if g.get("class") == "visits" for t in g]
    assert badges.count(f"{TIMES}3") == 2  # write and review ran three times each
    legend = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert legend and "waiting at publish" in legend[0] and "'t1'" in legend[0]

    app.invoke(Command(resume="yes"), {"thread_id": "t1"})
    done = app.draw(thread_id="t1")
    assert "current" in _nodes(done)["publish"].split()
    assert _edges(done)["publish → END"][0] == "#1565c0"
    assert "finished" in done


def test_run_overlay_of_an_old_checkpoint_and_of_no_thread() -> None:
    """A config with a checkpoint_id draws the run up to there; an unknown thread says so."""
    app = review_loop()
    app.invoke({"log": []}, {"thread_id": "t2"})
    history = app.get_state_history({"thread_id": "t2"})
    second = next(h for h in history if h.step == 2)
    svg = app.draw(config=second.config)
    nodes = _nodes(svg)
    assert "next" in nodes["write"].split() and "current" in nodes["review"].split()
    assert TIMES not in "".join(ET.fromstring(svg).itertext())  # nothing ran twice by step 2
    assert "no such thread" in app.draw(thread_id="nobody")
    with pytest.raises(UserError, match="SVG only"):
        app.draw("mermaid", thread_id="t2")


def test_agent_overlay_lists_tools_and_labels_its_edges() -> None:
    """An agent's run: the tools node names its tools; its edges say tool calls / answer."""

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    model = FakeChatModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather", arguments="{}")]),
            "Sunny.",
            "Still sunny.",
        ]
    )
    agent = ReactAgent(name="w", model=model, tools=[get_weather], saver=MemorySaver())
    agent.call("weather?", thread_id="a1")
    agent.call("and now?", thread_id="a1")  # a second run on the same thread
    svg = agent.draw(thread_id="a1")
    edges = _edges(svg)
    assert edges["model → tools"][0] == edges["model → END"][0] == "#1565c0"
    assert edges["tools → model"][0] == "#1565c0"
    root = ET.fromstring(svg)
    labels = {t.text for t in root.iter(f"{SVG}text") if t.get("class") == "edge-label"}
    # both runs ended with an answer, the first one's end is read from the next input
    assert {"tool calls", f"answer {TIMES}2", "results", "again"} <= labels
    assert "get_weather" in "".join(root.itertext())


def test_state_card_hides_private_keys_cuts_long_values_and_dates_times() -> None:
    """Private keys never show; long values end in … and expand; times carry the date."""
    app = review_loop()
    app.invoke({"log": []}, {"thread_id": "t3"})
    snap = app.get_state({"thread_id": "t3"})
    assert snap.values["__seen"] == 1
    page = snap._repr_html_()
    assert "__seen" not in page
    assert "text-align:right" not in page
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page)
    assert "x" * 500 not in page.split("<details")[0] if "<details" in page else False
    assert "…" in page and "<details" in page and "x" * 500 in page  # cut, and expandable
    # the run drawn over its graph, as an image (untrusted notebooks strip inline <svg>)
    assert "data:image/svg+xml;base64," in page and "<svg" not in page and "waiting" in page


def test_unknown_thread_says_no_such_thread() -> None:
    """get_state of a thread that does not exist says so, instead of "step -1"."""
    snap = review_loop().get_state({"thread_id": "ghost"})
    assert not snap.exists
    page = html.unescape(snap._repr_html_())
    assert "no such thread" in page and "step -1" not in page and "'ghost'" in page
    assert "no checkpoints" in review_loop().get_state_history({"thread_id": "ghost"})._repr_html_()


def _pasted(page: str) -> list[str]:
    """The Command(resume=...) snippets an approval card offers, as the user would copy them."""
    return [
        html.unescape(c)
        for c in re.findall(r"<code [^>]*>(Command\(resume=.*?)</code>", page, re.S)
    ]


def test_approval_card_gives_the_exact_command_to_paste() -> None:
    """The human-in-the-loop card lists the calls; its approve snippet, pasted, runs them."""
    ran: list[str] = []

    def send_email(to: str) -> str:
        """Send an email."""
        ran.append(to)
        return "sent"

    model = FakeChatModel(
        [
            AssistantMessage(
                tool_calls=[ToolCall(id="call_9", name="send_email", arguments='{"to": "a@b.c"}')]
            ),
            "Done.",
        ]
    )
    agent = ReactAgent(
        name="mailer",
        model=model,
        tools=[send_email],
        hooks=[HumanInTheLoopHook(approval_on={"send_email": "emails leave the company"})],
        saver=MemorySaver(),
    )
    agent.call("mail a@b.c", thread_id="h1")
    page = agent.get_state(thread_id="h1")._repr_html_()
    assert "waiting for an answer" in page and "emails leave the company" in page
    snippets = _pasted(page)
    assert snippets[0] == "Command(resume={'call_9': {'type': 'approve'}})"
    assert "'type': 'reject', 'reason': '...'" in snippets[1]
    assert "'arguments': {'to': 'a@b.c'}" in snippets[2]
    reply = agent.call(eval(snippets[0], {"Command": Command}), thread_id="h1")
    assert reply.text == "Done." and ran == ["a@b.c"]


def test_approval_card_for_a_plain_question_and_for_several() -> None:
    """A plain interrupt shows its question and Command(resume=ANSWER); several are keyed
    by their ids, which the run accepts."""
    app = review_loop()
    app.invoke({"log": []}, {"thread_id": "q1"})
    page = app.get_state({"thread_id": "q1"})._repr_html_()
    assert "publish this?" in page and _pasted(page) == ["Command(resume=ANSWER)"]

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: {"log": [ask("first?")]})
    g.add_node("b", lambda s: {"log": [ask("second?")]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    two = g.compile(saver=MemorySaver())
    two.invoke({"log": []}, {"thread_id": "q2"})
    snap = two.get_state({"thread_id": "q2"})
    (snippet,) = _pasted(snap._repr_html_())
    ids = [i.id for i in snap.interrupts]
    assert snippet == "Command(resume={" + ", ".join(f"{i!r}: ANSWER" for i in ids) + "})"
    final = two.invoke(eval(snippet, {"Command": Command, "ANSWER": "yes"}), {"thread_id": "q2"})
    assert final["log"] == ["yes", "yes"]


def test_history_rows_show_the_keys_each_step_changed() -> None:
    """Each timeline row names the public keys its step changed, with the date."""
    app = review_loop()
    app.invoke({"log": []}, {"thread_id": "t4"})
    page = app.get_state_history({"thread_id": "t4"})._repr_html_()
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows]
    steps = [
        (
            html.unescape(re.sub("<[^>]+>", "", c[1])).strip("● ").split(" (")[0],
            set(re.sub("<[^>]+>", "", c[2]).split(", ")),
        )
        for c in cells
    ]
    assert steps[-1] == ("input", {"log"})
    assert steps[-2] == ("write", {"log", "draft"})  # and __seen, which is private
    assert steps[-3] == ("review", {"log", "rounds"})
    assert steps[-4] == ("write", {"log"})  # the same draft again
    assert "__seen" not in page
    assert re.search(r"\d{4}-\d\d-\d\d", page) and "text-align:right" not in page


def test_jupyter_text_of_a_snapshot_is_one_line_without_private_keys() -> None:
    """Beside the HTML card, Jupyter's text form is a line, not every value and id."""
    from IPython.lib.pretty import pretty

    app = review_loop()
    app.invoke({"log": []}, {"thread_id": "p1"})
    snap = app.get_state({"thread_id": "p1"})
    text = pretty(snap)
    assert text == "<StateSnapshot thread 'p1' step 6: next publish, 1 question(s) waiting>"
    assert "__seen" in repr(snap)  # repr still keeps every field, for debugging
    history = app.get_state_history({"thread_id": "p1"})
    assert pretty(history) == "<StateHistory: 7 checkpoints of thread 'p1', newest first>"
    assert pretty(app.get_state({"thread_id": "nope"})) == "<StateSnapshot: no such thread 'nope'>"


def test_a_breakpoint_pause_says_how_to_continue() -> None:
    """A run paused by interrupt_before says so, in the card and the drawing, with the call
    that continues it."""
    g = StateGraph().add_node("a", lambda s: {"x": 1}).add_node("b", lambda s: {"y": 2})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=MemorySaver(), interrupt_before=["b"])
    app.invoke({}, {"thread_id": "bp"})
    snap = app.get_state({"thread_id": "bp"})
    assert snap.at_breakpoint and snap.next == ("b",) and not snap.interrupts
    page = html.unescape(re.sub("<[^>]+>", "", snap._repr_html_()))
    assert "paused at a breakpoint, before b" in page
    assert "invoke(None, {'thread_id': 'bp'})" in page
    assert "paused at a breakpoint before b" in app.draw(thread_id="bp")
    assert snap.summary() == "<StateSnapshot thread 'bp' step 1: next b (paused at a breakpoint)>"
    app.invoke(None, {"thread_id": "bp"})
    assert not app.get_state({"thread_id": "bp"}).at_breakpoint
