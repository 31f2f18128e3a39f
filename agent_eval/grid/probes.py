"""Which episodes a grid probes for navigation (stopping taken away), and which builds cannot be probed.

`stopped` probes only the episodes that stopped before the goal ever held where the engine's sampler keeps
its draw when other tokens are masked (any other episode's probe would replay it to the same end), and every
episode elsewhere (docs/scorecard.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from agent_eval.builds import Build
from agent_eval.builds.engine_kinds import keeps_draw_under_mask
from agent_eval.errors import ConfigError
from agent_eval.records import EpisodeRecord
from agent_eval.runner.loop import Cell, FollowUp
from agent_eval.scoring.decomposition import stopped_early

ProbeRule = Literal["off", "stopped", "all"]


def keeps_draw(build: Build) -> bool:
    """Whether the build's engine keeps its draw when tokens are masked (its kind's keeps_draw_under_mask)."""
    return keeps_draw_under_mask(build.kind)


def probe_follow_up(
    rule: ProbeRule, builds: Sequence[Build] = (), baselines: Collection[str] = ()
) -> FollowUp | None:
    """What run_cells queues after each scored episode under `rule`: its navigation probe, or nothing.

    `stopped` probes the early stops of builds whose engine keeps its draw under a mask and every episode of
    the others (there a probe does not replay its episode, so no outcome can be taken from the episode).
    Baselines (the untuned model) play once as a floor and get no verdict on abilities: no probes either."""
    if rule == "off":
        return None
    replays = {b.name for b in builds if keeps_draw(b)}

    def follow(cell: Cell, record: EpisodeRecord) -> Cell | None:
        if cell.kind != "episode" or cell.build in baselines:
            return None
        every = rule == "all" or cell.build not in replays
        return cell.probe() if every or stopped_early(record) else None

    return follow


def refuse_unprobeable(builds: Sequence[Build], rule: ProbeRule) -> None:
    """A probe takes stopping away through the engine's structured output; a build whose server is not sent
    a schema could still stop, so the grid refuses it before any episode."""
    if rule == "off":
        return
    blind = [b.name for b in builds if not b.kind.starts_server and b.structured_output == "off"]
    if blind:
        raise ConfigError(
            f"build(s) {', '.join(blind)} have structured_output: off, so a navigation probe cannot take "
            "done, infeasible and answer out of what the model may answer; serve them with a JSON schema "
            "(structured_output: json_schema or json_object), or set the grid's navigation_probes: off"
        )
