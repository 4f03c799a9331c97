"""``ReactAgent``: a model that calls tools in a loop, as a graph of hook, model and tool nodes.

START -> [before_agent] -> [before_model] -> model -> [after_model]
      -> tool calls pending? -- yes --> tools -> return_direct? -- yes --> [after_agent] -> END
                             |                                 `-- no --> [before_model] ...
                             `-- no --> [after_agent] -> END
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from checkpoint.base import CheckpointSaver
from graphagent._internal.callables import as_state_config
from graphagent._internal.calls import unique_call_ids
from graphagent.agent._base import BaseAgent, agent_schema, compile_agent
from graphagent.agent._hooks import Hook
from graphagent.agent._interceptors import (
    ModelInterceptor,
    ModelRequest,
    ToolInterceptor,
    achain_model,
    chain_model,
)
from graphagent.agent._react_tools import TOOLS, ToolsStep, messages_of, pending_tool_calls
from graphagent.agent._record import AGENT_KEY, AgentRecord
from graphagent.agent._structured import StructuredOutput
from graphagent.agent._subagent import latest_user_text, render_instruction
from graphagent.config import RunnableConfig
from graphagent.errors import (
    MaxIterationsError,
    UserError,
)
from graphagent.graph import (
    END,
    START,
    Command,
    GraphLifecycleListener,
    KeyStrategy,
    OverAllState,
    StateGraph,
)
from graphagent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
)
from graphagent.models import ChatModel, ChatOptions, ChunkAccumulator
from graphagent.tools import (
    ToolCallback,
    ToolCallbackProvider,
    ToolCallbackResolver,
    ToolCallingManager,
    ToolExecutionExceptionProcessor,
    collect_tools,
)

__all__ = ["ReactAgent", "pending_tool_calls"]

MODEL = "model"
# the ways out of the model and tools nodes, named for the edges they label in drawings
ANSWER, AGAIN, TOOL_CALLS = "answer", "again", "tool calls"
RETURN_DIRECT, RESULTS = "return direct", "results"
# the one route whose reason a drawing cannot show: the key under every agent's drawing
AGAIN_NOTE = (
    "the model is asked again after feedback (a hook's, a rejected tool call, "
    "an answer that does not fit output_type)"
)


def _order(item: Any) -> int:
    """A hook's or interceptor's ``order``: the one sort key of both (lower first; the
    sort is stable, so equal orders keep list order)."""
    order = getattr(item, "order", 0)
    if not isinstance(order, int):
        what = "hook" if isinstance(item, Hook) else "interceptor"
        raise UserError(f"{what} {item!r} has order {order!r}; order must be an int (lower first)")
    return order


async def _then(result: Awaitable[Any], then: Callable[[Any], Any]) -> Any:
    """``then`` of what ``result`` gives once awaited (an async hook point's jump)."""
    return then(await result)


class ReactAgent(ToolsStep, BaseAgent):
    """A model that answers by calling tools in a loop (ReAct), built as a state graph.

    Args:
        name: the agent's name (also its graph's).
        model: a :class:`~graphagent.models.ChatModel`.
        tools: ``@tool`` functions, tool callbacks or plain functions.
        system_prompt: sent first on every model call (not stored in the thread).
        instruction: a message added once per run, before the input; ``{placeholders}``
            are filled from the input (``{input}`` is the user's text).
        description: what the agent does (used when it is a tool or sub-agent).
        hooks: :class:`Hook` objects; each hook point is its own graph node.
        interceptors: :class:`ModelInterceptor` / :class:`ToolInterceptor` objects,
            sorted by ``order`` as hooks are (lower is outer; equal orders in list
            order, so by default the first is outermost).
        saver: where threads are checkpointed (``MemorySaver()``, ``RedisSaver``).
        store: long-term memory shared across threads (``MemoryStore()``, ...): tools
            reach it as ``ctx.store``, hooks as ``config.store``; see
            :func:`~graphagent.agent.memory_tools` and
            :class:`~graphagent.agent.MemoryRecallInterceptor`.
        max_iterations: most model calls in one run; more raises ``MaxIterationsError``.
        method_tools: objects whose ``@tool`` methods become tools.
        tool_callback_providers: providers of more tools, asked again on every model call
            (so an MCP server's changed tool list counts).
        tool_names: tools referred to by name, found through ``resolver``.
        resolver: a :class:`ToolCallbackResolver` (or a function ``name -> tool``). Alone,
            it provides all its tools when it can list them; the tools step also falls
            back to it for a called name the agent does not have.
        output_type: a pydantic model: the final answer is validated into it and stored
            in ``state["structured_response"]``.
        tool_context: a mapping every tool sees as ``ToolContext.context``.
        options: model options for every call.
        tool_timeout: seconds each tool call may take. An async tool past it is
            cancelled; a sync tool cannot be stopped from outside (Python cannot kill a
            thread): the model is told the call timed out and the tool's
            ``ctx.cancellation`` token is set, for the tool to check and return.
        exception_processor: what tool failures become (default: a message for the model).
        output_schema: a JSON schema dict: the final answer must be JSON that fits it
            (checked: types, required fields, properties, items, enums) and is stored,
            parsed, in ``state["structured_response"]`` (instead of ``output_type``).
        input_schema: what a calling agent gives this one when it is a tool
            (:class:`AgentTool`): a pydantic model class or a JSON schema dict.
        output_key: also write the final answer (its text, or the structured answer) to
            this state key, where the agents after this one (and their ``instruction``
            placeholders) read it.
        output_key_strategy: how ``output_key`` merges (default: replace; e.g.
            ``AppendStrategy()`` to keep every round's answer in a ``LoopAgent``).
        include_contents: as a sub-agent, see the parent's conversation (``False``: only
            this agent's instruction and the parent's latest user message).
        return_reasoning_contents: as a sub-agent, hand every message (tool calls, tool
            results) back to the parent; by default only the final answer goes back.
        parallel_tool_execution: run the tool calls of one model answer at the same time
            (``False``: one after another, in order).
        max_parallel_tools: most tool calls of one model answer running at once
            (default: no bound besides the shared pool of 8 threads).
        release_thread: delete the thread from the saver once a run completes (not when
            it pauses for a human), for stateless deployments.
        listeners: :class:`~graphagent.graph.GraphLifecycleListener` objects told of
            every run's start, nodes, errors and end.

    Example:
        >>> from graphagent.models import FakeChatModel
        >>> from graphagent.messages import AssistantMessage, ToolCall
        >>> from graphagent.tools import tool
        >>> @tool
        ... def get_weather(city: str) -> str:
        ...     '''Get the weather for a city.'''
        ...     return f"Sunny in {city}"
        >>> call = ToolCall(id="1", name="get_weather", arguments='{"city": "Paris"}')
        >>> model = FakeChatModel([AssistantMessage(tool_calls=[call]), "It is sunny in Paris."])
        >>> agent = ReactAgent(name="weather", model=model, tools=[get_weather])
        >>> agent.call("Weather in Paris?").text
        'It is sunny in Paris.'
    """

    def __init__(
        self,
        name: str = "agent",
        model: ChatModel | None = None,
        tools: Iterable[Any] = (),
        *,
        system_prompt: str | None = None,
        instruction: str | None = None,
        description: str = "",
        hooks: Sequence[Hook] = (),
        interceptors: Sequence[ModelInterceptor | ToolInterceptor] = (),
        saver: CheckpointSaver | None = None,
        store: Any = None,
        max_iterations: int = 10,
        method_tools: Iterable[Any] = (),
        tool_callback_providers: Iterable[ToolCallbackProvider] = (),
        tool_names: Iterable[str] = (),
        resolver: ToolCallbackResolver | None = None,
        output_type: type[BaseModel] | None = None,
        tool_context: Mapping[str, Any] | None = None,
        options: ChatOptions | Mapping[str, Any] | None = None,
        tool_timeout: float | None = None,
        exception_processor: ToolExecutionExceptionProcessor | None = None,
        output_schema: Mapping[str, Any] | None = None,
        input_schema: type[BaseModel] | Mapping[str, Any] | None = None,
        output_key: str | None = None,
        output_key_strategy: KeyStrategy | None = None,
        include_contents: bool = True,
        return_reasoning_contents: bool = False,
        parallel_tool_execution: bool = True,
        max_parallel_tools: int | None = None,
        release_thread: bool = False,
        listeners: Sequence[GraphLifecycleListener] = (),
    ) -> None:
        if model is None:
            raise UserError(f"agent {name!r} needs a model: ReactAgent(name=..., model=...)")
        if max_iterations < 1:
            raise UserError("max_iterations must be at least 1")
        self.name = name
        self.model = model
        self.description = description
        self.system_prompt = system_prompt
        self._system = SystemMessage(system_prompt, id="system-prompt") if system_prompt else None
        self.instruction = instruction
        self.max_iterations = max_iterations
        self.output_type = output_type
        self.tool_context = dict(tool_context or {})
        self.options = ChatOptions.of(options)
        self.hooks = list(hooks)
        stray = [i for i in interceptors if not isinstance(i, (ModelInterceptor, ToolInterceptor))]
        if stray:
            raise UserError(
                f"interceptors must be ModelInterceptor or ToolInterceptor objects, got {stray!r}"
            )
        ordered = sorted(interceptors, key=_order)
        self.model_interceptors = [i for i in ordered if isinstance(i, ModelInterceptor)]
        self.tool_interceptors = [i for i in ordered if isinstance(i, ToolInterceptor)]
        self._providers = list(tool_callback_providers)
        brought = [t for i in interceptors for t in getattr(i, "provided_tools", ())]
        self.toolset: dict[str, ToolCallback] = collect_tools(
            tools=[*tools, *brought],
            method_tools_of=method_tools,
            providers=self._providers,
            names=tool_names,
            resolver=resolver,
        )
        provided = {t.definition.name for p in self._providers for t in p.tool_callbacks()}
        self._fixed_tools = {n: t for n, t in self.toolset.items() if n not in provided}
        self.resolver = resolver
        if max_parallel_tools is not None and max_parallel_tools < 1:
            raise UserError(f"max_parallel_tools must be at least 1, got {max_parallel_tools}")
        self.manager = ToolCallingManager(
            exception_processor=exception_processor,
            timeout=tool_timeout,
            parallel=parallel_tool_execution,
            max_parallel=max_parallel_tools,
        )
        self.output_key = output_key
        self.input_schema = input_schema
        self.output_key_strategy = output_key_strategy
        self.include_contents = include_contents
        self.return_reasoning_contents = return_reasoning_contents
        self.release_thread = release_thread
        self._schema = agent_schema(name, output_key, output_key_strategy)
        self.output_schema = dict(output_schema) if output_schema is not None else None
        self._output: StructuredOutput | None = None
        if output_type is not None or output_schema is not None:
            self._output = StructuredOutput(
                name,
                output_type,
                output_schema,
                bool(getattr(model, "supports_response_format", False)),
                set(self.toolset),
            )
        self.structured = self._output is not None
        self._output_tool = self._output.tool if self._output is not None else None
        self.store = store
        self.graph = compile_agent(
            self._build(),
            saver,
            name,
            self,
            store=store,
            edge_notes={AGAIN: AGAIN_NOTE},
            listeners=listeners,
        )

    # -- building the graph ----------------------------------------------------------------

    def _hook_nodes(self) -> dict[str, list[tuple[str, Hook]]]:
        by_point: dict[str, list[tuple[str, Hook]]] = {
            p: [] for p in ("before_agent", "before_model", "after_model", "after_agent")
        }
        seen: dict[str, Hook] = {}
        for hook in sorted(self.hooks, key=_order):
            if not isinstance(hook, Hook):
                raise UserError(f"hooks must be Hook objects (AgentHook, ModelHook), got {hook!r}")
            if hook.name in seen:
                raise UserError(
                    f"two hooks are named {hook.name!r} ({seen[hook.name]!r} and {hook!r}); "
                    "hook names must be unique: pass name=... to one of them"
                )
            seen[hook.name] = hook
            points = hook.points()
            for point in points:
                node = hook.name if len(points) == 1 else f"{hook.name}.{point}"
                by_point[point].append((node, hook))
        by_point["after_model"].reverse()
        by_point["after_agent"].reverse()
        return by_point

    def _build(self) -> StateGraph:
        hooks = self._hook_nodes()
        ba, bm, am, aa = (
            [n for n, _ in hooks[p]]
            for p in ("before_agent", "before_model", "after_model", "after_agent")
        )
        has_tools = self._has_tools = bool(self.toolset) or self.resolver is not None
        model_entry = bm[0] if bm else MODEL
        end_entry = aa[0] if aa else END
        jumps = {"end": end_entry, "model": model_entry, "tools": TOOLS if has_tools else None}

        g = StateGraph(self._schema)
        for point, entries in hooks.items():
            for node, hook in entries:
                targets = tuple(jumps[j] for j in hook.can_jump_to if jumps.get(j) is not None)
                g.add_node(
                    node,
                    self._hook_fn(hook, point, jumps),
                    kind="hook",
                    destinations=targets,  # type: ignore[arg-type]
                )
        g.add_node(MODEL, self._model_node, kind="model", afn=self._amodel_node)
        if has_tools:
            g.add_node(
                TOOLS,
                self._tools_node,
                kind="tools",
                afn=self._atools_node,
                metadata={"tools": tuple(self.toolset)},  # listed in the drawing
            )

        def chain(nodes: list[str], then: str) -> None:
            for a, b in zip(nodes, [*nodes[1:], then][: len(nodes)], strict=True):
                g.add_edge(a, b)

        g.add_edge(START, [*ba, model_entry][0])
        chain(ba, model_entry)
        chain(bm, MODEL)
        after_model_exit = am[-1] if am else MODEL
        if am:
            g.add_edge(MODEL, am[0])
            chain(am[:-1], am[-1])
        # keyed by what each way means, so drawings label the edges with it
        routes = {ANSWER: end_entry, AGAIN: model_entry}
        if has_tools:
            routes[TOOL_CALLS] = TOOLS
        g.add_conditional_edges(
            after_model_exit,
            lambda s: self._route_after_model(s, has_tools),
            routes,
        )
        if has_tools:
            g.add_conditional_edges(
                TOOLS,
                lambda s: RETURN_DIRECT if AgentRecord.of(s).run_finished else RESULTS,
                {RETURN_DIRECT: end_entry, RESULTS: model_entry},
            )
        chain(aa, END)
        return g

    @staticmethod
    def _route_after_model(state: OverAllState, has_tools: bool) -> str:
        if AgentRecord.of(state).run_finished:
            return ANSWER
        messages = messages_of(state)
        _, pending = pending_tool_calls(messages)
        if pending and has_tools:
            return TOOL_CALLS
        if messages and not isinstance(messages[-1], AssistantMessage):
            return AGAIN  # feedback or answered calls: ask the model again
        return ANSWER

    def _hook_fn(
        self, hook: Hook, point: str, jumps: Mapping[str, str | None]
    ) -> Callable[[OverAllState, RunnableConfig], Any]:
        # a point may take the config positionally, keyword-only or not at all
        method = as_state_config(getattr(hook, point))

        def run(state: OverAllState, config: RunnableConfig) -> Any:
            result = method(state, config)
            if inspect.isawaitable(result):  # an async point: read its jump once awaited
                return _then(result, jump)
            return jump(result)

        def jump(result: Any) -> Any:
            # a Command for the parent graph (a handoff) passes through as it is
            if isinstance(result, Command) and result.goto is not None and result.graph is None:
                goto = [result.goto] if isinstance(result.goto, str) else list(result.goto)
                targets = []
                for g in goto:
                    key = "end" if g == END else g
                    target = jumps.get(key)
                    if target is None:
                        raise UserError(
                            f"hook {hook.name!r} jumped to {g!r}; use 'end', 'model' or 'tools' "
                            "(tools only when the agent has tools)"
                        )
                    if key not in hook.can_jump_to:
                        raise UserError(
                            f"hook {hook.name!r} jumped to {key!r} but does not declare it: set "
                            f"can_jump_to=({key!r},) on the hook"
                        )
                    targets.append(target)
                return Command(update=result.update, goto=targets)
            return result

        run.__name__ = f"{hook.name}.{point}"
        return run

    # -- the model node ----------------------------------------------------------------------

    def _request(
        self, state: OverAllState, config: RunnableConfig, record: AgentRecord
    ) -> tuple[list[Message], list[Any], ChatOptions | None]:
        """What the model is sent: messages, tools and options."""
        run_calls = record.run_model_calls
        if run_calls >= self.max_iterations:
            raise MaxIterationsError(
                f"agent {self.name!r} called its model {run_calls} times in one run without "
                f"finishing (max_iterations={self.max_iterations}); raise max_iterations, or "
                "add a hook that ends the run (e.g. ModelCallLimitHook)"
            )
        history = messages_of(state)
        messages: list[Message] = (
            [self._system, *history] if self._system is not None else list(history)
        )
        tools: list[Any] = [t.definition for t in self._tools_now(config).values()]
        if self._output_tool is not None:
            tools.append(self._output_tool)
        options = self.options
        if self._output is not None:
            options = self._output.options(options)
        return messages, tools, options

    def _emit(self, config: RunnableConfig, payload: Any, node: str) -> None:
        if config.emit is not None:
            config.emit("messages", (payload, {"agent": self.name, "node": node}))

    def _call_model(self, request: ModelRequest) -> AssistantMessage:
        return self._generate(
            request.model, request.messages, request.tools, request.options, request.config
        )

    def _generate(
        self,
        model: ChatModel,
        messages: list[Message],
        tools: list[Any],
        options: ChatOptions | None,
        config: RunnableConfig,
    ) -> AssistantMessage:
        if config.emit is None:
            return model.generate(messages, tools=tools, options=options)
        acc = ChunkAccumulator()
        for chunk in model.stream(messages, tools=tools, options=options):
            acc.add(chunk)
            self._emit(config, chunk, MODEL)
        return acc.message()

    async def _acall_model(self, request: ModelRequest) -> AssistantMessage:
        if request.config.emit is None:
            return await request.model.agenerate(
                request.messages, tools=request.tools, options=request.options
            )
        acc = ChunkAccumulator()
        async for chunk in request.model.astream(
            request.messages, tools=request.tools, options=request.options
        ):
            acc.add(chunk)
            self._emit(request.config, chunk, MODEL)
        return acc.message()

    def _model_node(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        record = AgentRecord.of(state)
        messages, tools, options = self._request(state, config, record)
        if self.model_interceptors:
            request = ModelRequest(self.model, messages, tools, options, state, config)
            response = chain_model(self.model_interceptors, self._call_model)(request)
        else:  # nobody to see a request: call the model with its parts
            response = self._generate(self.model, messages, tools, options, config)
        # answers are matched to calls by id, and some servers reuse ids in one answer
        return self._after_model_response(record, unique_call_ids(response))

    async def _amodel_node(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        record = AgentRecord.of(state)
        messages, tools, options = self._request(state, config, record)
        request = ModelRequest(self.model, messages, tools, options, state, config)
        response = await achain_model(self.model_interceptors, self._acall_model)(request)
        return self._after_model_response(record, unique_call_ids(response))

    def _after_model_response(
        self, record: AgentRecord, response: AssistantMessage
    ) -> dict[str, Any]:
        counts = {
            "run_model_calls": record.run_model_calls + 1,
            "model_calls": record.model_calls + 1,
        }
        update: dict[str, Any] = {"messages": [response], AGENT_KEY: counts}
        if self._output is not None:
            structured, fields = self._output.check(record, response)
            update.update(structured)
            counts.update(fields)
        if self.output_key is not None:
            value = self._final(update, response)
            if value is not None:
                update[self.output_key] = value
        return update

    def _final(self, update: Mapping[str, Any], response: AssistantMessage) -> Any:
        """The final answer this model response gives (``None``: not a final answer)."""
        if "structured_response" in update:
            value = update["structured_response"]
            return value
        if self._output is not None or response.tool_calls:
            return None  # a structured agent answers only through its structured answer
        return response.text

    # -- input --------------------------------------------------------------------------------

    def prepare_input(self, input: Any) -> Any:
        """As :meth:`BaseAgent.prepare_input`, plus the templated ``instruction``."""
        prepared = super().prepare_input(input)
        if self.instruction and isinstance(prepared, dict):
            messages = list(prepared.get("messages", []))
            fields = {k: v for k, v in prepared.items() if k != "messages"}
            fields["input"] = latest_user_text(messages)
            text = render_instruction(self.instruction, fields)
            prepared["messages"] = [SystemMessage(text), *messages]
        return prepared

    def prepare_sub_input(self, messages: list[Message]) -> Any:
        """As a composite agent's node: ``messages`` already hold the instruction."""
        return BaseAgent.prepare_input(self, {"messages": messages})
