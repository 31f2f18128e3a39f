#!/usr/bin/env bash
# Builds llama.cpp for this CPU once and installs it into a venv: llama-cpp-python (library + server), and the
# llama-quantize / llama-imatrix tools and the GGUF converter from the same vendored source. Usage: VENV.
#
# The builds are tuned for the building CPU (GGML_NATIVE=ON: -march=native), so they are cached under a key made of
# the version, the cmake options and the CPU's feature flags: a copy built on an AVX-512 host is never picked up on
# an AVX2 host (the key differs, so it builds again). pip's own wheel cache is not used for it (--no-cache-dir): its
# key is the sdist alone, and a home directory copied to another machine would carry an AVX-512 wheel along.
set -euo pipefail
VENV=${1:?usage: build_llamacpp.sh VENV}
VERSION=0.3.36
CMAKE_OPTS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF"
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | sort -u | tr '\n' ' ')
key=$(printf '%s|%s|%s|%s' "$VERSION" "$CMAKE_OPTS" "$cpu_flags" "$(g++ -dumpfullversion 2>/dev/null)" |
    sha256sum | cut -c1-16)
CACHE=${AGENT_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-eval}/llamacpp/$VERSION-$key
stamp="$key $(sha256sum "$0" | cut -c1-16)"  # a changed install step reinstalls (from the cached build)
[ "$(cat "$VENV/.llamacpp-stamp" 2>/dev/null)" = "$stamp" ] && exit 0
mkdir -p "$CACHE"
pip_q() { "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }

# 1. The Python package and its server (the ~16 min part the first time).
if ! ls "$CACHE"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "[setup] building llama-cpp-python $VERSION for this CPU (4 to 13 min on 2 cores, once per CPU kind)"
    start=$(date +%s)
    CMAKE_ARGS="$CMAKE_OPTS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) pip_q "$VENV/bin/pip" wheel -q --no-deps \
        --no-cache-dir --no-binary llama-cpp-python -w "$CACHE" "llama-cpp-python==$VERSION"
    echo "[setup] llama-cpp-python built in $(($(date +%s) - start)) s"
fi

# 2. The converter and the tools, from the same source release.
SRC=$CACHE/src/llama.cpp
if [ ! -x "$CACHE/bin/llama-imatrix" ] || [ ! -x "$CACHE/bin/llama-quantize" ]; then
    echo "[setup] building llama-quantize and llama-imatrix from the same source (a few minutes, once)"
    start=$(date +%s)
    tmp=$(mktemp -d)
    pip_q "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$VERSION"
    tar xzf "$tmp"/llama_cpp_python-"$VERSION".tar.gz -C "$tmp"
    rm -rf "$SRC" && mkdir -p "$CACHE/src" && mv "$tmp/llama_cpp_python-$VERSION/vendor/llama.cpp" "$SRC"
    # The compiler's warnings (thousands of lines) go to a log kept in the cache, shown only if the build fails.
    log=$CACHE/tools-build.log
    # shellcheck disable=SC2086  # CMAKE_OPTS is a list of options
    if ! { cmake -S "$SRC" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $CMAKE_OPTS \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF &&
        cmake --build "$tmp/build" -j "$(nproc)" --target llama-quantize llama-imatrix; } >"$log" 2>&1; then
        echo "[setup] building llama.cpp's tools failed; the end of $log:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
    mkdir -p "$CACHE/bin" && cp "$tmp/build/bin/llama-quantize" "$tmp/build/bin/llama-imatrix" "$CACHE/bin/"
    rm -rf "$tmp"
    echo "[setup] tools built in $(($(date +%s) - start)) s"
fi

# 3. Install: the wheel with the server's dependencies; tools and converter beside the venv's own scripts.
pip_q "$VENV/bin/pip" install -q "$(ls "$CACHE"/llama_cpp_python-*.whl)[server]"
cp "$CACHE/bin/llama-quantize" "$CACHE/bin/llama-imatrix" "$VENV/bin/"
rm -rf "$VENV/share/llama.cpp" && mkdir -p "$VENV/share/llama.cpp"
cp -r "$SRC/convert_hf_to_gguf.py" "$SRC/gguf-py" "$VENV/share/llama.cpp/"
[ -d "$SRC/conversion" ] && cp -r "$SRC/conversion" "$VENV/share/llama.cpp/"
echo "$stamp" > "$VENV/.llamacpp-stamp"
