"""Training examples as token ids: the served chat template, loss on the answer tokens only, length-sorted
batches under a token budget (little padding), in a seeded order.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_eval.chat.template import TurnFormat
from agent_eval.tune.dataset import Example

IGNORE = -100


@dataclass(frozen=True)
class Encoded:
    input_ids: list[int]
    labels: list[int]  # IGNORE on the prompt, the ids on the answer and its end-of-turn token

    @property
    def answer_tokens(self) -> int:
        return sum(1 for x in self.labels if x != IGNORE)


def encode(example: Example, tokenizer: Any, turn: TurnFormat) -> Encoded:
    """The prompt as the server renders it (chat template, generation prompt), then the answer and the token
    that closes an assistant turn in that template (`<|im_end|>` in ChatML)."""
    prompt_text = tokenizer.apply_chat_template(example.messages, tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(example.answer, add_special_tokens=False)["input_ids"]
    answer_ids = [*answer_ids, turn.end_token]
    return Encoded(input_ids=[*prompt_ids, *answer_ids], labels=[IGNORE] * len(prompt_ids) + answer_ids)


def make_batches(
    items: Sequence[Encoded], *, token_budget: int, max_batch: int, seed: int
) -> list[list[int]]:
    """Indices of `items` grouped by similar length (each batch's padded size ≤ budget), batches shuffled."""
    order = sorted(range(len(items)), key=lambda i: len(items[i].input_ids))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        longest = len(items[i].input_ids)  # sorted ascending: the newest item is the longest
        if current and (len(current) + 1 > max_batch or (len(current) + 1) * longest > token_budget):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    random.Random(seed).shuffle(batches)
    return batches


def padding_id(tokenizer: Any) -> int:
    """The id that fills a batch's shorter rows: the tokenizer's pad token, else its end-of-text token."""
    return int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)


def collate(items: Sequence[Encoded], pad_id: int, *, width_multiple: int = 1) -> dict[str, Any]:
    """The batch as tensors, its rows padded on the right to the longest row's length rounded up to a
    multiple of `width_multiple` (fewer distinct shapes, so the CPU kernels made for one shape are reused)."""
    import torch

    longest = max(len(x.input_ids) for x in items)
    width = -(-longest // width_multiple) * width_multiple
    ids = [x.input_ids + [pad_id] * (width - len(x.input_ids)) for x in items]
    labels = [x.labels + [IGNORE] * (width - len(x.labels)) for x in items]
    mask = [[1] * len(x.input_ids) + [0] * (width - len(x.input_ids)) for x in items]
    return {
        "input_ids": torch.tensor(ids),
        "labels": torch.tensor(labels),
        "attention_mask": torch.tensor(mask),
    }
