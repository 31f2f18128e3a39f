"""The device driver: one adb serial observed, acted on, queried and reset through the adb server.

Works with any serial the adb server lists (emulator, real phone, the virtual phone); failures of the device
surface as DeviceError / DeviceNotFoundError, bad agent actions as InvalidActionError.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import struct
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import adbutils

from agent_eval.action import Action, ActionType
from agent_eval.device import gestures
from agent_eval.device.adb import ShellResult, listed_devices, online_serials, run_emu, short_component
from agent_eval.errors import ConfigError, DeviceError, DeviceNotFoundError, InvalidActionError
from agent_eval.screen.observation import Bounds, Element, Observation
from agent_eval.screen.uitree import parse_ui

DUMP_PATH = "/sdcard/window_dump.xml"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_RESUMED = re.compile(r"ResumedActivity[:=]\s*ActivityRecord\{\S+ u\d+ ([^\s}]+/[^\s}]+)")
_FOCUS = re.compile(r"mCurrentFocus=Window\{\S+ u\d+ ([^\s}]+/[^\s}]+)")
_NO_CONSOLE = ("no emulator detected", "unable to connect", "could not connect", "error: ")

__all__ = ["Device", "ShellResult", "online_serials", "short_component"]

_T = TypeVar("_T")


def _never_delivered(error: DeviceError) -> bool:
    """The adb server refused the request (offline/unknown device), so the device never saw the command."""
    cause = error.__cause__
    refusals = ("device offline", "not found", "no devices")
    return isinstance(cause, adbutils.AdbError) and any(r in str(cause) for r in refusals)


class Device:
    """One Android device behind the adb server. Not thread-safe: give each episode its own."""

    def __init__(
        self,
        serial: str,
        *,
        adb: adbutils.AdbClient | None = None,
        settle_dumps: int = 5,
        dump_attempts: int = 6,
        boot_timeout_s: float = 60.0,
        reconnect_timeout_s: float = 10.0,
    ) -> None:
        self.serial = serial
        self._client = adb or adbutils.AdbClient()
        self._adb = self._client.device(serial)
        self._settle_dumps = max(2, settle_dumps)
        self._dump_attempts = max(1, dump_attempts)
        self._boot_timeout_s = boot_timeout_s
        self._reconnect_timeout_s = reconnect_timeout_s
        self._packages: list[str] | None = None
        # Apps seen in front since the last reset: a reset without a snapshot stops them.
        self._foreground: set[str] = set()
        self._has_console: bool | None = None
        self._shell_v2: bool | None = None
        self.last_reset = ""  # "snapshot NAME" or "no snapshot", for the record
        if serial not in self._listed_states():
            raise DeviceNotFoundError(self._not_connected(serial))

    # -- plumbing ---------------------------------------------------------------------------------------

    def _listed_states(self) -> dict[str, str]:
        return listed_devices(self._client)

    def _not_connected(self, serial: str) -> str:
        listed = ", ".join(sorted(self._listed_states())) or "none"
        return (
            f"adb device {serial!r} is not connected (connected: {listed}); start the emulator or virtual "
            "phone, or pass another --device"
        )

    @contextlib.contextmanager
    def _adb_errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except (adbutils.AdbError, OSError, EOFError) as e:
            states = self._listed_states()
            if self.serial not in states:
                raise DeviceNotFoundError(f"adb device {self.serial} disappeared while {doing}: {e}") from e
            state = states[self.serial]
            if state != "device":
                raise DeviceError(f"adb device {self.serial} went {state} while {doing}: {e}") from e
            raise DeviceError(f"adb device {self.serial} failed while {doing}: {e}") from e

    def shell(self, cmd: str, timeout_s: float = 10, *, idempotent: bool = False) -> ShellResult:
        """Run `cmd` in the device's shell; a non-zero exit is returned, not raised.

        When the transport drops (the device goes offline for a moment), the command is sent again once the
        device is back — always if the server refused it (it never ran), else only if `idempotent`.
        """
        return self._reconnecting(lambda: self._shell_once(cmd, timeout_s), idempotent)

    def _shell_once(self, cmd: str, timeout_s: float) -> ShellResult:
        with self._adb_errors(f"running `{cmd}`"):
            if self._shell_v2 is None:
                self._shell_v2 = "shell_v2" in self._adb.get_features().split(",")
            result = self._adb.shell2(cmd, timeout=timeout_s, v2=self._shell_v2)
        return ShellResult(output=result.output, exit_code=result.returncode)

    def push(self, data: bytes, remote: str) -> None:
        """Write `data` to the device file `remote`, as `adb push` does (a task's seed files)."""
        with self._adb_errors(f"pushing {remote}"):
            self._adb.sync.push(io.BytesIO(data), remote)

    def _reconnecting(self, run: Callable[[], _T], idempotent: bool) -> _T:
        try:
            return run()
        except DeviceError as e:
            if not (idempotent or _never_delivered(e)):
                raise
            try:
                self.wait_until_online(self._reconnect_timeout_s)
            except DeviceError as gone:
                raise type(gone)(f"{e}; not back within {self._reconnect_timeout_s:g} s") from e
            return run()

    def _exec_out(self, cmd: str, timeout_s: float = 20) -> bytes:
        """Raw stdout of `cmd` (as `adb exec-out`): binary-safe, no terminal translation. Only for reads."""

        def run() -> bytes:
            with self._adb_errors(f"running `exec-out {cmd}`"):
                conn = self._adb.open_transport(timeout=timeout_s)
                try:
                    conn.send_command(f"exec:{cmd}")
                    conn.check_okay()
                    chunks = bytearray()
                    while chunk := conn.conn.recv(1 << 16):
                        chunks += chunk
                    return bytes(chunks)
                finally:
                    conn.close()

        return self._reconnecting(run, idempotent=True)

    # -- observing --------------------------------------------------------------------------------------

    def ui_dump(self) -> str:
        """One uiautomator dump, retried with backoff while the device reports it cannot get an idle state."""
        delay, last = 0.1, ""
        for _ in range(self._dump_attempts):
            # One round trip: dump to the file and print it. A failed dump leaves no file (it was removed),
            # so a stale dump is never read back.
            cmd = f"rm -f {DUMP_PATH}; uiautomator dump {DUMP_PATH} && cat {DUMP_PATH}"
            output = self.shell(cmd, timeout_s=30, idempotent=True).output
            start = output.find("<?xml") if "<?xml" in output else output.find("<hierarchy")
            end = output.rfind("</hierarchy>")
            if 0 <= start < end:
                return output[start : end + len("</hierarchy>")]
            last = output.strip()[-300:]
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        raise DeviceError(
            f"adb device {self.serial}: uiautomator dump failed {self._dump_attempts} times; last: {last!r}"
        )

    def settled_ui(self) -> str:
        """Dump until two dumps in a row are identical (the screen stopped changing), at most `settle_dumps`.

        A screen that never settles (a running clock, an animation) yields its last dump rather than an error.
        """
        previous = self.ui_dump()
        for _ in range(self._settle_dumps - 1):
            current = self.ui_dump()
            if current == previous:
                return current
            previous = current
        return previous

    def screenshot(self) -> bytes:
        last = b""
        for attempt in range(3):
            last = self._exec_out("screencap -p")
            if last.startswith(PNG_SIGNATURE) and len(last) > 24:
                return last
            time.sleep(0.2 * (attempt + 1))
        raise DeviceError(f"adb device {self.serial}: screencap did not return a PNG (got {last[:40]!r})")

    def observe(self) -> Observation:
        """Screenshot + settled UI tree + focused activity."""
        xml = self.settled_ui()
        elements, nodes = parse_ui(xml)
        png = self.screenshot()
        width, height = struct.unpack(">II", png[16:24])
        activity = self.focused_activity()
        return Observation(
            screenshot_png=png,
            ui_xml=xml,
            elements=tuple(elements),
            activity=activity,
            width=width,
            height=height,
            all_nodes=tuple(nodes),
        )

    # -- state queries ----------------------------------------------------------------------------------

    def setting(self, namespace: str, key: str) -> str | None:
        """`settings get NAMESPACE KEY`; None when the key is unset."""
        result = self.shell(f"settings get {namespace} {key}", idempotent=True)
        value = result.output.strip()
        if not result.ok:
            raise DeviceError(f"adb device {self.serial}: `settings get {namespace} {key}` failed: {value!r}")
        return None if value == "null" else value

    def focused_activity(self) -> str:
        """The resumed activity as `pkg/.Activity`, or "" when nothing is resumed."""
        out = self.shell("dumpsys activity activities | grep ResumedActivity", idempotent=True).output
        match = _RESUMED.search(out)
        if match is None:
            match = _FOCUS.search(self.shell("dumpsys window | grep mCurrentFocus", idempotent=True).output)
        if match is None:
            return ""
        component = short_component(match.group(1))
        self._foreground.add(component.partition("/")[0])
        return component

    def installed_packages(self) -> list[str]:
        if self._packages is None:
            out = self.shell("pm list packages", idempotent=True).output
            self._packages = [
                line[len("package:") :].strip() for line in out.splitlines() if line.startswith("package:")
            ]
        return self._packages

    # -- acting -----------------------------------------------------------------------------------------

    def act(self, action: Action, observation: Observation) -> None:
        """Execute one action on the screen `observation` showed. Terminal actions do nothing here."""
        kind = action.type
        if action.is_terminal:
            return
        if kind is ActionType.TAP:
            self._run(gestures.tap_command(*self._point(action, observation)), observation.ui_xml)
        elif kind is ActionType.LONG_PRESS:
            self._run(gestures.long_press_command(*self._point(action, observation)), observation.ui_xml)
        elif kind in (ActionType.SWIPE, ActionType.SCROLL):
            self._swipe(action, observation)
        elif kind is ActionType.TYPE:
            if not action.text:
                raise InvalidActionError("type needs the text to enter")
            if (bad := gestures.untypable(action.text)) is not None:
                raise InvalidActionError(f"type: `input text` has no key for {bad!r} (printable ASCII only)")
            if action.element is not None:
                # Typing into a named field replaces what it holds, as the agent's "field := text" intends.
                field = self._element(action.element, observation)
                self._run(gestures.tap_command(*field.bounds.center), observation.ui_xml)
                # Each later command gets its own "before" screen, so a cut-off one is resent only if needed.
                if gestures.is_text_field(field.cls) and field.text and not field.password:
                    self._run(gestures.clear_field_command(len(field.text)), self.ui_dump())
                self._run(gestures.text_command(action.text), self.ui_dump())
            else:
                self._run(gestures.text_command(action.text), observation.ui_xml)
        elif kind is ActionType.KEY:
            if action.key is None:
                raise InvalidActionError("key needs one of: back, home, enter")
            self._run(gestures.key_command(action.key), observation.ui_xml)
        elif kind is ActionType.OPEN_APP:
            if not action.app:
                raise InvalidActionError("open_app needs the app's name or package")
            self.open_app(action.app)
        elif kind is ActionType.WAIT:
            time.sleep(min(max(action.seconds if action.seconds is not None else 1.0, 0.0), 10.0))

    def _run(self, cmd: str, screen_before: str | None = None, *, idempotent: bool = False) -> None:
        """Run an action's command; a non-zero exit is a DeviceError (see `_send` for dropped transports)."""
        result = self._send(cmd, screen_before, idempotent=idempotent)
        if result is not None and not result.ok:
            raise DeviceError(
                f"adb device {self.serial}: `{cmd}` failed ({result.exit_code}): {result.output!r}"
            )

    def _send(self, cmd: str, screen_before: str | None, *, idempotent: bool = False) -> ShellResult | None:
        """Send a command that changes the device. If the transport drops after it left, it may or may not
        have run: with `screen_before` (a dump from just before) it is resent only if the screen is unchanged
        once the device is back, so nothing runs twice. None: it ran, but its output was lost."""
        if idempotent or screen_before is None:
            return self.shell(cmd, idempotent=idempotent)
        try:
            return self.shell(cmd)
        except DeviceError as lost:
            if _never_delivered(lost):
                raise  # shell() already waited for the device and resent it once
            try:
                self.wait_until_online(self._reconnect_timeout_s)
            except DeviceError as gone:
                raise type(gone)(f"{lost}; not back within {self._reconnect_timeout_s:g} s") from lost
            if self.ui_dump() != screen_before:
                return None
            return self.shell(cmd)

    def _element(self, number: int, observation: Observation) -> Element:
        if not 0 <= number < len(observation.elements):
            last = len(observation.elements) - 1
            raise InvalidActionError(f"there is no element {number} on this screen (elements are 0..{last})")
        element = observation.elements[number]
        if element.bounds.width <= 0 or element.bounds.height <= 0:
            raise InvalidActionError(f"element {number} has no area on screen")
        return element

    def _point(self, action: Action, observation: Observation) -> tuple[int, int]:
        if action.element is not None:
            return self._element(action.element, observation).bounds.center
        if action.x is None or action.y is None:
            raise InvalidActionError(f"{action.type.value} needs an element number or both x and y")
        if not (0 <= action.x < observation.width and 0 <= action.y < observation.height):
            raise InvalidActionError(
                f"({action.x}, {action.y}) is off the {observation.width}x{observation.height} screen"
            )
        return action.x, action.y

    def _swipe(self, action: Action, observation: Observation) -> None:
        if action.direction is None:
            raise InvalidActionError(f"{action.type.value} needs a direction: up, down, left or right")
        if action.element is not None:
            area = self._element(action.element, observation).bounds
        else:
            # Over the largest scrollable view: a gesture that starts on a header or app bar moves nothing.
            scrollables = [e for e in observation.elements if e.scrollable and e.bounds.width > 0]
            largest = max(scrollables, key=lambda e: e.bounds.width * e.bounds.height, default=None)
            area = largest.bounds if largest else Bounds(0, 0, observation.width, observation.height)
        if action.type is ActionType.SCROLL:
            start, end = gestures.scroll_points(action.direction, area)
        else:
            start, end = gestures.swipe_points(action.direction, area)
        self._run(gestures.swipe_command(start, end), observation.ui_xml)

    def open_app(self, app: str) -> str:
        """Launch an app by package name or label; returns the package. InvalidActionError if unknown."""
        if gestures.looks_like_package(app):
            package: str | None = app
        else:
            package = gestures.package_for_label(app, self.installed_packages())
        if package is None:
            raise InvalidActionError(f"no installed app is called {app!r}")
        # Launching brings the app's task to the front: doing it twice is the same as once.
        result = self.shell(gestures.launch_command(package), timeout_s=20, idempotent=True)
        if not result.ok or "monkey aborted" in result.output or "No activities found" in result.output:
            raise InvalidActionError(f"cannot open {app!r}: {result.output.strip()[:200]}")
        self._foreground.add(package)
        return package

    def start_activity(self, component: str) -> None:
        """`am start -n COMPONENT`; InvalidActionError when the device has no such activity."""
        self._am_start(f"-n {shlex.quote(component)}", component)

    def start_intent(self, action: str) -> None:
        """`am start -a ACTION`; InvalidActionError when no activity handles the action."""
        self._am_start(f"-a {shlex.quote(action)}", action)

    def _am_start(self, args: str, what: str) -> None:
        result = self._send(f"am start -W {args}", self.ui_dump())
        if result is not None and (not result.ok or "Error" in result.output):
            raise InvalidActionError(f"cannot start {what} on {self.serial}: {result.output.strip()[:300]}")

    # -- lifecycle --------------------------------------------------------------------------------------

    def _emu(self, *args: str, timeout_s: float) -> tuple[int, str]:
        return run_emu(self._client, self.serial, list(args), timeout_s)

    def emu(self, *args: str, timeout_s: float = 120) -> str:
        """Send a console command through `adb emu` (the adb CLI); returns its output, "KO:" lines too.

        Raises DeviceError when no console answers (not an emulator, or it is gone)."""
        code, out = self._emu(*args, timeout_s=timeout_s)
        if code != 0:
            raise DeviceError(
                f"adb device {self.serial} has no emulator console answering `adb emu {' '.join(args)}` "
                f"(exit {code}): {out.strip()[:200]}"
            )
        return out

    def has_snapshots(self) -> bool:
        """Whether the device has an emulator console that answers snapshot commands."""
        if self._has_console is None:
            # adb emu exits 0 whenever it reached a console; a serial without one (adb connect) fails.
            code, out = self._emu("avd", "snapshot", "list", timeout_s=30)
            lowered = out.lower()
            self._has_console = code == 0 and "KO:" not in out and not any(m in lowered for m in _NO_CONSOLE)
        return self._has_console

    def reset(self, snapshot: str | None = "default_boot") -> None:
        """Load `snapshot` when the device has snapshots; otherwise stop the apps used since the last reset
        and go home (the task's setup commands then establish its start state)."""
        if snapshot is not None and self.has_snapshots():
            out = self.emu("avd", "snapshot", "load", snapshot)
            if "KO:" in out:
                if "not exist" in out.lower() or "not found" in out.lower():
                    # A wrong name is the user's to fix, not a flaky device to retry.
                    raise ConfigError(
                        f"adb device {self.serial} has no snapshot {snapshot!r}: save one with "
                        f"`adb -s {self.serial} emu avd snapshot save {snapshot}`, or run without one"
                    )
                raise DeviceError(
                    f"adb device {self.serial} could not load snapshot {snapshot!r}: {out.strip()[:300]}"
                )
            self.wait_until_online(self._boot_timeout_s)
            self.last_reset = f"snapshot {snapshot}"
        else:
            for package in sorted(self._foreground):
                self.shell(f"am force-stop {package}", idempotent=True)
            self._run(gestures.key_command("home"), idempotent=True)
            self.last_reset = "no snapshot"
        self._foreground.clear()

    def wait_until_online(self, timeout_s: float = 60.0) -> None:
        """Wait for `get-state` = device and `sys.boot_completed` = 1 (e.g. after a snapshot load)."""
        deadline = time.monotonic() + timeout_s
        delay, state = 0.05, "absent"
        while True:
            state = self._listed_states().get(self.serial, "absent")
            if state == "device":
                with contextlib.suppress(DeviceError):
                    if self._shell_once("getprop sys.boot_completed", timeout_s=5).output.strip() == "1":
                        return
            if time.monotonic() >= deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        message = (
            f"adb device {self.serial} did not come back online within {timeout_s:.0f} s (state: {state})"
        )
        if state == "absent":
            raise DeviceNotFoundError(message)
        raise DeviceError(message)
