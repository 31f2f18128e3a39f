"""`am` and `monkey` on the virtual phone, with Android 14's outputs (ActivityManagerShellCommand).

Intents print as Intent.toShortString does: act, cat, dat, flg, pkg, cmp, then `(has extras)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from virtual_phone.schema.app_schema import short_name
from virtual_phone.shell.program import Caller, Output, command_table, exception
from virtual_phone.state import content_providers

FLAG_OPTIONS = frozenset(
    [
        "-W",
        "-S",
        "-R",
        "--activity-clear-task",
        "--activity-new-task",
        "--activity-clear-top",
        "--activity-single-top",
        "--activity-no-history",
        "--activity-reorder-to-front",
        "--receiver-foreground",
    ]
)
VALUE_OPTIONS = frozenset(
    ["-a", "-n", "-c", "-d", "-t", "-f", "-p", "--user", "--display", "--windowingMode"]
)
# Intent.parseCommandArgs: `-e` is `--es`'s short form.
EXTRA_OPTIONS = frozenset(["-e", "--es", "--ez", "--ei", "--el", "--ef", "--eu"])
VIEW = "android.intent.action.VIEW"
FLG_BROADCAST = "0x400000"  # FLAG_RECEIVER_FOREGROUND, which `am broadcast` adds


class IntentError(Exception):
    """An argument `am` rejects (IllegalArgumentException)."""


@dataclass
class Intent:
    action: str | None = None
    component: str | None = None
    category: str | None = None
    data: str | None = None
    package: str | None = None
    extras: bool = False

    def short(self, flags: str | None = None) -> str:
        parts = [f"act={self.action}"] if self.action else []
        parts += [f"cat=[{self.category}]"] if self.category else []
        parts += [f"dat={self.data}"] if self.data else []
        parts += [f"flg={flags}"] if flags else []
        parts += [f"pkg={self.package}"] if self.package else []
        if self.component:
            pkg, cls = self.component.split("/", 1)
            parts.append(f"cmp={short_name(pkg, cls)}")
        return "Intent { " + " ".join(parts) + (" (has extras)" if self.extras else "") + " }"


def _set(intent: Intent, option: str, value: str) -> None:
    field = {"-a": "action", "-n": "component", "-c": "category", "-d": "data", "-p": "package"}.get(option)
    if field is not None:
        setattr(intent, field, value)


def parse_intent(args: list[str]) -> Intent:
    """The intent of `am start|broadcast` arguments; IntentError for what Android refuses."""
    intent = Intent()
    it = iter(args)
    for a in it:
        if a in FLAG_OPTIONS:
            continue
        if a in VALUE_OPTIONS:
            val = next(it, None)
            if val is None:
                raise IntentError(f'Argument expected after "{a}"')
            _set(intent, a, val)
        elif a in EXTRA_OPTIONS:
            next(it, None)
            next(it, None)
            intent.extras = True
        elif a.startswith("-"):
            raise IntentError(f"Unknown option: {a}")
        elif "/" in a and intent.component is None:
            intent.component = a
        elif intent.action is None and intent.data is None:
            intent.data = a
    comp = intent.component
    if comp is not None and ("/" not in comp or comp.startswith("/") or comp.endswith("/")):
        raise IntentError(f"Bad component name: {comp}")
    return intent


def _resolve(sh: Caller, intent: Intent, io: Output) -> tuple[str, str] | None:
    """(package, screen) the intent starts, or None after printing Android's error."""
    cat = sh.phone.catalog
    if intent.component is not None:
        pkg, cls = intent.component.split("/", 1)
        screen = cat.find_component(pkg, cls) if pkg in cat.apps else None
        if screen is None:
            full = pkg + cls if cls.startswith(".") else cls
            io.err(f"Error type 3\nError: Activity class {{{pkg}/{full}}} does not exist.\n")
            return None
        return pkg, screen
    home = "android.intent.category.HOME"
    if intent.category == home or (
        intent.action == "android.intent.action.MAIN" and intent.category in (None, home)
    ):
        return cat.home.package, cat.home.launch_screen
    target = cat.find_action(intent.action) if intent.action is not None else None
    if target is None and intent.action == VIEW and intent.data is not None:
        target = _viewer(sh, intent.data)
    if target is None:
        io.err(f"Error: Activity not started, unable to resolve {intent.short('0x10000000')}\n")
    return target


def _viewer(sh: Caller, uri: str) -> tuple[str, str] | None:
    """The app that views a content URI: the one whose records its provider holds (VIEW
    content://contacts/people/ opens Contacts' list), at its launch screen."""
    try:
        endpoint = content_providers.resolve(uri).endpoint
    except content_providers.ProviderError:
        return None
    for pkg, app in sh.phone.catalog.apps.items():
        if endpoint is not None and app.data.database and (app.data.owner or pkg) == endpoint.owner:
            return pkg, app.launch_screen
    return None


