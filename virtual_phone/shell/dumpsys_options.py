"""What `dumpsys` makes of its arguments, as AOSP frameworks/native/cmds/dumpsys/dumpsys.cpp reads them, and
the dump priorities the phone's services are registered with.

getopt_long with "+t:T:l": options end at the first word that is none; long options may be cut to a unique
prefix (`--pri`). `--skip` takes no value of its own: every word after the options is a service to skip.
getopt's complaints are bionic's (OpenBSD getopt_long): `dumpsys: unknown option -- x`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LONG_OPTIONS = ("help", "dump", "pid", "priority", "proto", "skip", "stability", "thread")
PRIORITIES = ("CRITICAL", "HIGH", "NORMAL")
# The priorities services register with beyond the default NORMAL (ServiceManager.addService's
# dumpPriority: SurfaceFlinger, ActivityManagerService.setSystemProcess, SystemServer for window, input,
# cpuinfo and meminfo, NotificationManagerService, ConnectivityService), and which of them dump as proto.
REGISTERED = {
    "SurfaceFlinger": {"CRITICAL"},
    "activity": {"CRITICAL", "NORMAL"},
    "connectivity": {"HIGH", "NORMAL"},
    "cpuinfo": {"CRITICAL"},
    "input": {"CRITICAL"},
    "meminfo": {"HIGH"},
    "notification": {"CRITICAL", "NORMAL"},
    "window": {"CRITICAL"},
}
PROTO = {"SurfaceFlinger", "activity", "notification", "window"}
USAGE = (
    "usage: dumpsys\n"
    "         To dump all services.\n"
    "or:\n"
    "       dumpsys [-t TIMEOUT] [--priority LEVEL] [--dump] [--pid] [--thread] [--help | -l | --skip "
    "SERVICES | SERVICE [ARGS]]\n"
    "         --help: shows this help\n"
    "         -l: only list services, do not dump them\n"
    "         -t TIMEOUT_SEC: TIMEOUT to use in seconds instead of default 10 seconds\n"
    "         -T TIMEOUT_MS: TIMEOUT to use in milliseconds instead of default 10 seconds\n"
    "         --dump: ask the service to dump itself (this is the default)\n"
    "         --pid: dump PID instead of usual dump\n"
    "         --proto: filter services that support dumping data in proto format. Dumps\n"
    "               will be in proto format.\n"
    "         --priority LEVEL: filter services based on specified priority\n"
    "               LEVEL must be one of CRITICAL | HIGH | NORMAL\n"
    "         --skip SERVICES: dumps all services but SERVICES (comma-separated list)\n"
    "         --stability: dump binder stability information instead of usual dump\n"
    "         --thread: dump thread usage instead of usual dump\n"
    "         SERVICE [ARGS]: dumps only service SERVICE, optionally passing ARGS to it\n"
)


class DumpsysUsage(Exception):
    """Arguments dumpsys refuses: the message (stderr) is printed and it exits with -1 (255); `--help`
    prints the usage the same way and exits 0."""

    def __init__(self, message: str, exit_code: int = 255) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@dataclass
class DumpRequest:
    listing: bool = False  # -l
    skip: bool = False  # --skip: the words are services to leave out
    proto: bool = False
    priority: str = ""  # "" = every priority
    kinds: set[str] = field(default_factory=set)  # of "dump", "pid", "thread", "stability"
    words: list[str] = field(default_factory=list)  # the service and its arguments, or the skipped

    @property
    def service(self) -> str:
        return "" if self.skip or not self.words else self.words[0]

    @property
    def service_args(self) -> list[str]:
        return [] if self.skip else self.words[1:]


def registered(service: str) -> set[str]:
    return REGISTERED.get(service, {"NORMAL"})


def services_of(all_services: list[str], request: DumpRequest) -> list[str]:
    """The services a dump without a service name covers (Dumpsys::listServices), sorted."""
    chosen = [s for s in all_services if not request.priority or request.priority in registered(s)]
    return sorted(s for s in chosen if not request.proto or s in PROTO)


def batch_args(request: DumpRequest) -> list[str]:
    """What each service of a batch is given (Dumpsys::setServiceArgs)."""
    args = ["--proto"] if request.proto else []
    if request.priority in ("", "NORMAL"):
        args.insert(0, "-a")
    if request.priority:
        args[:0] = ["--dump-priority", request.priority]
    return args


def parse(args: list[str]) -> DumpRequest:
    """The request `args` make; DumpsysUsage with what dumpsys prints when it refuses them."""
    request, rest = DumpRequest(), list(args)
    while rest and rest[0].startswith("-") and rest[0] != "-":
        word = rest.pop(0)
        if word == "--":
            break
        if word.startswith("--"):
            _long_option(request, word[2:], rest)
        else:
            _short_options(request, word[1:], rest)
    request.words = rest
    request.kinds = request.kinds or {"dump"}
    if (request.skip and not rest) or (request.listing and rest):
        raise DumpsysUsage(USAGE)
    return request


def _long_option(request: DumpRequest, text: str, rest: list[str]) -> None:
    name, eq, value = text.partition("=")
    found = [o for o in LONG_OPTIONS if o == name] or [o for o in LONG_OPTIONS if o.startswith(name)]
    if len(found) != 1 or (eq and found[0] != "priority"):
        kind = "ambiguous option" if len(found) > 1 else "unknown option"
        if len(found) == 1:
            kind = "option doesn't take an argument"
        raise DumpsysUsage(f"dumpsys: {kind} -- {name}\n\n{USAGE}")
    option = found[0]
    if option == "help":
        raise DumpsysUsage(USAGE, exit_code=0)
    if option == "priority":
        if not eq and not rest:
            raise DumpsysUsage(f"dumpsys: option requires an argument -- priority\n\n{USAGE}")
        level = value if eq else rest.pop(0)
        if level not in PRIORITIES:
            raise DumpsysUsage("\n" + USAGE)
        request.priority = level
    elif option == "skip":
        request.skip = True
    elif option == "proto":
        request.proto = True
    else:
        request.kinds.add(option)


def _short_options(request: DumpRequest, letters: str, rest: list[str]) -> None:
    for n, letter in enumerate(letters):
        if letter == "l":
            request.listing = True
            continue
        if letter not in "tT":
            raise DumpsysUsage(f"dumpsys: unknown option -- {letter}\n\n{USAGE}")
        if not letters[n + 1 :] and not rest:
            raise DumpsysUsage(f"dumpsys: option requires an argument -- {letter}\n\n{USAGE}")
        value = letters[n + 1 :] or rest.pop(0)
        if not value.isdigit() or int(value) <= 0:
            unit = "seconds" if letter == "t" else "milliseconds"
            raise DumpsysUsage(f"Error: invalid timeout({unit}) number: '{value}'\n")
        return
