"""The grid spec (a grids/*.yaml file): which tasks, builds and seeds, how they are scheduled and scored.

Loaded with `load_grid`; errors name the file and the field. Relative paths resolve against the grid file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from agent_eval.errors import ConfigError
from agent_eval.records import StrictModel

Serving = Literal["one-at-a-time", "side-by-side"]


class Adaptive(StrictModel):
    """Top-up after each phase: every cell of a build whose verdict is still INCONCLUSIVE gets more seeds."""

    enabled: bool = Field(True, description="Top up undecided builds after each phase.")
    schedule: list[int] = Field(
        default_factory=lambda: [10, 20, 30],
        description="Seed counts an undecided build's cells grow to, one level a phase; the last: the cap.",
    )
    budget_episodes: int | None = Field(
        None,
        ge=0,
        description="Episodes the top-up phases may add in all (beyond phase 1); default: no limit.",
    )
    budget_minutes: float | None = Field(
        None,
        gt=0,
        description="Wall minutes a grid session may take: a build is topped up only if, at its own pace so "
        "far, its growth fits in the minutes left; default: no limit.",
    )

    @field_validator("schedule")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        if any(step < 1 for step in value):
            raise ValueError("every schedule level is a positive seed count")
        if value != sorted(set(value)):
            raise ValueError(f"schedule levels must increase, e.g. [10, 20, 30]; got {value}")
        return value


class GridSpec(StrictModel):
    """One grid: builds × tasks × seeds, every build on the same (task, seed) pairs."""

    tasks: list[str] = Field(
        min_length=1, description="Task files, folders of them, or task ids (looked up in the repo's tasks/)."
    )
    builds_file: str | None = Field(
        None, description="A builds file; default: the repo's builds/default.yaml."
    )
    builds: list[str] | None = Field(None, description="The builds of that file to run; default: all.")
    reference: str | None = Field(None, description="The reference build; default: the file's reference.")
    seeds: int = Field(
        5, ge=1, description="Phase 1: N seeds for every (task, build): first_seed .. first_seed+N-1."
    )
    first_seed: int = Field(
        0, ge=0, description="The first seed; another range replays the grid on new episodes (a replication)."
    )
    adaptive: Adaptive = Field(default_factory=Adaptive)
    margin: float = Field(0.10, gt=0, lt=1, description="Non-inferiority margin δ (a drop in rate).")
    devices: int | list[str] = Field(
        1, description="How many virtual phones the grid starts, or the adb serials of phones to use."
    )
    serving: Serving = Field(
        "one-at-a-time", description="Serve one build at a time (2 cores), or every build side by side."
    )
    max_steps: int | None = Field(None, ge=1, description="Override every task's step budget.")
    max_attempts: int = Field(3, ge=1, description="Attempts per episode when the device or engine fails.")
    device_backend: str = Field(
        "adb", description="How the grid gets its phones: a registered device backend (docs/extending.md)."
    )
    phone_base_port: int = Field(5900, ge=1024, le=65000, description="First adb port of started phones.")
    engine_base_port: int = Field(8200, ge=1024, le=65000, description="First port tried for an engine.")
    run_dir: str | None = Field(None, description="Default: runs/<grid file name> in the current folder.")
    cluster: str | None = Field(
        None,
        description="A Ray cluster to run phones and engines on: its address (host:6379, ray://host:10001) "
        "or `auto` (docs/cluster.md); default: this host.",
    )
    early_engine_start: bool = Field(
        False,
        description="One build at a time: start the next build's engine while the current build's last cells "
        "play (a phone idle), when memory leaves room. On 2 cores both engines share the CPU (docs/grid.md).",
    )
    navigation_probes: Literal["off", "stopped", "all"] = Field(
        "off",
        description="Navigation probes: the same (task, seed) played again with done, infeasible and answer "
        "taken out of the action schema, ended when the goal first holds. stopped: only for episodes that "
        "stopped before the goal ever held (the rest replay their episode on an engine that keeps its draw); "
        "all: every episode; off: none (docs/scorecard.md).",
    )
    fidelity: bool | Literal["first"] = Field(
        False,
        description="true: probe each served build on the reference's steps after its phase-1 episodes; "
        "first: before them, with an early warning for a build the probes flag (one engine at a time only).",
    )
    _base: Path = PrivateAttr(default_factory=Path.cwd)

    @property
    def base(self) -> Path:
        """The folder relative task and builds paths are read from (the grid file's; else the cwd)."""
        return self._base

    @field_validator("devices")
    @classmethod
    def _some_device(cls, value: int | list[str]) -> int | list[str]:
        if isinstance(value, int) and value < 1:
            raise ValueError("the number of virtual phones is at least 1")
        if isinstance(value, list) and not value:
            raise ValueError("give at least one adb serial, or a number of virtual phones")
        if isinstance(value, list) and len(set(value)) != len(value):
            raise ValueError("an adb serial appears twice; a phone runs one episode at a time")
        return value

    @model_validator(mode="after")
    def _reference_is_run(self) -> GridSpec:
        if self.builds is not None and self.reference is not None and self.reference not in self.builds:
            raise ValueError(f"reference {self.reference!r} is not among builds {self.builds}")
        if self.fidelity == "first" and self.serving == "side-by-side":
            raise ValueError(
                "fidelity: first probes each build before its episodes on the reference's recorded steps, "
                "so the reference must play first: use serving: one-at-a-time, or fidelity: true"
            )
        return self

    @property
    def device_count(self) -> int:
        return self.devices if isinstance(self.devices, int) else len(self.devices)

    @property
    def schedule(self) -> list[int]:
        """Seed counts a cell may have: phase 1's, then the adaptive levels above it (empty top-up: off)."""
        above = [n for n in self.adaptive.schedule if n > self.seeds] if self.adaptive.enabled else []
        return [self.seeds, *above]

    def measured(self) -> dict[str, Any]:
        """What the grid measures beyond its tasks and builds (run.json; a continued run may not change it).

        Tasks and builds are recorded resolved (ids, versions, hashes) beside it, so they are compared by
        content rather than by how a path was spelled; seeds may grow; devices and ports do not change a
        result.
        """
        return self.model_dump(
            mode="json",
            exclude={
                "tasks",
                "builds_file",
                "builds",
                "seeds",
                "devices",
                "max_attempts",
                "phone_base_port",
                "device_backend",
                "engine_base_port",
                "run_dir",
                "cluster",
                "early_engine_start",  # when an engine starts, not what is measured
                "navigation_probes",  # probes are added beside the episodes: a run may turn them on
            },
        )

    def with_base(self, base: Path) -> GridSpec:
        copy = self.model_copy()
        copy._base = base
        return copy


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def parse_grid(data: Any, source: str) -> GridSpec:
    """Validate already-parsed YAML as a grid; errors name `source` and each bad field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a grid file is a YAML mapping (tasks, builds_file, seeds, ...)")
    try:
        return GridSpec.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                lines.append(f"  {_where(loc)}: unknown field (see docs/grid.md for the fields)")
            elif isinstance(data.get("devices"), int | list) and loc[:1] == ("devices",) and len(loc) > 1:
                continue  # pydantic tries both forms of `devices`; one message is enough
            else:
                lines.append(f"  {_where(loc)}: {err['msg'].removeprefix('Value error, ')}")
        raise ConfigError(f"{source}: invalid grid file:\n" + "\n".join(lines)) from None


def load_grid(path: Path | str) -> GridSpec:
    """Read a grid file; its relative task and builds paths are made absolute against its folder."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{file}: no such grid file")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{file}: not valid YAML: {e}") from None
    spec = parse_grid(data, str(file))
    if spec.run_dir is None:  # where the user is, not beside the grid file
        spec = spec.model_copy(update={"run_dir": str(Path.cwd() / "runs" / file.stem)})
    return spec.with_base(file.resolve().parent)


def resolve_path(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def is_task_id(entry: str) -> bool:
    """A bare name like `wifi_on` (no folder, no suffix) names a task by id."""
    return "/" not in entry and "." not in entry and "~" not in entry
