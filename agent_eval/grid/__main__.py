"""`python -m agent_eval.grid GRID.yaml [--seeds N] ...`: run a grid without the CLI (tests, scripts).

The `agent-eval run` command is the user's way in; this entry takes the same overrides as docs/grid.md lists.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_eval.errors import AgentEvalError
from agent_eval.grid.run import run_from_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_eval.grid", description=__doc__)
    parser.add_argument("paths", nargs="+", type=Path, help="a grid file, or task files and folders")
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--devices", type=int, help="virtual phones to start")
    parser.add_argument("--device", action="append", dest="serials", help="adb serial (repeatable)")
    parser.add_argument("--builds-file", dest="builds_file")
    parser.add_argument("--builds", help="comma-separated subset of the builds file")
    parser.add_argument("--reference")
    parser.add_argument("--margin", type=float)
    parser.add_argument("--side-by-side", action="store_const", const="side-by-side", dest="serving")
    parser.add_argument("--no-adaptive", action="store_const", const=False, dest="adaptive")
    parser.add_argument("--max-steps", type=int, dest="max_steps")
    parser.add_argument("--max-attempts", type=int, dest="max_attempts")
    parser.add_argument("--run-dir", dest="run_dir")
    parser.add_argument("--cluster", help="a Ray cluster's address, or auto (docs/cluster.md)")
    parser.add_argument("--no-bars", action="store_false", dest="bars", default=None)
    args = vars(parser.parse_args(argv))
    paths = args.pop("paths")
    serials = args.pop("serials")
    if serials:
        args["devices"] = serials
    if args.get("builds"):
        args["builds"] = args["builds"].split(",")
    if args.get("bars") is None:
        args.pop("bars")
    try:
        run_from_path(paths, **args)
    except AgentEvalError as e:
        print(f"agent-eval: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
