"""Loading installed plug-in packages: each entry point in group `agent_eval.plugins` names a callable that
registers its kinds (agents, engine kinds, recipe kinds, device backends, goal predicates) on the plug points'
registries.

The CLI calls `load_plugins()` when a command starts; for code that uses the library it runs by itself the
first time any registry is asked what it holds (`agent_eval.registry.before_first_use`), since importing
any part of agent_eval imports this module.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from agent_eval.errors import ConfigError
from agent_eval.registry import before_first_use, in_use

ENTRY_POINT_GROUP = "agent_eval.plugins"
_loaded = False


def load_plugins() -> list[str]:
    """Call every installed `agent_eval.plugins` entry point once per process; the names loaded.

    A plug-in that fails to load stops the command with a ConfigError naming its entry point.
    """
    global _loaded
    if _loaded:
        return []
    _loaded = True
    in_use()  # a registry asked later must not load them again
    _import_built_ins()
    names = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register = point.load()
            register()
        except Exception as e:  # a third party's code: any failure is its own, named here
            raise ConfigError(
                f"plug-in {point.name!r} ({point.value}, entry point group {ENTRY_POINT_GROUP}) "
                f"failed to load: {type(e).__name__}: {e}"
            ) from e
        names.append(point.name)
    return names


def _import_built_ins() -> None:
    """The built-in kinds register on import; they come first so a plug-in may replace one on purpose."""
    import agent_eval.agent.agents
    import agent_eval.builds.preparing.built_in_recipes
    import agent_eval.builds.serving.built_in_engines
    import agent_eval.device.adb_backend
    import agent_eval.task.goal_kinds  # noqa: F401


before_first_use(load_plugins)
