"""Durable functions inside the engine: ``@entrypoint`` and ``@task``.

Users import them from ``graphagent.func`` or ``graphagent.graph`` (both faces re-export
these names). They live under the engine, not above it, so that the graph's face can offer
them without an import circle: this package imports the engine's modules, never its face.
"""

from __future__ import annotations

from graphagent.graph._func._entrypoint import Entrypoint, entrypoint
from graphagent.graph._func._node import Final
from graphagent.graph._func._task import Task, TaskFuture, task

__all__ = ["Entrypoint", "Final", "Task", "TaskFuture", "entrypoint", "task"]
