"""How long writing report.html takes for a 200-episode run (3 builds × 6 tasks × 11 seeds, ~8 steps each).

Target: under 10 s, first-time thumbnails included. Run: .venv/bin/python bench/bench_report.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

from agent_eval.report.html import write_html_report
from agent_eval.report.synthetic import SyntheticRun, write_synthetic_run
from agent_eval.scoring.scorecard import score_run

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

        started = time.perf_counter()
        report = write_html_report(run_dir, card)
        first = time.perf_counter() - started

        started = time.perf_counter()
        write_html_report(run_dir, card)
        again = time.perf_counter() - started

        size_mb = report.stat().st_size / 1e6
        verdict = "OK" if first < TARGET_S else "OVER TARGET"
        print(f"scorecard: {scored:.2f} s")
        print(
            f"report.html, first write ({steps} thumbnails made): {first:.2f} s [{verdict}, < {TARGET_S:g} s]"
        )
        print(f"report.html, again (thumbnails cached): {again:.2f} s")
        print(f"report.html size: {size_mb:.2f} MB ({report})")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
