"""`dumpsys` on the virtual phone: the services drivers read, in Android 14's shapes.

window (WindowManagerService), activity (ActivityManagerService: activities, top, and one package's
TASK / ACTIVITY lines with its View Hierarchy), display, input (InputManagerService / InputReader),
input_method, battery, power, wifi; the other services are listed and dump nothing. Options, priorities and
batches (every service, one priority, all but some) as dumpsys.cpp has them: dumpsys_options.py.
"""

from __future__ import annotations

import datetime as dt
import time
import zlib
from zoneinfo import ZoneInfo

from virtual_phone.shell.dumpsys_options import (
    PRIORITIES,
    DumpRequest,
    DumpsysUsage,
    batch_args,
    parse,
    services_of,
)
from virtual_phone.shell.program import Caller, Output, command_table, object_hash
from virtual_phone.state.phone_clock import known_zone
from virtual_phone.views.view_tree import View

SERVICES = [
    "DockObserver",
    "SurfaceFlinger",
    "accessibility",
    "account",
    "activity",
    "activity_task",
    "alarm",
    "appops",
    "audio",
    "battery",
    "batteryproperties",
    "batterystats",
    "bluetooth_manager",
    "clipboard",
    "connectivity",
    "content",
    "cpuinfo",
    "device_policy",
    "display",
    "dropbox",
    "gfxinfo",
    "graphicsstats",
    "input",
    "input_method",
    "jobscheduler",
    "location",
    "media.audio_flinger",
    "media.camera",
    "meminfo",
    "netstats",
    "notification",
    "package",
    "permission",
    "power",
    "procstats",
    "settings",
    "statusbar",
    "telephony.registry",
    "uimode",
    "usagestats",
    "user",
    "vibrator",
    "wallpaper",
    "wifi",
    "window",
]
HEADER_RULE = "-" * 79 + "\n"  # Dumpsys::writeDumpHeader's rule above each service of a batch
CONFIG = (
    "{{1.0 310mcc260mnc [en_US] ldltr sw411dp w411dp h914dp 420dpi nrml long port finger -keyb/v/h "
    "-nav/h winConfig={{ mBounds=Rect(0, 0 - {w}, {h}) }}}}"
)


def _pid(package: str) -> int:
    return 2000 + zlib.crc32(package.encode()) % 8000


def _focus(sh: Caller) -> tuple[str, str, int]:
    """(long component, short component, task id) of the focused activity."""
    phone = sh.phone
    with phone.lock:
        app = phone.catalog.apps[phone.state.foreground]
        screen = phone.state.top.screen
        task = phone.state.task_id(app.package)
    return f"{app.package}/{app.activity_class(screen)}", app.short_component(screen), task


def _window(sh: Caller, io: Output) -> None:
    long, short, task = _focus(sh)
    w, h = sh.phone.state.width, sh.phone.state.height
    auto_rotate = sh.phone.state.get("system", "accelerometer_rotation") == "1"
    io.out(
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
        f"  Window #0 Window{{{object_hash(long)} u0 {long}}}:\n"
        f"    mDisplayId=0 rootTaskId={task} mSession=Session{{a1b2c3 1234:u0a10100}}\n"
        "    mAttrs={(0,0)(fillxfill) sim={adjust=pan} ty=BASE_APPLICATION}\n"
        "    mHasSurface=true isReadyForDisplay()=true mWindowRemovalAllowed=false\n\n"
        f"  mGlobalConfiguration={CONFIG.format(w=w, h=h)}\n"
        f"  mCurrentFocus=Window{{{object_hash(long)} u0 {long}}}\n"
        f"  mFocusedApp=ActivityRecord{{{object_hash(short)} u0 {short} t{task}}}\n"
        "  mInputMethodWindow=Window{5e1c7d0 u0 InputMethod}\n"
        # The display's rotation listener (WindowOrientationListener.dump): enabled with auto-rotate; the
        # phone stays in its natural portrait rotation.
        "  WindowOrientationListener\n"
        f"    mEnabled={str(auto_rotate).lower()}\n"
        "    mCurrentRotation=ROTATION_0\n"
    )


def _view_line(v: View, parent: tuple[int, int], indent: str) -> str:
    """One line of a View Hierarchy (View.toString): class{hash flags pflags l,t-r,b #id name}."""
    x0, y0, x1, y1 = v.bounds
    flags = (
        f"V{'F' if v.focusable else '.'}{'E' if v.enabled else '.'}..{'V' if v.scrollable else '.'}"
        f"{'C' if v.clickable else '.'}.. {'F' if v.focused else '.'}......."
    )
    ident = ""
    if v.resource_id:
        owner, _, name = v.resource_id.partition(":id/")
        number = zlib.crc32(v.resource_id.encode()) & 0x7FFFFFFF
        ident = f" #{number:08x} {'android' if owner == 'android' else 'app'}:id/{name}"
    key = f"{v.cls}{v.bounds}{v.text}{v.resource_id}"
    rect = f"{x0 - parent[0]},{y0 - parent[1]}-{x1 - parent[0]},{y1 - parent[1]}"
    return f"{indent}{v.cls}{{{object_hash(key)} {flags} {rect}{ident}}}\n"


