"""The shell's POSIX-ish builtins: echo, cat, grep, head, tail, wc, ls, rm, mkdir, touch, sleep, sh -c, ...

COMMANDS at the end is this module's part of the shell's command table; outputs and exit codes follow
Android's toybox.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

from virtual_phone.shell import Output, Shell, ShellExit, command_table


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _read_inputs(
    sh: Shell, files: list[str], stdin: bytes, io: Output, prog: str
) -> list[tuple[str, bytes]] | None:
    if not files:
        return [("(standard input)", stdin)]
    out = []
    for f in files:
        if f == "-":
            out.append(("(standard input)", stdin))
            continue
        if sh.phone.storage.is_dir(f):
            io.err(f"{prog}: {f}: Is a directory\n")
            return None
        data = sh.phone.storage.read(f)
        if data is None:
            io.err(f"{prog}: {f}: No such file or directory\n")
            return None
        out.append((f, data))
    return out


def _echo(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    newline = True
    escapes = False
    while args and args[0] in ("-n", "-e", "-ne", "-en", "-E"):
        newline = newline and "n" not in args[0]
        escapes = escapes or "e" in args[0]
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text = text.encode().decode("unicode_escape")
    io.out(text + ("\n" if newline else ""))
    return 0


def _printf_filler(values: Iterator[str]) -> Callable[[re.Match[str]], str]:
    def fill(m: re.Match[str]) -> str:
        spec = m.group(0)
        if spec == "%%":
            return "%"
        v = next(values, "")
        if spec[-1] in "dxo":
            try:
                return spec % int(v or 0)
            except ValueError:
                return "0"
        return (spec[:-1] + "s") % v

    return fill


def _printf(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    if not args:
        io.err("printf: Needs 1 argument\n")
        return 1
    fmt = args[0].encode().decode("unicode_escape")
    values = args[1:]
    specs = re.findall(r"%[-0-9.]*[sdxoc%]", fmt)
    needed = len([s for s in specs if s != "%%"])
    out = []
    while True:
        chunk, values = values[:needed], values[needed:]
        out.append(re.sub(r"%[-0-9.]*[sdxoc%]", _printf_filler(iter(chunk)), fmt))
        if not values or not needed:
            break
    io.out("".join(out))
    return 0


def _true(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return 0


def _false(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return 1


def _exit(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    raise ShellExit(int(args[0]) & 0xFF if args and args[0].lstrip("-").isdigit() else sh.last_rc)


def _cd(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return 0


def _pwd(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    io.out("/\n")
    return 0


def _id(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    if sh.root:
        io.out(
            "uid=0(root) gid=0(root) groups=0(root),1004(input),1007(log),1011(adb),1015(sdcard_rw),"
            "1028(sdcard_r),1078(ext_data_rw),1079(ext_obb_rw),3001(net_bt_admin),3002(net_bt),3003(inet),"
            "3006(net_bw_stats),3009(readproc),3011(uhid),3012(readtracefs) context=u:r:su:s0\n"
        )
        return 0
    io.out(
        "uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),"
        "1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats) context=u:r:shell:s0\n"
    )
    return 0


def _whoami(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    io.out("root\n" if sh.root else "shell\n")
    return 0


def _sleep(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    try:
        time.sleep(min(float(args[0]), 60.0))
    except (IndexError, ValueError):
        io.err("sleep: Need 1 argument\n")
        return 1
    return 0


def _sh(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    if len(args) >= 2 and args[0] == "-c":
        sub = Shell(sh.phone, sh.commands)
        sub.last_rc = sh.last_rc
        sub.root = sh.root
        out, rc = sub.run(args[1])
        io.chunks.extend(out.chunks)
        return rc
    return 0


def _cat(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    files = [a for a in args if not a.startswith("-") or a == "-"]
    inputs = _read_inputs(sh, files, stdin, io, "cat")
    if inputs is None:
        return 1
    for _, data in inputs:
        io.out(data)
    return 0


def _head_tail_count(args: list[str]) -> tuple[int, list[str]]:
    count, files = 10, []
    it = iter(args)
    for a in it:
        if a == "-n":
            count = int(next(it, "10"))
        elif a.startswith("-n"):
            count = int(a[2:])
        elif a.startswith("-") and a[1:].isdigit():
            count = int(a[1:])
        else:
            files.append(a)
    return count, files


def _head_or_tail(sh: Shell, args: list[str], stdin: bytes, io: Output, prog: str) -> int:
    count, files = _head_tail_count(args)
    inputs = _read_inputs(sh, files, stdin, io, prog)
    if inputs is None:
        return 1
    for _, data in inputs:
        lines = _lines(data)
        io.out(b"".join(lines[:count] if prog == "head" else lines[-count:] if count else []))
    return 0


def _head(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return _head_or_tail(sh, args, stdin, io, "head")


def _tail(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return _head_or_tail(sh, args, stdin, io, "tail")


def _wc(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    flags = "".join(a[1:] for a in args if a.startswith("-")) or "lwc"
    inputs = _read_inputs(sh, [a for a in args if not a.startswith("-")], stdin, io, "wc")
    if inputs is None:
        return 1
    for name, data in inputs:
        vals = {"l": data.count(b"\n"), "w": len(data.split()), "c": len(data)}
        nums = [str(vals[f]) for f in "lwc" if f in flags]
        io.out(" ".join(nums) + ("" if name == "(standard input)" else f" {name}") + "\n")
    return 0


def _bre_to_python(p: str) -> str:
    # Basic regex: \( \) \| \+ \? \{ \} are operators, the bare characters are literals.
    out, i = [], 0
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            nxt = p[i + 1]
            out.append(nxt if nxt in "()|+?{}" else "\\" + nxt)
            i += 2
            continue
        out.append("\\" + c if c in "()|+?{}" else c)
        i += 1
    return "".join(out)


def _grep_regexes(patterns: list[str], flags: set[str]) -> list[re.Pattern[bytes]]:
    """grep's patterns compiled: fixed (-F), extended (-E) or basic; whole word (-w) or line (-x)."""
    rx = []
    for p in patterns:
        if "F" in flags:
            src = re.escape(p)
        elif "E" in flags:
            src = p
        else:
            src = _bre_to_python(p)
        if "w" in flags:
            src = rf"\b(?:{src})\b"
        if "x" in flags:
            src = rf"^(?:{src})$"
        rx.append(re.compile(src.encode(), re.IGNORECASE if "i" in flags else 0))
    return rx


