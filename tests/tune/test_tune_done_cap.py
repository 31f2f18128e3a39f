"""The cap on `done` targets: which kind it keeps first is a choice, recorded in the dataset's summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.tune.collect import CONTRAST, EPISODES_FILE, EpisodePlan, assemble, cap_done
from agent_eval.tune.dataset import Example


def _example(k: int, source: str, action_type: str) -> Example:
    return Example(
        task_id="wifi_on",
        seed=k,
        episode=k,
        source=source,
        step=1,
        goal="Turn Wi-Fi on.",
        prompt_format="compact",
        messages=[],
        prompt_hash=f"{source}-{action_type}-{k}",
        answer=f'{{"type": "{action_type}"}}',
        action_type=action_type,
    )


def _collection() -> list[Example]:
    """82 taps, 10 final `done`s and 10 contrastive ones: a cap of 18 % allows 18 `done`s of the 20."""
    taps = [_example(k, "oracle", "tap") for k in range(82)]
    final = [_example(k, "oracle", "done") for k in range(10)]
    contrast = [_example(k, CONTRAST, "done") for k in range(10)]
    return taps + final + contrast


@pytest.mark.parametrize(("keep_first", "dropped_kind"), [("contrastive", "oracle"), ("final", CONTRAST)])
def test_the_cap_drops_the_other_kind_of_done_first(keep_first: str, dropped_kind: str) -> None:
    kept, dropped = cap_done(_collection(), keep_first=keep_first)
    assert dropped == 2 and len(kept) == 100
    done = [ex for ex in kept if ex.action_type == "done"]
    kinds = {kind: sum(ex.source == kind for ex in done) for kind in ("oracle", CONTRAST)}
    assert kinds[dropped_kind] == 8 and sum(kinds.values()) == 18


def test_an_unknown_kind_to_keep_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_first must be one of"):
        cap_done(_collection(), keep_first="newest")


def test_the_dataset_summary_says_which_kind_the_cap_kept(tmp_path: Path) -> None:
    row = {"episode": 0, "outcome": "success", "detours": 0}
    row["examples"] = [ex.model_dump(mode="json") for ex in _collection()]
    (tmp_path / EPISODES_FILE).write_text(json.dumps(row) + "\n", encoding="utf-8")
    plan = EpisodePlan(0, "wifi_on", 0, "oracle", "Turn Wi-Fi on.", 1)
    summary = assemble(tmp_path, [plan], 0.0, 1, done_cap_keeps="final")
    assert (summary.done_cap_keeps, summary.dropped_done) == ("final", 2)
    assert summary.per_source == {"contrast": 8, "oracle": 92}
