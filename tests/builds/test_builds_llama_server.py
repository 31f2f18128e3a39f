"""How a GGUF build is started: llama-server with one slot per phone for episodes, llama-cpp-python's server
when it will teacher-force; and a GGUF whose model architecture llama.cpp does not load, refused by name
before any server starts."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval.builds import Serving, load_builds
from agent_eval.builds.serving import llama_server as server_module
from agent_eval.builds.serving.built_in_engines import LLAMACPP_OVERRIDES
from agent_eval.builds.serving.launcher import serve
from agent_eval.builds.serving.weights import verify
from agent_eval.builds.spec import Build, parse_builds
from agent_eval.errors import BuildError


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_episodes_are_played_on_llama_server_with_a_slot_per_phone() -> None:
    build = load_builds().get("gguf-q4_1")
    launch = build.kind.launch(build, Path("model.gguf"), 8123, Serving(slots=4))
    command = launch.command
    assert Path(command[command.index("--model") - 1]).name == "llama-server"
    assert _option(command, "--parallel") == "4"
    # The context is shared by the slots: each gets the build's whole context.
    assert _option(command, "--ctx-size") == str(4 * build.engine_args.max_model_len)
    assert "--cont-batching" in command and _option(command, "--port") == "8123"
    assert _option(command, "--alias") == build.served_name
    assert _option(command, "--threads") == _option(command, "--threads-batch") == "2"
    assert launch.ready_path == "/health"
    # The action schema goes as OpenAI's json_schema form, and every request carries vLLM's sampling.
    assert launch.endpoint.structured_output and not launch.endpoint.json_object_schema
    assert dict(launch.endpoint.extra_body) == dict(LLAMACPP_OVERRIDES)
    assert not launch.endpoint.scores_from_answer


def test_one_phone_gets_one_slot_and_the_build_s_own_context() -> None:
    build = load_builds().get("gguf-q4_1")
    args = build.engine_args.model_copy(update={"n_ctx": 1536})
    smaller = build.model_copy(update={"engine_args": args})
    launch = smaller.kind.launch(smaller, Path("m.gguf"), 8123, Serving())
    assert (_option(launch.command, "--parallel"), _option(launch.command, "--ctx-size")) == ("1", "1536")


def test_teacher_forcing_runs_on_the_server_that_scores_given_answers() -> None:
    build = load_builds().get("gguf-q4_1")
    launch = build.kind.launch(build, Path("model.gguf"), 8123, Serving(slots=4, teacher_forcing=True))
    assert "agent_eval.builds.serving.llamacpp_server" in launch.command
    assert launch.endpoint.scores_from_answer and launch.endpoint.json_object_schema


def _gguf_header(path: Path, architecture: str) -> Path:
    """A GGUF file with no tensors whose only metadata is its architecture: enough for the header check."""

    def text(value: str) -> bytes:
        return struct.pack("<Q", len(value)) + value.encode()

    key, string_type = "general.architecture", 8
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)  # version 3, no tensors, one metadata key
    body = header + text(key) + struct.pack("<I", string_type) + text(architecture)
    path.write_bytes(body + b"\0" * (-len(body) % 32))  # the (empty) data section starts 32-aligned
    return path


@pytest.fixture
def llama_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """This llama.cpp knows one architecture, `llama` (the real list is read from the installed build)."""
    listed = tmp_path / "architectures.txt"
    listed.write_text("llama\n")
    monkeypatch.setattr(server_module, "architectures_file", lambda: listed)
    server_module.known_architectures.cache_clear()
    yield
    server_module.known_architectures.cache_clear()


def _gguf_build(path: Path) -> Build:
    entry = {"name": "odd-arch", "reference": True, "scheme": "gguf-q8_0", "engine": "llama.cpp"}
    return parse_builds({"builds": [{**entry, "model_path": str(path)}]}, "odd").get("odd-arch")


@pytest.mark.usefixtures("llama_only")
def test_a_gguf_of_an_architecture_llama_cpp_cannot_load_is_refused_by_name(tmp_path: Path) -> None:
    build = _gguf_build(_gguf_header(tmp_path / "model.gguf", "mamba9"))
    with pytest.raises(BuildError, match=r"odd-arch.*architecture 'mamba9' is not one this llama.cpp loads"):
        verify(build)


@pytest.mark.usefixtures("llama_only")
def test_serve_refuses_it_before_starting_a_server(tmp_path: Path) -> None:
    build = _gguf_build(_gguf_header(tmp_path / "model.gguf", "mamba9"))
    if missing := build.kind.missing_software():
        pytest.skip(f"llama.cpp is not installed here: {missing}")
    with pytest.raises(BuildError, match=r"odd-arch.*mamba9"), serve(build, tmp_path / "run"):
        pass
    assert not (tmp_path / "run" / "engines").exists()  # no engine log: nothing was started


@pytest.mark.usefixtures("llama_only")
def test_a_gguf_of_a_known_architecture_passes_the_check(tmp_path: Path) -> None:
    build = _gguf_build(_gguf_header(tmp_path / "model.gguf", "llama"))
    assert verify(build).startswith("sha256:")


def test_the_installed_list_is_llama_cpp_s_own() -> None:
    known = server_module.known_architectures()
    if not known:
        pytest.skip(f"llama.cpp is not installed here ({server_module.architectures_file()} is absent)")
    assert {"llama", "qwen2", "gemma3"} <= known
    assert "clip" not in known  # a name llama.cpp keeps for its quantizer only, not a model it loads
