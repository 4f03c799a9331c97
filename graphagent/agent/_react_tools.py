"""The tools half of ``ReactAgent``: which tools a step may run, running them (with the
tool interceptors), and folding their results and ``update_state`` writes into the update.

``ToolsStep`` is a mixin: ``ReactAgent`` builds the graph and owns the attributes declared
below; this module owns what the tools node does with them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from graphagent._internal.results import split_output
from graphagent.agent._base import AGENT_SCHEMA
from graphagent.agent._interceptors import ToolInterceptor, ToolRequest, achain_tool, chain_tool
from graphagent.agent._record import AGENT_KEY, AgentRecord
from graphagent.config import RunnableConfig
from graphagent.errors import UserError
from graphagent.graph import MISSING, OverAllState
from graphagent.messages import AssistantMessage, Message, ToolCall, ToolResponseMessage
from graphagent.tools import (
    ToolCallback,
    ToolCallbackProvider,
    ToolCallbackResolver,
    ToolCallingManager,
    ToolContext,
    ToolExecutionResult,
    acall_tool,
    call_tool,
    collect_tools,
)

__all__ = ["TOOLS", "ToolsStep", "messages_of", "pending_tool_calls"]

TOOLS = "tools"


def pending_tool_calls(
    messages: Sequence[Message],
) -> tuple[AssistantMessage | None, list[ToolCall]]:
    """The last assistant message and those of its tool calls that have no answer yet."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, AssistantMessage):
            if i == len(messages) - 1:  # the model just answered: nothing is answered yet
                return message, list(message.tool_calls)
            answered = {
                m.tool_call_id for m in messages[i + 1 :] if isinstance(m, ToolResponseMessage)
            }
            return message, [c for c in message.tool_calls if c.id not in answered]
    return None, []


def _message(call: ToolCall, output: Any) -> ToolResponseMessage:
    """What a tool returned (text, parts) as the message an interceptor receives."""
    if isinstance(output, ToolResponseMessage):
        return output
    text, parts = split_output(output)
    return ToolResponseMessage(text, tool_call_id=call.id, name=call.name, parts=parts)


def messages_of(state: Mapping[str, Any]) -> Sequence[Message]:
    """``state.get("messages", [])`` in one call (a Mapping's get is two Python calls)."""
    try:
        return state["messages"]  # type: ignore[no-any-return]
    except KeyError:
        return []


