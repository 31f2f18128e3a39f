"""One client library's operations on a phone, each run once and written down: passed, or what went wrong.

Runs inside the clients' own venv (not the project's): it imports nothing of this repository but this folder.
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ERROR_CHARS = 3000  # a failure's text in the table and the JSON, cut to stay readable


class CheckFailed(Exception):
    """An operation ran but its result is not what the client (or a device) gives."""


def require(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


@dataclass(frozen=True)
class Outcome:
    operation: str
    passed: bool
    error: str
    note: str
    seconds: float


def error_text(error: BaseException) -> str:
    """The error and, for a failed subprocess (android_env wraps adb's), the command's own output."""
    text = f"{type(error).__name__}: {error}"
    cause = error.__cause__ or error.__context__
    output = getattr(cause, "output", None) if cause is not None else None
    if isinstance(output, bytes):
        text += f"\n  adb printed: {output.decode(errors='replace').strip()!r}"
    return text[:ERROR_CHARS]


class Checks:
    """Runs operations and appends each outcome to a JSON-lines file as it ends, so a client that dies
    midway still leaves what it did."""

    def __init__(self, out: Path) -> None:
        self.out = out
        out.write_text("")

    def __call__(self, operation: str, run: Callable[[], str | None]) -> bool:
        """Runs `run` (which may return a note worth showing) and records it; True if it passed."""
        started = time.perf_counter()
        error, note = "", ""
        try:
            note = run() or ""
        except Exception as failure:  # every client error is a result here, not a crash
            error = error_text(failure)
            if not isinstance(failure, CheckFailed | AssertionError):
                where = traceback.extract_tb(failure.__traceback__)[-1]
                error += f"\n  raised at {Path(where.filename).name}:{where.lineno}"
        outcome = Outcome(operation, not error, error, note, round(time.perf_counter() - started, 2))
        with self.out.open("a") as f:
            f.write(json.dumps(asdict(outcome)) + "\n")
        print(f"{'ok  ' if outcome.passed else 'FAIL'} {operation}", flush=True)
        return outcome.passed


def client_arguments(description: str) -> argparse.Namespace:
    """The arguments bench_device_clients.py passes to each client script."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--serial", required=True, help="the phone, e.g. emulator-7400")
    parser.add_argument("--adb", required=True, help="the adb binary")
    parser.add_argument("--adb-port", type=int, required=True, help="the adb server's port")
    parser.add_argument("--work", type=Path, required=True, help="a folder for logs, pulled files, reports")
    parser.add_argument("--out", type=Path, required=True, help="the JSON-lines file of outcomes")
    return parser.parse_args()
