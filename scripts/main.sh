#!/usr/bin/env bash
# Sets everything up, then runs the main job: the default builds on the default grid's six tasks, on virtual
# phones, topped up until every quantized build has a verdict (grids/default.yaml). Flags go to `agent-eval run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/agent-eval run grids/default.yaml "$@"
