"""Teacher-forced fidelity without a model: metric functions against hand-computed values, a scripted
endpoint with known log-probabilities end to end (probe files → fidelity.json), and the refusals."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from _engines import prepared_default_builds
from _synthetic import SyntheticRun, write_synthetic_run
from scripted_teacher import TeacherEndpoint

from agent_eval.action import Action, ActionType
from agent_eval.agent import compact
from agent_eval.agent.prompt import SYSTEM_PROMPT
from agent_eval.builds.spec import BuildSet, parse_builds
from agent_eval.chat.endpoint import Endpoint
from agent_eval.errors import RunStoreError
from agent_eval.fidelity.metrics import greedy_reproduces, kl_lower_bound, mean_kl, p_done, same_action
from agent_eval.fidelity.probe import BuildProber, StepProbe
from agent_eval.fidelity.run import assemble, probe_build
from agent_eval.fidelity.stats import clustered_mean, paired_difference
from agent_eval.fidelity.steps import StepsFrom, load_source_steps
from agent_eval.records import EpisodeRecord, Outcome, StepRecord

LOG = math.log


def test_kl_over_shared_tokens_and_an_other_bucket() -> None:
    p = {1: LOG(0.6), 2: LOG(0.3)}
    q = {1: LOG(0.5), 2: LOG(0.2), 3: LOG(0.1)}  # token 3 is unknown to p: it joins "other"
    expected = 0.6 * LOG(0.6 / 0.5) + 0.3 * LOG(0.3 / 0.2) + 0.1 * LOG(0.1 / 0.3)
    assert kl_lower_bound(p, q) == pytest.approx(expected, abs=1e-12)
    assert kl_lower_bound(p, p) == pytest.approx(0.0, abs=1e-12)
    assert mean_kl([p, p], [q, p]) == pytest.approx(expected / 2, abs=1e-12)
    assert mean_kl([], []) is None


def test_p_done_reads_the_action_type_position() -> None:
    tokens = ['{"', "type", '":', ' "', "tap", '"}']
    tops = [{0: 0.0}] * 4 + [{7: LOG(0.7), 8: LOG(0.2), 9: LOG(0.05)}, {0: 0.0}]
    texts = [{0: "x"}] * 4 + [{7: "tap", 8: "done", 9: "d"}, {0: "x"}]
    assert p_done(tokens, tops, texts) == pytest.approx(0.25)
    assert p_done(["tap"], [{7: 0.0}], [{7: "tap"}]) is None


def test_agreement_needs_the_same_type_and_target() -> None:
    tap3 = Action(type=ActionType.TAP, element=3)
    assert same_action(tap3, Action(type=ActionType.TAP, element=3))
    assert not same_action(tap3, Action(type=ActionType.TAP, element=4))
    assert not same_action(tap3, Action(type=ActionType.LONG_PRESS, element=3))
    assert same_action(
        Action(type=ActionType.TYPE, element=2, text="a"), Action(type=ActionType.TYPE, element=2)
    )
    assert not same_action(tap3, None)
    assert greedy_reproduces([1, 1, 1]) and not greedy_reproduces([1, 2]) and not greedy_reproduces([])


def test_clustered_interval_matches_the_hand_computation() -> None:
    m = clustered_mean([("a", 1.0), ("a", 0.0), ("b", 1.0), ("b", 1.0)])
    # episode sums 1 and 2 (2 steps each), mean 0.75: se = sqrt(2/1 · ((1-1.5)² + (2-1.5)²)) / 4 = 0.25
    t = 12.706204736174698  # t(0.975, 1 df)
    assert m.mean == pytest.approx(0.75) and m.episodes == 2 and m.steps == 4
    assert m.low == pytest.approx(0.75 - t * 0.25) and m.high == pytest.approx(0.75 + t * 0.25)
    d = paired_difference({("a", 1): 1.0, ("b", 1): 0.5, ("c", 1): 0.0}, {("a", 1): 0.5, ("b", 1): 0.5})
    assert d.mean == pytest.approx(0.25) and d.steps == 2


def _record_prompts(run_dir: Path, system: str = SYSTEM_PROMPT) -> None:
    """Give every step of the synthetic run the prompt the agent would have sent."""
    for path in run_dir.glob("episodes/*/*/*/steps.jsonl"):
        records = [StepRecord.model_validate_json(line) for line in path.read_text().splitlines()]
        for r in records:
            r.prompt = [{"role": "system", "content": system}, {"role": "user", "content": f"Step {r.step}"}]
        path.write_text("".join(r.model_dump_json() + "\n" for r in records))


def test_known_logprobs_give_the_known_kl(tmp_path: Path) -> None:
    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16", "w8a8"), tasks=("wifi_on",), seeds=3))
    _record_prompts(tmp_path)
    steps, skipped = load_source_steps(tmp_path, StepsFrom.REFERENCE, "bf16")
    assert steps and not skipped
    reference, build = TeacherEndpoint(0.6, 0.3), TeacherEndpoint(0.5, 0.2)
    try:
        spans: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
        for name, server in (("bf16", reference), ("w8a8", build)):
            probe_build(tmp_path, name, Endpoint(server.base_url, "scripted"), steps, spans, top_k=1)
    finally:
        reference.close()
        build.close()
    asked = [r for r in build.requests if r["path"] == "/v1/completions"]
    assert asked and all(
        r["temperature"] == 0.0 and "seed" not in r and r["prompt_logprobs"] == 1 for r in asked
    )
    result = assemble(
        tmp_path, "bf16", ["bf16", "w8a8"], steps_from=StepsFrom.REFERENCE, skipped={}, requests={}, speed={}
    )
    per_position = 0.6 * LOG(0.6 / 0.5) + 0.3 * LOG(0.3 / 0.2) + 0.1 * LOG(0.1 / 0.3)
    ref, other = result.builds
    assert ref.kl.value.mean == pytest.approx(0.0, abs=1e-12)
    assert other.kl.value.mean == pytest.approx(per_position, rel=1e-9)
    # Every forced token is the top token of both: agreement 1 wherever the source had an action.
    assert other.agreement.value.mean == 1.0 and other.agreement.vs_reference is not None
    assert other.agreement.vs_reference.mean == 0.0
    assert other.answer_logprob.value.mean is not None
    lengths = [len(s.answer) + 1 for s in steps]  # characters + the end of turn
    assert other.answer_logprob.value.mean == pytest.approx(LOG(0.5) * sum(lengths) / len(lengths))
    on_disk = json.loads((tmp_path / "fidelity.json").read_text())
    assert on_disk["builds"][1]["kl"]["value"]["mean"] == pytest.approx(per_position, rel=1e-9)


def test_identical_requests_are_asked_once_and_every_step_keeps_its_own_probe(tmp_path: Path) -> None:
    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=3))
    _record_prompts(tmp_path)
    recorded, _ = load_source_steps(tmp_path, StepsFrom.REFERENCE, "bf16")
    # Seed 9 replays seed 0's screens and answers exactly (as seeds of a task without parameters do).
    again = [
        dataclasses.replace(
            s, seed=9, episode_dir=s.episode_dir.replace("/0", "/9"), goal_before=not s.goal_before
        )
        for s in recorded
        if s.seed == 0
    ]
    steps = recorded + again
    unique = {(json.dumps(s.messages), s.answer) for s in steps}
    assert again and len(unique) <= len(recorded)
    server = TeacherEndpoint(0.6, 0.3)
    try:
        prober = BuildProber("bf16", Endpoint(server.base_url, "scripted"), top_k=1, workers=2)
        try:
            probes = prober.probe_all(steps, {}, out=tmp_path / "probes.jsonl")
        finally:
            prober.close()
    finally:
        server.close()
    assert len([r for r in server.requests if r["path"] == "/v1/completions"]) == len(unique)
    assert [(p.episode, p.step, p.seed) for p in probes] == [(s.episode, s.step, s.seed) for s in steps]
    assert sum(not p.reused for p in probes) == len(unique)
    first = {
        (json.dumps(s.messages), s.answer): p for s, p in zip(steps, probes, strict=True) if not p.reused
    }
    for s, p in zip(steps, probes, strict=True):
        twin = first[(json.dumps(s.messages), s.answer)]
        assert (p.logprobs, p.ranks, p.agrees) == (twin.logprobs, twin.ranks, twin.agrees)
        assert p.goal_before == s.goal_before
    on_disk = (tmp_path / "probes.jsonl").read_text().splitlines()
    assert sorted((p.episode, p.step) for p in map(StepProbe.model_validate_json, on_disk)) == sorted(
        (s.episode, s.step) for s in steps
    )


def test_a_run_without_recorded_prompts_gets_a_clear_message(tmp_path: Path) -> None:
    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1))
    with pytest.raises(RunStoreError, match=r"no recorded step can be replayed.*no prompt recorded"):
        load_source_steps(tmp_path)


def test_steps_from_an_older_prompt_version_are_refused(tmp_path: Path) -> None:
    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1))
    _record_prompts(tmp_path, system="You are a phone agent (an old prompt).")
    with pytest.raises(RunStoreError, match=r"older prompt version.*run the tasks again"):
        load_source_steps(tmp_path)


# A task that asks a question gets the compact agent's other system prompt (with the `answer` action).
@pytest.mark.parametrize(
    "system", [compact.SYSTEM_PROMPT, compact.SYSTEM_PROMPT_ANSWERS], ids=["act", "answer"]
)
def test_steps_of_the_tuned_compact_agent_are_replayable(tmp_path: Path, system: str) -> None:
    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1))
    _record_prompts(tmp_path, system=system)
    steps, skipped = load_source_steps(tmp_path)
    assert steps and not skipped
    assert all(s.messages[0]["content"] == system for s in steps)


def test_an_oracle_source_without_oracle_episodes_says_so(tmp_path: Path) -> None:
    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1))
    with pytest.raises(RunStoreError, match=r"no finished episodes.*oracle"):
        load_source_steps(tmp_path, StepsFrom.ORACLE)


def test_the_scorecard_and_report_carry_fidelity(tmp_path: Path) -> None:
    from agent_eval.report.fidelity_section import fidelity_html
    from agent_eval.report.markdown import render_markdown
    from agent_eval.scoring.scorecard import score_run

    test_known_logprobs_give_the_known_kl(tmp_path)
    card = score_run(tmp_path)
    assert card.fidelity is not None
    assert [r.build for r in card.fidelity] == ["bf16", "w8a8"]
    row = card.fidelity[1]
    assert row.agreement_delta == 0.0 and row.verdicts["agreement"] == "NO DIFFERENCE SHOWN"
    assert (
        row.answer_logprob_delta is not None and row.answer_logprob_delta < 0
    )  # log 0.5 < log 0.6 per token
    # Where the source said done, the forced "d" is the top token: P(done) 0.5 against the reference's 0.6.
    assert row.p_done_goal_held == pytest.approx(0.5) and row.verdicts["p_done_goal_held"] == "WORSE"
    assert row.flagged
    assert "Teacher-forced fidelity" in render_markdown(card)
    page = fidelity_html(tmp_path, card.fidelity)
    assert page.count("<svg") == 2 and "data-task=&quot;wifi_on&quot;" in page  # the viewer's cell


def test_a_grid_probes_the_builds_it_serves_and_writes_fidelity_json(tmp_path: Path) -> None:

    from agent_eval.builds.spec import Build
    from agent_eval.fidelity.grid_hook import GridFidelity

    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16", "w8a8"), tasks=("wifi_on",), seeds=2))
    _record_prompts(tmp_path)
    builds = [
        Build(
            name=name, scheme=name, engine="vllm-cpu", model_path=f"absent-{name}", reference=name == "bf16"
        )
        for name in ("bf16", "w8a8")
    ]
    said: list[str] = []
    hook = GridFidelity(tmp_path, builds[0], said.append)
    servers = [TeacherEndpoint(0.6, 0.3), TeacherEndpoint(0.6, 0.3)]
    try:
        for build, server in zip(builds, servers, strict=True):  # one engine at a time, the reference first
            hook.probe([build], {build.name: Endpoint(server.base_url, "s")})
    finally:
        for server in servers:
            server.close()
    hook.finish()
    result = json.loads((tmp_path / "fidelity.json").read_text())
    assert [b["build"] for b in result["builds"]] == ["bf16", "w8a8"]
    assert result["builds"][1]["kl"]["value"]["mean"] == pytest.approx(0.0, abs=1e-12)  # identical engines
    assert any("no tokenizer directory" in line for line in said)


def _hand_probe(build: str, episode: EpisodeRecord, *, logprob: float, agrees: bool) -> StepProbe:
    return StepProbe(
        build=build,
        episode=f"episodes/bf16/{episode.task_id}/{episode.seed}",
        task_id=episode.task_id,
        seed=episode.seed,
        step=1,
        goal_before=False,
        said_done=False,
        tokens=["x"],
        ranks=[1 if agrees else 2],
        logprobs=[logprob],
        tops=[{"1": logprob}],
        agrees=agrees,
    )


def test_power_counts_the_episodes_each_verdict_needed(tmp_path: Path) -> None:
    from agent_eval.fidelity.power import POWER_FILE, _at_budget, _read_inputs, power_study, write_power
    from agent_eval.fidelity.time_to_flag import episode_wall_s

    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16", "bad", "same"), tasks=("wifi_on",), seeds=12))
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    episodes = [EpisodeRecord.model_validate_json(line) for line in lines]
    for e in episodes:  # the reference and "same" always succeed, "bad" never reaches the goal
        good = e.build != "bad"
        e.reached = e.success = good
        e.outcome = Outcome.SUCCESS if good else Outcome.NAV_FAIL
    (tmp_path / "episodes.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in episodes))
    with pytest.raises(RunStoreError, match=r"no probes of the reference 'bf16'.*agent-eval fidelity"):
        power_study(tmp_path, orders=1)

    probes = tmp_path / "fidelity" / "probes"
    probes.mkdir(parents=True)
    reference_episodes = [e for e in episodes if e.build == "bf16" and e.attempt == 1]
    for build, logprob, agrees in (("bf16", -0.1, True), ("same", -0.1, True), ("bad", -3.0, False)):
        rows = [_hand_probe(build, e, logprob=logprob, agrees=agrees) for e in reference_episodes]
        (probes / f"{build}.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))

    study = power_study(tmp_path, orders=3)
    rows = {r.build: r for r in study.rows}
    # Episodes: McNemar b = k, c = 0 gives p = 2^-k, Holm over 2 builds × 2 metrics: 4 · 2^-k < 0.05 at k = 7.
    assert rows["bad"].episodes_flag and rows["bad"].episodes_needed == 7
    # Fidelity: a constant step difference is significant as soon as there are two episodes to cluster by.
    assert rows["bad"].fidelity_flag and rows["bad"].fidelity_episodes_needed == 2
    assert rows["bad"].fidelity_steps_needed == 2 and rows["bad"].ratio == pytest.approx(2 / 7)
    # The target's budget is ⌊7 / 5⌋ = 1 episode: nothing to cluster by, so no test can flag it there.
    assert rows["bad"].budget_episodes == 1
    assert rows["bad"].flagged_at_budget == 0.0 and rows["bad"].any_p05_at_budget == 0.0
    assert rows["same"].budget_episodes is None and rows["same"].flagged_at_budget is None
    # With two episodes the constant difference is flagged on every set, and "same" on none.
    inputs = _read_inputs(tmp_path, None)
    assert _at_budget(inputs, "bad", 2, 4, random.Random(0)) == (1.0, 1.0)
    assert _at_budget(inputs, "same", 2, 4, random.Random(0)) == (0.0, 0.0)
    assert not rows["same"].episodes_flag and not rows["same"].fidelity_flag
    assert rows["same"].episodes_needed is None and rows["same"].never_within == {
        "episodes": 3,
        "fidelity": 3,
    }
    assert study.units == 12 and study.probed_units == 12 and not study.meets_target  # 2/7 > 1/5
    # Time to flag: 7 pairs of episodes against 2 reference episodes and 2 probes, on one phone.
    reference_s = episode_wall_s(inputs.scored, "bf16")
    assert reference_s is not None and rows["bad"].episodes_wall_s is not None
    assert rows["bad"].fidelity_wall_s == pytest.approx(2 * reference_s)  # hand probes took 0 s
    assert rows["same"].episodes_wall_s is None and rows["same"].fidelity_wall_s is None
    write_power(tmp_path, study)
    assert json.loads((tmp_path / POWER_FILE).read_text())["rows"][0]["build"] == "bad"


def test_a_continued_grid_assembles_fidelity_from_the_probes_on_disk(tmp_path: Path) -> None:
    from agent_eval.builds.spec import Build
    from agent_eval.fidelity.grid_hook import GridFidelity

    test_a_grid_probes_the_builds_it_serves_and_writes_fidelity_json(tmp_path)
    earlier = json.loads((tmp_path / "fidelity.json").read_text())
    stale = {**earlier, "builds": [{**b, "agreement": {}} for b in earlier["builds"]]}
    (tmp_path / "fidelity.json").write_text(json.dumps(stale))  # only its speeds are read again
    reference = Build(name="bf16", scheme="bf16", engine="vllm-cpu", model_path="absent", reference=True)
    said: list[str] = []
    GridFidelity(tmp_path, reference, said.append).finish()  # a session that probed nothing itself
    again = json.loads((tmp_path / "fidelity.json").read_text())
    assert [b["build"] for b in again["builds"]] == ["bf16", "w8a8"]
    assert [b["agreement"] for b in again["builds"]] == [b["agreement"] for b in earlier["builds"]]
    speeds = [b["steps_per_min"] for b in again["builds"]]
    assert all(speeds) and speeds == [b["steps_per_min"] for b in earlier["builds"]]  # the earlier session's
    assert any("wrote" in line for line in said)


def _real_mask_and_answer(text: str) -> tuple[Any, list[int], int]:
    """The action schema's mask with the base model's tokenizer, `text` as its token ids and end of turn,
    and the tokenizer's size."""
    from transformers import AutoTokenizer

    from agent_eval.agent.prompt import action_schema
    from agent_eval.builds.spec import models_dir
    from agent_eval.fidelity.mask import SchemaMask

    prepared_default_builds()
    tokenizer_dir = models_dir() / "smollm2-135m-instruct" / "bf16"
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    answer: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    answer.append(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    return SchemaMask(tokenizer_dir, action_schema()), answer, len(tokenizer)


@pytest.mark.slow  # prepares the default builds if no earlier test has: the base model's tokenizer
def test_a_tie_in_the_mask_goes_to_the_lower_token_id() -> None:
    """Greedy decoding takes the first of equal maxima: an allowed token as likely as the forced one is ahead
    of it only when its id is lower (a tie once sent 9 of 60 of the tuned reference's own answers to a
    decode)."""
    import xgrammar as xgr

    mask, answer, tokens = _real_mask_and_answer('{"type": "done"}')
    bitmask = xgr.allocate_token_bitmask(1, mask._info.vocab_size)
    matcher = xgr.GrammarMatcher(mask._grammar)
    at = 0  # the first position with allowed tokens on both sides of the forced one
    while True:
        forced = answer[at]
        matcher.fill_next_token_bitmask(bitmask)
        allowed = [t for t in range(tokens) if (int(bitmask[0][t // 32]) >> (t % 32)) & 1]
        if any(t < forced for t in allowed) and any(t > forced for t in allowed):
            break
        assert matcher.accept_token(forced)
        at += 1
    lower = next(t for t in allowed if t < forced)
    higher = next(t for t in allowed if t > forced)

    def rank_at(other: int, logprob: float, rank: int) -> int | None:
        tops = [{t: -0.5, other: logprob} if i == at else {t: -0.1} for i, t in enumerate(answer)]
        ranks = [rank if i == at else 1 for i in range(len(answer))]
        return mask.masked_ranks(answer, ranks, tops)[at]

    assert rank_at(lower, -0.5, 1) == 2  # a tie with a lower id: greedy takes the other token
    assert rank_at(higher, -0.5, 1) == 1  # a tie with a higher id: greedy takes the forced one
    assert rank_at(higher, -0.4, 2) == 2  # more likely: ahead, whatever its id


def _builds_with_one_unprepared(tmp_path: Path) -> BuildSet:
    (tmp_path / "ref").mkdir()
    common = {"scheme": "bf16", "engine": "vllm-cpu"}
    return parse_builds(
        [
            {"name": "ref", "reference": True, "model_path": str(tmp_path / "ref"), **common},
            {"name": "other", "model_path": str(tmp_path / "other"), **common},
        ],
        "test",
    )


def test_by_default_a_build_without_weights_is_left_out_with_the_reason(tmp_path: Path) -> None:
    from agent_eval.fidelity.select import probe_builds

    said: list[str] = []
    chosen = probe_builds(_builds_with_one_unprepared(tmp_path), (), "ref", said.append)
    assert [b.name for b in chosen] == ["ref"]
    assert said == [f"skipping other: not prepared (no weights at {tmp_path / 'other'})"]


def test_a_named_build_without_weights_is_refused_before_any_engine_starts(tmp_path: Path) -> None:
    from agent_eval.errors import BuildError
    from agent_eval.fidelity.select import probe_builds

    with pytest.raises(BuildError, match=r"build 'other': weights missing at .*other; put the weights there"):
        probe_builds(_builds_with_one_unprepared(tmp_path), ("other",), "ref", print)


def _played(run_dir: Path, hashes: dict[str, str]) -> None:
    from datetime import UTC, datetime

    from agent_eval.records import BuildManifest
    from agent_eval.rundir.run_manifest import RunManifest, write_manifest

    now = datetime.now(UTC)
    builds = [
        BuildManifest(name=n, scheme="bf16", engine="vllm-cpu", weights_hash=h) for n, h in hashes.items()
    ]
    run_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(run_dir, RunManifest(run_id="r", created_at=now, updated_at=now, builds=builds))


def test_a_run_build_missing_from_the_default_builds_file_is_refused(tmp_path: Path) -> None:
    from agent_eval.errors import ConfigError
    from agent_eval.fidelity.select import check_against_run

    builds = _builds_with_one_unprepared(tmp_path)
    run = tmp_path / "run"
    _played(run, {"ref": "sha256:" + "a" * 64, "gptq-int4-g64": "sha256:" + "b" * 64})
    with pytest.raises(
        ConfigError, match=r"played gptq-int4-g64, which the default builds file.*--builds-file"
    ):
        check_against_run(run, builds, file_given=False)
    # Named by the user, the file is taken as it is (the run's other builds are simply not probed).
    assert set(check_against_run(run, builds, file_given=True)) == {"ref", "gptq-int4-g64"}
    assert check_against_run(tmp_path / "no-manifest", builds, file_given=False) == {}


def test_a_build_whose_weights_changed_since_the_run_is_said(tmp_path: Path) -> None:
    from agent_eval.builds.serving.weights import PREPARED_FILE, Prepared
    from agent_eval.fidelity.select import say_changed_weights

    builds = _builds_with_one_unprepared(tmp_path)
    on_disk = Prepared(
        build="ref", scheme="bf16", weights_hash="sha256:" + "c" * 64, files=["model.safetensors"]
    )
    (tmp_path / "ref" / PREPARED_FILE).write_text(on_disk.model_dump_json())
    said: list[str] = []
    say_changed_weights([builds.get("ref")], {"ref": "sha256:" + "a" * 64}, said.append)
    assert said == [
        "note: ref's weights on disk (sha256:cccccccccccc) are not the ones the run played "
        "(sha256:aaaaaaaaaaaa); its probes measure the weights on disk"
    ]
    said.clear()
    say_changed_weights([builds.get("ref")], {"ref": on_disk.weights_hash}, said.append)
    assert said == []


def test_a_gguf_build_takes_its_tokenizer_from_the_checkpoint_it_was_made_from(tmp_path: Path) -> None:
    from agent_eval.fidelity.select import tokenizer_dir

    (tmp_path / "ref").mkdir()
    common = {"engine": "llama.cpp"}
    builds = parse_builds(
        [
            {
                "name": "ref",
                "reference": True,
                "scheme": "bf16",
                "engine": "vllm-cpu",
                "model_path": str(tmp_path / "ref"),
            },
            {
                "name": "g16",
                "scheme": "gguf-bf16",
                "model_path": str(tmp_path / "g16" / "model.gguf"),
                "prepare": {"kind": "gguf", "source": "reference", "gguf_type": "bf16"},
                **common,
            },
            {
                "name": "g8",
                "scheme": "gguf-q8_0",
                "model_path": str(tmp_path / "g8" / "model.gguf"),
                "prepare": {"kind": "gguf", "source": "g16", "gguf_type": "q8_0"},
                **common,
            },
            {"name": "lone", "scheme": "gguf-q8_0", "model_path": str(tmp_path / "lone.gguf"), **common},
        ],
        "test",
    )
    assert tokenizer_dir(builds.get("g8"), builds) == tmp_path / "ref"  # two steps up: g8 → g16 → ref
    assert tokenizer_dir(builds.get("ref"), builds) == tmp_path / "ref"
    assert tokenizer_dir(builds.get("lone"), builds) is None  # a GGUF from nowhere the set knows


class _RecordingMask:
    """A mask that sends every step to a decode and records whether it was asked for the answer schema."""

    def __init__(self) -> None:
        self.answers: list[bool] = []

    def masked_ranks(
        self, answer_ids: list[int], ranks: list[int], tops: list[object], *, answers: bool
    ) -> list[int]:
        self.answers.append(answers)
        return [2] * len(answer_ids)


@pytest.mark.parametrize("asks", [True, False])
def test_a_question_task_is_probed_and_decoded_with_the_answer_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asks: bool
) -> None:
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from agent_eval.agent.prompt import schema_allows
    from agent_eval.rundir.run_manifest import RunManifest, TaskEntry, write_manifest

    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1))
    _record_prompts(tmp_path, system=compact.SYSTEM_PROMPT_ANSWERS if asks else compact.SYSTEM_PROMPT)
    now = datetime.now(UTC)
    task = TaskEntry(id="wifi_on", version=1, sha256="0" * 64, answer=asks)
    write_manifest(tmp_path, RunManifest(run_id="r", created_at=now, updated_at=now, tasks=[task]))
    steps, _ = load_source_steps(tmp_path)
    assert steps and all(s.answers is asks for s in steps)
    server, mask = TeacherEndpoint(0.6, 0.3), _RecordingMask()
    schemas: list[dict[str, object]] = []

    def chat(messages: object, json_schema: dict[str, object]) -> SimpleNamespace:
        schemas.append(json_schema)
        return SimpleNamespace(text='{"type": "answer", "text": "7"}')

    try:
        prober = BuildProber("bf16", Endpoint(server.base_url, "scripted"), top_k=1, mask=mask)  # type: ignore[arg-type]
        monkeypatch.setattr(prober.chat, "chat", chat)
        probe = prober.probe(steps[0], {})
        prober.close()
    finally:
        server.close()
    assert probe.via == "decoded" and mask.answers == [asks]
    assert schema_allows(schemas[0], {"type": "answer", "text": "7"}) is asks  # the schema the agent had


@pytest.mark.slow  # prepares the default builds if no earlier test has: the base model's tokenizer
def test_the_mask_of_a_question_task_allows_the_answer_action() -> None:
    mask, answer, _ = _real_mask_and_answer('{"type": "answer", "text": "7"}')
    tops = [{t: -0.1} for t in answer]  # the forced token is the only one known: its masked rank is 1
    ones = [1] * len(answer)
    assert mask.masked_ranks(answer, ones, tops, answers=True) == ones
    refused = mask.masked_ranks(answer, ones, tops, answers=False)  # no answer action: the grammar breaks
    assert None in refused and refused[0] == 1