def _start(sh: Caller, args: list[str], io: Output) -> int:
    try:
        intent = parse_intent(args)
    except IntentError as e:
        return exception(io, "start", "java.lang.IllegalArgumentException", str(e))
    if intent.component is None and intent.action is None and intent.category is None and not intent.data:
        return exception(io, "start", "java.lang.IllegalArgumentException", "No intent supplied")
    phone = sh.phone
    if "-S" in args:
        stop = intent.component.split("/", 1)[0] if intent.component else None
        if stop is None and intent.action is not None:
            found = phone.catalog.find_action(intent.action)
            stop = found[0] if found else None
        if stop is not None:
            io.out(f"Stopping: {stop}\n")
            phone.force_stop(stop)
    io.out(f"Starting: {intent.short()}\n")
    target = _resolve(sh, intent, io)
    if target is None:
        return 0
    with phone.lock:
        warm = target[0] in phone.state.tasks
    phone.start_screen(*target)
    phone.prerender_soon()
    if "-W" in args:
        app = phone.catalog.apps[target[0]]
        io.out(
            f"Status: ok\nLaunchState: {'HOT' if warm else 'COLD'}\n"
            f"Activity: {app.short_component(target[1])}\nTotalTime: 120\nWaitTime: 125\nComplete\n"
        )
    return 0


def _broadcast(sh: Caller, args: list[str], io: Output) -> int:
    try:
        intent = parse_intent(args)
    except IntentError as e:
        return exception(io, "broadcast", "java.lang.IllegalArgumentException", str(e))
    io.out(f"Broadcasting: {intent.short(FLG_BROADCAST)}\nBroadcast completed: result=0\n")
    return 0


def stack_list(sh: Caller) -> str:
    """`am stack list`: one root task per task (most recent first), each with its one task line."""
    phone = sh.phone
    with phone.lock:
        st = phone.state
        w, h = st.width, st.height
        tasks = [(pkg, st.task_id(pkg), stack[0].screen, stack[-1].screen) for pkg, stack in st.tasks.items()]
        top = st.foreground
    lines = []
    for pkg, tid, root, top_screen in reversed(tasks):
        app = phone.catalog.apps[pkg]
        lines.append(
            f"RootTask id={tid} bounds=[0,0][{w},{h}] displayId=0 userId=0\n"
            f" configuration={{1.0 310mcc260mnc [en_US] ldltr sw411dp w411dp h914dp 420dpi nrml long port "
            f"finger -keyb/v/h -nav/h winConfig={{ mBounds=Rect(0, 0 - {w}, {h}) mAppBounds=Rect(0, 0 - {w}, "
            f"{h}) mWindowingMode=fullscreen mDisplayWindowingMode=fullscreen mActivityType=standard "
            f"mAlwaysOnTop=undefined mRotation=ROTATION_0}} s.1 fontWeightAdjustment=0}}\n"
            f"  taskId={tid}: {app.launch_component(root)} bounds=[0,0][{w},{h}] userId=0 "
            f"visible={'true' if pkg == top else 'false'} "
            f"topActivity=ComponentInfo{{{pkg}/{app.activity_class(top_screen)}}}\n\n"
        )
    return "".join(lines)


def _task(sh: Caller, args: list[str], io: Output) -> int:
    """`am task lock N|stop`: lock task mode pins task N in front (Home and Back stay in it)."""
    if args[:1] != ["lock"] or len(args) < 2:
        io.err(f"Error: unknown command '{args[0] if args else ''}'\n")
        return 255
    if args[1] != "stop" and not args[1].isdigit():
        return exception(io, "task", "java.lang.NumberFormatException", f'For input string: "{args[1]}"')
    locked = sh.phone.lock_task(None if args[1] == "stop" else int(args[1]))
    io.out(f"Activity manager is {'' if locked else 'not '}in lockTaskMode\n")
    return 0


def _am(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    if not args:
        io.err("Activity manager (activity) commands:\n  help\n      Print this help text.\n")
        return 0
    sub, rest = args[0], args[1:]
    if sub in ("force-stop", "kill", "stop-app"):
        for p in (a for a in rest if not a.startswith("--") and a not in ("all", "current")):
            sh.phone.force_stop(p)
        sh.phone.prerender_soon()
        return 0
    if sub in ("start", "start-activity"):
        return _start(sh, rest, io)
    if sub == "broadcast":
        return _broadcast(sh, rest, io)
    if sub == "stack" and rest[:1] == ["list"]:
        io.out(stack_list(sh))
        return 0
    if sub == "task":
        return _task(sh, rest, io)
    if sub == "get-current-user":  # the phone has one user, the system user 0
        io.out("0\n")
        return 0
    io.err(f"Unknown command: {sub}\n")
    return 255


def _monkey(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
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


COMMANDS = command_table(_am, _monkey)
