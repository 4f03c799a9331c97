"""The exception tree of graphagent.

Everything the library raises on purpose derives from :class:`GraphAgentError`.
Developer mistakes (a graph that cannot work, a bad update) are kept apart from
failures of a run, and both apart from the control-flow signal of an interrupt::

    GraphAgentError
    ├── UserError                       the code using graphagent is wrong; fix the code
    │   ├── GraphValidationError        compile() found a graph that cannot run
    │   ├── InvalidUpdateError          a node returned an update the state cannot take
    │   ├── InvalidRouteError           a router returned a target that does not exist
    │   ├── EmptyInputError             a run was started with nothing to do
    │   ├── ModelConfigError            a model client lacks a setting (an API key)
    │   ├── ToolDefinitionError         a tool's signature or options are unusable
    │   ├── ThreadAccessError           a served caller named a thread it did not start
    │   └── TaskReplayError             a resumed entrypoint called its tasks in another order
    ├── RunError                        the run itself failed
    │   ├── GraphRecursionError         more super-steps than ``recursion_limit``
    │   ├── MaxIterationsError          the agent looped more than ``max_iterations``
    │   ├── LimitExceededError          a call-limit hook stopped the run
    │   ├── StructuredOutputError       the final answer did not fit ``output_type``
    │   ├── ToolArgumentsError          a model's arguments do not fit a tool's schema
    │   ├── ToolExecutionError          a tool failed and the failure was not sent back
    │   ├── ToolCancelledError          a sync tool saw its cancellation token set (timeout)
    │   ├── PIIDetectionError           a PII hook with strategy "block" found personal data
    │   └── ModelError                  a chat model call failed
    │       ├── ModelHTTPError          the provider answered with an HTTP error
    │       ├── ModelTimeoutError       the provider did not answer in time
    │       └── ModelResponseError      the provider's answer could not be understood
    ├── CheckpointError                 mirrors ``checkpoint.CheckpointError``
    │   ├── CheckpointConflictError
    │   │   └── ThreadLockedError
    │   ├── CheckpointNotFoundError
    │   ├── CheckpointStorageError
    │   └── SerializationError

    GraphBubbleUp (a BaseException)     control flow, never an error
    └── GraphInterrupt                  a node (or a tool inside it) paused the run

    ThreadNotKeptWarning (a UserWarning) a run named a thread its agent cannot keep

Control-flow signals derive from :class:`GraphBubbleUp`, a ``BaseException``, so that
``except Exception`` anywhere between the signal and the engine (a tool's own code, the
tools manager, interceptors, retry and fallback wrappers, hooks) lets them through.

An exception raised inside a node is *not* wrapped: it propagates as itself, with
the node's name in ``exc.graphagent_node`` (and, on Python 3.11+, in a note).
"""

from __future__ import annotations

from typing import Any

import checkpoint.errors as _cp

__all__ = [
    "CheckpointConflictError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStorageError",
    "EmptyInputError",
    "GraphAgentError",
    "GraphBubbleUp",
    "GraphInterrupt",
    "GraphRecursionError",
    "GraphValidationError",
    "InvalidRouteError",
    "InvalidUpdateError",
    "LimitExceededError",
    "MaxIterationsError",
    "ModelConfigError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelTimeoutError",
    "PIIDetectionError",
    "RunError",
    "SerializationError",
    "StructuredOutputError",
    "TaskReplayError",
    "ThreadAccessError",
    "ThreadLockedError",
    "ThreadNotKeptWarning",
    "ToolArgumentsError",
    "ToolCancelledError",
    "ToolDefinitionError",
    "ToolExecutionError",
    "UserError",
]


class GraphAgentError(Exception):
    """Root of every exception graphagent raises on purpose."""


class UserError(GraphAgentError):
    """The code using graphagent is wrong; the message says what to change."""


class GraphValidationError(UserError):
    """``compile()`` found a graph that cannot run (names the node and the fix)."""


class InvalidUpdateError(UserError):
    """A node returned an update the state cannot take (unknown shape, conflicting writes)."""


class InvalidRouteError(UserError):
    """A router or ``Command.goto`` named a target that is not in the graph."""


class EmptyInputError(UserError):
    """A run was started with no input and nothing to continue."""


