"""Scripted chat models more than one test file runs.

``failing_after(*answers)``: a provider that answers, then goes down (HTTP 503), so a run
meets a model error after some steps: the listener events and the observers' goldens
both follow one through an agent.
"""

from __future__ import annotations

from typing import Any

from graphagent.errors import ModelHTTPError
from graphagent.messages import AssistantMessage
from graphagent.models import FunctionChatModel

__all__ = ["failing_after"]


def failing_after(*answers: AssistantMessage | str) -> FunctionChatModel:
    """A model that gives ``answers`` one per call, then fails every later call with
    ``ModelHTTPError`` (status 503, the URL ``http://llm``)."""
    left = iter(answers)

    def model(messages: Any, tools: Any) -> Any:
        for answer in left:
            return answer
        raise ModelHTTPError("http://llm answered HTTP 503", status_code=503)

    return FunctionChatModel(model)
