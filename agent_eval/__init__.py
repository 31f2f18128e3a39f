"""agent-eval: repeated, interval-backed evaluation of Android GUI agents across quantized builds.

The package is split by job: virtual_device, device, task, agent, builds, runner, scoring, report, cli.
"""

__version__ = "0.1.0"
