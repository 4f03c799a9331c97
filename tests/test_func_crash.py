"""A worker process killed (SIGKILL) in the middle of an entrypoint with 10 tasks, on every
store that outlives a process: a new process resumes the thread with ``invoke(None)`` and
runs only the tasks that had not finished; the others' results come back from the saver."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from _stores import Store, close

SCRIPT = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from _stores import Store
    from graphagent.func import entrypoint, task

    ran, kill_at, is_async = sys.argv[2], int(sys.argv[3]), sys.argv[4] == "async"
    store = Store(*sys.argv[5:8])

    def note(i):
        with open(ran, "a") as f:  # one line per task run, written before it returns
            f.write(f"{i}\\n")
        if i == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return i * i

    @task
    def square(i: int) -> int:
        return note(i)

    @task
    async def asquare(i: int) -> int:
        return note(i)

    @entrypoint(saver=store.open())
    def work(n: int) -> list[int]:
        return [square(i).result() for i in range(n)]

    @entrypoint(saver=store.open())
    async def awork(n: int) -> list[int]:
        return [await asquare(i) for i in range(n)]

    first = sys.argv[8] == "first"
    if is_async:
        out = asyncio.run(awork.ainvoke(10 if first else None, {"thread_id": "t"}))
    else:
        out = work.invoke(10 if first else None, {"thread_id": "t"})
    print(out)
    """
)


def test_a_worker_killed_mid_entrypoint_resumes_with_only_unfinished_tasks(
    store: Store, tmp_path: Path
) -> None:
    """Killed while running task 6 of 10: the next process runs tasks 6 to 10 only."""
    _crash_and_resume(store, "sync", tmp_path / "ran.txt")


def test_an_async_worker_killed_mid_entrypoint_resumes_the_same_way(
    store: Store, tmp_path: Path
) -> None:
    """The same with an async entrypoint and async tasks (``ainvoke``)."""
    _crash_and_resume(store, "async", tmp_path / "ran.txt")


def _crash_and_resume(store: Store, mode: str, ran: Path) -> None:

    def run(kill_at: int, which: str) -> subprocess.CompletedProcess[str]:
        tests = str(Path(__file__).parent)
        argv = [sys.executable, "-c", SCRIPT, tests, str(ran), str(kill_at), mode]
        argv += [*store.argv(), which]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    crashed = run(5, "first")
    assert crashed.returncode == -9, crashed.stderr
    assert ran.read_text().split() == ["0", "1", "2", "3", "4", "5"]
    saver = store.open()
    try:
        head = saver.get("t")
        assert head is not None and head.next == ("work" if mode == "sync" else "awork",)
        kept = {w.task for w in head.pending_writes}
        assert len(kept) == 5  # tasks 0-4, each stored as it finished
    finally:
        close(saver)
    ran.write_text("")
    resumed = run(-1, "again")
    assert resumed.returncode == 0, resumed.stderr
    assert ran.read_text().split() == ["5", "6", "7", "8", "9"]  # only the unfinished ones
    assert resumed.stdout.strip() == str([i * i for i in range(10)])