class ModelConfigError(UserError):
    """A chat model client lacks a setting it needs before it can send (an API key).

    Raised at the first request, before anything is sent. ``variable`` names the
    environment variable to set (``"OPENAI_API_KEY"``), so that a command line can say
    exactly that in one line.
    """

    def __init__(self, message: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class ToolDefinitionError(UserError):
    """A tool's signature or options cannot be turned into a tool."""


class ThreadAccessError(UserError):
    """A caller of a served agent (MCP, A2A, HTTP) named a thread it did not start.

    Served callers reach only the threads they started; the message says how to start one.
    """


class TaskReplayError(UserError):
    """A resumed entrypoint (or node) called its tasks (``@task``) in another order than the run
    it resumes: the recorded results cannot be matched to the calls.

    Entrypoint code must call its tasks in the same order on every run of one step (take
    clocks, random numbers and reads of changing data inside tasks). The message names the
    first call that differs.
    """


class RunError(GraphAgentError):
    """The run failed for a reason other than a mistake in the calling code."""


class GraphRecursionError(RunError):
    """The run needed more super-steps than ``config.recursion_limit`` allows."""


class MaxIterationsError(RunError):
    """The agent called the model more than ``max_iterations`` times in one run."""


class LimitExceededError(RunError):
    """A model- or tool-call limit hook stopped the run (``exit_behavior="error"``)."""


class StructuredOutputError(RunError):
    """The model's final answer did not validate into ``output_type``, even after a retry."""


class ToolArgumentsError(RunError):
    """The arguments a model sent do not fit the tool's schema (invalid JSON, wrong types).

    By default the message is sent back to the model so it can try again.
    """


class ToolExecutionError(RunError):
    """A tool failed and the exception processor chose to raise, not to tell the model.

    Attributes:
        tool_name: the tool that failed.
        tool_call_id: the model's id for the failed call.
    """

    def __init__(self, message: str, *, tool_name: str = "", tool_call_id: str = "") -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class ToolCancelledError(RunError):
    """A tool stopped because its call was cancelled (it ran past the tool timeout).

    Raised by ``ToolContext.cancellation.raise_if_cancelled()`` inside a sync tool; the
    tools step has already answered the model that the call timed out.
    """


class PIIDetectionError(RunError):
    """A :class:`~graphagent.agent.PIIDetectionHook` with ``strategy="block"`` found
    personal data (the message names the kinds found, never the data).

    Attributes:
        pii_types: the kinds of data found (``"email"``, ``"credit_card"``, ...).
    """

    def __init__(self, message: str, *, pii_types: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.pii_types = pii_types


class ModelError(RunError):
    """A chat model call failed."""


class ModelHTTPError(ModelError):
    """The provider answered with an HTTP error status.

    Attributes:
        status_code: the HTTP status.
        body: the provider's error message (never contains the API key).
    """

    def __init__(self, message: str, *, status_code: int, body: str = "") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class ModelTimeoutError(ModelError):
    """The provider did not answer within the timeout."""


class ModelResponseError(ModelError):
    """The provider's answer could not be parsed into a message."""


class CheckpointError(GraphAgentError, _cp.CheckpointError):
    """A saver failed during a run (mirror of ``checkpoint.CheckpointError``)."""


class CheckpointConflictError(CheckpointError, _cp.CheckpointConflictError):
    """Another writer moved the thread's head first; this step wrote nothing."""


class ThreadLockedError(CheckpointConflictError, _cp.ThreadLockedError):
    """Another run held the thread's lock too long (mirror of ``checkpoint.ThreadLockedError``)."""


class CheckpointNotFoundError(CheckpointError, _cp.CheckpointNotFoundError):
    """The thread holds no checkpoint with the requested id."""


class CheckpointStorageError(CheckpointError, _cp.CheckpointStorageError):
    """The backing store failed."""


class SerializationError(CheckpointError, _cp.SerializationError):
    """A value could not be stored or loaded."""


class ThreadNotKeptWarning(UserWarning):
    """A run was given a ``thread_id`` by an agent that has no saver: nothing is kept.

    Each call then starts a new conversation. Warned once per agent; pass a saver to
    keep threads, or leave ``thread_id`` out. Silence it with
    ``warnings.filterwarnings("ignore", category=ThreadNotKeptWarning)``.
    """


class GraphBubbleUp(BaseException):
    """Base of the engine's control-flow signals; never caught as a failure.

    It derives from ``BaseException`` (as ``KeyboardInterrupt`` does) so that error
    handling written as ``except Exception`` cannot swallow it. Code that must catch
    everything re-raises it first::

        try:
            run_tool()
        except GraphBubbleUp:
            raise
        except BaseException as exc:
            report(exc)
    """


class GraphInterrupt(GraphBubbleUp):
    """Control flow, not a failure: a node called ``interrupt()`` and the run pauses.

    The engine catches it; user code sees it only when calling ``interrupt()``
    outside a graph run. It is not a :class:`GraphAgentError`: ``except
    GraphAgentError`` does not catch a pause.
    """

    def __init__(self, values: tuple[Any, ...]) -> None:
        super().__init__(f"run interrupted with {values!r}")
        self.values = values
