"""Putting a device into a task's start state: reset, the task's setup commands, then its start screen.

Used by the episode loop and by `agent-eval validate`, so both start episodes the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from agent_eval.device.backend import EpisodeDevice
from agent_eval.device.gestures import key_command
from agent_eval.errors import InvalidActionError, TaskError
from agent_eval.task.data_kinds import parse_content_rows
from agent_eval.task.schema import TaskInstance


@runtime_checkable
class FileReceiver(Protocol):
    """A device files can be pushed to (`adb push`); the adb `Device` is one."""

    def push(self, data: bytes, remote: str) -> None: ...


def start_episode(
    device: EpisodeDevice, instance: TaskInstance, *, snapshot: str | None = "default_boot"
) -> None:
    """Reset `device` (snapshot, or the fallback without one), run the setup commands, open the start screen.

    A setup command that exits non-zero, or a start app/activity that does not exist, is the task's fault:
    TaskError. EpisodeDevice failures raise DeviceError.
    """
    device.reset(snapshot)
    where = instance.task.where
    for number, command in enumerate(instance.setup):
        # Setup commands establish a state, so sending one again after a dropped connection is harmless.
        result = device.shell(command, timeout_s=30, idempotent=True)
        if not result.ok:
            raise TaskError(
                f"{where}: setup[{number}] `{command}` failed with exit code {result.exit_code}: "
                f"{result.output.strip()[:300]}"
            )
        if command.lstrip().startswith("content "):
            try:  # Android's `content` exits 0 even when the provider refused: its text says so
                parse_content_rows(result.output)
            except TaskError as e:
                raise TaskError(f"{where}: setup[{number}] `{command}`: {e}") from None
    _push_files(device, instance)
    start = instance.start
    try:
        if start.app is not None:
            device.open_app(start.app)
        elif start.intent is not None:
            device.start_intent(start.intent)
        elif start.activity is not None:
            device.start_activity(start.activity)
        else:
            result = device.shell(key_command("home"), idempotent=True)
            if not result.ok:
                raise TaskError(f"{where}: cannot go to the home screen: {result.output.strip()[:300]}")
    except InvalidActionError as e:
        raise TaskError(f"{where}: start: {e}") from e


def _push_files(device: EpisodeDevice, instance: TaskInstance) -> None:
    """The task's `files:`, pushed as `adb push` does (the folders are made first)."""
    if not instance.files:
        return
    where = instance.task.where
    if not isinstance(device, FileReceiver):
        raise TaskError(f"{where}: files: this device ({type(device).__name__}) cannot receive pushed files")
    for number, seed in enumerate(instance.files):
        local = seed.local(instance.task.source)
        try:
            data = local.read_bytes() if local is not None else (seed.text or "").encode()
        except OSError as e:
            raise TaskError(f"{where}: files[{number}].source: cannot read {local}: {e}") from None
        folder = str(Path(seed.to).parent)
        device.shell(f"mkdir -p '{folder}'", idempotent=True)
        device.push(data, seed.to)
