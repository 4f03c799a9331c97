#!/usr/bin/env bash
# The server tests against LangGraph's own server (`langgraph dev`, langgraph-cli[inmem])
# serving the LangGraph twins of tests/server/targets.py. Opt-in, not part of `make test`:
# it installs LangGraph's server into a venv of its own (.venv-ref, ~150 MB).
#   bash tests/server/reference/run.sh [pytest args]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
ref="$root/.venv-ref"
if [ ! -x "$ref/bin/langgraph" ]; then
    python3 -m venv "$ref"
    "$ref/bin/pip" install -q 'langgraph-cli[inmem]'
fi
port="${PORT:-8730}"
cd "$here"
"$ref/bin/langgraph" dev --port "$port" --no-browser --no-reload > "$root/.venv-ref/dev.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/ok" > /dev/null && break
    sleep 0.5
done
cd "$root"
GRAPHAGENT_SERVER_URL="http://127.0.0.1:$port" PYTHONPATH="$root" \
    "$root/.venv/bin/pytest" -q -p no:cacheprovider tests/server "$@"
