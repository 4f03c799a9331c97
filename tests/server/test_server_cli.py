"""``graphagent serve`` / ``graphagent worker``: what a wrong command line is told."""

from __future__ import annotations

import io

import pytest
from targets import agent

from graphagent.cli import main
from graphagent.server import create_app

pytestmark = pytest.mark.ours


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "tests/server/targets.py:agent", "--no-run"], "--no-run needs --redis"),
        (["serve", "tests/server/targets.py:agent", "--db", "a", "--redis", "redis://x"], "one of"),
        (
            ["worker", "tests/server/targets.py:agent", "--redis", "redis://x", "--postgres", "p"],
            "pass --redis URL or --postgres URL",
        ),
        (["worker", "tests/server/targets.py:agent"], "pass --redis URL"),
        (["serve", "tests/server/targets.py:nothing"], "has no attribute 'nothing'"),
        (["serve", "tests/server/targets.py:agent", "--auth", "tests/server/targets.py"], "--auth"),
    ],
)
def test_bad_command_lines_name_the_problem(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each mistake is one line on stderr naming it, exit code 2, and nothing served."""
    assert main(argv, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith("graphagent: error:") and says in err, err


def test_two_targets_with_one_name_are_refused() -> None:
    """Assistants are found by name, so two targets may not share one."""
    with pytest.raises(ValueError, match="two targets are named 'assistant'"):
        create_app([agent, agent])


def test_a_target_that_is_not_an_agent_or_graph_is_refused() -> None:
    """Serving something else says what can be served."""
    with pytest.raises(TypeError, match="serve a ReactAgent"):
        create_app([object()])
