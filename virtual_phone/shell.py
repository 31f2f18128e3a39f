"""The phone's small shell: parsing (`;` `&&` `||` `|` quotes `$?` redirections) and the POSIX-ish builtins.

Commands are a table given to each Shell (commands.py puts it together from the command modules).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from virtual_phone.phone import Phone

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


Command = Callable[["Shell", list[str], bytes, Output], int]  # (shell, args, stdin, output) -> exit code


def command_table(*commands: Command, **aliases: Command) -> dict[str, Command]:
    """A module's commands, each named by its function (`_grep` → `grep`), plus other names for some."""
    return {fn.__name__.lstrip("_"): fn for fn in commands} | aliases


def exception(io: Output, cmd: str, exc: str, msg: str) -> int:
    """How a Java shell command reports an exception (ShellCommand.exec): two lines on stderr, exit 255."""
    io.err(f"Exception occurred while executing '{cmd}':\n{exc}: {msg}\n")
    return 255


def object_hash(s: str) -> str:
    """A stable 7-hex-digit identity hash, as Android prints for objects (`Window{4f3c1a2 ...}`)."""
    return format(zlib.crc32(s.encode()) & 0xFFFFFFF, "07x")


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


class _Lexer:
    """Splits a command line into words (literal parts and $variables), operators and redirections."""

    def __init__(self, line: str) -> None:
        self.line, self.n = line, len(line)
        self.toks: list[tuple[str, object]] = []
        self.word: Word = []
        self.lit: list[str] = []
        self.in_word = False

    def flush_lit(self) -> None:
        if self.lit:
            self.word.append("".join(self.lit))
            self.lit.clear()

    def end_word(self) -> None:
        self.flush_lit()
        if self.in_word:
            self.toks.append(("word", self.word))
        self.word = []
        self.in_word = False

    def dollar(self, j: int) -> int:
        """Expands $? $$ $NAME ${NAME} at run time; returns the index after it."""
        line = self.line
        self.in_word = True
        if j + 1 < self.n and line[j + 1] in "?$#":
            self.flush_lit()
            self.word.append(Var(line[j + 1]))
            return j + 2
        m = re.match(r"\{(\w+)\}|(\w+)", line[j + 1 :])
        if m:
            self.flush_lit()
            self.word.append(Var(m.group(1) or m.group(2)))
            return j + 1 + m.end()
        self.lit.append("$")
        return j + 1

    def double_quoted(self, i: int) -> int:
        """The inside of "...", starting after the opening quote; returns the index after the closing one."""
        line = self.line
        self.in_word = True
        while True:
            if i >= self.n:
                raise ParseError("no closing quote")
            c = line[i]
            if c == '"':
                return i + 1
            if c == "\\" and i + 1 < self.n and line[i + 1] in '"\\$`':
                self.lit.append(line[i + 1])
                i += 2
            elif c == "$":
                i = self.dollar(i)
            else:
                self.lit.append(c)
                i += 1

    def operator(self, i: int) -> int | None:
        """A redirection or an operator at i (ending the word before it): the index after it, or None."""
        line = self.line
        redir = next((r for r in _REDIRS if line.startswith(r, i)), None)
        # "2>" only counts as a redirection when the 2 starts a word.
        if redir is not None and redir[0].isdigit() and self.in_word:
            redir = None
        if redir is not None:
            self.end_word()
            self.toks.append(("redir", redir))
            return i + len(redir)
        op = next((o for o in _OPS if line.startswith(o, i)), None)
        if op is not None:
            self.end_word()
            self.toks.append(("op", op))
            return i + len(op)
        return None

    def run(self) -> list[tuple[str, object]]:
        line, i = self.line, 0
        while i < self.n:
            c = line[i]
            if c in " \t":
                self.end_word()
                i += 1
            elif c == "#" and not self.in_word:
                break
            elif c == "'":
                j = line.find("'", i + 1)
                if j < 0:
                    raise ParseError("no closing quote")
                self.lit.append(line[i + 1 : j])
                self.in_word = True
                i = j + 1
            elif c == '"':
                i = self.double_quoted(i + 1)
            elif c == "\\":
                if i + 1 < self.n:
                    self.lit.append(line[i + 1])
                self.in_word = True
                i += 2
            elif c == "$":
                i = self.dollar(i)
            else:
                after = self.operator(i)
                if after is None:
                    self.lit.append(c)
                    self.in_word = True
                    i += 1
                else:
                    i = after
        self.end_word()
        return self.toks


def _lex(line: str) -> list[tuple[str, object]]:
    return _Lexer(line).run()


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
            "".join(p for p in s.words[0] if isinstance(p, str))
            for al in parse(line)
            for _, pl in al
            for s in pl
            if s.words
        ]
    except ParseError:
        return line.split()[:1]


# ---- running ---------------------------------------------------------------------------------------------
class Shell:
    def __init__(self, phone: Phone, commands: dict[str, Command]) -> None:
        self.phone = phone
        self.commands = commands
        self.last_rc = 0
        self.root = phone.root  # after `adb root` (or inside `su`) commands run as uid 0
        self.env = {
            "HOME": "/",
            "PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin",
            "USER": "root" if self.root else "shell",
            "SHELL": SH,
            "TMPDIR": "/data/local/tmp",
            "EXTERNAL_STORAGE": "/sdcard",
            "ANDROID_DATA": "/data",
            "ANDROID_ROOT": "/system",
        }

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
            # mksh, Android's sh, reports syntax errors with exit code 1.
            out.err(f"{SH}: {e}\n")
            return out, 1
        try:
            for andor in lists:
                for op, pipeline in andor:
                    if (op == "&&" and self.last_rc != 0) or (op == "||" and self.last_rc == 0):
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
                data = self.phone.storage.read(target)
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
                    if not self.phone.storage.writable(target):
                        sink.err(f"{SH}: can't create {target}: Read-only file system\n")
                        return 1
        if not args:
            self._flush_files(files, simple)
            return 0
        out = Output()
        fn = self.commands.get(args[0].rsplit("/", 1)[-1] if args[0].startswith("/system/") else args[0])
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
            self.phone.storage.write(path, bytes(data), append=path in appends)
