"""docs/quickstart.md as a newcomer runs it: ``weather.py`` saved to a file, a first process
that talks to the agent, and a second process that continues the thread."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "quickstart.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE, flags=re.S)


def _run(code: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)])}
    done = subprocess.run(
        code, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_quickstart_resumes_its_thread_in_a_second_process(tmp_path: Path) -> None:
    """The page's weather.py and its first calls run in one process; its shell line, run in
    another, answers from the thread the first one left, as the page shows."""
    weather, *first = _blocks("python")
    (tmp_path / "weather.py").write_text(weather)
    script = "from weather import *\n" + "\n".join(first[:2])
    assert _run([sys.executable, "-c", script], tmp_path).splitlines()[0] == (
        "It is sunny, 21 C there."
    )
    (second,) = [b for b in _blocks("sh") if b.startswith("python -c")]
    command = re.fullmatch(r"python -c '(.*)'\n", second)
    assert command is not None, second
    shown = [b.strip() for b in _blocks("text")]
    out = _run([sys.executable, "-c", command.group(1)], tmp_path).strip()
    assert out == shown[-1]
    assert "What's the weather in Paris?" in out and "And in Oslo?" in out


def test_the_quickstart_command_lines_run_on_weather_py(tmp_path: Path) -> None:
    """Its `graphagent ... weather:agent` lines work as written from the folder holding
    weather.py: the drawing, and a chat turn that answers from the tool."""
    import shlex

    (tmp_path / "weather.py").write_text(_blocks("python")[0])
    lines = [
        line.split("  #")[0]
        for block in _blocks("sh")
        for line in block.splitlines()
        if line.startswith("graphagent ") and "weather:agent" in line
    ]
    assert len(lines) == 2
    cli = "import sys; from graphagent.cli import main; sys.exit(main())"
    outputs = [_run([sys.executable, "-c", cli, *shlex.split(ln)[1:]], tmp_path) for ln in lines]
    assert "again: the model is asked again" in outputs[0]
    assert "It is rain, 14 C there." in outputs[1]
