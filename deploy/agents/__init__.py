"""The agents the image serves: replace with yours (any ReactAgent or compiled graph)."""

from graphagent.demo import agent

__all__ = ["agent"]
