"""`python -m agent_eval.virtual_device`: run a fleet of phones in the foreground (what start_fleet spawns).

Options mirror `agent-eval device start`; prints each serial, then `ready`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from agent_eval.virtual_device.errors import VirtualDeviceError
from agent_eval.virtual_device.faults import load_fault_configs
from agent_eval.virtual_device.serve import faults_per_phone, serve


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1080x2400, not {text!r}") from None
    return w, h


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agent_eval.virtual_device")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--base-port", type=int, default=5554)
    ap.add_argument("--size", type=parse_size, default=(1080, 2400))
    ap.add_argument("--faults", type=Path)
    ap.add_argument("--fault-log", type=Path)
    ap.add_argument("--auth", action="store_true")
    ap.add_argument("--watch-stdin", action="store_true", help="exit when stdin closes (the parent died)")
    ap.add_argument("--no-pid-file", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        faults = faults_per_phone(load_fault_configs(args.faults) if args.faults else None, args.count)
        serve(
            args.count,
            args.base_port,
            args.size,
            faults,
            args.fault_log,
            args.auth,
            args.watch_stdin,
            write_pid=not args.no_pid_file,
        )
    except VirtualDeviceError as e:
        print(f"agent-eval: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
