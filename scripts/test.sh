#!/usr/bin/env bash
# Sets everything up, then runs the linters and the whole test suite (the engine tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
.venv/bin/ruff check agent_eval virtual_phone tests bench
.venv/bin/ruff format --check agent_eval virtual_phone tests bench
.venv/bin/mypy
if [ $# -gt 0 ]; then exec .venv/bin/pytest -q -rs --durations=25 "$@"; fi
# The tests that start no engine, the long ones included, wait on phones and subprocesses more than they
# compute: two workers, each file's tests on one (a test that stops an adb server runs its own, on its own port).
.venv/bin/pytest -q -rs -n 2 --dist loadfile -m "not engine" --durations=15
# The engine tests one at a time: an engine takes both cores.
exec .venv/bin/pytest -q -rs --durations=25 -m "engine"
