"""Which examples each epoch trains on.

The first epoch sees every example once, a task with few distinct examples repeated up to `task_floor` (a
task that always starts on the same screen collapses to a handful of distinct prompts, and would otherwise
weigh almost nothing). From the second epoch on, `focus_loss` (when set) keeps every example the model still
gets wrong somewhere (its largest answer-token loss, as last measured, is at least `focus_loss`) and a
random `easy_share` of the others, so that the time goes where the answers are still wrong (typically the
done-or-act decision) without forgetting the rest.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence


def floor_copies(tasks: Sequence[str], task_floor: int) -> list[int]:
    """How many times each example is repeated in an epoch so that each task has ~task_floor examples."""
    sizes = Counter(tasks)
    return [max(1, round(task_floor / sizes[t])) if task_floor else 1 for t in tasks]


def _still_wrong(hardness: float | None, focus_loss: float) -> bool:
    return hardness is None or hardness >= focus_loss


def epoch_examples(
    tasks: Sequence[str],
    hardness: Sequence[float | None],
    *,
    epoch: int,
    task_floor: int,
    focus_loss: float | None,
    easy_share: float,
    seed: int,
) -> list[int]:
    """Indices of the examples of `epoch` (0-based), repeated ones as often as they are repeated."""
    copies = floor_copies(tasks, task_floor)
    chosen = list(range(len(tasks)))
    if epoch > 0 and focus_loss is not None:
        rng = random.Random(seed * 1_000 + epoch)
        chosen = [i for i in chosen if _still_wrong(hardness[i], focus_loss) or rng.random() < easy_share]
        if not chosen:
            chosen = list(range(len(tasks)))
    return [i for i in chosen for _ in range(copies[i])]
