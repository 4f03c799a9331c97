"""The ``graphagent`` command: draw graphs, chat with agents, look into stored threads.

Examples::

    graphagent draw graphagent.demo:agent
    graphagent chat graphagent.demo:agent --thread demo-user-42 -m "Weather in Oslo?"
    graphagent threads list
    graphagent threads history demo-user-42 --limit 5
    graphagent store search memories/ada --query tea --db memory.sqlite
    graphagent mcp serve graphagent.demo:agent --http 127.0.0.1:8000

``module:object`` names a module (or a ``.py`` file) and an attribute in it: a compiled
graph, an agent, or a function of no arguments that returns one. Errors are one line on
stderr and exit code 2; ``chat -m`` exits 3 when the thread waits for a human.
"""

from __future__ import annotations

from graphagent.cli._main import main

__all__ = ["main"]