def view_hierarchy(root: View, activity: str, indent: str = "      ") -> str:
    """The `View Hierarchy:` block an activity prints into `dumpsys activity`, from the on-screen tree."""
    lines = [f"{indent[:-2]}View Hierarchy:\n", f"{indent}DecorView@{object_hash(activity)}[{activity}]\n"]

    def walk(v: View, parent: tuple[int, int], depth: int) -> None:
        lines.append(_view_line(v, parent, indent + "  " * depth))
        for c in v.children:
            walk(c, (v.bounds[0], v.bounds[1]), depth + 1)

    walk(root, (0, 0), 1)
    return "".join(lines)


def _activity_block(sh: Caller, package: str, top_only: bool) -> str:
    """TASK line, then an ACTIVITY line per activity of the package's task (top last) and its state."""
    phone = sh.phone
    with phone.lock:
        stack = [f.screen for f in phone.state.tasks.get(package, [])]
        task = phone.state.task_id(package) if stack else 0
        front = phone.state.foreground == package
    if not stack:
        return ""
    app = phone.catalog.apps[package]
    out = [f"TASK {package} id={task} userId=0\n"]
    for i, screen in enumerate(stack[-1:] if top_only else stack):
        top = i == len(stack) - 1 or top_only
        short, long = app.short_component(screen), app.activity_class(screen)
        resumed = top and front
        out.append(
            f"  ACTIVITY {short} {object_hash(short)} pid={_pid(package)}\n"
            f"    Local Activity {object_hash(long)} State:\n"
            f"      mResumed={'true' if resumed else 'false'} mStopped={'false' if resumed else 'true'} "
            "mFinished=false\n"
        )
        if top and front:
            out.append(view_hierarchy(phone.current_layout().window, long.rsplit(".", 1)[-1]))
        else:
            out.append(
                f"    View Hierarchy:\n      DecorView@{object_hash(long)}[{long.rsplit('.', 1)[-1]}]\n"
            )
    return "".join(out)


def _activity(sh: Caller, args: list[str], io: Output) -> None:
    sub = args[0] if args else "activities"
    _, short, task = _focus(sh)
    pkg = short.split("/")[0]
    if sub == "top":
        io.out(_activity_block(sh, pkg, top_only=True))
    elif sub in ("activities", "a", "recents", "r"):
        record = f"ActivityRecord{{{object_hash(short)} u0 {short} t{task}}}"
        io.out(
            "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
            "Display #0 (activities from top to "
            f"bottom):\n  * Task{{{object_hash(pkg)} #{task} type=standard A=10100:{pkg}}}\n"
            f"    topResumedActivity={record}\n  ResumedActivity: {record}\n"
            f"  mResumedActivity: {record}\n  mFocusedApp={record}\n"
        )
    else:
        # `dumpsys activity NAME [ARGS]`: activities whose component contains NAME, task by task.
        with sh.phone.lock:
            running = list(reversed(sh.phone.state.tasks))
        io.out("".join(_activity_block(sh, p, top_only=False) for p in running if sub in p))


def _display(sh: Caller, io: Output) -> None:
    st = sh.phone.state
    w, h = st.width, st.height
    io.out(
        "DISPLAY MANAGER (dumpsys display)\n  mOnlyCode=false\n  mSafeMode=false\n"
        "  mViewports=[DisplayViewport{type=INTERNAL, valid=true, isActive=true, displayId=0, "
        "uniqueId='local:4619827259835644672', physicalPort=0, orientation=0, "
        f"logicalFrame=Rect(0, 0 - {w}, {h}), physicalFrame=Rect(0, 0 - {w}, {h}), deviceWidth={w}, "
        f"deviceHeight={h}, isActive=true}}]\n"
        f'  mDefaultDisplayDefaultColorMode=0\n  Display 0:\n    mBaseDisplayInfo=DisplayInfo{{"Built-in '
        f'Screen", displayId 0, real {w} x {h}, density {st.density}, rotation 0, state ON}}\n'
    )


def _input(sh: Caller, io: Output) -> None:
    """InputReader's dump: one device section per input device; the touch screen's orientation line."""
    w, h = sh.phone.state.width, sh.phone.state.height
    devices = [(1, "virtio_input_multi_touch_1", "TOUCHSCREEN"), (2, "qwerty2", "KEYBOARD | DPAD")]
    out = ["INPUT MANAGER (dumpsys input)\n\nInput Manager Service (Java) State:\n  Interactive: true\n\n"]
    out.append(f"Input Reader State (Nums of device: {len(devices)}):\n")
    for num, name, sources in devices:
        out.append(
            f"  Device {num}: {name}\n    EventHub Devices: [ {num} ] \n    Generation: {num * 12}\n"
            "    IsExternal: false\n    AssociatedDisplayPort: <none>\n"
            "    AssociatedDisplayUniqueId: <none>\n"
            f"    HasMic:     false\n    Sources: {sources}\n"
        )
        if sources == "TOUCHSCREEN":
            out.append(
                "    Touch Input Mapper (mode - DIRECT):\n      Parameters:\n"
                "        GestureMode: MULTI_TOUCH\n"
                "        DeviceType: TOUCH_SCREEN\n        OrientationAware: true\n"
                "      Viewport INTERNAL: displayId=0, uniqueId=local:4619827259835644672, port=0, "
                f"orientation=0, logicalFrame=[0, 0, {w}, {h}], physicalFrame=[0, 0, {w}, {h}], "
                f"deviceSize=[{w}, {h}], isActive=[1]\n      DisplayBounds: {w}x{h}\n"
                "      InputDeviceOrientation: Rotation0\n"
            )
    io.out("".join(out))


