"""Durable functions: workflows written as plain Python, with a graph's durability.

``@entrypoint`` turns a function into a per-thread runnable on the graph engine and its
savers; ``@task`` turns a function into one whose calls run concurrently and whose results
the run checkpoints as they finish, so a run resumed after ``interrupt()``, an error or a
crash does not run finished tasks again. The same names are offered by ``graphagent.graph``.

Example:
    >>> from checkpoint import MemorySaver
    >>> @task
    ... def square(x: int) -> int:
    ...     return x * x
    >>> @entrypoint(saver=MemorySaver())
    ... def total(numbers: list[int]) -> int:
    ...     return sum(f.result() for f in [square(n) for n in numbers])
    >>> total.invoke([1, 2, 3], thread_id="t1")
    14
"""

from __future__ import annotations

from graphagent.graph import Entrypoint, Final, Task, TaskFuture, entrypoint, task

__all__ = ["Entrypoint", "Final", "Task", "TaskFuture", "entrypoint", "task"]
