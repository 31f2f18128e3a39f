"""Probing one served build with the recorded steps: one prefill per step with the source's answer appended,
and a greedy decode only where that prefill shows the build would answer differently.

How agreement is counted under the structured-output mask: the build decodes greedily *under the mask*, so
what matters at each answer position is the forced token's rank among the tokens the schema allows there
(`mask.py` replays the grammar). When that masked rank is 1 at every position, the build's greedy answer is
the source's answer token for token: `via = forced`, no decode. (Without the mask replay the plain rank is
used; the mask can only turn a plain rank > 1 into a masked rank 1, so that counts fewer forced agreements.)
Elsewhere the greedy answer leaves the source's tokens, though it may still name the same action (other
whitespace, say), so the build is asked once at temperature 0 with the same structured output and its answer
parsed: `via = decoded`. Without decoding (`decode=False`) those steps stay `undecided` and count as
disagreements, so agreement is then a lower bound.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import Field

from agent_eval.action import Action
from agent_eval.agent.parse import parse_action
from agent_eval.agent.prompt import action_schema, with_answer
from agent_eval.chat.client import ChatClient
from agent_eval.chat.endpoint import Endpoint
from agent_eval.chat.teacher import TeacherClient
from agent_eval.fidelity.mask import SchemaMask
from agent_eval.fidelity.metrics import greedy_reproduces, p_done, same_action
from agent_eval.fidelity.steps import SourceStep
from agent_eval.records import StrictModel

Via = Literal["forced", "decoded", "undecided", "no-source-action"]
Span = tuple[list[int], list[int]]


class StepProbe(StrictModel):
    """One recorded step replayed on one build: a line of fidelity/probes/<build>.jsonl."""

    build: str
    episode: str = Field(description="The source episode's directory, relative to the run directory.")
    task_id: str
    seed: int
    step: int
    goal_before: bool
    said_done: bool = Field(description="The source's answer at this step was done.")
    tokens: list[str] = Field(description="The source answer's tokens (end of turn included).")
    ranks: list[int] = Field(description="Each forced token's rank under the build (1 = its top token).")
    masked_ranks: list[int | None] | None = Field(
        None, description="The rank among the tokens the schema allows; None where unknown (see mask.py)."
    )
    logprobs: list[float] = Field(description="Each forced token's log-probability under the build.")
    tops: list[dict[str, float]] = Field(
        description="Per position: token id → log-probability (top-k + forced)."
    )
    p_done: float | None = Field(None, description="P(the answer names done) at the action-type position.")
    agrees: bool | None = Field(
        None, description="Greedy action = source action; None without a source action."
    )
    via: Via = "forced"
    decoded_answer: str | None = None
    decoded_action: Action | None = None
    prefill_s: float = 0.0
    reused: bool = Field(
        False,
        description="Copied from an identical request of this pass (same prompt and answer).",
    )


def _request_key(step: SourceStep) -> str:
    """Steps with equal keys send the build the same tokens: one probe answers them all (temperature 0)."""
    return json.dumps([step.messages, step.answer], sort_keys=True, ensure_ascii=False)


def _relabel(probe: StepProbe, step: SourceStep) -> StepProbe:
    """An identical request's probe, as this step's (its own episode, seed and goal timeline)."""
    return probe.model_copy(
        update={
            "episode": step.episode,
            "task_id": step.task_id,
            "seed": step.seed,
            "step": step.step,
            "goal_before": step.goal_before,
            "said_done": step.said_done,
            "prefill_s": 0.0,
            "reused": True,
        }
    )


class BuildProber:
    """Probes steps on one endpoint; `spans` (token ids per step) is shared by builds of one tokenizer."""

    def __init__(
        self,
        build: str,
        endpoint: Endpoint,
        *,
        top_k: int = 20,
        decode: bool = True,
        workers: int = 4,
        mask: SchemaMask | None = None,
    ) -> None:
        self.mask = mask
        self.build = build
        self.teacher = TeacherClient(endpoint, top_k=top_k)
        greedy = dataclasses.replace(endpoint, temperature=0.0, top_p=1.0)
        self.chat = ChatClient(greedy, stream=False)
        self.decode = decode
        self.workers = workers
        self._schema = action_schema()
        self._answer_schema = with_answer(self._schema)  # what the agent asks with on a question task
        self._lock = threading.Lock()

    def close(self) -> None:
        self.teacher.close()
        self.chat.close()

    def request_settings(self) -> dict[str, object]:
        return {
            **self.teacher.request_settings(),
            "decode": {"temperature": 0.0, "seed": None, "structured_output": True} if self.decode else None,
        }

    def _span(self, step: SourceStep, spans: dict[tuple[str, int], Span]) -> Span:
        key = (step.episode, step.step)
        with self._lock:
            cached = spans.get(key)
        if cached is None:
            cached = self.teacher.answer_span(step.messages, step.answer)
            with self._lock:
                spans[key] = cached
        return cached

    def probe(self, step: SourceStep, spans: dict[tuple[str, int], Span]) -> StepProbe:
        prompt_ids, answer_ids = self._span(step, spans)
        started = time.perf_counter()
        forced = self.teacher.force(prompt_ids, answer_ids)
        prefill_s = time.perf_counter() - started
        positions = forced.positions
        ranks = [p.rank for p in positions]
        tops = [p.top for p in positions]
        masked = self.mask.masked_ranks(answer_ids, ranks, tops, answers=step.answers) if self.mask else None
        probe = StepProbe(
            build=self.build,
            episode=step.episode,
            task_id=step.task_id,
            seed=step.seed,
            step=step.step,
            goal_before=step.goal_before,
            said_done=step.said_done,
            tokens=[p.text for p in positions],
            ranks=ranks,
            masked_ranks=masked,
            logprobs=[p.logprob for p in positions],
            tops=[{str(t): lp for t, lp in p.top.items()} for p in positions],
            p_done=p_done(
                [p.text for p in positions], [p.top for p in positions], [p.top_text for p in positions]
            ),
            prefill_s=prefill_s,
        )
        if step.action is None:
            return probe.model_copy(update={"via": "no-source-action"})
        if greedy_reproduces(ranks if masked is None else [r or 0 for r in masked]):
            return probe.model_copy(update={"agrees": True, "via": "forced"})
        if not self.decode:
            return probe.model_copy(update={"agrees": False, "via": "undecided"})
        schema = self._answer_schema if step.answers else self._schema
        answer = self.chat.chat(step.messages, json_schema=schema).text
        action = parse_action(answer).action
        return probe.model_copy(
            update={
                "agrees": same_action(action, step.action),
                "via": "decoded",
                "decoded_answer": answer,
                "decoded_action": action,
            }
        )

    def probe_all(
        self, steps: Sequence[SourceStep], spans: dict[tuple[str, int], Span], out: Path | None = None
    ) -> list[StepProbe]:
        """Every step, `workers` requests at a time (the engine batches them); results in step order.

        Steps that would send identical requests (seeds of a task replaying the same screens and answers)
        are asked once; the others get that probe relabelled (`reused`). With `out`, each probe is appended
        to that file as soon as it is done, so a cut session keeps them.
        """
        sink = out.open("w", encoding="utf-8") if out is not None else None
        groups: dict[str, list[int]] = {}
        for i, step in enumerate(steps):
            groups.setdefault(_request_key(step), []).append(i)
        results: dict[int, StepProbe] = {}

        def one(indices: list[int]) -> None:
            first = self.probe(steps[indices[0]], spans)
            mine = [first, *(_relabel(first, steps[i]) for i in indices[1:])]
            with self._lock:
                results.update(zip(indices, mine, strict=True))
                if sink is not None:
                    sink.writelines(p.model_dump_json() + "\n" for p in mine)
                    sink.flush()

        try:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                list(pool.map(one, groups.values()))
        finally:
            if sink is not None:
                sink.close()
        return [results[i] for i in range(len(steps))]
