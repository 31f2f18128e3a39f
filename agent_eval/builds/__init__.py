"""Builds: the model variants a run compares. The interface (a builds file, its plug points) is this folder's
modules; `serving/` starts and reaches a build's engine, `preparing/` makes its weights.

Public API: load_builds, Build, BuildSet, prepare, serve, ServedBuild, Serving, unavailable_reason.
"""

# The built-in engine and recipe kinds register on import.
import agent_eval.builds.preparing.built_in_recipes
import agent_eval.builds.serving.built_in_engines  # noqa: F401
from agent_eval.builds.engine_kinds import Serving
from agent_eval.builds.preparing.prepare_builds import prepare
from agent_eval.builds.serving.host import unavailable_reason
from agent_eval.builds.serving.launcher import ServedBuild, serve
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
