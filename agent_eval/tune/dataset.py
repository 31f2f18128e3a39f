"""The demonstration dataset on disk: one JSONL line per training example, a summary with its content hash.

An example is one expert step: the prompt the LLM policy would send for that screen and history (images
elided, as recorded) and the answer the model is taught.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_eval.builds.serving.weights import sha256_file
from agent_eval.errors import ConfigError

DATASET_FILE = "dataset.jsonl"
SUMMARY_FILE = "dataset.json"
# Which `done` targets the collection's cap on their share keeps first (collect.cap_done).
DoneCapKeeps = Literal["contrastive", "final"]


class Example(BaseModel):
    task_id: str
    seed: int
    episode: int  # index in the collection plan
    source: str  # oracle | recovery
    step: int
    goal: str
    prompt_format: str
    messages: list[dict[str, Any]]
    prompt_hash: str
    answer: str
    action_type: str
    after_detour: bool = False


class DatasetSummary(BaseModel):
    hash: str = Field(description="sha256 of dataset.jsonl's bytes")
    examples: int
    episodes: int
    prompt_format: str
    per_task: dict[str, int]
    per_action: dict[str, int]
    per_source: dict[str, int]
    dropped_done: int = 0
    done_cap_keeps: DoneCapKeeps = Field(
        "contrastive",
        description="Which `done` targets the cap on their share kept first: contrastive or final ones.",
    )
    tasks: list[str]
    collect_seconds: float = 0.0
    phones: int = 0
    played_episodes: int = 0
    played_steps: int = 0  # expert steps recorded, before duplicates and surplus `done` were dropped
    copies: int = Field(1, description="Identical (prompt, answer) examples kept up to this many times.")
    per_family: dict[str, int] = Field(default_factory=dict, description="Examples per task family.")
    played_per_family: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Per family: episodes played, succeeded, expert steps recorded."
    )
    held_out_wordings: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per task, goal wordings never used in the data (evaluation may use them).",
    )


def write_dataset(examples: list[Example], out_dir: Path, **summary: Any) -> DatasetSummary:
    path = out_dir / DATASET_FILE
    with path.open("w", encoding="utf-8") as f:
        for ex in examples:
            f.write(json.dumps(ex.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n")
    result = DatasetSummary(
        hash=sha256_file(path),
        examples=len(examples),
        episodes=len({ex.episode for ex in examples}),
        prompt_format=examples[0].prompt_format if examples else "",
        per_task=dict(sorted(Counter(ex.task_id for ex in examples).items())),
        per_action=dict(sorted(Counter(ex.action_type for ex in examples).items())),
        per_source=dict(sorted(Counter(ex.source for ex in examples).items())),
        tasks=sorted({ex.task_id for ex in examples}),
        **summary,
    )
    (out_dir / SUMMARY_FILE).write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return result


def read_dataset(out_dir: Path) -> tuple[list[Example], DatasetSummary]:
    path, summary_path = out_dir / DATASET_FILE, out_dir / SUMMARY_FILE
    if not path.is_file() or not summary_path.is_file():
        raise ConfigError(f"no dataset in {out_dir}: run `agent-eval tune collect` first")
    summary = DatasetSummary.model_validate_json(summary_path.read_text(encoding="utf-8"))
    if sha256_file(path) != summary.hash:
        raise ConfigError(f"{path} does not match the hash in {summary_path}: collect it again")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Example.model_validate_json(line) for line in lines if line.strip()], summary
