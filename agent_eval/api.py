"""The public module for extending agent-eval: a plug-in imports only this (docs/extending.md).

Five plug points, each a registry that files name things in, each with its `register_…` function:

- **engine kind** (`register_engine_kind`, a build's `engine:`): `EngineKind` says whether the harness starts
  a server (`starts_server`; then `launch` returns a `Launch`, else `connect` returns an `Endpoint`), what the
  server can do (`teacher_forcing`, `images`, `prepares_without_engine`; optional `keeps_draw_under_mask`,
  read by a grid's navigation probes) and its builds' options: `options`, a subclass of `EngineOptions` that a
  build's `engine_args:` is validated against when the builds file loads (`build.options(Model)` reads them
  back). The harness applies the build's `pinning:` itself: it puts numactl or taskset in front of the
  launch's command and records what it applied. `Serving` says what one start is for (slots, teacher
  forcing). `EngineArgs` are the built-in kinds' options; `EndpointKind` the built-in `endpoint` kind, to
  subclass.
- **recipe kind** (`register_recipe_kind`, a build's `prepare: {kind: …}`): `RecipeKind` with its fields model
  (a `Recipe`), `plan(step: Step) -> Plan`; `Weights` and `RungInfo` for the manifest's rung; `Say` prints.
- **agent** (`register_agent`, a build's `agent:`): an `Agent` makes a `Policy` from a `ChatClient`;
  `PromptAgent` is one from a prompt format (`ChatFormat`, `build_prompt`, `SYSTEM_PROMPT`) and an action
  schema (`action_schema`); `PastStep` is a step of the history a format is given; `Observation` the screen.
- **device backend** (`register_device_backend`, a grid's `device_backend:`): `DeviceBackend.devices(request:
  DeviceRequest, say)` yields `EpisodeDevice`s; `Device` is the adb device, to subclass.
- **goal predicate** (`register_predicate`, the key of a task's `goal_state`): a `GoalPredicate` subclass
  whose `holds(probe: Probe)` reads `probe.device`, a `StateSource` whose `shell` returns a `ShellResult`.

Errors, by whose fault they are: `TaskError` (a ConfigError): the task is wrong (its file, its oracle, its
start state), fix the task; `InfraError` (`DeviceError`, `EngineError`): the device or the engine failed, the
episode is retried and never scored as the agent's failure; `ConfigError`: a file names something unknown or
is malformed; `BuildError`: a build cannot be prepared or served. A `ValueError` raised in a kind's `check`
or in a fields model's validator is shown as an error of that build or task file.

Plug-ins installed as packages (entry point group `agent_eval.plugins`) load by themselves the first time any
registry is asked for a kind, in the `agent-eval` command and in code that uses the library alike;
`load_plugins()` loads them at once (and says which).
"""

from __future__ import annotations

# Importing these modules imports their packages, whose built-in kinds register before any plug-in's.
from agent_eval.agent.agents import Agent, PromptAgent, register_agent
from agent_eval.agent.policy import PastStep, Policy
from agent_eval.agent.prompt import SYSTEM_PROMPT, ChatFormat, action_schema, build_prompt
from agent_eval.builds.engine_kinds import (
    EngineKind,
    EngineOptions,
    Launch,
    Serving,
    register_engine_kind,
)
from agent_eval.builds.recipe_kinds import (
    Plan,
    Recipe,
    RecipeKind,
    Say,
    Weights,
    register_recipe_kind,
)
from agent_eval.builds.serving.built_in_engines import EndpointKind, EngineArgs
from agent_eval.builds.spec import Build, Step
from agent_eval.chat.client import ChatClient
from agent_eval.chat.endpoint import Endpoint
from agent_eval.device import Device, DeviceBackend, DeviceRequest, EpisodeDevice, register_device_backend
from agent_eval.device.adb import ShellResult
from agent_eval.errors import (
    AgentEvalError,
    BuildError,
    ConfigError,
    DeviceError,
    EngineError,
    InfraError,
    TaskError,
)
from agent_eval.plugins import load_plugins
from agent_eval.records import RungInfo
from agent_eval.screen.observation import Element, Observation
from agent_eval.task.registry import GoalPredicate, Probe, StateSource, register_predicate

__all__ = [
    "SYSTEM_PROMPT",
    "Agent",
    "AgentEvalError",
    "Build",
    "BuildError",
    "ChatClient",
    "ChatFormat",
    "ConfigError",
    "Device",
    "DeviceBackend",
    "DeviceError",
    "DeviceRequest",
    "Element",
    "Endpoint",
    "EndpointKind",
    "EngineArgs",
    "EngineError",
    "EngineKind",
    "EngineOptions",
    "EpisodeDevice",
    "GoalPredicate",
    "InfraError",
    "Launch",
    "Observation",
    "PastStep",
    "Plan",
    "Policy",
    "Probe",
    "PromptAgent",
    "Recipe",
    "RecipeKind",
    "RungInfo",
    "Say",
    "Serving",
    "ShellResult",
    "StateSource",
    "Step",
    "TaskError",
    "Weights",
    "action_schema",
    "build_prompt",
    "load_plugins",
    "register_agent",
    "register_device_backend",
    "register_engine_kind",
    "register_predicate",
    "register_recipe_kind",
]
