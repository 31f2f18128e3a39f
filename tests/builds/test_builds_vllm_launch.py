"""How a vLLM build's server is started: its model worker stays in the engine-core process, with the
OpenMP settings vLLM gives a worker it spawns (one thread per pinned CPU), unless the build names an
executor itself."""

from __future__ import annotations

from pathlib import Path

from agent_eval.builds import load_builds
from agent_eval.builds.serving.built_in_engines import vllm_launch
from agent_eval.builds.spec import Pinning


def test_the_worker_runs_in_the_engine_core_with_one_thread_per_pinned_cpu() -> None:
    build = load_builds().get("bf16")
    launch = vllm_launch(build, Path("weights"), 8100)
    at = launch.command.index("--distributed-executor-backend")
    assert launch.command[at + 1] == "uni"
    assert launch.env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert (launch.env["OMP_NUM_THREADS"], launch.env["GOMP_CPU_AFFINITY"]) == ("2", "0 1")
    assert launch.env["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"


def test_one_pinned_cpu_gets_one_thread() -> None:
    build = load_builds().get("bf16").model_copy(update={"pinning": Pinning(cpus="1")})
    launch = vllm_launch(build, Path("weights"), 8100)
    assert (launch.env["OMP_NUM_THREADS"], launch.env["GOMP_CPU_AFFINITY"]) == ("1", "1")


def test_an_executor_the_build_names_is_left_as_it_is() -> None:
    build = load_builds().get("bf16")
    args = build.engine_args.model_copy(update={"extra_args": ["--distributed-executor-backend", "mp"]})
    launch = vllm_launch(build.model_copy(update={"engine_args": args}), Path("weights"), 8100)
    assert launch.command.count("--distributed-executor-backend") == 1
    assert launch.command[-1] == "mp"
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in launch.env and "OMP_NUM_THREADS" not in launch.env


def test_an_executor_named_with_an_equals_sign_is_left_as_it_is_too() -> None:
    build = load_builds().get("bf16")
    args = build.engine_args.model_copy(update={"extra_args": ["--distributed-executor-backend=mp"]})
    launch = vllm_launch(build.model_copy(update={"engine_args": args}), Path("weights"), 8100)
    assert "uni" not in launch.command and "VLLM_ENABLE_V1_MULTIPROCESSING" not in launch.env
