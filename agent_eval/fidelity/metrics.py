"""Per-step fidelity numbers from teacher-forced log-probabilities (pure functions, no I/O).

A position's distribution is known only on the engine's top-k tokens plus the forced token. The KL is taken
over the partition {each token known on both sides} + {"other": everything else}; merging tokens can only
shrink a KL divergence (log-sum inequality), so the figure is a lower bound of the true KL.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from agent_eval.action import Action

# The answer position where a structured answer names its action type: right after `{"type": "`.
_TYPE_OPENED = re.compile(r'"type"\s*:\s*"$')
_DONE = "done"
_FLOOR = 1e-12  # a probability mass that rounding drove to ≤ 0


def kl_lower_bound(p_log: Mapping[int, float], q_log: Mapping[int, float]) -> float:
    """KL(P ‖ Q) in nats over the tokens both sides know, the rest merged into one "other" bucket."""
    shared = p_log.keys() & q_log.keys()
    kl = 0.0
    p_known = q_known = 0.0
    for token in shared:
        p, q = math.exp(p_log[token]), math.exp(q_log[token])
        p_known += p
        q_known += q
        if p > 0:
            kl += p * (p_log[token] - q_log[token])
    p_other = max(1.0 - p_known, 0.0)
    q_other = max(1.0 - q_known, _FLOOR)
    if p_other > _FLOOR:
        kl += p_other * math.log(p_other / q_other)
    return max(kl, 0.0)


def mean_kl(reference: Sequence[Mapping[int, float]], build: Sequence[Mapping[int, float]]) -> float | None:
    """Mean over answer positions of KL(reference ‖ build); None for an empty answer."""
    if len(reference) != len(build):
        raise ValueError(f"{len(reference)} reference positions vs {len(build)} build positions")
    if not reference:
        return None
    return sum(kl_lower_bound(p, q) for p, q in zip(reference, build, strict=True)) / len(reference)


def greedy_reproduces(ranks: Sequence[int]) -> bool:
    """The build's greedy answer equals the forced one: the forced token is its top token everywhere."""
    return bool(ranks) and all(rank == 1 for rank in ranks)


def p_done(
    tokens: Sequence[str], tops: Sequence[Mapping[int, float]], texts: Sequence[Mapping[int, str]]
) -> float | None:
    """The probability of naming `done` where the answer names its action type; None if it never does.

    Summed over the top-k tokens that start `done` (or are a prefix of it), so it is a lower bound; it is the
    unconstrained probability (the structured-output mask would renormalise over the allowed action types).
    """
    said = ""
    for token, top, text in zip(tokens, tops, texts, strict=True):
        if _TYPE_OPENED.search(said):
            total = 0.0
            for tid, logprob in top.items():
                piece = text.get(tid, "")
                if piece and (piece.startswith(_DONE) or _DONE.startswith(piece)):
                    total += math.exp(logprob)
            return min(total, 1.0)
        said += token
    return None


def same_action(a: Action | None, b: Action | None) -> bool:
    """Same type and the same target (element, key, direction or app); typed text is not compared."""
    if a is None or b is None:
        return False
    return (a.type, a.element, a.key, a.direction, a.app) == (b.type, b.element, b.key, b.direction, b.app)
