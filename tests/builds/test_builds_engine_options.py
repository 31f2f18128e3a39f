"""A build's `engine_args` are validated against its engine kind's options model (the built-in kinds keep the
fields they always took), and the harness, not the kind, pins the server a kind launches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_eval.builds import load_builds
from agent_eval.builds.engine_kinds import EngineOptions, Serving, options_model
from agent_eval.builds.serving.built_in_engines import BUILT_IN, EngineArgs
from agent_eval.builds.serving.launcher import pinned
from agent_eval.builds.spec import Build, Pinning, parse_builds
from agent_eval.errors import BuildError, ConfigError

# The fields builds files could write before kinds had options of their own, with their defaults.
BUILT_IN_FIELDS = {
    "max_model_len": 2048,
    "kv_cache_space_gib": 1.0,
    "dtype": "bfloat16",
    "quantization": None,
    "enforce_eager": True,
    "n_threads": None,
    "n_ctx": None,
    "logits_all": False,
    "startup_timeout_s": 420.0,
    "extra_args": [],
}


def test_the_built_in_kinds_take_the_fields_they_always_took() -> None:
    assert {kind.name: options_model(kind) for kind in BUILT_IN} == {
        "vllm-cpu": EngineArgs,
        "llama.cpp": EngineArgs,
        "endpoint": EngineArgs,
    }
    assert EngineArgs().model_dump() == BUILT_IN_FIELDS
    # Every build of the shipped files is read as before, with the built-in kinds' options.
    for build in load_builds().builds:
        assert isinstance(build.engine_args, EngineArgs)


@pytest.mark.parametrize("engine", ["vllm-cpu", "llama.cpp"])
def test_a_key_no_option_has_is_refused_naming_the_build_the_key_and_the_options(engine: str) -> None:
    scheme = "bf16" if engine == "vllm-cpu" else "gguf-q4_0"
    build = {"name": "b", "reference": True, "scheme": scheme, "engine": engine, "model_path": "m"}
    with pytest.raises(ConfigError) as err:
        parse_builds([build | {"engine_args": {"n_threads": 2, "max_model_lenn": 4}}], "builds.yaml")
    assert (
        f"build 'b' builds[0].engine_args.max_model_lenn: not an option of engine {engine!r} "
        "(its engine_args: startup_timeout_s, max_model_len," in str(err.value)
    )
    with pytest.raises(ConfigError, match=r"engine_args\.max_model_len: Input should be greater than 0"):
        parse_builds([build | {"engine_args": {"max_model_len": 0}}], "builds.yaml")


def test_a_build_reads_its_options_only_as_its_kinds_model() -> None:
    build = load_builds().get("bf16")
    assert build.options(EngineArgs).max_model_len == 2048
    assert build.options(EngineOptions).startup_timeout_s == 420.0  # the base every model has
    plain = Build.model_validate(
        {"name": "e", "scheme": "endpoint", "engine": "endpoint", "base_url": "http://x/v1", "model": "m"}
    )
    assert type(plain.engine_args) is EngineArgs


def test_the_harness_pins_what_a_kind_launches_and_keeps_the_kinds_record() -> None:
    build = load_builds().get("bf16").model_copy(update={"pinning": Pinning(cpus="0")})
    launch = build.kind.launch(build, Path("weights"), 6690, Serving())
    assert not {"taskset", "numactl"} & {Path(arg).name for arg in launch.command}  # the kind names none
    started = pinned(build, launch)
    prefix = started.command[: len(started.command) - len(launch.command)]
    assert started.command[len(prefix) :] == launch.command
    tool = started.pinning["tool"]
    assert (Path(prefix[0]).name if prefix else None) == tool
    if tool == "taskset":
        assert prefix[1:] == ["-c", "0"]
    # What the harness applied, then the kind's own entry: how vLLM binds its threads.
    assert started.pinning["cpus"] == "0" and started.pinning["omp_threads_bind"] == "0"
    assert list(started.pinning)[-1] == "omp_threads_bind"


def test_a_pinning_this_host_cannot_give_is_refused_for_every_kind() -> None:
    absent = max(os.sched_getaffinity(0)) + 1
    build = load_builds().get("gguf-q4_1").model_copy(update={"pinning": Pinning(cpus=str(absent))})
    launch = build.kind.launch(build, Path("m.gguf"), 6690, Serving())
    with pytest.raises(
        BuildError, match=rf"pinning.cpus '{absent}' names CPUs \[{absent}\] not offered here"
    ):
        pinned(build, launch)
