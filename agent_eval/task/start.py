"""Putting a device into a task's start state: reset, the task's setup commands, then its start screen.

Used by the episode loop and by `agent-eval validate`, so both start episodes the same way.
"""

from __future__ import annotations

from agent_eval.device.backend import EpisodeDevice
from agent_eval.device.gestures import key_command
from agent_eval.errors import InvalidActionError, TaskError
from agent_eval.task.schema import TaskInstance


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
