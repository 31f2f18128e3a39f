"""Android's system-service commands on the virtual phone: am, monkey, pm, dumpsys, wm, getprop.

Outputs follow an API 34 emulator; activity names come from the apps' data.
"""

from __future__ import annotations

import zlib

from agent_eval.virtual_device.android import exception
from agent_eval.virtual_device.phone import SDK
from agent_eval.virtual_device.shell import Output, Shell, command

PROPS = {
    "dev.bootcomplete": "1",
    "init.svc.bootanim": "stopped",
    "persist.sys.timezone": "GMT",
    "ro.boot.qemu": "1",
    "ro.build.characteristics": "emulator",
    "ro.build.fingerprint": (
        "google/sdk_gphone64_x86_64/emu64x:14/UE1A.230829.036/10747330:userdebug/dev-keys"
    ),
    "ro.build.id": "UE1A.230829.036",
    "ro.build.type": "userdebug",
    "ro.build.version.release": "14",
    "ro.build.version.sdk": str(SDK),
    "ro.build.version.security_patch": "2023-09-05",
    "ro.debuggable": "1",
    "ro.hardware": "ranchu",
    "ro.kernel.qemu": "1",
    "ro.product.brand": "google",
    "ro.product.cpu.abi": "x86_64",
    "ro.product.device": "emu64x",
    "ro.product.manufacturer": "Google",
    "ro.product.model": "sdk_gphone64_x86_64",
    "ro.product.name": "sdk_gphone64_x86_64",
    "ro.secure": "1",
    "ro.sf.lcd_density": "420",
    "service.bootanim.exit": "1",
    "sys.boot_completed": "1",
}
SYSTEM_PACKAGES = (
    "android",
    "com.android.phone",
    "com.android.providers.settings",
    "com.android.shell",
    "com.android.systemui",
    "com.google.android.inputmethod.latin",
)


