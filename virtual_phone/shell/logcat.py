"""`log` and `logcat` on the virtual phone, over its log buffers (state/log_buffer.py).

`log` is toybox's (AOSP external/toybox toys/android/log.c): `log [-p PRI] [-t TAG] [MESSAGE...]` writes
one entry to the main buffer, tag "log" and priority I unless told; without a message, each line of stdin.
`logcat` follows AOSP system/logging/logcat/logcat.cpp: `-d` dumps and exits, `-c` clears, `-b` picks
buffers (`all`, `default`, comma lists), `-v` formats (log_format.py), `-s` silences all but the named
tags, `-t N|TIME` prints the last N lines (or those since TIME) and exits, `-T` the same then follows,
`-m N` stops after N lines, `-e RE` keeps matching messages, `--pid=N`, `-D` dividers. Without `-d`, `-c`
or `-t` it keeps printing new entries as they come until its process is killed (its client went away).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from virtual_phone.shell.log_format import FilterError, LogFilter, LogFormat, format_entry
from virtual_phone.shell.program import Caller, Output, command_table
from virtual_phone.state.log_buffer import BUFFERS, DEFAULT_BUFFERS, LogEntry

LOG_PRIORITIES = {"d": "D", "e": "E", "f": "F", "i": "I", "s": "S", "v": "V", "w": "W"}
LOG_MAX = 1024  # toybox log cuts a message here
FOLLOW_POLL_S = 0.25  # how often a following logcat checks that its process still lives
WITH_VALUE = {"-b", "-v", "-t", "-T", "-m", "-e", "-f", "-r", "-n", "-G", "-P", "--pid"}
# logcat's options the phone does not model (files, rotation, sizes, statistics, prune lists): refused
# with a message saying so, rather than accepted and ignored.
NOT_MODELLED = {"-f", "-r", "-n", "-g", "-G", "-S", "-p", "-P", "-B", "-L", "--wrap"}


class LogcatError(Exception):
    """Arguments logcat refuses; the message is printed after `logcat: `."""


def _log(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    tag, priority, rest = "log", "I", list(args)
    while rest and rest[0].startswith("-") and len(rest[0]) > 1:
        option = rest.pop(0)
        if option == "--":
            break
        value = option[2:] or (rest.pop(0) if rest else None)
        if option[1] not in "pt" or value is None:
            io.err(
                f"log: {'Unknown option' if option[1] not in 'pt' else 'Missing argument to'} '{option}'\n"
            )
            return 1
        if option[1] == "t":
            tag = value
        elif len(value) != 1 or value.lower() not in LOG_PRIORITIES:
            io.err(f"log: bad -p '{value}'\n")
            return 1
        else:
            priority = LOG_PRIORITIES[value.lower()]
    messages = [" ".join(rest)] if rest else sh.read_stdin().decode(errors="replace").splitlines()
    for message in messages:
        if len(message.encode()) >= LOG_MAX:
            message = message.encode()[:LOG_MAX].decode(errors="ignore")
            io.err("log: log cut at 1024 bytes\n")
        sh.phone.logs.write("main", priority, tag, message, sh.pid, sh.uid)
    return 0


@dataclass
class LogcatRequest:
    buffers: list[str] = field(default_factory=list)
    fmt: LogFormat = field(default_factory=LogFormat)
    filter: LogFilter = field(default_factory=LogFilter)
    dump: bool = False  # -d, or -t
    clear: bool = False
    tail: int | None = None  # -t/-T N: the last N entries
    since_ms: int | None = None  # -t/-T TIME
    max_count: int | None = None
    regex: re.Pattern[str] | None = None
    pid: int | None = None
    dividers: bool = False

    def chosen(self) -> tuple[str, ...]:
        return tuple(b for b in BUFFERS if b in self.buffers) if self.buffers else DEFAULT_BUFFERS

    def wants(self, entry: LogEntry) -> bool:
        return (
            self.filter.passes(entry)
            and (self.pid is None or entry.pid == self.pid)
            and (self.regex is None or self.regex.search(entry.message) is not None)
            and (self.since_ms is None or entry.ms >= self.since_ms)
        )


def _split(args: list[str]) -> list[tuple[str, str | None]]:
    """(option, value) pairs and ("", filterspec) for the other words: getopt_long permutes, so options
    may come after filter expressions; `-dv time` bundles letters, `--pid=N` carries its value."""
    out: list[tuple[str, str | None]] = []
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word.partition("=")
            out.append((name, value if eq else (rest.pop(0) if name in WITH_VALUE and rest else None)))
        elif word.startswith("-") and len(word) > 1:
            for n, letter in enumerate(word[1:], start=1):
                option = f"-{letter}"
                if option in WITH_VALUE:
                    out.append((option, word[n + 1 :] or (rest.pop(0) if rest else None)))
                    break
                out.append((option, None))
        else:
            out.append(("", word))
    return out


def _time_arg(sh: Caller, text: str) -> int:
    """The ms of a `-t`/`-T` time: `MM-DD hh:mm:ss.mmm` (this year), `YYYY-MM-DD hh:mm:ss.mmm`, or
    `SECONDS.mmm` since the epoch; in the phone's zone."""
    if re.fullmatch(r"\d+\.\d+", text):
        return round(float(text) * 1000)
    zone = ZoneInfo(sh.phone.clock.zone)
    year = dt.datetime.fromtimestamp(sh.phone.clock.now_ms() / 1000, tz=zone).year
    for pattern, prefix in (("%Y-%m-%d %H:%M:%S.%f", ""), ("%Y-%m-%d %H:%M:%S.%f", f"{year}-")):
        try:
            when = dt.datetime.strptime(prefix + text, pattern).replace(tzinfo=zone)
        except ValueError:
            continue
        return round(when.timestamp() * 1000)
    raise LogcatError(f'-t "{text}" not in time format')


