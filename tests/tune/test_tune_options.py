"""The collection's options beyond the shipped recipe: shade detours the expert finds its way back from,
identical examples kept more than once, and a resumed collection that refuses other settings."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest

from agent_eval.action import ActionType
from agent_eval.device.adb_backend import free_phone_port
from agent_eval.device.backend import DeviceRequest, device_backend
from agent_eval.errors import ConfigError
from agent_eval.records import Outcome
from agent_eval.runner.episode import run_episode
from agent_eval.task import load_tasks
from agent_eval.tune.collect import unique
from agent_eval.tune.collect_settings import SETTINGS_FILE, CollectSettings, settle_settings
from agent_eval.tune.dataset import Example
from agent_eval.tune.expert import DETOUR_KINDS, SHADE_DETOUR, DemoPolicy, Expert

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def example(prompt: str, answer: str) -> Example:
    return Example(
        task_id="t",
        seed=0,
        episode=0,
        source="oracle",
        step=1,
        goal="g",
        prompt_format="compact",
        messages=[],
        prompt_hash=prompt,
        answer=answer,
        action_type="tap",
    )


def test_identical_examples_are_kept_up_to_the_copies_asked() -> None:
    examples = [example("a", "x")] * 3 + [example("a", "y"), example("b", "x")] + [example("b", "x")]
    assert [(e.prompt_hash, e.answer) for e in unique(examples)] == [("a", "x"), ("a", "y"), ("b", "x")]
    two = [(e.prompt_hash, e.answer) for e in unique(examples, copies=2)]
    assert two == [("a", "x"), ("a", "x"), ("a", "y"), ("b", "x"), ("b", "x")]
    with pytest.raises(ValueError, match="copies"):
        unique(examples, copies=0)


def test_a_collection_continues_only_with_the_settings_it_was_played_with(tmp_path: Path) -> None:
    shade = CollectSettings(shade_detours=True)
    assert shade.detour_kinds == (*DETOUR_KINDS, SHADE_DETOUR)
    assert CollectSettings().detour_kinds == DETOUR_KINDS
    settle_settings(tmp_path, shade, played_before=False)
    assert CollectSettings.model_validate_json((tmp_path / SETTINGS_FILE).read_text()) == shade
    settle_settings(tmp_path, shade, played_before=True)  # the same settings: fine
    with pytest.raises(ConfigError, match=r"shade_detours True → False.*another --work"):
        settle_settings(tmp_path, CollectSettings(), played_before=True)
    older = tmp_path / "older"  # played before the settings were written down: the defaults
    older.mkdir()
    settle_settings(older, CollectSettings(), played_before=True)
    assert (older / SETTINGS_FILE).is_file()
    (older / SETTINGS_FILE).unlink()
    with pytest.raises(ConfigError, match="seed 0 → 3"):
        settle_settings(older, CollectSettings(seed=3), played_before=True)


def test_after_a_shade_detour_the_expert_finds_its_way_and_finishes() -> None:
    tasks = {t.id: t for t in load_tasks([TASKS])}
    request = DeviceRequest(count=1, phone_port=free_phone_port(5680))
    with device_backend().devices(request, print) as devices:
        for task_id in ("location_on", "wifi_on_shade"):  # no quick-settings tile; a tile
            instance = tasks[task_id].instantiate(0)
            expert = Expert(instance, devices[0], random.Random(1), detour_rate=1.0, detour_kinds=["shade"])
            policy = DemoPolicy(expert)
            with tempfile.TemporaryDirectory() as td:
                record = run_episode(
                    devices[0], instance, policy, build="demo", run_id="t", episode_dir=Path(td)
                )
            moves = [move for _, move in policy.moves]
            assert record.outcome is Outcome.SUCCESS, (task_id, moves)
            first, second = moves[0], moves[1]
            assert first.action is not None and first.action.type is ActionType.SWIPE and not first.target
            assert second.target and second.action is not None  # taught: the way on from the shade
            assert moves[-1].target and moves[-1].action is not None
            assert moves[-1].action.type is ActionType.DONE