def _grep_input(
    name: str, data: bytes, rx: list[re.Pattern[bytes]], flags: set[str], many: bool, io: Output
) -> int:
    """Greps one input; returns how many lines matched (-v: did not match)."""
    count = 0
    prefix = f"{name}:".encode() if many else b""
    for line in data.splitlines():
        found = [m for r in rx for m in r.finditer(line)]
        if bool(found) == ("v" in flags):
            continue
        count += 1
        if "q" in flags or "c" in flags or "l" in flags:
            continue
        if "o" in flags and "v" not in flags:
            for m in found:
                io.out(prefix + m.group(0) + b"\n")
        else:
            io.out(prefix + line + b"\n")
    if "c" in flags:
        io.out((f"{name}:" if many else "") + f"{count}\n")
    if "l" in flags and count:
        io.out(f"{name}\n")
    return count


def _grep(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    flags: set[str] = set()
    patterns: list[str] = []
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a == "-e":
            patterns.append(next(it, ""))
        elif a.startswith("--"):
            flags.add(a)
        elif a.startswith("-") and len(a) > 1:
            flags.update(a[1:])
        else:
            rest.append(a)
    if not patterns:
        if not rest:
            io.err(
                "usage: grep [-EFHIORabchilnoqrsvwxz] [-ABCm NUM] [-f REGEX]... [-e REGEX]... "
                "[REGEX] [FILE...]\n"
            )
            return 2
        patterns = [rest.pop(0)]
    try:
        rx = _grep_regexes(patterns, flags)
    except re.error:
        io.err(f"grep: bad regex '{patterns[0]}'\n")
        return 2
    inputs = _read_inputs(sh, rest, stdin, io, "grep")
    if inputs is None:
        return 2
    total = sum(_grep_input(name, data, rx, flags, len(inputs) > 1, io) for name, data in inputs)
    return 0 if total else 1


COMMANDS = command_table(
    _echo,
    _printf,
    _true,
    _false,
    _exit,
    _cd,
    _pwd,
    _id,
    _whoami,
    _sleep,
    _sh,
    _cat,
    _head,
    _tail,
    _wc,
    _grep,
    egrep=_grep,
    fgrep=_grep,
)
