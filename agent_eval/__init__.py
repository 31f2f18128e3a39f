"""agent-eval: repeated, interval-backed evaluation of Android GUI agents across quantized builds.

The package is split by job: device, task, agent, builds, runner, grid, scoring, report, cli; the virtual
phone it plays on is its own package, `virtual_phone`, reached through the device backend.
"""

__version__ = "0.1.0"

# Installed plug-ins load before any registry is first asked for a kind, for library users too.
from agent_eval import plugins as _plugins  # noqa: F401
