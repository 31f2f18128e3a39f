"""`fidelity: first` in a grid: a build's fidelity verdict from its probes alone, taken before its episodes.

Each warning is a line of fidelity/early_warnings.jsonl as soon as it is said, so a grid cut short keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from agent_eval.fidelity.probe import StepProbe
from agent_eval.fidelity.result import (
    TESTED_METRICS,
    EarlyWarning,
    FidelityVerdict,
    build_fidelity,
    judge,
)
from agent_eval.rundir import fidelity_serving_dir

EARLY_WARNINGS_FILE = "early_warnings.jsonl"


def early_warnings_path(run_dir: Path) -> Path:
    return fidelity_serving_dir(run_dir) / EARLY_WARNINGS_FILE


def early_warning(
    build: str, probes: Sequence[StepProbe], reference: Sequence[StepProbe], probe_s: float
) -> EarlyWarning:
    """The build's verdict on its probes against the reference's: Holm over this build's tested metrics
    alone (the family known before its episodes; fidelity.json's verdicts correct over every build)."""
    ref = build_fidelity("reference", reference, reference, True, with_kl=False)
    mine = build_fidelity(build, probes, reference, False, with_kl=False)
    judge([ref, mine])
    worse = [m for m in TESTED_METRICS if getattr(mine, m).verdict is FidelityVerdict.WORSE]
    return EarlyWarning(
        build=build,
        flagged=mine.flagged,
        worse=worse,
        steps=len(probes),
        episodes=len({p.episode for p in probes}),
        probe_s=round(probe_s, 2),
        warned_at=datetime.now(UTC),
    )


def sentence(warning: EarlyWarning) -> str:
    """The warning as the grid says it, before the build's episodes."""
    what = f"{warning.steps} recorded steps of {warning.episodes} reference episodes"
    if warning.flagged:
        return (
            f"early warning: fidelity flags {warning.build} ({', '.join(warning.worse)} WORSE than the "
            f"reference) after {warning.probe_s:.0f} s of probes on {what}, before its episodes"
        )
    return f"fidelity: {warning.build} not flagged after {warning.probe_s:.0f} s of probes on {what}"


def record_warning(run_dir: Path, warning: EarlyWarning) -> None:
    """Append the warning (the latest line per build is the one that counts)."""
    path = early_warnings_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(warning.model_dump_json() + "\n")


def read_warnings(run_dir: Path) -> list[EarlyWarning]:
    """The run's early warnings, the latest per build, in the order first said; a torn line is skipped."""
    path = early_warnings_path(run_dir)
    if not path.is_file():
        return []
    latest: dict[str, EarlyWarning] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            warning = EarlyWarning.model_validate_json(line)
        except ValidationError:
            continue  # a line cut by a kill mid-write
        latest[warning.build] = warning
    return list(latest.values())
