"""The quantization ladder: recipes that fail clearly, rounded weights exactly on their grid, the knee
sentence, and each new recipe kind ('round', 'gptq', 'awq') prepared, with its rung recorded, and answered
from by the real vLLM server.

Every rounded rung is saved by the same code as a plain bf16 checkpoint, so one of them (RTN int3) is served
to show they load and answer; the calibrated rungs are prepared and checked without an engine start (their
rounded weights are finite and take at most 16 values per group of 64; prepare itself refuses an AWQ that
scaled nothing). Where vLLM has the int4 kernel (AVX-512), the GPTQ int4 rung is also served in its own
format. Prepared rungs are cached in models/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from agent_eval.builds import BuildSet, ServedBuild, load_builds, prepare, serve, unavailable_reason
from agent_eval.builds.preparing.ladder_recipes import calibration_set, check_group_size
from agent_eval.builds.serving.weights import verify
from agent_eval.builds.spec import Build, parse_builds, repo_root
from agent_eval.chat.client import ChatClient
from agent_eval.errors import BuildError, ConfigError
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome, RungInfo
from agent_eval.report.ladder_plot import ladder_figures
from agent_eval.report.markdown import render_markdown
from agent_eval.scoring.scorecard import score_episodes

LADDER = repo_root() / "builds" / "ladder.yaml"
CALIBRATION = repo_root() / "tests" / "data" / "ladder_calibration.jsonl"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _rung_build(name: str, **recipe: Any) -> dict[str, Any]:
    return {
        "name": name,
        "scheme": "bf16",
        "engine": "vllm-cpu",
        "model_path": f"ladder-test/{name}",
        "prepare": {"source": "ref", **recipe},
    }


def _file(*rungs: dict[str, Any]) -> dict[str, Any]:
    reference = {"name": "ref", "reference": True, "scheme": "bf16", "engine": "vllm-cpu", "model_path": "r"}
    return {"builds": [reference, *rungs]}


# --- recipes that cannot be made: clear errors naming the build and the field --------------------------


def test_one_bit_is_refused_naming_the_build_and_bits() -> None:
    with pytest.raises(ConfigError) as err:
        parse_builds(_file(_rung_build("int1-dq", kind="round", bits=1)), "ladder.yaml")
    assert "build 'int1-dq'" in str(err.value) and "bits 1" in str(err.value)


def test_gptq_without_calibration_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        parse_builds(_file(_rung_build("gptq4", kind="gptq", bits=4, group_size=64)), "ladder.yaml")
    assert "build 'gptq4'" in str(err.value) and "calibration" in str(err.value)


def test_gptq_with_an_empty_calibration_set_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    builds = parse_builds(
        _file(_rung_build("gptq4", kind="gptq", bits=4, calibration=str(tmp_path / "empty.jsonl"))), "f"
    )
    with pytest.raises(BuildError, match=r"build 'gptq4': prepare.calibration .* holds no prompts"):
        calibration_set(builds.get("gptq4"))


def _demonstrations(tmp_path: Path, prompt_format: str) -> Path:
    lines = [json.loads(line) for line in CALIBRATION.read_text().splitlines() if line.strip()]
    demos = tmp_path / f"{prompt_format}.jsonl"
    demos.write_text("".join(json.dumps({**r, "prompt_format": prompt_format}) + "\n" for r in lines))
    return demos


def _played_by(rung: dict[str, Any], agent: str | None) -> Build:
    file = _file({**rung, **({"agent": agent} if agent else {})})
    file["builds"][0]["agent"] = agent  # the rung is played by its source's agent
    return parse_builds(file, "f").get(rung["name"])


def test_a_calibration_set_of_another_agent_s_prompts_is_refused(tmp_path: Path) -> None:
    # "Calibrated on the agent's own prompts": demonstrations of prompts the rung's agent never sends are not.
    import agent_eval.agent.agents  # noqa: F401  (registers the shipped agents and what they extend)

    compact = _rung_build("g", kind="gptq", bits=4, calibration=str(_demonstrations(tmp_path, "compact")))
    with pytest.raises(BuildError, match=r"agent\(s\) \['compact'\], but the build is played by 'default'"):
        calibration_set(_played_by(compact, None))
    noted = _rung_build("g", kind="gptq", bits=4, calibration=str(_demonstrations(tmp_path, "compact-noted")))
    refused = r"agent\(s\) \['compact-noted'\], but the build is played by 'compact', which does not send"
    with pytest.raises(BuildError, match=refused):
        calibration_set(_played_by(noted, "compact"))
    for rung, agent in ((compact, "compact"), (noted, "compact-noted"), (compact, "compact-noted")):
        # its own prompts, or those of an agent it extends: compact-noted sends compact's byte for byte
        prompts, _ = calibration_set(_played_by(rung, agent))
        assert len(prompts) == 8, (rung, agent)


def test_a_group_size_that_does_not_divide_the_width_is_refused(tmp_path: Path) -> None:
    config = {"hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9, "head_dim": 64}
    (tmp_path / "config.json").write_text(json.dumps(config))
    builds = parse_builds(_file(_rung_build("g100", kind="round", bits=4, group_size=100)), "f")
    with pytest.raises(BuildError, match=r"build 'g100': prepare.group_size 100 does not divide .* 576"):
        check_group_size(builds.get("g100"), tmp_path)
    check_group_size(
        parse_builds(_file(_rung_build("g64", kind="round", bits=4, group_size=64)), "f").get("g64"), tmp_path
    )


def test_the_calibration_set_and_its_hash_are_stable() -> None:
    builds = parse_builds(_file(_rung_build("g", kind="gptq", bits=4, calibration=str(CALIBRATION))), "f")
    prompts, digest = calibration_set(builds.get("g"))
    again, digest_again = calibration_set(builds.get("g"))
    assert len(prompts) == 8 and prompts == again and digest == digest_again and digest.startswith("sha256:")
    assert all(p[0]["role"] == "system" for p in prompts)


# --- the knee sentence from a synthetic scorecard -----------------------------------------------------


def _episode(
    build: str, task: str, seed: int, outcome: Outcome, rung: RungInfo, bits: float
) -> EpisodeRecord:
    manifest = BuildManifest(
        name=build,
        reference=build == "bf16",
        scheme="bf16",
        bits_per_weight=bits,
        engine="scripted",
        rung=rung,
    )
    return EpisodeRecord(
        run_id="ladder",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=outcome in (Outcome.SUCCESS, Outcome.NO_STOP),
        success=outcome is Outcome.SUCCESS,
        steps=4,
        build_manifest=manifest,
        started_at=T0,
        finished_at=T0,
    )


def _synthetic_ladder() -> list[EpisodeRecord]:
    """bf16 succeeds everywhere; int8 matches it; int4 gets there but never says done; int2 is lost."""
    plan = {
        "bf16": (16.0, "none", Outcome.SUCCESS),
        "int8-dq": (8.0, "rtn", Outcome.SUCCESS),
        "int4-g64-dq": (4.5, "rtn", Outcome.NO_STOP),
        "int2-g64-dq": (2.5, "rtn", Outcome.NAV_FAIL),
    }
    episodes = []
    for build, (bits, method, outcome) in plan.items():
        rung = RungInfo(
            method=method, bits=int(bits), served="own" if build == "bf16" else "bf16", label=build
        )
        for task in ("a", "b", "c", "d", "e", "f"):
            episodes += [_episode(build, task, seed, outcome, rung, bits) for seed in range(10)]
    return episodes


def test_the_knee_is_the_lowest_non_inferior_rung_per_metric() -> None:
    card = score_episodes(_synthetic_ladder(), run_id="ladder", reference="bf16", read_ceiling_gbs=10.0)
    ladder = card.ladder
    assert ladder is not None
    assert [r.build for r in ladder.rungs] == ["bf16", "int8-dq", "int4-g64-dq", "int2-g64-dq"]
    assert ladder.knee_navigation == "int4-g64-dq" and ladder.knee_success == "int8-dq"
    assert ladder.sentence.startswith(
        "lowest non-inferior rung for reaching the goal in play: int4-g64-dq (int4-g64-dq, 4.5 bpw; speed "
        "not measured, memory not measured — bf16's, as it is served rounded in bf16); "
        "for completion recognition: int8-dq ("
    )
    markdown = render_markdown(card)
    assert f"Ladder: {ladder.sentence}" in markdown and "## Quantization ladder" in markdown
    figures = dict((key, svg) for key, svg, _ in ladder_figures(card))
    assert figures["ladder-success"].count('data-verdict="REGRESSION"') == 2
    assert (
        'data-build="int8-dq" data-metric="success" data-verdict="NON-INFERIOR"' in figures["ladder-success"]
    )


def test_rungs_of_one_width_share_the_line() -> None:
    # int5 (5.0 bits) and int4 g32 (4 + 32/32 bits) have the same width: the plot orders them by rate.
    episodes = _synthetic_ladder()
    twin = [  # a different rate at the same width
        e.model_copy(update={"build": "int4-g32-dq", "outcome": Outcome.NAV_FAIL, "reached": e.seed < 5})
        for e in episodes
        if e.build == "int4-g64-dq"
    ]
    for e in episodes + twin:
        if e.build in ("int4-g64-dq", "int4-g32-dq") and e.build_manifest is not None:
            manifest = e.build_manifest.model_copy(update={"name": e.build, "bits_per_weight": 5.0})
            e.build_manifest = manifest
    card = score_episodes(episodes + twin, run_id="ladder", reference="bf16")
    assert card.ladder is not None
    figures = dict((key, svg) for key, svg, _ in ladder_figures(card))
    assert figures["ladder-navigation"].count('data-build="int4-g32-dq"') == 1


def test_no_rung_non_inferior_says_so() -> None:
    episodes = [e for e in _synthetic_ladder() if e.build in ("bf16", "int2-g64-dq")]
    ladder = score_episodes(episodes, run_id="ladder", reference="bf16").ladder
    assert ladder is not None and ladder.knee_navigation is None
    assert "for reaching the goal in play: none of the 1 rungs is non-inferior (1 regress" in ladder.sentence


# --- prepared rungs: rounding is exact -----------------------------------------------------------------


@cache
def _ladder_prepared(*names: str) -> BuildSet:
    builds = load_builds(LADDER)
    prepare(builds, only=list(names), say=lambda line: print(f"[prepare] {line}", flush=True))
    return builds


def _weights(builds: BuildSet, name: str) -> dict[str, torch.Tensor]:
    path = builds.get(name).resolved_path()
    assert path is not None
    return load_file(str(path / "model.safetensors"))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "bits"), [("int8-dq", 8), ("int3-g64-dq", 3)])
def test_every_rounded_weight_lies_on_its_grid(name: str, bits: int) -> None:
    builds = _ladder_prepared("w8a8", "int8-dq", "int3-g64-dq")
    weights = _weights(builds, name)
    path = builds.get(name).resolved_path()
    assert path is not None
    grid = torch.load(path / "grid.pt")
    layers = [k.removesuffix(".scale") for k in grid if k.endswith(".scale")]
    assert len(layers) == 30 * 7  # every Linear of every layer (q k v o gate up down)
    for layer in layers:
        w = weights[f"{layer}.weight"]
        scale, zero = grid[f"{layer}.scale"].float(), grid[f"{layer}.zero_point"].float()
        rows, groups = scale.shape
        grouped = w.float().reshape(rows, groups, -1)
        q = torch.round(grouped / scale.unsqueeze(-1) + zero.unsqueeze(-1))
        assert q.min() >= -(2 ** (bits - 1)) and q.max() <= 2 ** (bits - 1) - 1, layer
        back = ((q - zero.unsqueeze(-1)) * scale.unsqueeze(-1)).to(torch.bfloat16).reshape(w.shape)
        assert torch.equal(back, w), layer
        assert max(len(torch.unique(grouped[r, g])) for r in (0, rows - 1) for g in range(groups)) <= 2**bits


@pytest.mark.slow
def test_int8_rounded_weights_are_w8a8s_weights() -> None:
    builds = _ladder_prepared("w8a8", "int8-dq", "int3-g64-dq")
    rounded, served = _weights(builds, "int8-dq"), _weights(builds, "w8a8")
    layers = [k.removesuffix(".weight_scale") for k in served if k.endswith(".weight_scale")]
    assert len(layers) == 30 * 7
    for layer in layers:
        dequantized = (served[f"{layer}.weight"].float() * served[f"{layer}.weight_scale"].float()).to(
            torch.bfloat16
        )
        assert torch.equal(dequantized, rounded[f"{layer}.weight"]), layer


# --- each new recipe kind: prepared, served by the real vLLM server, answering ----------------------------

PROMPT = [
    {"role": "system", "content": "You operate an Android phone. Answer with one JSON action."},
    {
        "role": "user",
        "content": "Goal: turn on Wi-Fi.\n[0] Network & internet\n[1] Display\nYour action as JSON:",
    },
]
SCHEMA = {
    "type": "object",
    "properties": {"type": {"type": "string", "enum": ["tap", "done"]}, "element": {"type": "integer"}},
    "required": ["type", "element"],
}


def _gptq_int4_test_name() -> str:
    """The GPTQ int4 rung in its own int4 format where this host's vLLM has the int4 kernel (AVX-512), else
    its rounded bf16 twin: the same recipe and rung record, served on every CPU (tests/_cpu.py)."""
    return (
        "gptq-int4-g64-test"
        if unavailable_reason(load_builds(LADDER).get("gptq-int4-g64")) is None
        else ("gptq-int4-g64-dq-test")
    )


@cache
def _kind_builds() -> BuildSet:
    """The round rung of builds/ladder.yaml, a GPTQ int4 rung and a rounded AWQ int4 rung calibrated on
    tests/data (all cached; GPTQ on 4 prompts; AWQ on 1, with 4 scales searched per layer pair instead of
    20: its search is the slow part on CPU, and its setup took 258 s in CI on an AVX2 host with 20, whose
    bf16 arithmetic is slow; GPTQ on 4 prompts takes ~120 s there, its calibration passes ~70 s of it)."""
    builds = load_builds(LADDER)
    calibration = str(CALIBRATION.relative_to(repo_root()))
    gptq = builds.get("gptq-int4-g64").model_dump(exclude_defaults=True)
    gptq.update(name="gptq-int4-g64-test", model_path="ladder-test/gptq-int4-g64")
    if _gptq_int4_test_name() != "gptq-int4-g64-test":
        for key in ("optional", "requires_cpu_flags", "note"):
            gptq.pop(key, None)
        gptq.update(name="gptq-int4-g64-dq-test", scheme="bf16", model_path="ladder-test/gptq-int4-g64-dq")
    gptq["prepare"].update(calibration=calibration, calibration_samples=4)
    awq = builds.get("gptq-int3-g64-dq").model_dump(exclude_defaults=True)
    awq.update(name="awq-int4-g64-dq-test", model_path="ladder-test/awq-int4-g64-dq")
    awq["prepare"].update(kind="awq", bits=4, calibration=calibration, calibration_samples=1, search_points=4)
    wanted = ("bf16-base", "bf16", "int3-g64-dq")  # the tuned reference is made from bf16-base
    kept = [b.model_dump(exclude_defaults=True) for b in builds.builds if b.name in wanted]
    return parse_builds({"builds": [*kept, gptq, awq]}, "test ladder")


def _served_rungs() -> list[str]:
    """The rungs served here: the RTN int3 rung (for every rounded rung), and the GPTQ int4 rung where it is
    served in its own format."""
    own = _gptq_int4_test_name()
    return ["int3-g64-dq", *([own] if own == "gptq-int4-g64-test" else [])]


def _prepared_kind(name: str) -> BuildSet:
    builds = _kind_builds()
    prepare(builds, only=[name], say=lambda line: print(f"[prepare] {line}", flush=True))
    return builds


@pytest.fixture(scope="module", params=_served_rungs())
def served_rung(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedBuild]:
    builds = _prepared_kind(request.param)
    with serve(builds.get(request.param), tmp_path_factory.mktemp(f"run-{request.param}")) as served:
        yield served


@pytest.mark.engine
@pytest.mark.slow
def test_a_served_rung_answers_and_names_its_rung(served_rung: ServedBuild) -> None:
    with ChatClient(served_rung.endpoint) as client:
        text = client.chat(PROMPT, json_schema=SCHEMA, seed=0).text
    # A low rung may ramble inside the schema (int3 writes a 100-digit element number and hits max_tokens):
    # it answered if the constrained answer started; when it finished, it is the schema's action.
    assert re.match(r'\s*\{\s*"type"\s*:\s*"(tap|done)"', text), text
    if text.rstrip().endswith("}"):
        answer = json.loads(text)
        assert answer["type"] in ("tap", "done") and isinstance(answer["element"], int)
    rung = served_rung.manifest.rung
    assert rung is not None and rung.weights_hash == served_rung.manifest.weights_hash
    if served_rung.build.name == "int3-g64-dq":
        assert (rung.method, rung.bits, rung.group_size, rung.symmetric, rung.served) == (
            "rtn",
            3,
            64,
            False,
            "bf16",
        )
        assert rung.calibration_hash is None and served_rung.manifest.bits_per_weight == 3.5
    else:
        assert (rung.method, rung.bits, rung.served) == ("gptq", 4, "own")
        assert rung.calibration_hash is not None and rung.calibration_hash.startswith("sha256:")


@pytest.mark.slow
@pytest.mark.parametrize("name", [_gptq_int4_test_name(), "awq-int4-g64-dq-test"])
def test_each_calibrated_recipe_kind_records_its_rung(name: str) -> None:
    builds = _prepared_kind(name)
    build = builds.get(name)
    manifest = build.manifest(verify(build))
    rung = manifest.rung
    assert rung is not None and rung.weights_hash == manifest.weights_hash
    assert rung.calibration_hash is not None and rung.calibration_hash.startswith("sha256:")
    if name == "awq-int4-g64-dq-test":
        # prepare refuses an AWQ that smoothed nothing (that would be RTN under AWQ's name)
        assert (rung.method, rung.bits, rung.group_size, rung.served) == ("awq", 4, 64, "bf16")
    else:
        served = "own" if name == "gptq-int4-g64-test" else "bf16"
        assert (rung.method, rung.bits, rung.served) == ("gptq", 4, served)
    if rung.served == "bf16":  # a rounded checkpoint: every weight finite, each row group on 16 levels
        weights = _weights(builds, name)
        layers = [k for k in weights if k.endswith("proj.weight")]
        assert len(layers) == 30 * 7
        for layer in layers:
            w = weights[layer].float()
            assert torch.isfinite(w).all(), layer
            levels = max(
                len(torch.unique(w.reshape(w.shape[0], -1, 64)[r, g])) for r in (0, -1) for g in (0, -1)
            )
            assert levels <= 16, (layer, levels)


def test_a_rung_label_says_what_the_rung_is_in_words() -> None:
    from agent_eval.builds.ladder_rungs import rung_label

    # The tuned reference is no integer grid ("intNone per-channel sym MERGE-ADAPTER" before).
    assert rung_label("merge-adapter", None, None, True, "own") == "tuned: base + merged LoRA adapter"
    assert rung_label("gptq", 4, 64, True, "own") == "int4 g64 sym GPTQ"
    assert rung_label("rtn", 3, 64, True, "bf16") == "int3 g64 sym RTN (rounded, bf16 speed)"
