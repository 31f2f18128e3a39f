"""The phone's small shell: parsing (`;` `&&` `||` `|` quotes `$?` redirections) and the POSIX-ish builtins.

Android's own commands (input, settings, am, ...) live in android.py and register into COMMANDS.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_eval.virtual_device.phone import Phone

SH = "/system/bin/sh"


@dataclass
class Output:
    """What a command wrote, in production order: (1, bytes) for stdout, (2, bytes) for stderr."""

    chunks: list[tuple[int, bytes]] = field(default_factory=list)

    def out(self, data: bytes | str) -> None:
        self.chunks.append((1, data.encode() if isinstance(data, str) else data))

    def err(self, data: bytes | str) -> None:
        self.chunks.append((2, data.encode() if isinstance(data, str) else data))

    def stdout(self) -> bytes:
        return b"".join(d for fd, d in self.chunks if fd == 1)

    def stderr(self) -> bytes:
        return b"".join(d for fd, d in self.chunks if fd == 2)


Command = Callable[["Shell", list[str], bytes, Output], int]
COMMANDS: dict[str, Command] = {}


def command(*names: str) -> Callable[[Command], Command]:
    def deco(fn: Command) -> Command:
        for n in names:
            COMMANDS[n] = fn
        return fn

    return deco


class ShellExit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


# ---- parsing ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Var:
    name: str


Word = list["str | Var"]


@dataclass
class Simple:
    words: list[Word] = field(default_factory=list)
    redirs: list[tuple[str, Word]] = field(default_factory=list)  # (op, target): ">", ">>", "<", "2>", ...


Pipeline = list[Simple]
AndOr = list[tuple[str, Pipeline]]  # first op is ";"

_OPS = ("&&", "||", ";;", ";", "|", "&", "\n")
_REDIRS = ("2>&1", "1>&2", ">&2", "2>>", "2>", "&>", ">>", ">", "<")


class ParseError(Exception):
    pass


def _lex(line: str) -> list[tuple[str, object]]:
    toks: list[tuple[str, object]] = []
    i, n = 0, len(line)
    word: Word = []
    lit: list[str] = []
    in_word = False

    def flush_lit() -> None:
        if lit:
            word.append("".join(lit))
            lit.clear()

    def end_word() -> None:
        nonlocal word, in_word
        flush_lit()
        if in_word:
            toks.append(("word", word))
        word = []
        in_word = False

    def dollar(j: int) -> int:
        # Expands $? $$ $NAME ${NAME} at run time; returns the index after it.
        nonlocal in_word
        if j + 1 < n and line[j + 1] in "?$#":
            flush_lit()
            word.append(Var(line[j + 1]))
            in_word = True
            return j + 2
        m = re.match(r"\{(\w+)\}|(\w+)", line[j + 1 :])
        if m:
            flush_lit()
            word.append(Var(m.group(1) or m.group(2)))
            in_word = True
            return j + 1 + m.end()
        lit.append("$")
        in_word = True
        return j + 1

    while i < n:
        c = line[i]
        if c in " \t":
            end_word()
            i += 1
        elif c == "#" and not in_word:
            break
        elif c == "'":
            j = line.find("'", i + 1)
            if j < 0:
                raise ParseError("unterminated '")
            lit.append(line[i + 1 : j])
            in_word = True
            i = j + 1
        elif c == '"':
            i += 1
            in_word = True
            while True:
                if i >= n:
                    raise ParseError('unterminated "')
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and line[i + 1] in '"\\$`':
                    lit.append(line[i + 1])
                    i += 2
                elif c == "$":
                    i = dollar(i)
                else:
                    lit.append(c)
                    i += 1
        elif c == "\\":
            if i + 1 < n:
                lit.append(line[i + 1])
            in_word = True
            i += 2
        elif c == "$":
            i = dollar(i)
        else:
            redir = next((r for r in _REDIRS if line.startswith(r, i)), None)
            # "2>" only counts as a redirection when the 2 starts a word.
            if redir is not None and redir[0].isdigit() and in_word:
                redir = None
            if redir is not None:
                end_word()
                toks.append(("redir", redir))
                i += len(redir)
                continue
            op = next((o for o in _OPS if line.startswith(o, i)), None)
            if op is not None:
                end_word()
                toks.append(("op", op))
                i += len(op)
                continue
            lit.append(c)
            in_word = True
            i += 1
    end_word()
    return toks


def parse(line: str) -> list[AndOr]:
    toks = _lex(line)
    lists: list[AndOr] = []
    cur: AndOr = []
    pipe: Pipeline = []
    simple = Simple()
    pending = ";"
    k = 0

    def close_simple() -> None:
        nonlocal simple
        if not simple.words and not simple.redirs:
            raise ParseError("syntax error: unexpected operator")
        pipe.append(simple)
        simple = Simple()

    while k < len(toks):
        kind, val = toks[k]
        if kind == "word":
            simple.words.append(val)  # type: ignore[arg-type]
        elif kind == "redir":
            if val in ("2>&1", "1>&2", ">&2"):
                simple.redirs.append((str(val), []))
            else:
                if k + 1 >= len(toks) or toks[k + 1][0] != "word":
                    raise ParseError(f"syntax error: '{val}' needs a file")
                simple.redirs.append((str(val), toks[k + 1][1]))  # type: ignore[arg-type]
                k += 1
        elif val == "|":
            close_simple()
        elif val in ("&&", "||"):
            close_simple()
            cur.append((pending, pipe))
            pipe = []
            pending = str(val)
        else:  # ; & newline
            if simple.words or simple.redirs:
                close_simple()
            if pipe:
                cur.append((pending, pipe))
            elif pending != ";":
                raise ParseError(f"syntax error: unexpected '{val}'")
            pipe = []
            if cur:
                lists.append(cur)
            cur = []
            pending = ";"
        k += 1
    if simple.words or simple.redirs:
        close_simple()
    if pipe:
        cur.append((pending, pipe))
    elif pending != ";":
        raise ParseError("syntax error: unexpected end of file")
    if cur:
        lists.append(cur)
    return lists


def program_names(line: str) -> list[str]:
    """The programs a command line runs (for latency faults); best effort on unparsable lines."""
    try:
        return [
            "".join(p for p in s.words[0] if isinstance(p, str)) for al in parse(line) for _, pl in al for s in pl
            if s.words
        ]
    except ParseError:
        return line.split()[:1]


# ---- running ---------------------------------------------------------------------------------------------
class Shell:
    def __init__(self, phone: Phone) -> None:
        self.phone = phone
        self.last_rc = 0
        self.env = {"HOME": "/", "PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin",
                    "USER": "shell", "SHELL": SH, "TMPDIR": "/data/local/tmp", "EXTERNAL_STORAGE": "/sdcard",
                    "ANDROID_DATA": "/data", "ANDROID_ROOT": "/system"}

    def expand(self, word: Word) -> str:
        out = []
        for part in word:
            if isinstance(part, Var):
                if part.name == "?":
                    out.append(str(self.last_rc))
                elif part.name == "$":
                    out.append("4242")
                elif part.name == "#":
                    out.append("0")
                else:
                    out.append(self.env.get(part.name, ""))
            else:
                out.append(part)
        return "".join(out)

    def run(self, line: str) -> tuple[Output, int]:
        """Runs a command line; returns everything written and the exit code."""
        out = Output()
        try:
            lists = parse(line)
        except ParseError as e:
            out.err(f"{SH}: {e}\n")
            return out, 2 if "syntax" in str(e) else 1
        try:
            for andor in lists:
                for op, pipeline in andor:
                    if op == "&&" and self.last_rc != 0 or op == "||" and self.last_rc == 0:
                        continue
                    self.last_rc = self._pipeline(pipeline, out)
        except ShellExit as e:
            self.last_rc = e.code
        return out, self.last_rc

    def _pipeline(self, pipeline: Pipeline, final: Output) -> int:
        data = b""
        rc = 0
        for n, simple in enumerate(pipeline):
            last = n == len(pipeline) - 1
            sink = Output()
            rc = self._simple(simple, data, sink)
            data = b""
            for fd, chunk in sink.chunks:
                if fd == 1 and not last:
                    data += chunk
                else:
                    final.chunks.append((fd, chunk))
        return rc

    def _simple(self, simple: Simple, stdin: bytes, sink: Output) -> int:
        args = [self.expand(w) for w in simple.words]
        # Where fds 1 and 2 go: "out"/"err" (the sink's streams), None (discarded) or ("file", path, append).
        route: dict[int, object] = {1: 1, 2: 2}
        files: dict[str, bytearray] = {}
        for op, target_word in simple.redirs:
            target = self.expand(target_word)
            if op == "<":
                data = self.phone.read_file(target)
                if data is None:
                    sink.err(f"{SH}: {target}: No such file or directory\n")
                    return 1
                stdin = data
            elif op == "2>&1":
                route[2] = route[1]
            elif op in ("1>&2", ">&2"):
                route[1] = route[2]
            else:
                fd = 2 if op.startswith("2") else 1
                dest: object = None if target == "/dev/null" else ("file", target, op.endswith(">>"))
                route[fd] = dest
                if op == "&>":
                    route[2] = dest
                if dest is not None:
                    files.setdefault(target, bytearray())
                    if not self.phone.writable(target):
                        sink.err(f"{SH}: can't create {target}: Read-only file system\n")
                        return 1
        if not args:
            self._flush_files(files, simple)
            return 0
        out = Output()
        fn = COMMANDS.get(args[0].rsplit("/", 1)[-1] if args[0].startswith("/system/") else args[0])
        if fn is None:
            out.err(f"{SH}: {args[0]}: inaccessible or not found\n")
            rc = 127
        else:
            rc = fn(self, args[1:], stdin, out)
        for fd, chunk in out.chunks:
            dest = route[fd]
            if dest is None:
                continue
            if isinstance(dest, tuple):
                files[dest[1]] += chunk
            else:
                sink.chunks.append((int(dest), chunk))  # type: ignore[call-overload]
        self._flush_files(files, simple)
        return rc

    def _flush_files(self, files: dict[str, bytearray], simple: Simple) -> None:
        appends = {self.expand(w) for op, w in simple.redirs if op.endswith(">>")}
        for path, data in files.items():
            self.phone.write_file(path, bytes(data), append=path in appends)


# ---- builtins ----------------------------------------------------------------------------------------------
def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _read_inputs(sh: Shell, files: list[str], stdin: bytes, io: Output, prog: str) -> list[tuple[str, bytes]] | None:
    if not files:
        return [("(standard input)", stdin)]
    out = []
    for f in files:
        if f == "-":
            out.append(("(standard input)", stdin))
            continue
        if sh.phone.is_dir(f):
            io.err(f"{prog}: {f}: Is a directory\n")
            return None
        data = sh.phone.read_file(f)
        if data is None:
            io.err(f"{prog}: {f}: No such file or directory\n")
            return None
        out.append((f, data))
    return out


@command("echo")
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


@command("true")
def _true(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return 0


@command("false")
def _false(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return 1


@command("exit")
def _exit(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    raise ShellExit(int(args[0]) & 0xFF if args and args[0].lstrip("-").isdigit() else sh.last_rc)


@command("cd")
def _cd(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return 0


@command("pwd")
def _pwd(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    io.out("/\n")
    return 0


@command("id")
def _id(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    io.out("uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),"
           "1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats) context=u:r:shell:s0\n")
    return 0


@command("whoami")
def _whoami(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    io.out("shell\n")
    return 0


@command("sleep")
def _sleep(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    try:
        time.sleep(min(float(args[0]), 60.0))
    except (IndexError, ValueError):
        io.err("sleep: Need 1 argument\n")
        return 1
    return 0


@command("sh")
def _sh(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    if len(args) >= 2 and args[0] == "-c":
        sub = Shell(sh.phone)
        sub.last_rc = sh.last_rc
        out, rc = sub.run(args[1])
        io.chunks.extend(out.chunks)
        return rc
    return 0


@command("cat")
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


@command("head")
def _head(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    count, files = _head_tail_count(args)
    inputs = _read_inputs(sh, files, stdin, io, "head")
    if inputs is None:
        return 1
    for _, data in inputs:
        io.out(b"".join(_lines(data)[:count]))
    return 0


@command("tail")
def _tail(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    count, files = _head_tail_count(args)
    inputs = _read_inputs(sh, files, stdin, io, "tail")
    if inputs is None:
        return 1
    for _, data in inputs:
        io.out(b"".join(_lines(data)[-count:] if count else []))
    return 0


@command("wc")
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


@command("grep", "egrep", "fgrep")
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
            io.err("usage: grep [-EFHIORabchilnoqrsvwxz] [-ABCm NUM] [-f REGEX]... [-e REGEX]... [REGEX] [FILE...]\n")
            return 2
        patterns = [rest.pop(0)]
    try:
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
    except re.error:
        io.err(f"grep: bad regex '{patterns[0]}'\n")
        return 2
    inputs = _read_inputs(sh, rest, stdin, io, "grep")
    if inputs is None:
        return 2
    total = 0
    for name, data in inputs:
        count = 0
        for line in data.splitlines():
            found = [m for r in rx for m in r.finditer(line)]
            if bool(found) == ("v" in flags):
                continue
            count += 1
            if "q" in flags or "c" in flags or "l" in flags:
                continue
            prefix = f"{name}:".encode() if len(inputs) > 1 else b""
            if "o" in flags and "v" not in flags:
                for m in found:
                    io.out(prefix + m.group(0) + b"\n")
            else:
                io.out(prefix + line + b"\n")
        if "c" in flags:
            io.out((f"{name}:" if len(inputs) > 1 else "") + f"{count}\n")
        if "l" in flags and count:
            io.out(f"{name}\n")
        total += count
    return 0 if total else 1


@command("ls")
def _ls(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    long = any(a.startswith("-") and "l" in a for a in args)
    paths = [a for a in args if not a.startswith("-")] or ["/"]
    rc = 0
    for p in paths:
        if sh.phone.is_dir(p):
            for name in sh.phone.listdir(p):
                io.out((_ls_long(sh, p.rstrip("/") + "/" + name, name) if long else name) + "\n")
        elif sh.phone.read_file(p) is not None:
            io.out((_ls_long(sh, p, p) if long else p) + "\n")
        else:
            io.err(f"ls: {p}: No such file or directory\n")
            rc = 1
    return rc


def _ls_long(sh: Shell, path: str, name: str) -> str:
    if sh.phone.is_dir(path):
        return f"drwxrwx--x 2 root sdcard_rw 3488 2026-01-01 12:00 {name}"
    size = len(sh.phone.read_file(path) or b"")
    return f"-rw-rw---- 1 root sdcard_rw {size} 2026-01-01 12:00 {name}"


@command("rm")
def _rm(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    force = any(a.startswith("-") and "f" in a for a in args)
    rc = 0
    for p in (a for a in args if not a.startswith("-")):
        if not sh.phone.remove(p) and not force:
            io.err(f"rm: {p}: No such file or directory\n")
            rc = 1
    return rc


@command("mkdir")
def _mkdir(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    from agent_eval.virtual_device.phone import PhoneError

    for p in (a for a in args if not a.startswith("-")):
        try:
            sh.phone.make_dirs(p)
        except PhoneError as e:
            io.err(f"mkdir: {e}\n")
            return 1
    return 0


@command("touch")
def _touch(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    from agent_eval.virtual_device.phone import PhoneError

    for p in (a for a in args if not a.startswith("-")):
        try:
            sh.phone.write_file(p, b"", append=True)
        except PhoneError as e:
            io.err(f"touch: {e}\n")
            return 1
    return 0


def quote(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)
