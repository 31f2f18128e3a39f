"""A task's seed data, checked when the file loads: `content insert|update|delete` setup commands as Android's
`content` tool takes them, and files pushed to the device (`files:`) before the episode starts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pydantic import Field, model_validator

from agent_eval.task.strict import Strict

# Android's `content --bind COLUMN:TYPE:VALUE` types: blob, string, int, long, float, double, null, boolean.
_BIND = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:(b|s|i|l|f|d|n|B):(.*)$", re.DOTALL)
_URI = re.compile(r"^content://[\w.\-]+(/[\w.\-]*)*$")
_WRITES = ("insert", "update", "delete", "query")
_NUMBER = {"i": r"-?\d+", "l": r"-?\d+", "f": r"-?\d+(\.\d+)?", "d": r"-?\d+(\.\d+)?"}


def check_setup_command(command: str) -> str:
    """`command` unchanged, or ValueError saying what is wrong with a `content` command in it (a shell
    command of another kind is the device's to judge)."""
    try:
        _check_content_command(command)
    except ValueError as e:
        raise ValueError(f"`{command}`: {e}") from None
    return command


def _check_content_command(command: str) -> None:
    try:
        words = shlex.split(command)
    except ValueError as e:
        raise ValueError(f"cannot split the command into words as a shell would: {e}") from None
    if not words or words[0] != "content":
        return
    if len(words) < 2 or words[1] not in _WRITES:
        raise ValueError(f"`content` takes one of {', '.join(_WRITES)} first, e.g. content insert --uri ...")
    _check_content_options(words[2:])


def _check_content_options(words: list[str]) -> None:
    uris = 0
    for at in range(0, len(words), 2):
        flag, value = words[at], words[at + 1] if at + 1 < len(words) else None
        if value is None:
            raise ValueError(f"{flag} needs a value")
        if flag == "--uri":
            uris += 1
            if not _URI.match(value):
                raise ValueError(f"--uri {value!r} is not a content URI (content://authority/path)")
        elif flag == "--bind":
            _check_bind(value)
        elif flag not in ("--where", "--projection", "--sort", "--user", "--arg", "--extra", "--method"):
            raise ValueError(f"unknown option {flag!r} of `content`")
    if uris != 1:
        raise ValueError("a `content` command needs exactly one --uri")


def _check_bind(value: str) -> None:
    match = _BIND.match(value)
    if match is None:
        raise ValueError(
            f"--bind {value!r} is not COLUMN:TYPE:VALUE with TYPE one of b s i l f d n B (e.g. data1:s:Dana)"
        )
    kind, given = match.group(1), match.group(2)
    pattern = _NUMBER.get(kind)
    # A `{param}` value is checked once a seed fills it in (each instance is validated again).
    if pattern is not None and not re.fullmatch(pattern, given) and not re.fullmatch(r"\{[\w.]+\}", given):
        raise ValueError(f"--bind {value!r}: {given!r} is not a number of type {kind}")
    if kind == "B" and given not in ("true", "false"):
        raise ValueError(f"--bind {value!r}: a boolean is true or false")


class SeedFile(Strict):
    """A file put on the device before the episode (as `adb push`): from a file beside the task, or text."""

    to: str = Field(pattern=r"^/(sdcard|storage|data/local/tmp)/\S", description="Where on the device.")
    source: str | None = Field(None, description="A file, relative to the task file's folder.")
    text: str | None = Field(None, description="Or the file's text, given here.")

    @model_validator(mode="after")
    def _one_source(self) -> SeedFile:
        if (self.source is None) == (self.text is None):
            raise ValueError("give exactly one of 'source' (a file beside the task) or 'text'")
        return self

    def local(self, task_file: Path | None) -> Path | None:
        """The file to push, when it comes from a file (relative to the task file's folder)."""
        if self.source is None:
            return None
        path = Path(self.source).expanduser()
        return path if path.is_absolute() or task_file is None else task_file.parent / path
