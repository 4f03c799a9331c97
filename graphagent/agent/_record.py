"""An agent's bookkeeping, kept in one private, typed state key.

Call counters, whether the run is finished, structured-output retries, and the tool
results hooks decided on before the tools node runs all live in one
:class:`AgentRecord` under the key ``"__agent"``. Keys starting with ``__`` are private:
``invoke()``/``call()`` output, the Jupyter views and ``graphagent threads show`` leave
them out. A step writes the record once, as one small value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checkpoint import serde
from graphagent.graph import Change, KeyStrategy

__all__ = [
    "AGENT_KEY",
    "LEGACY_KEYS",
    "AgentRecord",
    "AgentRecordStrategy",
    "answer_tool_calls",
    "legacy_layout",
    "new_run",
]

AGENT_KEY = "__agent"
"""The private state key holding an agent's :class:`AgentRecord`."""

LEGACY_KEYS = (
    "model_calls",
    "run_model_calls",
    "tool_calls",
    "run_tool_calls",
    "run_finished",
    "structured_retries",
)
"""State keys of the layout before :class:`AgentRecord` (one public key per counter)."""


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """An agent's bookkeeping for a thread (the private ``"__agent"`` state key).

    Read it in a hook with ``AgentRecord.of(state)``.

    Attributes:
        model_calls: model calls over the whole thread.
        tool_calls: tool name -> calls over the whole thread.
        run_model_calls: model calls in the current run.
        run_tool_calls: tool name -> calls in the current run.
        run_finished: the run has its final answer (structured output, ``return_direct``).
        structured_retries: answers that did not fit ``output_type`` in this run.
        answers: tool call id -> result text decided by a hook before the tools node
            ran (a rejection, a limit); those calls are not run.

    Example:
        >>> AgentRecord.of({}).run_model_calls
        0
    """

    model_calls: int = 0
    tool_calls: Mapping[str, int] = field(default_factory=dict)
    run_model_calls: int = 0
    run_tool_calls: Mapping[str, int] = field(default_factory=dict)
    run_finished: bool = False
    structured_retries: int = 0
    answers: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def of(state: Mapping[str, Any]) -> AgentRecord:
        """The record in ``state`` (an empty one when the agent has not written it yet)."""
        try:  # not state.get: a Mapping's get is two Python calls, and this runs each step
            record = state[AGENT_KEY]
        except KeyError:
            return _EMPTY
        return record if isinstance(record, AgentRecord) else _EMPTY


_EMPTY = AgentRecord()
_STORED = tuple(f.name for f in dataclasses.fields(AgentRecord))


def _encode(record: AgentRecord) -> list[Any]:
    # the fields in order, as one flat list (new fields go at the end)
    return [
        record.model_calls,
        record.tool_calls,
        record.run_model_calls,
        record.run_tool_calls,
        record.run_finished,
        record.structured_retries,
        record.answers,
    ]


def _decode(stored: Any) -> AgentRecord:
    if type(stored) is not list or len(stored) != len(_STORED):
        raise ValueError(f"expected {len(_STORED)} stored fields, got {stored!r:.80}")
    return AgentRecord(*stored)


# the base registry, as for messages: every Serde (not only the process-wide one) stores
# it; records stored before the flat encoding (as a dataclass) load through the same name
if not serde.base_serde.is_registered(AgentRecord):
    serde.base_serde.register(
        AgentRecord, name="graphagent.AgentRecord", encode=_encode, decode=_decode
    )


def new_run() -> dict[str, Any]:
    """The record update a new input makes: per-run fields start again, thread counts stay."""
    return {
        "run_model_calls": 0,
        "run_tool_calls": {},
        "run_finished": False,
        "structured_retries": 0,
        "answers": {},
    }


_FIELDS = frozenset(f.name for f in dataclasses.fields(AgentRecord))

# A frozen dataclass's __init__ goes through object.__setattr__ once per field; the merge
# makes a record on every model and tools step, so it sets the slots directly (the same
# record, half the cost). Unpacking names every field: a new field fails the import here.
(
    _set_model_calls,
    _set_tool_calls,
    _set_run_model_calls,
    _set_run_tool_calls,
    _set_run_finished,
    _set_structured_retries,
    _set_answers,
) = (getattr(AgentRecord, name).__set__ for name in _STORED)


