"""Runs an MCP server for :class:`McpToolProvider` and dies with the process that started it.

Run as a script (``python -I -S _guard.py PARENT_PID PIDFILE command args...``), so it
starts fast and imports nothing from graphagent. It writes its pid (also its process
group, the SDK starts it in a new session) to PIDFILE, asks Linux to send it SIGTERM
when its parent goes away (even by SIGKILL), starts the server with the same stdin,
stdout and stderr, and on SIGTERM stops the whole group, waits for the server and
exits: the server never outlives the agent process, nor is left a zombie.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from types import FrameType

_PR_SET_PDEATHSIG = 1


class _Stop(Exception):
    """SIGTERM arrived: interrupts the wait for the server."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def _stop_group(child: subprocess.Popen[bytes]) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + 2.0
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if child.poll() is None:
        child.kill()  # not the group: that would kill this guard before it reaps the server
    return child.wait()


def _die_with_parent() -> None:
    # in the server, before exec: if this guard is SIGKILLed, the server still stops
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def main(argv: list[str]) -> int:
    """Start ``argv[3:]`` under this guard; returns the server's exit code."""
    parent, pidfile, command = int(argv[1]), argv[2], argv[3:]
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before prctl took effect
        return 1
    with open(pidfile, "w", encoding="ascii") as f:
        f.write(str(os.getpid()))
    signal.signal(signal.SIGTERM, _raise_stop)
    try:
        child = subprocess.Popen(command, preexec_fn=_die_with_parent)
    except OSError as exc:
        print(f"cannot start MCP server {command[0]!r}: {exc}", file=sys.stderr)
        return 127
    except _Stop:
        return 143
    # only the server holds the pipes now: when it dies, the client sees EOF at once
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    try:
        code = child.wait()
    except _Stop:
        code = _stop_group(child)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
