"""The grid: builds × tasks × seeds, paired across builds, over K devices, resumable, with adaptive top-up.

Public API: GridSpec, load_grid, run_grid, run_from_path, spec_from, GridResult (docs/grid.md).
"""

from agent_eval.grid.run import GridResult, is_grid_file, run_from_path, run_grid, spec_from
from agent_eval.grid.spec import Adaptive, GridSpec, load_grid

__all__ = [
    "Adaptive",
    "GridResult",
    "GridSpec",
    "is_grid_file",
    "load_grid",
    "run_from_path",
    "run_grid",
    "spec_from",
]
