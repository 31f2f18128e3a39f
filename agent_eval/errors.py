"""The errors a user can cause or must act on, as the project's own exception types.

The CLI prints these without a traceback and exits non-zero; anything else is a bug.
"""

from __future__ import annotations


class AgentEvalError(Exception):
    """Base of every error the CLI reports as a plain message (no traceback)."""


class ConfigError(AgentEvalError):
    """A task, build or grid file is malformed, names something unknown, or is missing."""


class TaskError(ConfigError):
    """A task file is invalid or its oracle/start state is broken."""


class BuildError(AgentEvalError):
    """A build cannot be prepared or served (missing weights, rejected scheme, engine died)."""


class InfraError(AgentEvalError):
    """The device or the engine failed: the episode is retried, never scored as an agent failure."""


class DeviceError(InfraError):
    """The adb device failed, went offline, or answered something unusable."""


class DeviceNotFoundError(DeviceError):
    """The requested adb serial is not connected."""


class EngineError(InfraError):
    """The model endpoint refused, timed out, answered garbage, or its server died."""


class InvalidActionError(AgentEvalError):
    """An agent's action names an element that is not on screen or lacks a field it needs.

    Not an infra error: the episode loop records the step as invalid and carries on.
    """


class RunStoreError(AgentEvalError):
    """A run directory is unreadable or belongs to a different configuration."""


class ClusterError(ConfigError):
    """The Ray cluster a grid names cannot be reached, or lacks what the grid needs (phones, resources)."""
