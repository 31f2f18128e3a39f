"""A synthetic run directory (episode and step records, UI dumps, small screenshots) for the report's tests.

The records agree with `classify` and the run layout of docs/architecture.md, so the report cannot tell
them from a real run.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path

from PIL import Image, ImageDraw

from agent_eval.action import Action, ActionType
from agent_eval.records import (
    BuildManifest,
    EngineRecord,
    EpisodeRecord,
    Outcome,
    Said,
    StepLatency,
    StepRecord,
    classify,
)

_ROW_LABELS = ("Network & internet", "Wi-Fi", "Bluetooth", "Display", "Sound", "Battery", "Storage", "Apps")
_BUILD_BITS = {"bf16": 16.0, "w8a8": 8.0, "w4a16": 4.0, "w4a8": 4.0}


@dataclass(frozen=True)
class SyntheticRun:
    """What to generate: builds × tasks × seeds; the first build is the reference."""

    builds: tuple[str, ...] = ("bf16", "w8a8", "w4a16")
    tasks: tuple[str, ...] = ("wifi_on", "bluetooth_off")
    seeds: int = 3
    max_steps: int = 8
    width: int = 360
    height: int = 800
    rng_seed: int = 7


@dataclass(frozen=True)
class _Plan:
    said: Said | None
    timeline: list[bool]  # goal before step 1, then after each executed action


def _plan_episode(outcome: Outcome, max_steps: int, rng: random.Random) -> _Plan:
    reach_at = rng.randint(1, max(1, max_steps - 3))
    if outcome is Outcome.SUCCESS:
        return _Plan("done", [False] * reach_at + [True])
    if outcome is Outcome.UNDONE:
        said: Said | None = "done" if rng.random() < 0.5 else None
        return _Plan(said, [False] * reach_at + [True, True, False])
    if outcome is Outcome.NO_STOP:
        return _Plan(None, [False] * reach_at + [True] * (max_steps + 1 - reach_at))
    if outcome is Outcome.PREMATURE_DONE:
        return _Plan("infeasible" if rng.random() < 0.3 else "done", [False] * reach_at)
    return _Plan(None, [False] * (max_steps + 1))


def _pick_outcome(build_index: int, rng: random.Random) -> Outcome:
    # Lower-bit builds fail more often, so the plots and verdicts have something to show.
    weights = [6 - build_index, 1 + build_index, 1, 1, 1 + build_index]
    choices = [Outcome.SUCCESS, Outcome.UNDONE, Outcome.NO_STOP, Outcome.PREMATURE_DONE, Outcome.NAV_FAIL]
    return rng.choices(choices, weights=weights)[0]


def _row_bounds(row: int, width: int, height: int) -> tuple[int, int, int, int]:
    top = height // 8 + row * (height // 10)
    return 0, top, width, top + height // 10 - 2


def ui_xml(width: int, height: int, checked: bool) -> str:
    """A uiautomator dump of a settings-like list with one switch per row."""
    nodes = []
    for row, label in enumerate(_ROW_LABELS):
        left, top, right, bottom = _row_bounds(row, width, height)
        nodes.append(
            f'<node index="{row}" text="{escape(label)}" resource-id="android:id/title" '
            'class="android.widget.TextView" '
            f'package="com.android.settings" content-desc="" checkable="{str(row == 1).lower()}" '
            f'checked="{str(row == 1 and checked).lower()}" clickable="true" enabled="true" focusable="true" '
            f'focused="false" scrollable="false" long-clickable="false" password="false" selected="false" '
            f'bounds="[{left},{top}][{right},{bottom}]" />'
        )
    return (
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
        '<node index="0" text="" resource-id="" class="android.widget.FrameLayout" '
        'package="com.android.settings" content-desc="" checkable="false" checked="false" clickable="false" '
        'enabled="true" focusable="false" '
        'focused="false" scrollable="false" long-clickable="false" password="false" selected="false" '
        f'bounds="[0,0][{width},{height}]">' + "".join(nodes) + "</node></hierarchy>"
    )


def element_lines() -> list[str]:
    return [f'[{i}] TextView "{label}"' for i, label in enumerate(_ROW_LABELS)]


def _screenshot(path: Path, width: int, height: int, step: int, goal: bool) -> None:
    image = Image.new("RGB", (width, height), (250, 250, 250))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width, height // 8 - 4), fill=(30, 90, 160))
    draw.text((10, 10), f"Settings  step {step}", fill=(255, 255, 255))
    for row, label in enumerate(_ROW_LABELS):
        left, top, right, bottom = _row_bounds(row, width, height)
        draw.line((left, bottom, right, bottom), fill=(210, 210, 210))
        draw.text((left + 12, top + 10), label, fill=(20, 20, 20))
        if row == 1:
            draw.ellipse(
                (right - 50, top + 8, right - 14, top + 30), fill=(40, 160, 80) if goal else (160, 160, 160)
            )
    image.save(path, optimize=False, compress_level=1)


def _action_for(step: int, rng: random.Random, width: int, height: int) -> Action | None:
    kind = rng.choice(
        ["tap_element", "tap_element", "tap_xy", "swipe", "scroll", "type", "key", "open", "invalid"]
    )
    if kind == "tap_element":
        return Action(type=ActionType.TAP, element=rng.randrange(len(_ROW_LABELS)))
    if kind == "tap_xy":
        return Action(type=ActionType.TAP, x=rng.randrange(width), y=rng.randrange(height))
    if kind == "swipe":
        return Action(type=ActionType.SWIPE, direction=rng.choice(["up", "down", "left", "right"]))
    if kind == "scroll":
        return Action(type=ActionType.SCROLL, direction=rng.choice(["up", "down"]), element=2)
    if kind == "type":
        return Action(type=ActionType.TYPE, text=f"hello {step}")
    if kind == "key":
        return Action(type=ActionType.KEY, key="back")
    if kind == "open":
        return Action(type=ActionType.OPEN_APP, app="Settings")
    return None


def _latency(rng: random.Random) -> StepLatency:
    return StepLatency(
        observe_s=round(rng.uniform(0.1, 0.4), 3),
        model_s=round(rng.uniform(0.5, 3.0), 3),
        act_s=round(rng.uniform(0.05, 0.2), 3),
        check_s=round(rng.uniform(0.02, 0.1), 3),
        harness_s=round(rng.uniform(0.005, 0.03), 3),
    )


def _write_steps(episode_dir: Path, plan: _Plan, spec: SyntheticRun, rng: random.Random) -> list[StepRecord]:
    """One step per executed action, plus the terminal step when the agent spoke."""
    executed = len(plan.timeline) - 1
    total = executed + (1 if plan.said else 0)
    records = []
    for step in range(1, total + 1):
        goal_before = plan.timeline[step - 1]
        png, xml = f"step-{step:03d}.png", f"step-{step:03d}.xml"
        _screenshot(episode_dir / png, spec.width, spec.height, step, goal_before)
        (episode_dir / xml).write_text(ui_xml(spec.width, spec.height, goal_before))
        terminal = step > executed
        action = (
            Action(type=ActionType(plan.said or "done"))
            if terminal
            else _action_for(step, rng, spec.width, spec.height)
        )
        answer = json.dumps(action.model_dump(exclude_none=True)) if action else "I think I should tap Wi-Fi"
        records.append(
            StepRecord(
                step=step,
                screenshot=png,
                ui_xml=xml,
                activity="com.android.settings/.Settings",
                elements=element_lines(),
                raw_answer=answer,
                action=action,
                invalid_reason=None if action else "no JSON object in the answer",
                prompt_tokens=rng.randint(300, 600),
                completion_tokens=rng.randint(8, 30),
                latency=_latency(rng),
                goal_after=plan.timeline[min(step, executed)],
            )
        )
    (episode_dir / "steps.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return records


def _manifest(build: str, reference: bool) -> BuildManifest:
    return BuildManifest(
        name=build,
        reference=reference,
        scheme=build,
        bits_per_weight=_BUILD_BITS.get(build),
        engine="scripted",
        model="synthetic",
    )


def _episode(
    run_dir: Path, build: str, task: str, seed: int, outcome: Outcome, spec: SyntheticRun, rng: random.Random
) -> EpisodeRecord:
    relative = f"episodes/{build}/{task}/{seed}"
    episode_dir = run_dir / relative
    episode_dir.mkdir(parents=True, exist_ok=True)
    plan = _plan_episode(outcome, spec.max_steps, rng)
    steps = _write_steps(episode_dir, plan, spec, rng)
    assert classify(plan.timeline, plan.said) is outcome
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=seed)
    total = StepLatency(
        **{k: round(sum(getattr(s.latency, k) for s in steps), 3) for k in StepLatency.model_fields}
    )
    return EpisodeRecord(
        run_id=run_dir.name,
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=any(plan.timeline),
        success=outcome is Outcome.SUCCESS,
        said=plan.said,
        said_at_step=len(steps) if plan.said else None,
        goal_timeline=plan.timeline,
        first_reached_step=plan.timeline.index(True) if any(plan.timeline) else None,
        steps=len(steps),
        invalid_actions=sum(1 for s in steps if s.action is None),
        max_steps=spec.max_steps,
        device="emulator-5554",
        build_manifest=_manifest(build, build == spec.builds[0]),
        started_at=started,
        finished_at=started + timedelta(seconds=total.model_s + total.observe_s),
        latency=total,
        prompt_tokens=sum(s.prompt_tokens for s in steps),
        completion_tokens=sum(s.completion_tokens for s in steps),
        episode_dir=relative,
    )


def _infra_attempt(run_dir: Path, build: str, task: str, seed: int) -> EpisodeRecord:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    return EpisodeRecord(
        run_id=run_dir.name,
        build=build,
        task_id=task,
        seed=seed,
        outcome=Outcome.INFRA_ERROR,
        reached=False,
        success=False,
        goal_timeline=[False],
        started_at=started,
        finished_at=started,
        device="emulator-5554",
        error="device emulator-5554 went offline",
        episode_dir=f"episodes/{build}/{task}/{seed}",
    )


def write_synthetic_run(run_dir: Path, spec: SyntheticRun = SyntheticRun()) -> list[EpisodeRecord]:
    """Write a whole run directory; return its episodes (an infra-error attempt first, as a retry leaves)."""
    rng = random.Random(spec.rng_seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    episodes: list[EpisodeRecord] = [_infra_attempt(run_dir, spec.builds[-1], spec.tasks[0], 0)]
    for task_index, task in enumerate(spec.tasks):
        for seed in range(spec.seeds):
            for build_index, build in enumerate(spec.builds):
                outcome = _pick_outcome(build_index, rng)
                # One guaranteed undone and one guaranteed success, so the viewer always has both to show.
                if task_index == 0 and seed == 0:
                    outcome = Outcome.UNDONE if build_index == len(spec.builds) - 1 else Outcome.SUCCESS
                episode = _episode(run_dir, build, task, seed, outcome, spec, rng)
                episode.attempt = 2 if (task_index, seed, build) == (0, 0, spec.builds[-1]) else 1
                episodes.append(episode)
    (run_dir / "episodes.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in episodes))
    engines = run_dir / "engines"
    engines.mkdir(exist_ok=True)
    for index, build in enumerate(spec.builds):
        record = EngineRecord(
            build=build,
            engine="scripted",
            startup_s=12.0 + index,
            peak_rss_mb=900.0 / (index + 1),
            settled_rss_mb=700.0 / (index + 1),
            decode_tok_s=20.0 + 5 * index,
            prefill_tok_s=200.0 + 40 * index,
            requests=100,
            command=["vllm", "serve", f"/models/{build}", "--max-model-len", "2048"],
            log=f"engines/{build}.log",
        )
        (engines / f"{build}.json").write_text(record.model_dump_json(indent=2))
        (engines / f"{build}.log").write_text(f"INFO serving {build}\n")
    return episodes
