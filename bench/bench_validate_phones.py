"""`agent-eval validate` on one phone and on several: wall time of the same task instances, shared out.

Starts the phones itself (one virtual-phone fleet), then validates the chosen task folders' every parameter
combination through `validate_tasks` on the first phone alone and on all of them, alternating, so a host whose
speed drifts affects both alike. Prints each repetition and the median ratio (several phones / one).

    .venv/bin/python bench/bench_validate_phones.py [--phones 2] [--reps 2] [tasks/apps/contacts ...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agent_eval.device.adb_backend import free_phone_port
from agent_eval.device.backend import DeviceRequest, EpisodeDevice, device_backend
from agent_eval.runner.validate import validate_tasks
from agent_eval.task import Task, load_tasks
from agent_eval.task.params import combinations

REPO = Path(__file__).resolve().parent.parent


def timed(tasks: list[Task], devices: list[EpisodeDevice], work: Path) -> float:
    started = time.perf_counter()
    failed = [c for c in validate_tasks(tasks, devices, work_dir=work) if not c.ok]
    if failed:
        raise SystemExit(
            f"{len(failed)} instance(s) failed, e.g. {failed[0].instance.id}: {failed[0].problem}"
        )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "folders", nargs="*", type=Path, default=[REPO / "tasks/apps/contacts", REPO / "tasks/apps/clock"]
    )
    parser.add_argument("--phones", type=int, default=2)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    tasks = load_tasks(args.folders, recursive=True)
    instances = sum(combinations(t.params) for t in tasks)
    request = DeviceRequest(count=args.phones, phone_port=free_phone_port(5900, args.phones))
    ratios = []
    with device_backend().devices(request, print) as devices, tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            one = timed(tasks, devices[:1], Path(tmp) / f"one-{rep}")
            many = timed(tasks, devices, Path(tmp) / f"many-{rep}")
            ratios.append(many / one)
            print(
                f"rep {rep}: {instances} instances, 1 phone {one:.1f} s ({one / instances:.2f} s each), "
                f"{len(devices)} phones {many:.1f} s: ratio {many / one:.2f}"
            )
    print(f"median ratio {statistics.median(ratios):.2f} ({len(devices)} phones / 1)")


if __name__ == "__main__":
    main()
