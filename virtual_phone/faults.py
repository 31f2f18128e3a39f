"""Fault injection for a virtual phone: what can go wrong (off by default), the RNG, and the fault log.

Every injected fault is appended to the log as a JSON line, so runs can tell infra faults from agent failures.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from virtual_phone.errors import PhoneConfigError


class FaultConfig(BaseModel):
    """What goes wrong on one phone, and how often. Everything is off by default."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    dump_fail_rate: float = Field(
        0.0, ge=0.0, le=1.0, description="share of `uiautomator dump` calls that fail"
    )
    added_latency_s: float = Field(0.0, ge=0.0, description="seconds added before each matching command")
    latency_commands: list[str] | None = Field(None, description="programs that get the latency (None: all)")
    drop_transport_after: int | None = Field(
        None, ge=1, description="drop the TCP transport after K commands"
    )
    restless_screen: bool = Field(False, description="an animation changes every frame and every dump")
    seed: int = Field(0, description="seed of the fault RNG")


def load_fault_configs(path: Path) -> list[FaultConfig]:
    """A YAML file holding one fault config (for every phone) or a list (one per phone)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        items = data if isinstance(data, list) else [data or {}]
        return [FaultConfig.model_validate(item) for item in items]
    except (OSError, yaml.YAMLError, ValidationError) as e:
        raise PhoneConfigError(f"fault file {path} is invalid; fix it: {e}") from e


class FaultLog:
    """Appends one JSON line per injected fault; shared by the phones of a fleet."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, serial: str, kind: str, command: str) -> None:
        if self.path is None:
            return
        line = json.dumps({"time": time.time(), "serial": serial, "kind": kind, "command": command})
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")


class FaultInjector:
    """Decides, per command, which faults strike one phone; changeable at run time from the console."""

    def __init__(self, serial: str, config: FaultConfig | None = None, log: FaultLog | None = None) -> None:
        self.serial = serial
        self.log = log or FaultLog(None)
        self._lock = threading.Lock()
        self.config = config or FaultConfig()
        self._rng = random.Random(self.config.seed)
        self._commands_since_drop = 0

    def set(self, field: str, raw: str) -> None:
        """Change one field from its text form (console `faults set FIELD VALUE`)."""
        if field not in FaultConfig.model_fields:
            raise ValueError(f"unknown fault '{field}'; known: {', '.join(FaultConfig.model_fields)}")
        value: object = raw
        if raw.lower() in ("none", "null", "off", ""):
            value = None if field in ("drop_transport_after", "latency_commands") else raw
        if field == "latency_commands" and value is not None:
            value = [c for c in raw.split(",") if c]
        if field == "restless_screen":
            value = raw.lower() in ("1", "true", "yes", "on")
        with self._lock:
            data = self.config.model_dump()
            data[field] = value
            self.config = FaultConfig.model_validate(data)
            if field == "seed":
                self._rng = random.Random(self.config.seed)
            if field == "drop_transport_after":
                self._commands_since_drop = 0

    def reset(self) -> None:
        with self._lock:
            self.config = FaultConfig()
            self._commands_since_drop = 0

    def latency_for(self, programs: list[str], command: str) -> float:
        cfg = self.config
        if cfg.added_latency_s <= 0:
            return 0.0
        if cfg.latency_commands is not None and not set(programs) & set(cfg.latency_commands):
            return 0.0
        self.log.write(self.serial, "latency", command)
        return cfg.added_latency_s

    def should_drop(self, command: str) -> bool:
        """Counts a shell/exec command; True when the transport must drop instead of running it."""
        with self._lock:
            k = self.config.drop_transport_after
            if k is None:
                return False
            if self._commands_since_drop >= k:
                self._commands_since_drop = 0
                drop = True
            else:
                self._commands_since_drop += 1
                drop = False
        if drop:
            self.log.write(self.serial, "drop_transport", command)
        return drop

    def dump_fails(self, command: str) -> bool:
        with self._lock:
            fail = self.config.dump_fail_rate > 0 and self._rng.random() < self.config.dump_fail_rate
        if fail:
            self.log.write(self.serial, "dump_fail", command)
        return fail

    def note_restless(self, command: str) -> None:
        if self.config.restless_screen:
            self.log.write(self.serial, "restless_screen", command)
