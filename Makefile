# The two commands a newcomer needs: `make demo` and `make test`.
# Each builds .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
# the reference MCP servers the tests run (npm packages, cached under .venv/)
MCP_NODE := $(VENV)/mcp-node/installed.json

.PHONY: demo test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,mcp,postgres]'
	touch $(STAMP)

$(MCP_NODE): $(STAMP) tests/_mcp_servers.py
	$(BIN)/python tests/_mcp_servers.py

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,mcp,postgres,bench]'
	touch $(BENCH_STAMP)

demo: $(STAMP)
	$(BIN)/python -m graphagent.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) $(MCP_NODE)
	$(BIN)/pytest -q

test: lint typecheck pytest

bench: $(BENCH_STAMP)
	$(BIN)/python bench/graph_overhead.py
	$(BIN)/python bench/checkpoint_growth.py
	$(BIN)/python bench/agent_loop.py
	$(BIN)/python bench/load.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