class ToolsStep:
    """The tools node's behaviour, mixed into ``ReactAgent`` (which sets these attributes)."""

    name: str
    toolset: dict[str, ToolCallback]
    resolver: ToolCallbackResolver | None
    manager: ToolCallingManager
    tool_context: dict[str, Any]
    tool_interceptors: list[ToolInterceptor]
    _providers: list[ToolCallbackProvider]
    _fixed_tools: dict[str, ToolCallback]
    _has_tools: bool
    output_key: str | None

    def _emit(self, config: RunnableConfig, payload: Any, node: str) -> None:
        raise NotImplementedError  # ReactAgent's

    def _tools_now(self, config: RunnableConfig) -> dict[str, ToolCallback]:
        # providers are asked again on every model call (as Spring AI does), so tools a
        # provider gained or lost since the agent was built (MCP tools/list_changed) count
        toolset = self.toolset
        if self._providers:
            toolset = collect_tools(tools=self._fixed_tools, providers=self._providers)
        added = config.configurable.get("tools")
        names = config.configurable.get("tool_names")
        if not added and names is None:
            return toolset
        return self._per_request(toolset, added or (), names)

    def _resolve(self, name: str) -> ToolCallback | None:
        """The resolver's tool for ``name`` (a resolver object, or a plain function)."""
        resolver = self.resolver
        assert resolver is not None
        if isinstance(resolver, ToolCallbackResolver):
            return resolver.resolve(name)
        found: ToolCallback | None = resolver(name)
        return found

    def _executable(self, config: RunnableConfig, calls: list[ToolCall]) -> dict[str, ToolCallback]:
        """The tools the tools step may run: those offered, plus what the resolver knows
        of the called names (as Spring AI Alibaba's tool node does), unless this run
        narrowed the tools to ``tool_names``."""
        tools = self._tools_now(config)
        if self.resolver is None or config.configurable.get("tool_names") is not None:
            return tools
        found = {}
        for call in calls:
            if call.name not in tools:
                resolved = self._resolve(call.name)
                if resolved is not None:
                    found[call.name] = resolved
        return {**tools, **found} if found else tools

    def _per_request(
        self, toolset: dict[str, ToolCallback], added: Iterable[Any], names: Iterable[str] | None
    ) -> dict[str, ToolCallback]:
        """The agent's tools plus this run's ``tools``, narrowed to ``tool_names``."""
        if not self._has_tools:
            raise UserError(
                f"agent {self.name!r} was built without tools, so it has no tools step and "
                "cannot take tools per request; give it tools=[...] (or resolver=...) "
                "when you build it"
            )
        if isinstance(names, str):
            raise UserError(f"tool_names takes a list of names, got the string {names!r}")
        merged = collect_tools(tools=[*toolset.values(), *added]) if added else toolset
        if names is None:
            return merged
        narrowed: dict[str, ToolCallback] = {}
        for name in names:
            found = merged.get(name)
            if found is None and self.resolver is not None:
                found = self._resolve(name)
            if found is None:
                raise UserError(
                    f"tool_names names {name!r}, which agent {self.name!r} does not have; "
                    f"it has {sorted(merged)}"
                )
            narrowed[name] = found
        return narrowed

    # -- the tools node ----------------------------------------------------------------------

    def _tool_context(self, state: OverAllState, config: RunnableConfig) -> ToolContext:
        extra = config.configurable.get("tool_context") or {}
        return ToolContext(state=state, config=config, context={**self.tool_context, **extra})

    def _tool_request(self, call: ToolCall, tool: ToolCallback, ctx: ToolContext) -> ToolRequest:
        return ToolRequest(call, tool, ctx, ctx.state, ctx.config)

    # The interceptors' message goes back whole (text, images, files, metadata): the
    # manager makes the call's one stored and streamed message from it.
    def _invoke_tool(
        self, call: ToolCall, tool: ToolCallback, ctx: ToolContext
    ) -> ToolResponseMessage:
        def base(request: ToolRequest) -> ToolResponseMessage:
            assert request.tool is not None
            output = call_tool(request.tool, request.tool_call.arguments, request.context)
            return _message(request.tool_call, output)

        return chain_tool(self.tool_interceptors, base)(self._tool_request(call, tool, ctx))

    async def _ainvoke_tool(
        self, call: ToolCall, tool: ToolCallback, ctx: ToolContext
    ) -> ToolResponseMessage:
        async def base(request: ToolRequest) -> ToolResponseMessage:
            assert request.tool is not None
            output = await acall_tool(request.tool, request.tool_call.arguments, request.context)
            return _message(request.tool_call, output)

        handler = achain_tool(self.tool_interceptors, base)
        return await handler(self._tool_request(call, tool, ctx))

    def _split(
        self, state: OverAllState
    ) -> tuple[AssistantMessage | None, list[ToolCall], list[ToolCall], AgentRecord]:
        last, pending = pending_tool_calls(messages_of(state))
        record = AgentRecord.of(state)
        answers = record.answers
        runnable = [c for c in pending if c.id not in answers] if answers else pending
        return last, pending, runnable, record

    def _tools_node(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        last, pending, runnable, record = self._split(state)
        if last is None or not pending:
            return {}
        answered = self._answered(config, pending, record.answers)
        tools = self._executable(config, runnable)
        invoke = self._invoke_tool if self.tool_interceptors else None
        on_response = (lambda m: self._emit(config, m, TOOLS)) if config.emit else None
        # the context is made only if a tool or an interceptor can see it
        result = self.manager.execute_tool_calls(
            [],
            last,
            tools=tools,
            context=functools.partial(self._tool_context, state, config),
            calls=runnable,
            invoke=invoke,
            on_response=on_response,
        )
        return self._after_tools(record, pending, result, answered)

    async def _atools_node(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        last, pending, runnable, record = self._split(state)
        if last is None or not pending:
            return {}
        answered = self._answered(config, pending, record.answers)
        tools = self._executable(config, runnable)
        invoke = self._ainvoke_tool if self.tool_interceptors else None
        on_response = (lambda m: self._emit(config, m, TOOLS)) if config.emit else None
        result = await self.manager.aexecute_tool_calls(
            [],
            last,
            tools=tools,
            context=functools.partial(self._tool_context, state, config),
            calls=runnable,
            invoke=invoke,
            on_response=on_response,
        )
        return self._after_tools(record, pending, result, answered)

    def _answered(
        self, config: RunnableConfig, pending: list[ToolCall], answers: Mapping[str, str]
    ) -> dict[str, ToolResponseMessage]:
        """The messages of calls answered without running (a human rejected them), by
        call id; streamed now, stored by :meth:`_after_tools` (the same objects, so
        the streamed and stored ids agree)."""
        made = {
            c.id: ToolResponseMessage(answers[c.id], tool_call_id=c.id, name=c.name)
            for c in pending
            if c.id in answers
        }
        if config.emit is not None:
            for message in made.values():
                self._emit(config, message, TOOLS)
        return made

    def _after_tools(
        self,
        record: AgentRecord,
        pending: list[ToolCall],
        result: ToolExecutionResult,
        answered: Mapping[str, ToolResponseMessage],
    ) -> dict[str, Any]:
        answers = record.answers
        responses: list[Message]
        if not answers:  # every pending call ran: its results are in call order
            responses = list(result.tool_responses)
        else:
            executed = {m.tool_call_id: m for m in result.tool_responses}
            responses = [
                executed.get(c.id)
                or answered.get(c.id)
                or ToolResponseMessage("", tool_call_id=c.id, name=c.name)
                for c in pending
            ]
        run_counts = dict(record.run_tool_calls)
        thread_counts = dict(record.tool_calls)
        for call in pending:
            if call.id in answers:
                continue  # pre-answered calls did not run
            run_counts[call.name] = run_counts.get(call.name, 0) + 1
            thread_counts[call.name] = thread_counts.get(call.name, 0) + 1
        fields: dict[str, Any] = {"run_tool_calls": run_counts, "tool_calls": thread_counts}
        if answers:
            fields["answers"] = {}  # used up: they answered these calls
        update: dict[str, Any] = {AGENT_KEY: fields}
        if result.return_direct and not answers:
            text = "\n".join(m.content for m in result.tool_responses)
            responses.append(AssistantMessage(text, metadata={"return_direct": True}))
            fields["run_finished"] = True
            if self.output_key is not None:
                update[self.output_key] = text
        # tools' update_state writes, merged in call order through the key strategies
        for tool_update in result.state_updates:
            for key, value in tool_update.items():
                strategy = AGENT_SCHEMA.get(key)
                if strategy is None or strategy.replaces:
                    update[key] = value
                else:
                    update[key] = strategy.merge(update.get(key, MISSING), value)
        update["messages"] = responses + list(update.get("messages", []))
        return update
