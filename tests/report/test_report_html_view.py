"""`agent-eval view`: the report is written when missing or stale, and served on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from _phones import default_sigint
from _synthetic import SyntheticRun, write_synthetic_run

from agent_eval.errors import RunStoreError
from agent_eval.report.markdown import write_scorecard
from agent_eval.report.serve import RunServer, ensure_report
from agent_eval.scoring.scorecard import score_run

SMALL = SyntheticRun(builds=("bf16", "w4a16"), tasks=("wifi_on",), seeds=2)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "run-7"
    write_synthetic_run(run, SMALL)
    return run


def test_the_report_is_written_when_missing_and_rewritten_only_when_episodes_are_newer(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SMALL)
    report = ensure_report(run)
    assert report == run / "report.html" and "run" in report.read_text()
    assert (run / "scorecard.json").is_file() and (run / "scorecard.md").is_file()
    written = report.stat().st_mtime_ns
    assert ensure_report(run).stat().st_mtime_ns == written
    later = report.stat().st_mtime + 5
    os.utime(run / "episodes.jsonl", (later, later))
    assert ensure_report(run).stat().st_mtime_ns != written


def test_the_page_shows_the_saved_scorecard_with_the_reference_it_was_given(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SMALL)
    write_scorecard(run, score_run(run, reference="w4a16"))
    page = ensure_report(run).read_text()
    assert "reference w4a16" in page and "w4a16 (reference)" in page
    assert json.loads((run / "scorecard.json").read_text())["reference"] == "w4a16"


def test_a_missing_run_directory_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(RunStoreError, match="not a run directory"):
        ensure_report(tmp_path / "nope")


def test_the_server_answers_on_loopback_with_the_report_and_its_images_and_nothing_outside(
    run_dir: Path,
) -> None:
    ensure_report(run_dir)
    with RunServer(run_dir) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/report.html"
        page = httpx.get(server.url, timeout=10)
        assert page.status_code == 200 and "run-7" in page.text
        thumbs = re.findall(r'"thumb":"([^"]+)"', page.text)
        assert thumbs
        image = httpx.get(f"http://127.0.0.1:{server.port}/{thumbs[0]}", timeout=10)
        assert image.status_code == 200 and image.content[:3] == b"\xff\xd8\xff"
        (run_dir.parent / "secret.txt").write_text("not for the browser")
        home = httpx.get(f"http://127.0.0.1:{server.port}/", timeout=10, follow_redirects=True)
        assert home.status_code == 200 and str(home.url) == server.url
        outside = httpx.get(f"http://127.0.0.1:{server.port}/../secret.txt", timeout=10)
        assert outside.status_code == 404
        # Loopback only: a run holds prompts and screenshots that are not for the network.
        assert server._server.server_address[0] == "127.0.0.1"
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url, timeout=2)


def test_a_port_in_use_is_a_message_naming_the_fix(run_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(RunStoreError, match="--port"):
            RunServer(run_dir, taken.getsockname()[1])


def test_agent_eval_view_prints_the_address_and_serves_until_interrupted(run_dir: Path) -> None:
    (run_dir / "report.html").unlink(missing_ok=True)
    agent_eval = Path(sys.executable).parent / "agent-eval"  # the console script, as a user runs it
    process = subprocess.Popen(
        [str(agent_eval), "view", str(run_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/report\.html", line)
        assert match, line + (process.stderr.read() if process.stderr and process.poll() is not None else "")
        assert (run_dir / "report.html").is_file()
        assert httpx.get(match.group(0), timeout=10).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 130
