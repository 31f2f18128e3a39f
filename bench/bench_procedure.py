"""The verdict procedure's error rates at full scale: probes, the top-up's looks and both Holm families.

Usage: .venv/bin/python bench/bench_procedure.py [--grids 1000] [--levels 10,20]
Simulates grids of six tasks with a build "a" of known abilities beside a build "b" equal to the reference
(agent_eval/scoring/simulation.py), scores each look with the scorecard's own code, grows undecided builds as
the grid does, and prints per scenario how often each verdict and the claim came out (a markdown table for
docs/scorecard.md). CPU only, no engine or phone; ~0.15 s a grid on 2 cores.
"""

from __future__ import annotations

import argparse
import time

from agent_eval.scoring.simulation import Tally, scenarios, simulate

METRICS = ("navigation", "success", "probe_navigation", "sensitivity", "false_done")
WORDS = {
    "navigation": "reached in play",
    "success": "success",
    "probe_navigation": "probe navigation",
    "sensitivity": "sensitivity",
    "false_done": "false done",
}


def _row(name: str, tally: Tally, grids: int, levels: list[int]) -> str:
    cells = []
    for metric in METRICS:
        reg, ni = tally.share("a", metric, "REGRESSION"), tally.share("a", metric, "NON-INFERIOR")
        cells.append(f"{reg:.3f} / {ni:.3f}")
    seeds = tally.grown["a"] / grids
    end_to_end, parts = (tally.any_regression[f] / grids for f in ("end to end", "decomposition"))
    equal = max(tally.share("b", m, "REGRESSION") for m in METRICS)
    return (
        f"| {name} | " + " | ".join(cells) + f" | {tally.claim_share('a', 'holds'):.3f} | "
        f"{end_to_end:.3f} / {parts:.3f} | {equal:.3f} | {seeds:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", type=int, default=1000)
    parser.add_argument("--levels", default="10,20")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    print(
        "| true difference of a | "
        + " | ".join(f"{WORDS[m]}: REG / NI" for m in METRICS)
        + " | claim holds | any REGRESSION (end to end / decomposition) | b (equal): REGRESSION, worst "
        "metric | a's seeds per task |"
    )
    print("|---" * (len(METRICS) + 5) + "|")
    for i, scenario in enumerate(scenarios()):
        started = time.monotonic()
        tally = simulate(scenario, args.grids, levels, seed=args.seed + i)
        print(_row(scenario.name, tally, args.grids, levels), flush=True)
        print(f"<!-- {args.grids} grids in {time.monotonic() - started:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
