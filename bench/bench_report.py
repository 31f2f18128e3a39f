"""How long writing report.html takes for a 200-episode run (3 builds × 6 tasks × 11 seeds, ~7 steps each).

Target: under 10 s, first-time thumbnails included. Run: .venv/bin/python bench/bench_report.py [--keep DIR]
With --size 1080x2400 (the virtual phone's screens) decoding the PNGs dominates (~25-30 ms each): that is why
the report stops making thumbnails after a budget, and why the runner can make them per finished episode.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the synthetic run is a test fixture

from _synthetic import SyntheticRun, write_synthetic_run  # noqa: E402

from agent_eval.report.html import THUMBNAIL_BUDGET_S, write_html_report  # noqa: E402
from agent_eval.report.thumbnails import episode_thumbnails  # noqa: E402
from agent_eval.scoring.scorecard import score_run  # noqa: E402

TARGET_S = 10.0
SPEC = SyntheticRun(
    builds=("bf16", "w8a8", "w4a16"),
    tasks=("wifi_on", "wifi_off", "bluetooth_on", "airplane_on", "dark_theme", "brightness_max"),
    seeds=11,
    max_steps=10,
    width=360,
    height=800,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", type=Path, help="write the run here and keep it (default: a temporary dir)")
    parser.add_argument("--size", default="360x800", help="screenshot size; the virtual phone's is 1080x2400")
    args = parser.parse_args()
    width, _, height = args.size.partition("x")
    spec = dataclasses.replace(SPEC, width=int(width), height=int(height))
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-report-"))
    run_dir = base / "bench-run"
    try:
        started = time.perf_counter()
        episodes = write_synthetic_run(run_dir, spec)
        steps = sum(e.steps for e in episodes)
        written = time.perf_counter() - started
        size = f"{spec.width}x{spec.height}"
        print(f"synthetic run: {len(episodes)} episodes, {steps} steps, {size} screenshots, {written:.1f} s")

        started = time.perf_counter()
        card = score_run(run_dir)
        scored = time.perf_counter() - started

        # As a grid leaves a run: each episode's thumbnails were made when it finished (ms per step, beside
        # seconds of model time per step), so the report itself only lays out the page.
        started = time.perf_counter()
        for episode in episodes:
            episode_thumbnails(run_dir, run_dir / episode.episode_dir)
        during_run = time.perf_counter() - started
        started = time.perf_counter()
        write_html_report(run_dir, card)
        after_grid = time.perf_counter() - started
        shutil.rmtree(run_dir / "thumbs")

        # Every thumbnail made, however long it takes: the number the 10 s target is about.
        started = time.perf_counter()
        report = write_html_report(run_dir, card, thumbnail_budget_s=None)
        first = time.perf_counter() - started
        made = len(list((run_dir / "thumbs").rglob("*.jpg")))

        started = time.perf_counter()
        write_html_report(run_dir, card)
        again = time.perf_counter() - started

        # As `agent-eval report` writes it by default: thumbnails until the budget, full screenshots after.
        shutil.rmtree(run_dir / "thumbs")
        started = time.perf_counter()
        write_html_report(run_dir, card)
        budgeted = time.perf_counter() - started
        within = len(list((run_dir / "thumbs").rglob("*.jpg")))

        verdict = "OK" if first < TARGET_S else "OVER TARGET"
        print(f"scorecard: {scored:.2f} s")
        grid_verdict = "OK" if after_grid < TARGET_S else "OVER TARGET"
        print(
            f"report.html of a grid's run (thumbnails made as episodes finished: {during_run:.1f} s in all, "
            f"{1000 * during_run / max(steps, 1):.0f} ms per step): {after_grid:.2f} s "
            f"[{grid_verdict}, < {TARGET_S:g} s]"
        )
        print(
            f"report.html, first write, {made} thumbnails made: {first:.2f} s [{verdict}, < {TARGET_S:g} s]"
        )
        print(f"report.html, again (thumbnails cached): {again:.2f} s")
        print(f"report.html, first write with the default {THUMBNAIL_BUDGET_S:g} s thumbnail budget: "
              f"{budgeted:.2f} s, {within} of {made} thumbnails made")  # fmt: skip
        print(f"report.html size: {report.stat().st_size / 1e6:.2f} MB ({report})")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
