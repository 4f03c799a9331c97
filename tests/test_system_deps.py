"""``tests/_system.py``: what ``make test`` installs on a fresh machine before pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import _system
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _which_without(*hidden: str) -> object:
    """shutil.which on a machine where ``hidden`` programs are not installed."""
    import shutil

    return lambda name: None if name in hidden else shutil.which(name)


def test_a_machine_without_a_browser_misses_exactly_the_browser() -> None:
    """With no Chromium-family name on PATH the browser is the one gap, named by package."""
    gaps = _system.missing(_which_without(*_system.BROWSER.names))  # type: ignore[arg-type]
    assert gaps == [_system.BROWSER]
    assert _system.BROWSER.package == "chromium"


def test_any_chromium_family_name_counts_as_a_browser() -> None:
    """google-chrome alone (no chromium) satisfies the browser need: nothing to install."""
    present = {"google-chrome", "node", "npm", "redis-server", "redis-cli"}
    assert _system.missing(lambda name: f"/x/{name}" if name in present else None) == []


def test_debian_root_plans_update_then_install_of_the_missing_packages() -> None:
    """On Debian as root: `apt-get update`, then one `apt-get install -y` of every gap."""
    gaps = [need for need in _system.NEEDS if need.package in {"chromium", "redis-tools"}]
    assert _system.plan(gaps, is_root=True, has_apt=True) == [
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "chromium", "redis-tools"],
    ]
    assert _system.plan([], is_root=False, has_apt=False) == []


@pytest.mark.parametrize(("is_root", "has_apt"), [(False, True), (True, False), (False, False)])
def test_elsewhere_one_line_names_the_package(is_root: bool, has_apt: bool) -> None:
    """Not root, or not Debian: one line naming the package to install, and no command."""
    with pytest.raises(_system.SystemMissing) as caught:
        _system.plan([_system.BROWSER], is_root=is_root, has_apt=has_apt)
    message = str(caught.value)
    assert "\n" not in message
    assert "chromium" in message and "Chromium-family browser" in message


def test_the_script_with_the_browser_hidden_plans_its_install(tmp_path: Path) -> None:
    """Run as make runs it, with a PATH that has every program but Chromium: it plans the
    apt-get install of chromium (dry run: this machine keeps its browser)."""
    farm = tmp_path / "bin"
    farm.mkdir()
    hidden = set(_system.BROWSER.names)
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            target = farm / entry.name
            if entry.name not in hidden and not target.exists():
                target.symlink_to(entry.path)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "_system.py"), "--dry-run"],
        env={**os.environ, "PATH": str(farm)},
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.splitlines()
    if os.geteuid() == 0 and Path("/etc/debian_version").is_file():
        assert done.returncode == 0, done.stderr
        assert lines[:2] == ["+ apt-get update", "+ apt-get install -y chromium"]
        assert "would install for the tests: a Chromium-family browser" in lines[2]
    else:
        assert done.returncode == 1
        assert "chromium" in done.stderr


def test_with_everything_present_the_script_does_nothing() -> None:
    """On a machine that has it all (this one, once installed) it runs no command."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "_system.py"), "--dry-run"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def _servers(root: Path, majors: dict[str, bool]) -> tuple[Path, Path]:
    """A fake /usr/lib/postgresql and /usr/share/postgresql: each major's server, with
    pgvector's control file when its flag is true."""
    lib, share = root / "lib", root / "share"
    for major, has_vector in majors.items():
        (lib / major / "bin").mkdir(parents=True)
        (lib / major / "bin" / "postgres").write_text("")
        (share / major / "extension").mkdir(parents=True)
        if has_vector:
            (share / major / "extension" / "vector.control").write_text("")
    return lib, share


def test_pgvector_is_installed_for_each_server_lacking_it(tmp_path: Path) -> None:
    """One pgvector package per installed server without the extension, installed only
    when apt knows it (Debian 12 does not package it: then nothing is planned)."""
    lib, share = _servers(tmp_path, {"15": False, "16": True, "17": False})
    assert _system.pgvector_packages(lib, share) == [
        "postgresql-15-pgvector",
        "postgresql-17-pgvector",
    ]
    assert _system.optional_plan(lambda p: True, lib, share) == [
        ["apt-get", "install", "-y", "postgresql-15-pgvector", "postgresql-17-pgvector"]
    ]
    assert _system.optional_plan(lambda p: "17" in p, lib, share) == [
        ["apt-get", "install", "-y", "postgresql-17-pgvector"]
    ]
    assert _system.optional_plan(lambda p: False, lib, share) == []
    assert _system.pgvector_packages(tmp_path / "nowhere", share) == []


def test_apt_lists_are_asked_about_the_package() -> None:
    """`packaged` answers from apt's lists: a made-up name is never packaged."""
    if not Path("/etc/debian_version").is_file():
        pytest.skip("apt exists on Debian only")
    assert not _system.packaged("graphagent-no-such-package-xyz")
    assert _system.packaged("postgresql-common") or _system.packaged("bash")
