"""The one place where a failure becomes the command's one line on stderr (exit code 2).

Commands raise; ``main`` asks :func:`one_line` what to print. Failures a person can fix
(input, configuration, a full disk, a service that does not answer) get a line naming
the problem; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import sqlite3

import redis

from checkpoint.errors import CheckpointError
from graphagent.cli._common import CliError
from graphagent.errors import GraphAgentError, ModelConfigError

__all__ = ["first_line", "one_line"]

# what an OS error means for the path it names, said the way a person fixes it
_OS_HINTS = {
    errno.ENOENT: "its folder does not exist (create it first)",
    errno.ENOTDIR: "a file is in the way where a folder should be",
    errno.EEXIST: "a file is in the way where a folder should be",
    errno.EISDIR: "it is a folder",
    errno.ENOSPC: "the device is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
}


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, or its type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or first_line(exc)
    hint = _OS_HINTS.get(exc.errno or -1)
    if exc.filename is None:
        return f"{hint} ({reason})" if hint else reason
    return f"{str(exc.filename)!r}: {hint} ({reason})" if hint else f"{exc.filename!r}: {reason}"


def one_line(exc: BaseException) -> str | None:
    """What to print for ``exc`` after ``graphagent: error:``; ``None``: not a failure
    a person can act on (a bug), so the traceback stays."""
    if isinstance(exc, ModelConfigError) and exc.variable:
        return f"the model needs an API key: set the environment variable {exc.variable}"
    if isinstance(exc, (CliError, GraphAgentError, CheckpointError)):
        return first_line(exc)
    if isinstance(exc, OSError):  # a full disk, a missing folder, a port in use, ...
        return _os_error(exc)
    if isinstance(exc, sqlite3.Error):
        return f"SQLite: {first_line(exc)}"
    if isinstance(exc, redis.RedisError):
        # redis-py names host and port, never the password
        return f"Redis: {first_line(exc)}"
    if type(exc).__module__.split(".")[0] == "psycopg":  # the extra may not be installed
        return f"PostgreSQL: {first_line(exc)}"
    return None