def _record(
    model_calls: int,
    tool_calls: Mapping[str, int],
    run_model_calls: int,
    run_tool_calls: Mapping[str, int],
    run_finished: bool,
    structured_retries: int,
    answers: Mapping[str, str],
) -> AgentRecord:
    record: AgentRecord = object.__new__(AgentRecord)
    _set_model_calls(record, model_calls)
    _set_tool_calls(record, tool_calls)
    _set_run_model_calls(record, run_model_calls)
    _set_run_tool_calls(record, run_tool_calls)
    _set_run_finished(record, run_finished)
    _set_structured_retries(record, structured_retries)
    _set_answers(record, answers)
    return record


class AgentRecordStrategy(KeyStrategy):
    """Merges updates of the ``"__agent"`` key: a whole record replaces, a mapping of
    fields changes those fields. The checkpoint stores the merged record (one value)."""

    replaces = False

    def empty(self) -> AgentRecord:
        """An empty record: what the key reads as before its first write."""
        return _EMPTY

    def merge(self, old: Any, new: Any) -> Any:
        """Return ``new`` if it is a record, else ``old`` with the fields in ``new``."""
        if isinstance(new, AgentRecord):
            return new
        # a dict first: the Mapping check alone is an ABC instance check
        if type(new) is not dict and not isinstance(new, Mapping):
            raise TypeError(
                f"the agent record takes an AgentRecord or a dict of its fields, got "
                f"{type(new).__name__}"
            )
        if not _FIELDS.issuperset(new):
            unknown = sorted(set(new) - _FIELDS)
            raise TypeError(
                f"AgentRecord has no field(s) {', '.join(unknown)}; fields: "
                f"{', '.join(sorted(_FIELDS))}"
            )
        b = old if isinstance(old, AgentRecord) else _EMPTY
        get = new.get
        # spelled out: several times cheaper than dataclasses.replace, and the record
        # changes on every model and tools step
        return _record(
            get("model_calls", b.model_calls),
            get("tool_calls", b.tool_calls),
            get("run_model_calls", b.run_model_calls),
            get("run_tool_calls", b.run_tool_calls),
            get("run_finished", b.run_finished),
            get("structured_retries", b.structured_retries),
            get("answers", b.answers),
        )

    def merge_change(self, old: Any, new: Any) -> tuple[Any, Change]:
        """The merged record, stored whole."""
        merged = self.merge(old, new)
        return merged, Change("set", merged)

    def __repr__(self) -> str:
        return "AgentRecordStrategy()"


def answer_tool_calls(state: Mapping[str, Any], answers: Mapping[str, str]) -> dict[str, Any]:
    """The update a hook returns to answer pending tool calls itself.

    The tools node then gives each of those calls ``answers[call_id]`` as its result
    instead of running it (in call order, with the results of the calls it does run).

    Args:
        state: the state the hook was given.
        answers: tool call id -> the result text the model will see.

    Example:
        >>> update = answer_tool_calls({}, {"call-1": "Not run: over budget."})
        >>> update["__agent"]["answers"]
        {'call-1': 'Not run: over budget.'}
    """
    merged = {**AgentRecord.of(state).answers, **answers}
    return {AGENT_KEY: {"answers": merged}}


def legacy_layout(values: Mapping[str, Any]) -> str | None:
    """Why a thread saved with the layout before :class:`AgentRecord` cannot continue."""
    if AGENT_KEY in values:
        return None
    old = [k for k in LEGACY_KEYS if k in values]
    if not old:
        return None
    return (
        f"this thread was saved by an older graphagent: its agent bookkeeping is in the state "
        f"keys {', '.join(old)}, which now live in one private record ({AGENT_KEY!r}). Start "
        "a new thread, or delete this one (agent.delete_thread(thread_id=...), or "
        "`graphagent threads delete <thread>`) and run again; finish it first with the "
        "graphagent version that wrote it if its conversation matters"
    )
