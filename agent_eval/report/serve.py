"""Serving a run directory's report on 127.0.0.1 and print the address.

The report is written first when missing or older than episodes.jsonl; serving changes nothing else.
"""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent_eval.closing import Closing
from agent_eval.errors import RunStoreError
from agent_eval.rundir import EPISODES_FILE, REPORT_FILE, SCORECARD_JSON

HOST = "127.0.0.1"  # never another interface: a run holds prompts and screenshots


class _ReportHandler(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path in ("", "/"):
            # The bare address opens the report rather than a listing of the run directory.
            self.send_response(302)
            self.send_header("Location", f"/{REPORT_FILE}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a page with hundreds of thumbnails would flood the terminal


class RunServer(Closing):
    """An HTTP server for one run directory, answering from a daemon thread until closed."""

    def __init__(self, run_dir: Path, port: int = 0) -> None:
        handler = partial(_ReportHandler, directory=str(run_dir))
        try:
            self._server = ThreadingHTTPServer((HOST, port), handler)
        except OSError as e:
            raise RunStoreError(
                f"cannot listen on {HOST}:{port} ({e.strerror}); pick another --port, or 0"
            ) from e
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="agent-eval-view", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/{REPORT_FILE}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _newer(path: Path, *than: Path) -> bool:
    """`path` exists and is at least as new as each of `than` that exists."""
    if not path.is_file():
        return False
    mtime = path.stat().st_mtime
    return all(not other.is_file() or mtime >= other.stat().st_mtime for other in than)


def ensure_report(run_dir: Path) -> Path:
    """The run's report.html, rewritten when missing or older than the episodes or the saved scorecard.

    The page shows the saved scorecard.json when it is current (with whatever --reference and --margin
    `agent-eval report` was given); otherwise the run is scored afresh and scorecard.json/.md are saved too.
    """
    if not run_dir.is_dir():
        raise RunStoreError(f"{run_dir} is not a run directory (it does not exist); pass runs/<run-id>")
    report, episodes, saved = run_dir / REPORT_FILE, run_dir / EPISODES_FILE, run_dir / SCORECARD_JSON
    if _newer(report, episodes, saved):
        return report
    # Imported here: scoring pulls in statsmodels (seconds), which every other command would pay for.
    from pydantic import ValidationError

    from agent_eval.report.html import write_html_report
    from agent_eval.report.markdown import write_scorecard
    from agent_eval.scoring.scorecard import Scorecard, score_run

    card = None
    if _newer(saved, episodes):
        try:
            card = Scorecard.model_validate_json(saved.read_text(encoding="utf-8"))
        except (ValidationError, OSError):
            card = None  # written by another version: score again
    if card is None:
        card = score_run(run_dir)
        write_scorecard(run_dir, card)
    return write_html_report(run_dir, card)
