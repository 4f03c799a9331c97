"""Every Python block in docs/ runs, top to bottom per page, so the docs cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parent.parent / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if "```python" in p.read_text())


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_doc_examples_run(
    page: Path,
    redis_url: str,
    redis_prefix: str,
    postgres_url: str,
    pg_schema: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The page's examples run in order in one namespace without error."""
    monkeypatch.chdir(tmp_path)  # files the examples write (SQLite databases) land here
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GRAPHAGENT_DOCS_PREFIX", redis_prefix)
    monkeypatch.setenv("DATABASE_URL", postgres_url)
    monkeypatch.setenv("GRAPHAGENT_DOCS_SCHEMA", pg_schema)
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for i, block in enumerate(blocks):
        try:
            code = compile(block, f"{page.name}[block {i}]", "exec", dont_inherit=True)
            exec(code, namespace)
        except Exception as exc:
            raise AssertionError(f"{page.name}, block {i} failed: {exc!r}\n{block}") from exc


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_pages_say_their_blocks_build_on_each_other(page: Path) -> None:
    """A reader copying one block learns at the top that it needs the blocks before it."""
    top = "\n".join(page.read_text().split("```")[0].splitlines()[:20])
    assert "build on each other" in " ".join(top.split()), (
        f"{page.name}: say near the top, before the first code block, that the page's code "
        "blocks build on each other (run them in order, in one Python session)"
    )


def test_generated_docs_are_current() -> None:
    """reference.md and the README's picture match the code (run docs/generate.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (DOCS / "reference.md").read_text() == gen.render(), (
        "docs/reference.md is out of date: run python docs/generate.py"
    )
    assert (DOCS / "img" / "weather_assistant.svg").read_text() == gen.picture(), (
        "docs/img/weather_assistant.svg is out of date: run python docs/generate.py"
    )
