"""android_env's adb side on one phone: its AdbController, every AdbRequest kind through its AdbCallParser,
and the components that send them (DeviceSettings, AppScreenChecker, SetupStepInterpreter, the logcat stream).

Runs in the clients' venv. Only what android_env does over gRPC to an emulator (screenshots, snapshots, touch
events) is left out: a stand-in simulator answers the screen size instead.
"""

from __future__ import annotations

import re
import threading
import time
from functools import partial
from typing import Any

import numpy as np
from absl import logging
from adb_requests import SETTINGS_HOME, Request, all_requests
from android_env.components import (
    adb_call_parser,
    adb_controller,
    adb_log_stream,
    app_screen_checker,
    config_classes,
    device_settings,
    errors,
    logcat_thread,
    setup_step_interpreter,
)
from android_env.proto import adb_pb2, task_pb2
from checks import Checks, client_arguments, require

REWARD_TAG = "AndroidEnvBench"


class ScreenOnly:
    """The part of android_env's EmulatorSimulator that DeviceSettings uses besides adb: the screen's pixels
    (an emulator sends them over gRPC; here, blank ones of the size `wm size` gives)."""

    def __init__(self, controller: Any) -> None:
        self.controller = controller

    def create_adb_controller(self) -> Any:
        return self.controller

    def get_screenshot(self) -> Any:
        size = self.controller.execute_command(["shell", "wm", "size"]).decode()
        width, height = (int(n) for n in re.findall(r"(\d+)x(\d+)", size)[-1])
        return np.zeros((height, width, 3), dtype=np.uint8)


def run_request(parser: Any, entry: Request) -> str | None:
    if entry.refusal:
        return refused(parser, entry)
    response = parser.parse(entry.request)
    status = adb_pb2.AdbResponse.Status.Name(response.status)
    require(
        status == entry.status, f"status {status} (a device gives {entry.status}): {response.error_message}"
    )
    return entry.verify(response) if entry.verify else None


def refused(parser: Any, entry: Request) -> str:
    """A request a device refuses: android_env raises AdbControllerError carrying adb's output."""
    try:
        parser.parse(entry.request)
    except errors.AdbControllerError as failure:
        printed = getattr(failure.__cause__, "output", b"") or b""
        require(entry.refusal in printed, f"adb printed {printed!r}; a device prints {entry.refusal!r}...")
        return "refused as a device refuses it"
    raise AssertionError(f"accepted; a device refuses it with {entry.refusal!r}...")


def device_settings_update(controller: Any) -> str:
    settings = device_settings.DeviceSettings(ScreenOnly(controller))
    settings.update(config_classes.DeviceSettingsConfig(show_navigation_bar=False, show_status_bar=False))
    orientation = settings.get_orientation()
    require(list(orientation) == [1, 0, 0, 0], f"orientation one-hot {list(orientation)}")
    for space, key, want in (("system", "show_touches", "1"), ("system", "pointer_location", "1"),
                             ("global", "policy_control", "immersive.full=*")):  # fmt: skip
        got = controller.execute_command(["shell", "settings", "get", space, key]).decode().strip()
        require(got == want, f"settings {space} {key} is {got!r} after update(), want {want!r}")
    return f"screen {settings.screen_width()}x{settings.screen_height()}"


def settings_screen() -> Any:
    return task_pb2.AppScreen(
        activity=SETTINGS_HOME,
        view_hierarchy_path=[
            r"^DecorView@.*\[SettingsHomepageActivity\]$",
            r"^android.widget.FrameLayout\{.*\}$",
        ],
    )


def screen_checker(parser: Any) -> str:
    parser.parse(
        adb_pb2.AdbRequest(start_activity=adb_pb2.AdbRequest.StartActivity(full_activity=SETTINGS_HOME))
    )
    checker = app_screen_checker.AppScreenChecker(
        adb_call_parser=parser, expected_app_screen=settings_screen()
    )
    outcome = checker.matches_current_app_screen()
    require(outcome == checker.Outcome.SUCCESS, f"matches_current_app_screen: {outcome!r}")
    return f"waited {checker.wait_for_app_screen(timeout_sec=10):.2f} s"


