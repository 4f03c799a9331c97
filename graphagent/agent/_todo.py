"""A todo list the model keeps while it works: the ``write_todos`` tool, and the
interceptor that offers it and explains it (Spring AI Alibaba's ``TodoListInterceptor``
and ``WriteTodosTool``). The list lives in ``state["todos"]``, checkpointed with the
thread, so the user (and the next run) sees the plan and its progress.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from graphagent.agent._interceptors import ModelHandler, ModelInterceptor, ModelRequest
from graphagent.messages import AssistantMessage, SystemMessage
from graphagent.tools import FunctionToolCallback, ToolCallback, ToolContext

__all__ = ["TODOS_KEY", "Todo", "TodoListInterceptor", "write_todos_tool"]

TODOS_KEY = "todos"
"""The state key the todo list is kept under."""

TODO_PROMPT = """## `write_todos`

You have the `write_todos` tool to plan and track complex, multi-step objectives.
Use it for work of three or more distinct steps; skip it for simple requests.
Mark a todo `in_progress` before you start it and `completed` as soon as it is done
(do not batch completions); keep exactly one todo `in_progress` at a time. Revise the
list when you learn something new. Never call `write_todos` several times in parallel:
each call replaces the whole list."""

TODO_TOOL_DESCRIPTION = (
    "Create or update your todo list for the current task: pass the whole list each time "
    "(it replaces the previous one). Each todo has `content` (what to do, imperative), "
    "`status` (pending, in_progress or completed) and optionally `active_form` (what is "
    "being done, e.g. 'Running tests'). Use it for tasks of three or more steps; mark "
    "todos completed as soon as they are done."
)

_DONE = (
    "Todos have been modified successfully. Keep using the todo list to track your "
    "progress, and proceed with the current task if applicable."
)


class Todo(BaseModel):
    """One item of the todo list."""

    content: str = Field(description="What to do, in the imperative ('Run the tests').")
    status: Literal["pending", "in_progress", "completed"] = Field(
        description="pending, in_progress or completed."
    )
    active_form: str | None = Field(
        default=None, description="What is being done, e.g. 'Running the tests'."
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a todo's content must not be blank")
        return value


class _WriteTodos(BaseModel):
    todos: list[Todo] = Field(description="The whole todo list, in order.")


def write_todos_tool(
    *,
    name: str = "write_todos",
    description: str = TODO_TOOL_DESCRIPTION,
    on_change: Callable[[list[Todo]], None] | None = None,
) -> ToolCallback:
    """The ``write_todos`` tool: it replaces ``state["todos"]`` with the list it is given
    (as plain dicts, so every saver stores them) and calls ``on_change`` with it."""

    def write_todos(args: _WriteTodos, ctx: ToolContext) -> str:
        ctx.update_state({TODOS_KEY: [t.model_dump(exclude_none=True) for t in args.todos]})
        if on_change is not None:
            on_change(list(args.todos))
        return _DONE

    return FunctionToolCallback(name, write_todos, description=description, input_type=_WriteTodos)


class TodoListInterceptor(ModelInterceptor):
    """Give the agent a todo list: adds the ``write_todos`` tool to the agent and
    explains it in the system prompt of every model call.

    Args:
        system_prompt: the explanation added to the system prompt.
        tool_description: the tool's description.
        on_change: called with the new list each time the model writes it.

    Example:
        >>> from graphagent.agent import ReactAgent
        >>> from graphagent.messages import AssistantMessage, ToolCall
        >>> from graphagent.models import FakeChatModel
        >>> plan = ToolCall(id="1", name="write_todos",
        ...                 arguments='{"todos": [{"content": "Read", "status": "completed"}]}')
        >>> model = FakeChatModel([AssistantMessage(tool_calls=[plan]), "Done."])
        >>> agent = ReactAgent(name="a", model=model, interceptors=[TodoListInterceptor()])
        >>> agent.invoke("Read the file.")["todos"]
        [{'content': 'Read', 'status': 'completed'}]
    """

    def __init__(
        self,
        *,
        system_prompt: str = TODO_PROMPT,
        tool_description: str = TODO_TOOL_DESCRIPTION,
        on_change: Callable[[list[Todo]], None] | None = None,
    ) -> None:
        self.system_prompt = system_prompt
        self._tools = (write_todos_tool(description=tool_description, on_change=on_change),)

    @property
    def provided_tools(self) -> Sequence[Any]:
        """The ``write_todos`` tool, added to the agent's tools."""
        return self._tools

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        """Add the todo instructions to the system prompt."""
        messages = list(request.messages)
        if messages and isinstance(messages[0], SystemMessage):
            first = messages[0]
            messages[0] = first.model_copy(
                update={"content": f"{first.text}\n\n{self.system_prompt}"}
            )
        else:
            messages.insert(0, SystemMessage(self.system_prompt))
        return handler(request.override(messages=messages))
