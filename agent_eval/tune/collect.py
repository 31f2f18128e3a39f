"""`tune collect`: demonstrations played on K virtual phones through the real episode loop.

Each planned episode is one task instance (every parameter value, several seeds), played clean (`oracle`) or
with detours (`recovery`), with its goal worded one of several ways (never a held-out wording); a successful
single-switch episode adds its contrastive examples (`contrast`). Finished episodes are appended to
`demonstrations.jsonl` as they end, so a stopped collection continues where it was; `dataset.jsonl` is written
from them at the end, with `done` targets capped to their share.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import random
import tempfile
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from agent_eval.action import Action
from agent_eval.agent.agents import PromptAgent, get_agent
from agent_eval.agent.compact import answer_text
from agent_eval.agent.formats import step_prompt
from agent_eval.agent.policy import StepContext
from agent_eval.agent.prompt import Prompt
from agent_eval.device.backend import EpisodeDevice
from agent_eval.device.workers import on_devices
from agent_eval.records import Outcome
from agent_eval.runner.episode import run_episode
from agent_eval.task import Task
from agent_eval.task.params import combinations
from agent_eval.tune.contrast import CONTRAST, contrast_moves
from agent_eval.tune.dataset import DatasetSummary, DoneCapKeeps, Example, write_dataset
from agent_eval.tune.expert import DETOUR_KINDS, DemoPolicy, Expert
from agent_eval.tune.wording import goal_variants, held_out_wordings

EPISODES_FILE = "demonstrations.jsonl"
DETOUR_RATE = 0.3
ENDINGS = ("done", "answer")  # an episode's last word: taught only when the episode succeeded
DONE_SHARE = 0.18  # at most this share of the examples are `done` targets
# Which `done` targets that cap keeps first: the contrastive ones (the shipped adapter's recipe) or the
# episodes' own final `done`s (so that contrastive pairs added to a collection cannot push those out).
DONE_CAP_KEEPS: tuple[str, ...] = get_args(DoneCapKeeps)
# The agents a collection can teach: each example's prompt is what that agent sends, byte for byte.
PROMPT_FORMATS = ("compact", "compact-noted")


@dataclass(frozen=True)
class EpisodePlan:
    index: int
    task_id: str
    seed: int
    source: str  # oracle | recovery
    goal: str
    rng_seed: int


def training_tasks(tasks: Sequence[Task]) -> list[Task]:
    return [t for t in tasks if t.split == "train" and t.oracle is not None]


def held_out_goals(tasks: Sequence[Task]) -> dict[str, list[str]]:
    """Per task, the wordings the collection never uses: the held-out rewordings of a training task's goals;
    every wording of a held-out task."""
    out: dict[str, list[str]] = {}
    for task in tasks:
        instances = [task.instantiate(k) for k in range(combinations(task.params))]
        words = {w for i in instances for w in held_out_wordings(i)}
        if task.split == "held_out":
            words |= {w for i in instances for w in goal_variants(i)}
        if words:
            out[task.id] = sorted(words)
    return out


def plan_episodes(
    tasks: Sequence[Task], per_task: int, seed: int = 0, forbidden: Collection[str] = frozenset()
) -> list[EpisodePlan]:
    """Round-robin over tasks (a partial collection stays balanced); seeds cycle every parameter value.
    Half the goals are worded as the task words them, the others by a rewording not in `forbidden`."""
    rng = random.Random(seed)
    plans: list[EpisodePlan] = []
    for k in range(per_task):
        for task in sorted(tasks, key=lambda t: t.id):
            instance = task.instantiate(k)
            variants = [v for v in goal_variants(instance) if v not in forbidden] or [instance.goal]
            goal = variants[0] if rng.random() < 0.5 else rng.choice(variants)
            source = "oracle" if k % 3 == 0 else "recovery"
            plans.append(EpisodePlan(len(plans), task.id, k, source, goal, rng.randrange(2**31)))
    return plans


def plan_generated(tasks: Sequence[Task], first_index: int, seed: int = 0) -> list[EpisodePlan]:
    """One episode per generated task (`tune/generator.py`: each is one instance, worded as drawn), numbered
    after the task files' plans; clean or with detours as those are, by position."""
    rng = random.Random(f"generated/{seed}")
    plans: list[EpisodePlan] = []
    for k, task in enumerate(tasks):
        source = "oracle" if k % 3 == 0 else "recovery"
        plans.append(EpisodePlan(first_index + k, task.id, 0, source, task.goal, rng.randrange(2**31)))
    return plans