def setup_steps(parser: Any) -> None:
    """A task's setup: go home, start Settings and wait for its screen, check an app is installed."""
    home = adb_pb2.AdbRequest(press_button=adb_pb2.AdbRequest.PressButton(button=1))  # HOME
    start = adb_pb2.AdbRequest(start_activity=adb_pb2.AdbRequest.StartActivity(full_activity=SETTINGS_HOME))
    wait = task_pb2.WaitForAppScreen(app_screen=settings_screen(), timeout_sec=10)
    steps = [
        task_pb2.SetupStep(adb_request=home),
        task_pb2.SetupStep(
            adb_request=start, success_condition=task_pb2.SuccessCondition(wait_for_app_screen=wait)
        ),
        task_pb2.SetupStep(
            success_condition=task_pb2.SuccessCondition(
                check_install=task_pb2.CheckInstall(package_name="com.android.settings", timeout_sec=10)
            )
        ),
    ]
    interpreter = setup_step_interpreter.SetupStepInterpreter(adb_call_parser=parser)
    interpreter.interpret(steps)
    failed = {k: v for k, v in interpreter.stats().items() if k.startswith("error_count") and v}
    require(not failed, f"retries: {failed}")


def logcat_reward(controller: Any) -> str:
    """A task's reward listener: a line an app logs reaches android_env through `logcat -v epoch`."""
    stream = adb_log_stream.AdbLogStream(adb_command_prefix=controller.command_prefix())
    stream.set_log_filters([f"{REWARD_TAG}:V"])
    heard = threading.Event()
    thread = logcat_thread.LogcatThread(log_stream=stream)
    thread.add_event_listener(
        logcat_thread.EventListener(regexp=re.compile(r"^reward: (\d+)$"), handler_fn=lambda *_: heard.set())
    )
    thread.resume()
    try:
        time.sleep(1.0)
        controller.execute_command(["shell", "log", "-t", REWARD_TAG, "reward: 7"])
        require(
            heard.wait(timeout=5),
            f"no `reward: 7` reached the listener within 5 s of `adb shell log -t {REWARD_TAG} 'reward: 7'`"
            + ("; the `logcat -v epoch` stream had already ended" if not thread._thread.is_alive() else ""),
        )
    finally:
        thread.kill()
    return "heard"


def failed_command_restarts_server(controller: Any) -> str:
    """A failing command: android_env restarts the adb server, retries, raises; the phone comes back."""
    try:
        controller.execute_command(["shell", "exit 1"], timeout=30)
    except errors.AdbControllerError:
        pass
    else:
        raise AssertionError("`adb shell 'exit 1'` did not raise AdbControllerError")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = controller.execute_command(["get-state"], timeout=5).decode().strip()
        except errors.AdbControllerError:
            state = "absent"
        if state == "device":
            return "phone back after the server restart"
        time.sleep(0.5)
    raise AssertionError("the phone did not come back within 10 s of android_env's adb server restart")


def main() -> None:
    args = client_arguments(__doc__.splitlines()[0])
    logging.set_verbosity(logging.WARNING)
    config = config_classes.AdbControllerConfig(
        adb_path=args.adb, adb_server_port=args.adb_port, device_name=args.serial, default_timeout=60
    )
    checks = Checks(args.out)
    controller = adb_controller.AdbController(config)
    parser = adb_call_parser.AdbCallParser(controller)
    checks("AdbController.init_server (adb -P PORT devices)", lambda: controller.init_server(timeout=30))
    checks(
        "AdbController.execute_command (shell)",
        lambda: require(
            controller.execute_command(["shell", "echo", "hi"]) == b"hi\n", "echo output differs"
        ),
    )
    for entry in all_requests():
        checks(f"AdbCallParser: {entry.name}", partial(run_request, parser, entry))
    checks("DeviceSettings.update / get_orientation", partial(device_settings_update, controller))
    checks("AppScreenChecker (current activity, view hierarchy)", partial(screen_checker, parser))
    checks(
        "SetupStepInterpreter (adb_request, wait_for_app_screen, check_install)", partial(setup_steps, parser)
    )
    checks(
        "LogcatThread over AdbLogStream (logcat -b all -c; logcat -v epoch)",
        partial(logcat_reward, controller),
    )
    checks(
        "AdbController retry (kill-server, start-server)", partial(failed_command_restarts_server, controller)
    )


if __name__ == "__main__":
    main()
