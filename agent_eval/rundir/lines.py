"""One rule for a run's JSON-lines files: a bad last line is torn, a bad line elsewhere is damage.

The runner appends a line per finished episode or step; a crash mid-write leaves a cut (or zero-filled) tail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from agent_eval.errors import RunStoreError

Record = TypeVar("Record", bound=BaseModel)

# A crash mid-append can leave a zero-filled tail as well as a cut line.
_BLANK = b"\0 \r\t"


@dataclass(frozen=True)
class Lines(Generic[Record]):
    """The records of a JSON-lines file, and how many leading bytes hold whole, readable lines."""

    records: list[Record]
    whole_bytes: int
    size: int

    @property
    def torn(self) -> bool:
        """True when the file ends in something other than whole lines (a torn tail, or no final newline)."""
        return self.whole_bytes != self.size


def _named(model: type[BaseModel]) -> str:
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", model.__name__).lower()
    return ("an " if words[0] in "aeiou" else "a ") + words


def parse_lines(data: bytes, model: type[Record], path: Path) -> Lines[Record]:
    """Parse each non-blank line; a bad line followed only by blanks is torn, any other is damage."""
    records: list[Record] = []
    whole = 0
    offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        end = offset + len(raw) + 1
        if raw.strip(_BLANK):
            try:
                records.append(model.model_validate_json(raw))
            except ValidationError as e:
                if any(rest.strip(_BLANK) for rest in lines[number:]):
                    raise RunStoreError(
                        f"{path}, line {number}, is not {_named(model)} ({e.errors()[0]['msg']}); "
                        "the file was edited or damaged: restore it or move that line away"
                    ) from None
                break  # the last line was torn by a crash mid-write
            whole = end
        offset = end
    return Lines(records, whole, len(data))


def read_lines(path: Path, model: type[Record]) -> Lines[Record]:
    """Read and parse a JSON-lines file (see `parse_lines`); a missing file has no lines."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Lines([], 0, 0)
    except OSError as e:
        raise RunStoreError(f"cannot read {path}: {e}") from e
    return parse_lines(data, model, path)
