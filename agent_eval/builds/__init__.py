"""Builds: the model variants a run compares (schema, prepare, engine launchers) and where they answer.

Public API: load_builds, Build, BuildSet, prepare, serve, ServedBuild, Serving, unavailable_reason.
"""

import agent_eval.builds.engines  # (the built-in engine kinds register on import)
import agent_eval.builds.recipe_kinds  # noqa: F401  (the built-in recipe kinds register on import)
from agent_eval.builds.host import unavailable_reason
from agent_eval.builds.kinds import Serving
from agent_eval.builds.launcher import ServedBuild, serve
from agent_eval.builds.prepare import prepare
from agent_eval.builds.spec import Build, BuildSet, load_builds

__all__ = [
    "Build",
    "BuildSet",
    "ServedBuild",
    "Serving",
    "load_builds",
    "prepare",
    "serve",
    "unavailable_reason",
]
