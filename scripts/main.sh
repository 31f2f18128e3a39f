#!/usr/bin/env bash
# Sets everything up, then runs the main job on the embedded defaults: the virtual phone and the default builds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/agent-eval run tasks/wifi_on.yaml "$@"
