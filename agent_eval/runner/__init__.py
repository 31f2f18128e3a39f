"""Running episodes: one episode's loop, many cells over devices, and the run directory they are written to.

`run_episode` plays one; `run_cells` plays many into a `RunStore`; `agent-eval run` is in run_cli.
"""

from agent_eval.rundir import RunManifest, RunStore
from agent_eval.runner.episode import run_episode
from agent_eval.runner.loop import BuildAgent, Cell, RunSummary, run_cells
from agent_eval.runner.new_run_manifest import new_manifest

__all__ = [
    "BuildAgent",
    "Cell",
    "RunManifest",
    "RunStore",
    "RunSummary",
    "new_manifest",
    "run_cells",
    "run_episode",
]
