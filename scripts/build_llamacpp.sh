#!/usr/bin/env bash
# Builds llama.cpp for this CPU once and installs it into a venv: one cmake build of the vendored source gives the
# shared libraries llama-cpp-python loads, llama-server (the GGUF engine) and the llama-quantize / llama-imatrix
# tools; llama-cpp-python's own wheel is then built without compiling anything (LLAMA_BUILD=OFF) and given those
# libraries. The GGUF converter comes from the same source. Usage: VENV.
#
# The build is tuned for the building CPU (GGML_NATIVE=ON: -march=native), so it is cached under a key made of the
# version, the cmake options, the CPU's feature flags and the compiler: a copy built on an AVX-512 host is never
# picked up on an AVX2 host (the key differs, so it builds again). pip's own wheel cache is not used (--no-cache-dir).
set -euo pipefail
VENV=${1:?usage: build_llamacpp.sh VENV}
VERSION=0.3.36
CMAKE_OPTS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_SERVER=ON"
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | sort -u | tr '\n' ' ')
key=$(printf '%s|%s|%s|%s' "$VERSION" "$CMAKE_OPTS" "$cpu_flags" "$(g++ -dumpfullversion 2>/dev/null)" |
    sha256sum | cut -c1-16)
CACHE=${AGENT_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-eval}/llamacpp/$VERSION-$key
stamp="$key $(sha256sum "$0" | cut -c1-16)"  # a changed install step reinstalls (from the cached build)
[ "$(cat "$VENV/.llamacpp-stamp" 2>/dev/null)" = "$stamp" ] && exit 0
mkdir -p "$CACHE"
pip_q() { "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }
TARGETS=(llama-server llama-quantize llama-imatrix)
LIB=$CACHE/lib  # the libraries and the three programs, side by side: each finds the others through $ORIGIN

# 1. The source release: llama-cpp-python's sdist, whose vendor/llama.cpp is the library it binds.
SDIST=$CACHE/src/llama_cpp_python-$VERSION
if [ ! -f "$SDIST/pyproject.toml" ]; then
    tmp=$(mktemp -d)
    pip_q "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$VERSION"
    mkdir -p "$CACHE/src" && tar xzf "$tmp"/llama_cpp_python-"$VERSION".tar.gz -C "$CACHE/src"
    rm -rf "$tmp"
fi
SRC=$SDIST/vendor/llama.cpp

# 2. One compile: libllama + ggml (shared), llama-server, llama-quantize, llama-imatrix.
built() { for t in "${TARGETS[@]}"; do [ -x "$LIB/$t" ] || return 1; done; }
if ! built; then
    echo "[setup] building llama.cpp $VERSION for this CPU: library, server and tools (once per CPU kind)"
    start=$(date +%s)
    build=$(mktemp -d)
    # The compiler's warnings (thousands of lines) go to a log kept in the cache, shown only if the build fails.
    log=$CACHE/build.log
    # shellcheck disable=SC2086  # CMAKE_OPTS is a list of options
    if ! { cmake -S "$SRC" -B "$build" -DCMAKE_BUILD_TYPE=Release $CMAKE_OPTS \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
        -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN' &&
        cmake --build "$build" -j "$(nproc)" --target "${TARGETS[@]}"; } >"$log" 2>&1; then
        echo "[setup] building llama.cpp failed; the end of $log:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
    rm -rf "$LIB" && mkdir -p "$LIB"
    cp -P "$build"/bin/*.so* "$LIB/"
    for t in "${TARGETS[@]}"; do cp "$build/bin/$t" "$LIB/"; done
    rm -rf "$build"
    echo "[setup] llama.cpp built in $(($(date +%s) - start)) s"
fi

# 3. llama-cpp-python's Python package, with nothing compiled: it loads the libraries built above.
if ! ls "$CACHE"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    CMAKE_ARGS="-DLLAMA_BUILD=OFF" pip_q "$VENV/bin/pip" wheel -q --no-deps --no-cache-dir -w "$CACHE" "$SDIST"
fi

# 4. Install: the package with the server's dependencies and the libraries in its lib/; the programs (with the
#    libraries beside them) in the venv's lib/llama.cpp, linked from its bin/; the converter in share/llama.cpp.
pip_q "$VENV/bin/pip" install -q --force-reinstall --no-deps "$(ls "$CACHE"/llama_cpp_python-*.whl)"
pip_q "$VENV/bin/pip" install -q "$(ls "$CACHE"/llama_cpp_python-*.whl)[server]"
package=$("$VENV/bin/python" -c 'import importlib.util as u; print(u.find_spec("llama_cpp").submodule_search_locations[0])')
mkdir -p "$package/lib" && cp -P "$LIB"/*.so* "$package/lib/"
rm -rf "$VENV/lib/llama.cpp" && cp -rP "$LIB" "$VENV/lib/llama.cpp"
for t in "${TARGETS[@]}"; do ln -sf "../lib/llama.cpp/$t" "$VENV/bin/$t"; done
rm -rf "$VENV/share/llama.cpp" && mkdir -p "$VENV/share/llama.cpp"
cp -r "$SRC/convert_hf_to_gguf.py" "$SRC/gguf-py" "$VENV/share/llama.cpp/"
[ -d "$SRC/conversion" ] && cp -r "$SRC/conversion" "$VENV/share/llama.cpp/"
# The model architectures this llama.cpp loads, from its own table ("clip" is a quantizer-only name): a GGUF of
# any other is refused by name before a server starts (agent_eval/builds/serving/llama_server.py).
sed -n '/LLM_ARCH_NAMES = {/,/^};/p' "$SRC/src/llama-arch.cpp" | grep -o '"[^"]*"' | tr -d '"' | grep -vx clip \
    > "$VENV/share/llama.cpp/architectures.txt"
[ -s "$VENV/share/llama.cpp/architectures.txt" ] || { echo "[setup] no architectures in llama-arch.cpp" >&2; exit 1; }
"$VENV/bin/python" -c 'import llama_cpp; llama_cpp.llama_backend_init()'  # the package finds its libraries
echo "$stamp" > "$VENV/.llamacpp-stamp"
