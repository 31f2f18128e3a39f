"""llama.cpp's own `llama-server` for a GGUF build: its command (one slot per phone, continuous batching)
and the model architectures it loads, both from the build scripts/build_llamacpp.sh makes of the source.

Setup puts the server beside the harness venv's interpreter and the architecture names (read from the same
source) in the venv's share/llama.cpp, so a GGUF the server cannot load is refused by name before it starts.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from agent_eval.builds.serving.gguf_file import GgufInfo
from agent_eval.errors import BuildError

SETUP_HINT = "run scripts/setup.sh (it builds llama.cpp once for this CPU)"


def server_binary() -> Path:
    return Path(sys.executable).parent / "llama-server"


def architectures_file() -> Path:
    return Path(sys.prefix) / "share" / "llama.cpp" / "architectures.txt"


def missing_server() -> str | None:
    """Why this host cannot start llama-server (None: it can)."""
    if not server_binary().exists():
        return f"llama.cpp's llama-server is not installed; {SETUP_HINT}"
    return None


@cache
def known_architectures() -> frozenset[str]:
    """The model architectures the installed llama.cpp loads (empty: the list is not installed)."""
    try:
        text = architectures_file().read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def check_architecture(info: GgufInfo, path: Path) -> None:
    """BuildError when the GGUF's `general.architecture` is not one the installed llama.cpp loads."""
    known = known_architectures()
    if not known:
        return  # no llama.cpp here: the build cannot be served anyway, and says so by its engine kind
    arch = info.metadata.get("general.architecture")
    if not isinstance(arch, str):
        raise BuildError(f"{path}: the GGUF names no architecture (general.architecture); prepare it again")
    if arch not in known:
        raise BuildError(
            f"{path}: model architecture {arch!r} is not one this llama.cpp loads (the {len(known)} it does "
            f"are listed in {architectures_file()}); convert a model of one of those, or update llama.cpp "
            "in scripts/build_llamacpp.sh"
        )


def server_args(
    *, gguf: Path, alias: str, host: str, port: int, threads: int, context: int, slots: int
) -> list[str]:
    """llama-server's arguments: `slots` requests decoded together (continuous batching), each with
    `context` tokens of its own."""
    return [
        str(server_binary()),
        "--model",
        str(gguf),
        "--alias",
        alias,
        "--host",
        host,
        "--port",
        str(port),
        "--threads",
        str(threads),
        "--threads-batch",
        str(threads),
        "--parallel",
        str(slots),
        "--ctx-size",
        str(context * slots),  # shared by the slots: each gets `context`
        "--cont-batching",
        # The weights as the teacher-forcing path (llama-cpp-python) loads them: repacked layouts crashed
        # llama.cpp 0.3.36 on an AVX-512 + AMX host (llamacpp_server.without_weight_repacking).
        "--no-repack",
        # No host-memory prompt cache beside the slots' own (up to 8 GiB by default): the memory measured
        # is the model's and its slots'.
        "--cache-ram",
        "0",
        "--fit",
        "off",  # the context asked for, not one fitted to free memory
        "--no-webui",
        "--reasoning-format",
        "none",  # the answer's text as generated, whatever the template says about thinking
    ]