def demo_prompt(context: StepContext, prompt_format: str) -> Prompt:
    """A demonstration step's prompt: what the agent of that prompt format sends for the same context."""
    agent = get_agent(prompt_format)
    assert isinstance(agent, PromptAgent), prompt_format
    return step_prompt(context, agent.prompt, history_len=agent.history_len)


def play(
    plan: EpisodePlan,
    task: Task,
    device: EpisodeDevice,
    prompt_format: str,
    detour_kinds: Sequence[str] = DETOUR_KINDS,
    forbidden: Collection[str] = frozenset(),
    detour_rate: float = DETOUR_RATE,
    shade_contrast: bool = False,
) -> dict[str, object]:
    """One demonstration episode; returns its line for demonstrations.jsonl (examples included)."""
    instance = dataclasses.replace(task.instantiate(plan.seed), goal=plan.goal)
    rate = detour_rate if plan.source == "recovery" else 0.0
    rng = random.Random(plan.rng_seed)
    expert = Expert(instance, device, rng, detour_rate=rate, detour_kinds=detour_kinds)
    policy = DemoPolicy(expert)
    with tempfile.TemporaryDirectory(prefix="tune-") as td:
        record = run_episode(device, instance, policy, build="demo", run_id="tune", episode_dir=Path(td))
    taught: list[tuple[StepContext, Action, bool, str]] = []
    detoured, after_detour = False, []
    for context, move in policy.moves:
        after_detour.append(detoured)
        if not move.target or move.action is None:
            detoured = detoured or (move.action is not None)
            continue
        taught.append((context, move.action, detoured, plan.source))
    if record.outcome is Outcome.SUCCESS:
        for k, context, action in contrast_moves(
            instance, plan.goal, policy.moves, forbidden, shade=shade_contrast
        ):
            taught.append((context, action, after_detour[k], CONTRAST))
    else:
        # Only what came before the first detour is sure to be right.
        taught = [t for t in taught if not t[2] and t[1].type.value not in ENDINGS]
    examples = [_example(plan, task.id, c, a, d, src, prompt_format) for c, a, d, src in taught]
    return {
        "episode": plan.index,
        "outcome": record.outcome.value,
        "detours": expert.detours,
        "examples": [ex.model_dump(mode="json") for ex in examples],
    }


def _example(
    plan: EpisodePlan,
    task_id: str,
    context: StepContext,
    action: Action,
    after_detour: bool,
    source: str,
    prompt_format: str,
) -> Example:
    prompt = demo_prompt(context, prompt_format)
    return Example(
        task_id=task_id,
        seed=plan.seed,
        episode=plan.index,
        source=source,
        step=context.step,
        goal=context.goal,
        prompt_format=prompt_format,
        messages=prompt.recorded,
        prompt_hash=prompt.hash,
        answer=answer_text(action.model_dump(mode="json", exclude_none=True)),
        action_type=action.type.value,
        after_detour=after_detour,
    )


