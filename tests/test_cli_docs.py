"""docs/cli.md's shell blocks run as written, top to bottom, in an empty folder."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _serve_briefly(line: str, cwd: Path, env: dict[str, str], port: int) -> None:
    """Start a long-running `mcp serve --http` or `a2a serve` line, see it accept a
    connection, stop it."""
    server = subprocess.Popen(
        ["bash", "-c", f"exec {line}"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert server.poll() is None, f"{line!r} exited: {server.communicate()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{line!r} did not listen on {port} in 30 s")
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_every_shell_block_of_the_cli_page_runs(
    tmp_path: Path, redis_url: str, redis_prefix: str, postgres_url: str, pg_schema: str
) -> None:
    """Each ```sh block runs with bash -e (every command exits 0, no error line) in one
    empty folder, with `graphagent` on PATH running this checkout. Only where the services
    are is rewritten: the page's Redis and PostgreSQL URLs become this test's (with its own
    --prefix and --schema), and port 8000 a free one; `--http` and `a2a serve` servers are
    started, seen listening, and stopped."""
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5 and "myapp" not in text
    port = _free_port()
    rewrite = {
        "redis://localhost:6379/0": f"{redis_url} --prefix {redis_prefix}",
        "postgresql://localhost:5432/test": f"{postgres_url} --schema {pg_schema}",
        "127.0.0.1:8000": f"127.0.0.1:{port}",
        "--port 8000": f"--port {port}",
    }
    assert all(literal in text for literal in rewrite)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "graphagent"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m graphagent "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_URL", "GRAPHAGENT_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(ROOT))
    env.pop("OPENAI_API_KEY", None)
    ran = 0
    for i, block in enumerate(blocks):
        for literal, actual in rewrite.items():
            block = block.replace(literal, actual)
        servers = [
            line for line in block.splitlines() if " --http " in line or " a2a serve " in line
        ]
        script = "\n".join(line for line in block.splitlines() if line not in servers)
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"block {i} failed:\n{block}\n{done.stdout}\n{done.stderr}"
        assert "graphagent: error" not in done.stderr, (block, done.stderr)
        assert "Traceback" not in done.stderr, (block, done.stderr)
        for line in servers:
            _serve_briefly(line.split("  #")[0], work, env, port)
        ran += 1
    assert ran == len(blocks)
    assert (work / "weather.svg").read_text().startswith("<svg")
    assert (work / ".graphagent" / "demo.sqlite").is_file()


def test_no_page_points_at_a_module_that_does_not_exist() -> None:
    """The made-up myapp.agents target is gone from the CLI page, the README and the
    command's own texts (help, errors)."""
    for path in [PAGE, ROOT / "README.md", *(ROOT / "graphagent" / "cli").glob("*.py")]:
        assert "myapp" not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_the_command_on_path_answers(tmp_path: Path, flag: str) -> None:
    """`python -m graphagent --help/--version` in a fresh process: exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", "graphagent", flag],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith(("usage: graphagent", "graphagent "))
