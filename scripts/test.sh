#!/usr/bin/env bash
# Sets everything up, then runs the linters and the whole test suite (the engine tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
.venv/bin/ruff check agent_eval virtual_phone tests bench
.venv/bin/ruff format --check agent_eval virtual_phone tests bench
.venv/bin/mypy
exec .venv/bin/pytest -q -rs --durations=25 "$@"