@command("am")
def _am(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    phone = sh.phone
    cat = phone.catalog
    if not args:
        io.err("Activity manager (activity) commands:\n  help\n      Print this help text.\n")
        return 0
    sub, rest = args[0], args[1:]
    if sub in ("force-stop", "kill", "stop-app"):
        pkgs = [a for a in rest if not a.startswith("--") and a not in ("all", "current")]
        for p in pkgs:
            phone.force_stop(p)
        phone.prerender_soon()
        return 0
    if sub == "broadcast":
        io.out(
            "Broadcasting: Intent { act="
            + (rest[rest.index("-a") + 1] if "-a" in rest[:-1] else "")
            + " flg=0x400000 }\nBroadcast completed: result=0\n"
        )
        return 0
    if sub not in ("start", "start-activity"):
        io.err(f"Unknown command: {sub}\n")
        return 255
    action = comp = category = data = None
    it = iter(rest)
    for a in it:
        if a in (
            "-W",
            "-S",
            "-R",
            "--activity-clear-task",
            "--activity-new-task",
            "--activity-clear-top",
            "--activity-single-top",
            "--activity-no-history",
            "--activity-reorder-to-front",
        ):
            continue
        if a in ("-a", "-n", "-c", "-d", "-t", "-f", "--user", "--display", "--windowingMode"):
            val = next(it, None)
            if val is None:
                return exception(
                    io, "start", "java.lang.IllegalArgumentException", f'Argument expected after "{a}"'
                )
            if a == "-a":
                action = val
            elif a == "-n":
                comp = val
            elif a == "-c":
                category = val
            elif a == "-d":
                data = val
            continue
        if a in ("--es", "--ez", "--ei", "--el", "--ef", "--eu"):
            next(it, None)
            next(it, None)
            continue
        if a.startswith("-"):
            return exception(io, "start", "java.lang.IllegalArgumentException", f"Unknown option: {a}")
        if "/" in a and comp is None:
            comp = a
        elif action is None and data is None:
            data = a
    parts = []
    if action:
        parts.append(f"act={action}")
    if category:
        parts.append(f"cat=[{category}]")
    if data:
        parts.append(f"dat={data}")
    target: tuple[str, str] | None = None
    if comp is not None:
        if "/" not in comp or comp.startswith("/") or comp.endswith("/"):
            return exception(io, "start", "java.lang.IllegalArgumentException", f"Bad component name: {comp}")
        pkg, cls = comp.split("/", 1)
        parts.append(f"cmp={comp}")
        io.out(f"Starting: Intent {{ {' '.join(parts)} }}\n")
        full = pkg + cls if cls.startswith(".") else cls
        screen = cat.find_component(pkg, cls) if pkg in cat.apps else None
        if screen is None:
            io.err(f"Error type 3\nError: Activity class {{{pkg}/{full}}} does not exist.\n")
            return 0
        target = (pkg, screen)
    else:
        if action is None and category is None and data is None:
            io.err(
                "Exception occurred while executing 'start':\njava.lang.IllegalArgumentException: "
                "No intent supplied\n"
            )
            return 255
        io.out(f"Starting: Intent {{ {' '.join(parts)} }}\n")
        if category == "android.intent.category.HOME" or (
            action == "android.intent.action.MAIN" and category in (None, "android.intent.category.HOME")
        ):
            target = (cat.home.package, cat.home.launch_screen)
        elif action is not None:
            target = cat.find_action(action)
        if target is None:
            io.err(
                f"Error: Activity not started, unable to resolve Intent "
                f"{{ {' '.join(parts)} flg=0x10000000 }}\n"
            )
            return 0
    phone.start_screen(*target)
    phone.prerender_soon()
    if "-W" in rest:
        app = cat.apps[target[0]]
        io.out(
            f"Status: ok\nLaunchState: COLD\nActivity: {app.short_component(target[1])}\nTotalTime: 120\n"
            "WaitTime: 125\nComplete\n"
        )
    return 0


@command("monkey")
def _monkey(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    pkgs = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-p"]
    for a in args:
        io.out(f"  bash arg: {a}\n")
    if not pkgs:
        io.err("** Error: you must specify at least one package\n")
        return 1
    if not sh.phone.launch(pkgs[0]):
        io.out(f'args: {args}\n arg: "-p"\n arg: "{pkgs[0]}"\n')
        io.err("** No activities found to run, monkey aborted.\n")
        return 252
    sh.phone.prerender_soon()
    io.out(
        "Events injected: 1\n## Network stats: elapsed time=12ms (0ms mobile, 0ms wifi, 12ms not connected)\n"
    )
    return 0


@command("pm")
def _pm(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    if args[:2] == ["list", "packages"]:
        flt = [a for a in args[2:] if not a.startswith("-")]
        pkgs = sorted({*sh.phone.catalog.apps, *SYSTEM_PACKAGES})
        if "-3" in args:
            pkgs = []
        show_path = "-f" in args
        for p in pkgs:
            if not flt or flt[0] in p:
                io.out(f"package:{'/system/app/x/x.apk=' if show_path else ''}{p}\n")
        return 0
    if args[:1] == ["path"] and len(args) > 1:
        if args[1] in sh.phone.catalog.apps or args[1] in SYSTEM_PACKAGES:
            io.out(f"package:/system/priv-app/{args[1]}/{args[1]}.apk\n")
            return 0
        return 1
    if args[:1] == ["clear"] and len(args) > 1:
        sh.phone.force_stop(args[1])
        io.out("Success\n")
        return 0
    io.err(f"Unknown command: {args[0] if args else ''}\n")
    return 255


def _focus(sh: Shell) -> tuple[str, str]:
    """(long component, short component) of the focused activity."""
    phone = sh.phone
    with phone.lock:
        app = phone.catalog.apps[phone.state.foreground]
        screen = phone.state.top.screen
    return f"{app.package}/{app.activity_class(screen)}", app.short_component(screen)


def _hash(s: str) -> str:
    return format(zlib.crc32(s.encode()) & 0xFFFFFFF, "07x")


@command("dumpsys")
def _dumpsys(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    phone = sh.phone
    svc = args[0] if args else ""
    long, short = _focus(sh)
    task = 10 + len(phone.state.tasks)
    if svc == "window":
        w, h = phone.state.width, phone.state.height
        io.out(
            "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
            f"  Window #0 Window{{{_hash(long)} u0 {long}}}:\n"
            f"    mDisplayId=0 rootTaskId={task} mSession=Session{{a1b2c3 1234:u0a10100}}\n"
            f"    mAttrs={{(0,0)(fillxfill) sim={{adjust=pan}} ty=BASE_APPLICATION}}\n"
            f"    mHasSurface=true isReadyForDisplay()=true mWindowRemovalAllowed=false\n\n"
            f"  mGlobalConfiguration={{1.0 310mcc260mnc [en_US] ldltr sw411dp w411dp h914dp 420dpi nrml port "
            f"finger qwerty/v/v dpad/v winConfig={{ mBounds=Rect(0, 0 - {w}, {h}) }}}}\n"
            f"  mCurrentFocus=Window{{{_hash(long)} u0 {long}}}\n"
            f"  mFocusedApp=ActivityRecord{{{_hash(short)} u0 {short} t{task}}}\n"
            f"  mInputMethodWindow=Window{{5e1c7d0 u0 InputMethod}}\n"
        )
        return 0
    if svc == "activity":
        sub = args[1] if len(args) > 1 else "activities"
        pkg = short.split("/")[0]
        if sub == "top":
            io.out(
                f"TASK {pkg} id={task} userId=0\n  ACTIVITY {short} {_hash(short)} pid={1000 + task * 7}\n"
                f"    Local Activity {_hash(long)} State:\n"
                "      mResumed=true mStopped=false mFinished=false\n"
            )
        else:
            io.out(
                "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n"
                "Display #0 (activities from top to "
                f"bottom):\n  * Task{{{_hash(pkg)} #{task} type=standard A=10100:{pkg}}}\n"
                f"    topResumedActivity=ActivityRecord{{{_hash(short)} u0 {short} t{task}}}\n"
                f"  ResumedActivity: ActivityRecord{{{_hash(short)} u0 {short} t{task}}}\n"
                f"  mResumedActivity: ActivityRecord{{{_hash(short)} u0 {short} t{task}}}\n"
                f"  mFocusedApp=ActivityRecord{{{_hash(short)} u0 {short} t{task}}}\n"
            )
        return 0
    if svc == "display":
        w, h = phone.state.width, phone.state.height
        io.out(
            "DISPLAY MANAGER (dumpsys display)\n  mOnlyCode=false\n  mSafeMode=false\n"
            f"  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, "
            f"uniqueId='local:4619827259835644672', physicalPort=0, orientation=0, "
            f"logicalFrame=Rect(0, 0 - {w}, "
            f"{h}), physicalFrame=Rect(0, 0 - {w}, {h}), deviceWidth={w}, deviceHeight={h}, "
            "isActive=true}]\n"
            f'  mDefaultDisplayDefaultColorMode=0\n  Display 0:\n    mBaseDisplayInfo=DisplayInfo{{"Built-in '
            f'Screen", displayId 0, real {w} x {h}, density {phone.state.density}, rotation 0, state ON}}\n'
        )
        return 0
    if svc == "input_method":
        shown = phone.state.keyboard_shown
        io.out(
            f"Current Input Method Manager state:\n  mCurMethodId=com.google.android.inputmethod.latin/"
            f"com.android.inputmethod.latin.LatinIME\n  mInputShown={'true' if shown else 'false'}\n"
            f"  mServedInputConnection={'active' if shown else 'null'}\n"
        )
        return 0
    if svc == "battery":
        io.out(
            "Current Battery Service state:\n  AC powered: true\n  USB powered: false\n"
            "  Wireless powered: false\n"
            "  status: 2\n  health: 2\n  present: true\n  level: 100\n  scale: 100\n  voltage: 5000\n"
            "  temperature: 250\n  technology: Li-ion\n"
        )
        return 0
    if svc == "power":
        io.out(
            "POWER MANAGER (dumpsys power)\n  mWakefulness=Awake\n  mHoldingDisplaySuspendBlocker=true\n"
            "Display Power: state=ON\n"
        )
        return 0
    if svc == "wifi":
        on = phone.get_setting("global", "wifi_on") not in (None, "0")
        io.out(f"Wi-Fi is {'enabled' if on else 'disabled'}\n")
        return 0
    if not svc:
        io.out(
            "Currently running services:\n  activity\n  battery\n  display\n  input_method\n"
            "  power\n  window\n  wifi\n"
        )
        return 0
    io.err(f"Can't find service: {svc}\n")
    return 0


@command("wm")
def _wm(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    phone = sh.phone
    sub = args[0] if args else ""
    if sub == "size":
        if len(args) == 1:
            dw, dh = phone.default_size
            io.out(f"Physical size: {dw}x{dh}\n")
            if (phone.state.width, phone.state.height) != (dw, dh):
                io.out(f"Override size: {phone.state.width}x{phone.state.height}\n")
            return 0
        if args[1] == "reset":
            phone.set_size(None)
            return 0
        try:
            w, h = (int(v) for v in args[1].lower().split("x"))
            if not (100 <= w <= 8000 and 100 <= h <= 8000):
                raise ValueError
        except ValueError:
            io.err(f"Error: bad size {args[1]}\n")
            return 255
        phone.set_size((w, h))
        return 0
    if sub == "density":
        if len(args) == 1:
            io.out("Physical density: 420\n")
            if phone.state.density != 420:
                io.out(f"Override density: {phone.state.density}\n")
            return 0
        if args[1] == "reset":
            phone.set_density(None)
            return 0
        if not args[1].isdigit() or not 72 <= int(args[1]) <= 960:
            io.err(f"Error: bad number {args[1]}\n")
            return 255
        phone.set_density(int(args[1]))
        return 0
    io.err(f"Unknown command: {sub}\n")
    return 255


@command("getprop")
def _getprop(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    if not args:
        io.out("".join(f"[{k}]: [{v}]\n" for k, v in sorted(PROPS.items())))
        return 0
    io.out(PROPS.get(args[0], args[1] if len(args) > 1 else "") + "\n")
    return 0


@command("log", "logcat", "setprop", "ime", "sync")
def _quiet(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return 0
