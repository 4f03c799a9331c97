"""The error a remote A2A agent's faults become."""

from __future__ import annotations

from graphagent.errors import RunError

__all__ = ["A2aAgentError"]


class A2aAgentError(RunError):
    """A remote A2A agent failed: it could not be reached, its card could not be read,
    it refused the message, or its task ended failed, rejected or canceled.

    The message names the remote agent and its URL, and the task's own words when it
    gave any.

    Attributes:
        agent: the remote agent's name.
        url: where it was reached.
        task_id: the remote task, when the fault was in one.
        state: the task's final state (``"TASK_STATE_FAILED"``, ...), when it ended in one.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str,
        url: str,
        task_id: str | None = None,
        state: str | None = None,
    ) -> None:
        super().__init__(message)
        self.agent = agent
        self.url = url
        self.task_id = task_id
        self.state = state