def finished_episodes(out_dir: Path) -> dict[int, dict[str, object]]:
    path = out_dir / EPISODES_FILE
    done: dict[int, dict[str, object]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a torn last line: that episode is played again
            done[int(row["episode"])] = row
    return done


def run_plans(
    plans: Sequence[EpisodePlan],
    tasks: dict[str, Task],
    devices: Sequence[EpisodeDevice],
    out_dir: Path,
    prompt_format: str,
    on_episode: Callable[[dict[str, object]], None] | None = None,
    detour_kinds: Sequence[str] = DETOUR_KINDS,
    forbidden: Collection[str] = frozenset(),
    shade_contrast: bool = False,
) -> None:
    """Plays every plan not yet in demonstrations.jsonl, one worker per phone."""

    def played(device: EpisodeDevice, plan: EpisodePlan) -> dict[str, object]:
        args = (tasks[plan.task_id], device, prompt_format, detour_kinds, forbidden)
        once = functools.partial(play, plan, *args, shade_contrast=shade_contrast)
        row = once()
        return once() if row["outcome"] == Outcome.INFRA_ERROR.value else row

    with (out_dir / EPISODES_FILE).open("a", encoding="utf-8") as out:
        for row in on_devices(plans, devices, played):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            if on_episode is not None:
                on_episode(row)


def cap_done(
    examples: list[Example], share: float = DONE_SHARE, keep_first: str = "contrastive"
) -> tuple[list[Example], int]:
    """Drops `done` examples above `share` of the total: a fixed pseudo-random choice, the `keep_first` kind
    (contrastive or final) last and those after a detour first."""
    if keep_first not in DONE_CAP_KEEPS:
        raise ValueError(f"keep_first must be one of {DONE_CAP_KEEPS}, not {keep_first!r}")
    done = [ex for ex in examples if ex.action_type == "done"]
    others = len(examples) - len(done)
    allowed = int(share * others / (1 - share))
    if len(done) <= allowed:
        return examples, 0

    def key(ex: Example) -> tuple[bool, bool, str]:
        dropped_first = (ex.source != CONTRAST) if keep_first == "contrastive" else (ex.source == CONTRAST)
        return (dropped_first, ex.after_detour, hashlib.sha256(ex.prompt_hash.encode()).hexdigest())

    keep = {id(ex) for ex in sorted(done, key=key)[:allowed]}
    kept = [ex for ex in examples if ex.action_type != "done" or id(ex) in keep]
    return kept, len(examples) - len(kept)


def assemble(
    out_dir: Path,
    plans: Sequence[EpisodePlan],
    seconds: float,
    phones: int,
    copies: int = 1,
    held_out: dict[str, list[str]] | None = None,
    families: dict[str, str] | None = None,
    done_cap_keeps: str = "contrastive",
) -> DatasetSummary:
    """dataset.jsonl and its summary from the finished episodes of `plans`; `held_out` (task → wordings never
    used), `families` (task → family) and which `done`s the cap keeps first are recorded in the summary."""
    rows = finished_episodes(out_dir)
    examples = [
        Example.model_validate(ex)
        for plan in plans
        if plan.index in rows
        for ex in rows[plan.index]["examples"]  # type: ignore[attr-defined]
    ]
    played = sum(1 for plan in plans if plan.index in rows)
    steps = sum(ex.source != CONTRAST for ex in examples)
    examples, dropped = cap_done(unique(examples, copies), keep_first=done_cap_keeps)
    return write_dataset(
        examples,
        out_dir,
        copies=copies,
        dropped_done=dropped,
        done_cap_keeps=done_cap_keeps,
        collect_seconds=seconds,
        phones=phones,
        played_episodes=played,
        played_steps=steps,
        played_per_family=_per_family(plans, rows, families or {}),
        per_family=dict(sorted(Counter((families or {}).get(ex.task_id, "?") for ex in examples).items())),
        held_out_wordings=held_out or {},
    )


def _per_family(
    plans: Sequence[EpisodePlan], rows: dict[int, dict[str, object]], families: dict[str, str]
) -> dict[str, dict[str, int]]:
    """Per family: episodes played and succeeded, expert steps recorded and contrastive examples made."""
    out: dict[str, Counter[str]] = {}
    for plan in plans:
        row = rows.get(plan.index)
        if row is None:
            continue
        tally = out.setdefault(families.get(plan.task_id, "?"), Counter())
        tally["episodes"] += 1
        tally["succeeded"] += row["outcome"] == Outcome.SUCCESS.value
        for ex in row["examples"]:  # type: ignore[attr-defined]
            tally["contrast" if ex["source"] == CONTRAST else "steps"] += 1
    return {name: dict(tally) for name, tally in sorted(out.items())}


def unique(examples: list[Example], copies: int = 1) -> list[Example]:
    """The first `copies` of each identical (prompt, answer) pair. One copy: a replayed step teaches nothing
    new. More: the screens every episode passes through (a task's first screens) weigh more than a state
    one detour happened to reach, as they do when the agent is evaluated."""
    if copies < 1:
        raise ValueError(f"copies must be at least 1, not {copies}")
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for ex in examples:
        key = (ex.prompt_hash, ex.answer)
        if seen[key] < copies:
            seen[key] += 1
            out.append(ex)
    return out


def collect_time_so_far(out_dir: Path) -> float:
    path = out_dir / "collect_seconds"
    return float(path.read_text()) if path.is_file() else 0.0


def add_collect_time(out_dir: Path, seconds: float) -> float:
    total = collect_time_so_far(out_dir) + seconds
    (out_dir / "collect_seconds").write_text(f"{total:.1f}\n")
    return total
