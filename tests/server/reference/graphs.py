"""LangGraph equivalents of ``tests/server/targets.py``, for ``langgraph dev``.

The server tests run against ``langgraph dev`` serving these (``run.sh``) to check that
our reading of the protocol is LangGraph's. Not imported by the test suite.
"""

from __future__ import annotations

import asyncio
import json
import operator
import time
from typing import Annotated, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt
from typing_extensions import TypedDict


class Scripted(BaseChatModel):
    """Model -> tool -> model, as the graphagent targets script it."""

    tool_name: str = "get_weather"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _answer(self, messages: list[Any]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(f"It is {last.content}.")
        city = str(last.content).rsplit(" ", 1)[-1].strip("?") or "Paris"
        call = {"name": self.tool_name, "args": {"city": city}, "id": f"call-{len(messages)}"}
        return AIMessage("", tool_calls=[call])

    def _generate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _stream(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        answer = self._answer(messages)
        if answer.tool_calls:
            call = answer.tool_calls[0]
            chunk = AIMessageChunk(
                "",
                tool_call_chunks=[
                    {
                        "name": call["name"],
                        "args": json.dumps(call["args"]),
                        "id": call["id"],
                        "index": 0,
                    }
                ],
            )
            yield ChatGenerationChunk(message=chunk)
            return
        text = str(answer.content)
        for i in range(0, len(text), 4):
            piece = ChatGenerationChunk(message=AIMessageChunk(text[i : i + 4]))
            if run_manager:
                run_manager.on_llm_new_token(text[i : i + 4], chunk=piece)
            yield piece


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"sunny in {city}"


@tool
def slow_lookup(city: str) -> str:
    """Look a city up, slowly."""
    time.sleep(0.4)
    return f"sunny in {city}"


def _react(model: Scripted, tools: list[Any]) -> Any:
    """A ReAct loop with the node names of a graphagent ReactAgent (model, tools)."""

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return (
        StateGraph(MessagesState)
        .add_node("model", call_model)
        .add_node("tools", ToolNode(tools))
        .add_edge(START, "model")
        .add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
        .add_edge("tools", "model")
        .compile()
    )


assistant = _react(Scripted(), [get_weather])
slow_assistant = _react(Scripted(tool_name="slow_lookup"), [slow_lookup])


class AskState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    draft: str


def _draft(state: AskState) -> dict[str, Any]:
    return {"log": ["drafted"], "draft": "hello"}


def _ask(state: AskState) -> dict[str, Any]:
    answer = interrupt({"question": "approve?", "draft": state.get("draft", "")})
    return {"log": [f"answer:{answer}"]}


asker = (
    StateGraph(AskState)
    .add_node("draft", _draft)
    .add_node("ask", _ask)
    .add_edge(START, "draft")
    .add_edge("draft", "ask")
    .add_edge("ask", END)
    .compile()
)


class SlowState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    delay: float
    fail: bool
    tag: str


async def _work(state: SlowState) -> dict[str, Any]:
    get_stream_writer()({"progress": "started"})
    await asyncio.sleep(float(state.get("delay") or 0))
    if state.get("fail"):
        raise ValueError("asked to fail")
    return {"log": [f"done:{state.get('tag', '')}"]}


slow = (
    StateGraph(SlowState)
    .add_node("work", _work)
    .add_edge(START, "work")
    .add_edge("work", END)
    .compile()
)