def _input_method(sh: Caller, io: Output) -> None:
    shown = sh.phone.state.keyboard_shown
    io.out(
        "Current Input Method Manager state:\n  mCurMethodId=com.google.android.inputmethod.latin/"
        f"com.android.inputmethod.latin.LatinIME\n  mInputShown={'true' if shown else 'false'}\n"
        f"  mServedInputConnection={'active' if shown else 'null'}\n"
    )


FIXED = {
    "battery": (
        "Current Battery Service state:\n  AC powered: true\n  USB powered: false\n"
        "  Wireless powered: false\n"
        "  status: 2\n  health: 2\n  present: true\n  level: 100\n  scale: 100\n  voltage: 5000\n"
        "  temperature: 250\n  technology: Li-ion\n"
    ),
    "power": "POWER MANAGER (dumpsys power)\n  mWakefulness=Awake\n  mHoldingDisplaySuspendBlocker=true\n"
    "Display Power: state=ON\n",
}


SYSTEM_SERVER_PID = 542  # the pid `dumpsys --pid` gives for the services system_server hosts
BINDER_THREADS = 31  # system_server's binder thread pool (`--thread`): the main thread and 30 more


def _dump_one(sh: Caller, svc: str, args: list[str], io: Output) -> None:
    """One service's own dump; the arguments a batch adds (`-a`, `--dump-priority P`, `--proto`) are
    taken as the services here take them: they change nothing they print."""
    rest = [a for a in args if a not in ("-a", "--proto") and a not in PRIORITIES and a != "--dump-priority"]
    if svc == "window":
        _window(sh, io)
    elif svc == "activity":
        _activity(sh, rest, io)
    elif svc == "display":
        _display(sh, io)
    elif svc == "input":
        _input(sh, io)
    elif svc == "input_method":
        _input_method(sh, io)
    elif svc in FIXED:
        io.out(FIXED[svc])
    elif svc == "wifi":
        on = sh.phone.get_setting("global", "wifi_on") not in (None, "0")
        io.out(f"Wi-Fi is {'enabled' if on else 'disabled'}\n")
    # The other services are listed and answer, with nothing to say: their state is not modelled.


def _dump(sh: Caller, svc: str, request: DumpRequest, args: list[str], io: Output) -> None:
    """What dumpsys writes for one service: its pid or thread use first when asked, then its dump."""
    if "pid" in request.kinds:
        io.out(("" if request.kinds == {"pid"} else "Service host process PID: ") + f"{SYSTEM_SERVER_PID}\n")
    if "thread" in request.kinds:
        io.out(f"Threads in use: 1/{BINDER_THREADS}\n")
    if "dump" in request.kinds:
        _dump_one(sh, svc, args, io)


def _footer(sh: Caller, svc: str, seconds: float) -> str:
    """Dumpsys::writeDumpFooter: how long the dump took and when it ended, on the phone's clock."""
    zone = ZoneInfo(sh.phone.clock.zone) if known_zone(sh.phone.clock.zone) else dt.UTC
    ended = dt.datetime.fromtimestamp(sh.phone.clock.now_ms() / 1000, tz=zone)
    return (
        f"--------- {seconds:.3f}s was the duration of dumpsys {svc}, ending at: {ended:%Y-%m-%d %H:%M:%S}\n"
    )


def _dumpsys(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    try:
        request = parse(args)
    except DumpsysUsage as refused:
        io.err(refused.message)
        return refused.exit_code
    names = [request.service] if request.service else services_of(SERVICES, request)
    args = request.service_args if request.service else batch_args(request) + request.service_args
    if len(names) > 1 or request.listing:
        skipped = set(request.words) if request.skip else set()
        io.out(
            "Currently running services:\n"
            + "".join(f"  {s}{' (skipped)' if s in skipped else ''}\n" for s in names if s in SERVICES)
        )
    if request.listing:
        return 0
    for svc in names:
        if request.skip and svc in request.words:
            continue
        if svc not in SERVICES:
            io.err(f"Can't find service: {svc}\n")
            continue
        level = f"{request.priority} " if request.priority in ("CRITICAL", "HIGH") else ""
        if len(names) > 1:
            io.out(f"{HEADER_RULE}DUMP OF SERVICE {level}{svc}:\n")
        started = time.perf_counter()
        _dump(sh, svc, request, args, io)
        if len(names) > 1:
            io.out(_footer(sh, svc, time.perf_counter() - started))
    return 0


COMMANDS = command_table(_dumpsys)
