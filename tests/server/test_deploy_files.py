"""``deploy/``'s Dockerfile and compose file, checked without Docker: what they copy exists,
the extras they install exist, and each command they run is one ``graphagent`` accepts, up
to the point where it would start serving (with the same agents the image serves)."""

from __future__ import annotations

import gc
import io
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import graphagent.server
from graphagent.cli import _serve as cli_serve
from graphagent.cli import main

pytestmark = pytest.mark.ours

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, continuation lines joined."""
    out: list[tuple[str, str]] = []
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """What ``graphagent serve`` / ``worker`` would start, instead of starting it; the
    image's agents importable as ``agents`` (its ``PYTHONPATH=/app``)."""
    calls: list[tuple[str, Any]] = []
    monkeypatch.syspath_prepend(str(DEPLOY))
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(("freeze", None)))
    monkeypatch.delitem(sys.modules, "agents", raising=False)
    monkeypatch.setattr(cli_serve, "_check_free", lambda host, port: None)
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(("serve", (app, kw))))
    monkeypatch.setattr(
        graphagent.server, "run_worker", lambda *a, **kw: calls.append(("worker", (a, kw)))
    )
    return calls


def test_dockerfile_copies_what_exists_and_installs_real_extras() -> None:
    """Every COPY source is in the build context (the repository), and the extras the
    image installs are pyproject's."""
    from importlib.metadata import metadata

    extras = metadata("graphagent").get_all("Provides-Extra") or []
    copies = [rest.split()[:-1] for word, rest in _instructions() if word == "COPY"]
    assert copies, "the Dockerfile copies nothing"
    for sources in copies:
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    runs = " ".join(rest for word, rest in _instructions() if word == "RUN")
    wanted = runs.split("'.[", 1)[1].split("]'", 1)[0].split(",")
    assert set(wanted) <= set(extras), wanted
    assert "server" in wanted


def test_dockerfile_command_serves_the_image_agents(
    started: list[tuple[str, Any]], tmp_path: Path
) -> None:
    """The image's CMD is a graphagent serve command line that serves its agents on the
    SQLite file of its volume."""
    (cmd,) = [json.loads(rest) for word, rest in _instructions() if word == "CMD"]
    volumes = [json.loads(rest) for word, rest in _instructions() if word == "VOLUME"]
    assert cmd[0] == "graphagent"
    db = cmd[cmd.index("--db") + 1]
    assert any(db.startswith(v.rstrip("/") + "/") for vs in volumes for v in vs), db
    cmd[cmd.index("--db") + 1] = str(tmp_path / "server.sqlite")  # the volume, here
    assert main(cmd[1:], out=io.StringIO()) == 0
    assert [kind for kind, _ in started] == ["freeze", "serve"]
    _, (app, options) = started[1]
    assert [a.name for a in app.state.service.assistants] == ["weather_assistant"]
    assert options["host"] == "0.0.0.0" and options["port"] == 2024
    exposed = [rest for word, rest in _instructions() if word == "EXPOSE"]
    assert exposed == [str(options["port"])]


def test_compose_services_run_commands_graphagent_accepts(started: list[tuple[str, Any]]) -> None:
    """Each compose service built from the image runs a graphagent command that parses and
    builds its service: the server API-only on the compose file's Redis, published on
    the port it serves, and workers on the same Redis."""
    services = _compose()["services"]
    built = {name: s for name, s in services.items() if "build" in s}
    assert set(built) == {"server", "worker"}
    for service in built.values():
        build = service["build"]
        assert (DEPLOY / build["context"]).resolve() == ROOT
        assert (ROOT / build["dockerfile"]).is_file()
        argv = service["command"]
        argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
        assert argv[0] == "graphagent"
        url = argv[argv.index("--redis") + 1]
        host = url.split("://", 1)[1].split(":", 1)[0].split("/", 1)[0]
        assert host in services, f"{url}: no service named {host}"
        assert main(argv[1:], out=io.StringIO()) == 0
    kinds = [kind for kind, _ in started]
    # each process leaves its imports out of the collector's full passes before it serves
    assert kinds == ["freeze", "serve", "freeze", "worker"]
    (_, (app, options)) = started[1]
    assert not app.state.service.queue.run  # API only: the workers run the runs
    published = built["server"]["ports"][0].split(":")[-1]
    assert int(published) == options["port"]
