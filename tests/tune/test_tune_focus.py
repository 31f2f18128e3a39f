"""Which examples each training epoch holds (focus.py), and the per-example hardness the loss reports."""

from __future__ import annotations

from collections import Counter

import pytest

from agent_eval.tune.focus import epoch_examples, floor_copies


def _epoch(
    tasks: list[str],
    hardness: list[float | None],
    epoch: int,
    *,
    floor: int = 0,
    focus: float | None = 0.05,
    easy: float = 0.25,
    seed: int = 3,
) -> list[int]:
    return epoch_examples(
        tasks, hardness, epoch=epoch, task_floor=floor, focus_loss=focus, easy_share=easy, seed=seed
    )


def test_small_tasks_are_repeated_up_to_the_floor() -> None:
    tasks = ["big"] * 40 + ["small"] * 8 + ["tiny"] * 3
    assert floor_copies(tasks, 40) == [1] * 40 + [5] * 8 + [13] * 3
    assert floor_copies(tasks, 0) == [1] * 51
    first = epoch_examples(
        tasks, [None] * 51, epoch=0, task_floor=40, focus_loss=0.05, easy_share=0.0, seed=0
    )
    assert Counter(tasks[i] for i in first) == {"big": 40, "small": 40, "tiny": 39}


def test_later_epochs_keep_what_is_still_wrong_and_a_share_of_the_rest() -> None:
    tasks = ["t"] * 1000
    hardness: list[float | None] = [0.5] * 100 + [0.001] * 899 + [None]
    first = _epoch(tasks, hardness, 0)
    assert first == list(range(1000))  # the first epoch is every example, whatever is known
    second = _epoch(tasks, hardness, 1)
    assert set(range(100)) | {999} <= set(second)  # every hard one, and the one never measured
    easy = [i for i in second if 100 <= i < 999]
    assert 899 * 0.25 - 45 < len(easy) < 899 * 0.25 + 45
    assert second == _epoch(tasks, hardness, 1)
    assert second != _epoch(tasks, hardness, 2)
    no_focus = _epoch(tasks, hardness, 1, focus=None)
    assert no_focus == list(range(1000))


def test_an_epoch_with_nothing_hard_and_no_easy_share_falls_back_to_everything() -> None:
    chosen = epoch_examples(
        ["t"] * 5, [0.0] * 5, epoch=1, task_floor=0, focus_loss=0.05, easy_share=0.0, seed=0
    )
    assert chosen == [0, 1, 2, 3, 4]


def test_the_worst_answer_token_of_each_example() -> None:
    torch = pytest.importorskip("torch")
    from agent_eval.tune.train import worst_per_row

    where = torch.tensor([[False, True, True], [False, False, False], [True, False, True]])
    per_token = torch.tensor([0.1, 0.7, 2.0, 0.3])  # row-major over the selected positions
    assert worst_per_row(per_token, where) == pytest.approx([0.7, 0.0, 2.0])