def _take(sh: Caller, request: LogcatRequest, option: str, value: str | None) -> None:
    """Applies one option to the request."""
    if option in NOT_MODELLED:
        raise LogcatError(f"option {option} is not modelled by this phone")
    if option in WITH_VALUE and value is None:
        raise LogcatError(f"option requires an argument -- {option.lstrip('-')}")
    if option in ("-d", "--dump"):
        request.dump = True
    elif option in ("-c", "--clear"):
        request.clear = True
    elif option in ("-s",):
        request.filter.default = "S"
    elif option in ("-D", "--dividers"):
        request.dividers = True
    elif option == "-b":
        for name in str(value).replace(",", " ").split():
            if name not in (*BUFFERS, "all", "default"):
                raise LogcatError(f"Unknown buffer '{name}' listed for -b.")
            request.buffers += BUFFERS if name == "all" else DEFAULT_BUFFERS if name == "default" else [name]
    elif option == "-v":
        for word in str(value).replace(",", " ").split():
            if not request.fmt.add(word):
                raise LogcatError(f"Invalid parameter '{word}' to -v.")
    elif option in ("-t", "-T"):
        request.dump = request.dump or option == "-t"
        text = str(value)
        if text.isdigit():
            request.tail = int(text)
        else:
            request.since_ms = _time_arg(sh, text)
    elif option == "-m":
        request.max_count = int(str(value)) if str(value).isdigit() else 0
    elif option == "-e":
        request.regex = re.compile(str(value))
    elif option == "--pid":
        request.pid = int(str(value)) if str(value).isdigit() else -1
    else:
        raise LogcatError(f"Unknown option '{option}'.")


def parse(sh: Caller, args: list[str]) -> LogcatRequest:
    request, specs = LogcatRequest(), []
    for option, value in _split(args):
        if option:
            _take(sh, request, option, value)
        else:
            specs.append(str(value))
    try:
        for spec in specs:
            request.filter.add(spec)
    except FilterError as bad:
        raise LogcatError(str(bad)) from None
    return request


class Printer:
    """Formats entries as one logcat run prints them, with `--------- beginning of BUFFER` before the
    first entry of each buffer (and `switch to` lines with -D), counting what it printed."""

    def __init__(self, sh: Caller, request: LogcatRequest) -> None:
        self.sh, self.request = sh, request
        self.started: set[str] = set()
        self.last = ""
        self.count = 0

    def text(self, entries: list[LogEntry]) -> str:
        out = []
        for entry in entries:
            if self.request.max_count is not None and self.count >= self.request.max_count:
                break
            if not self.request.wants(entry):
                continue
            if entry.buffer not in self.started or (self.request.dividers and entry.buffer != self.last):
                word = "switch to" if entry.buffer in self.started else "beginning of"
                out.append(f"--------- {word} {entry.buffer}\n")
                self.started.add(entry.buffer)
            self.last = entry.buffer
            out.append(
                format_entry(entry, self.request.fmt, self.sh.phone.clock.zone, self.sh.phone.logs.boot_ms)
            )
            self.count += 1
        return "".join(out)

    def done(self) -> bool:
        return self.request.max_count is not None and self.count >= self.request.max_count


def _logcat(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    try:
        request = parse(sh, args)
    except LogcatError as refused:
        io.err(f"logcat: {refused}\n")
        return 1
    logs = sh.phone.logs
    if request.clear:
        logs.clear(request.chosen())
        return 0
    seen = logs.last_seq()
    backlog = logs.entries(request.chosen())
    seen = max([seen, *(e.seq for e in backlog)])  # what is written meanwhile is not printed twice
    if request.tail is not None:
        backlog = [e for e in backlog if request.wants(e)][-request.tail :] if request.tail else []
    printer = Printer(sh, request)
    first = printer.text(backlog)
    if request.dump or printer.done() or sh.stdout_fd is None:
        io.out(first)
        return 0
    return _follow(sh, request, printer, first, seen)


def _follow(sh: Caller, request: LogcatRequest, printer: Printer, first: str, seen: int) -> int:
    """Prints what is there, then each new entry as it comes, until the process goes (or -m is reached)."""
    logs = sh.phone.logs
    if first and not sh.write_now(first.encode()):
        return 0
    while not sh.gone() and not printer.done():
        if not logs.wait(seen, FOLLOW_POLL_S):
            continue
        newest = logs.last_seq()  # entries of other buffers count as seen too
        batch = logs.entries(request.chosen(), seen)
        seen = max([newest, *(e.seq for e in batch)])
        text = printer.text(batch)
        if text and not sh.write_now(text.encode()):
            return 0
    return 0


COMMANDS = command_table(_log, _logcat)
