"""Real adb clients on the virtual phone: Mobly's AndroidDevice and android_env's AdbController.

Makes (or reuses) a venv of its own outside the repository with the pinned mobly and android-env from PyPI
(the project's venv never gets them), starts one virtual phone with an adb server of its own, runs each
client's operations in that venv (bench/device_clients/), prints a table (operation, passed or failed, the
error) with totals, and writes it as JSON to runs/bench-device-clients-<time>/results.json.

    .venv/bin/python bench/bench_device_clients.py [--venv DIR] [--base-port 7400] [--adb-port 7499]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import adbutils

from agent_eval.builds.serving.host import real_cpu_flags
from agent_eval.device.adb_backend import free_phone_port
from agent_eval.rundir.run_manifest import host_info
from virtual_phone import start_fleet

REPO = Path(__file__).resolve().parent.parent
CLIENT_SCRIPTS = Path(__file__).resolve().parent / "device_clients"
PINS = ("mobly==1.13.1", "android-env==1.3.0")
CLIENTS = {"Mobly": "mobly_operations.py", "android_env": "android_env_requests.py"}
CLIENT_TIMEOUT_S = 900  # Mobly waits up to 15 min for a boot; a phone that never comes back ends here

Outcome = dict[str, Any]  # operation, passed, error, note, seconds (device_clients/checks.py writes them)


def client_python(venv_dir: Path) -> Path:
    """The clients' venv's python; the venv is made (again) when it does not hold the pinned packages."""
    python = venv_dir / "bin" / "python"
    stamp = venv_dir / "pins.txt"
    wanted = "\n".join(PINS) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    print(f"making the clients' venv in {venv_dir}: {' '.join(PINS)}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv_dir)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PINS], check=True)
    stamp.write_text(wanted)
    return python


def run_client(python: Path, script: str, serial: str, adb_port: int, run_dir: Path) -> list[Outcome]:
    """Runs one client script in the clients' venv with `adb` on PATH and the phone's adb server port, as a
    user of that library has them; its progress goes to stdout, its logs to client.log."""
    work = run_dir / Path(script).stem
    work.mkdir(parents=True)
    out = work / "outcomes.jsonl"
    adb = adbutils.adb_path()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PATH": f"{Path(adb).parent}{os.pathsep}{env['PATH']}", "ANDROID_ADB_SERVER_PORT": str(adb_port)}
    command = [str(python), str(CLIENT_SCRIPTS / script), "--serial", serial, "--adb", adb]
    command += ["--adb-port", str(adb_port), "--work", str(work), "--out", str(out)]
    with (work / "client.log").open("wb") as log:
        try:
            code: int | str = subprocess.run(
                command, env=env, cwd=work, stderr=log, timeout=CLIENT_TIMEOUT_S
            ).returncode
        except subprocess.TimeoutExpired:
            code = f"still running after {CLIENT_TIMEOUT_S} s"
    outcomes = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    if code != 0:
        error = f"{script} ended with {code}; see {work / 'client.log'}"
        outcomes.append({"operation": f"{script} ran to its end", "passed": False, "error": error})
    return outcomes


def table(client: str, outcomes: list[Outcome]) -> str:
    """One client's rows: operation, passed/FAILED, seconds, a note; each failure's error indented below."""
    lines = [f"\n{client}"]
    for o in outcomes:
        seconds = f"{o.get('seconds', 0):6.2f} s"
        note = f"  ({o['note']})" if o.get("note") else ""
        lines.append(f"  {'passed' if o['passed'] else 'FAILED'}  {o['operation']:<76} {seconds}{note}")
        lines += [f"          {line}" for line in o["error"].splitlines()] if o["error"] else []
    passed = sum(o["passed"] for o in outcomes)
    lines.append(f"{client}: {passed} of {len(outcomes)}")
    return "\n".join(lines)


def cpu_kind() -> dict[str, str]:
    """The CPU's model and whether it has AVX-512 (AVX2-only when it lacks avx512f)."""
    kind = "AVX-512" if "avx512f" in real_cpu_flags() else "AVX2-only"
    return {"model": str(host_info()["cpu_model"]), "kind": kind}


def measure(python: Path, base_port: int, adb_port: int, run_dir: Path) -> dict[str, list[Outcome]]:
    """Starts the phone (its adb server on `adb_port`) and runs every client on it, one after the other."""
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(adb_port)  # start_fleet registers the phone there
    base = free_phone_port(base_port)
    if base + 1 >= adb_port:
        raise SystemExit(f"no free phone port pair between {base_port} and the adb server's {adb_port}")
    try:
        with start_fleet(count=1, base_port=base, log_dir=run_dir / "phone") as fleet:
            serial = fleet.serials[0]
            print(f"phone {serial}, adb server on {adb_port}", flush=True)
            return {
                client: run_client(python, script, serial, adb_port, run_dir)
                for client, script in CLIENTS.items()
            }
    finally:  # the server this run started (or android_env restarted) on its own port
        subprocess.run([adbutils.adb_path(), "-P", str(adb_port), "kill-server"], capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache/agent-eval/clients-venv")
    parser.add_argument("--base-port", type=int, default=7400, help="the first console port to try")
    parser.add_argument("--adb-port", type=int, default=7499, help="this run's own adb server")
    args = parser.parse_args()
    python = client_python(args.venv)
    run_dir = REPO / "runs" / f"bench-device-clients-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir.mkdir(parents=True)
    results = measure(python, args.base_port, args.adb_port, run_dir)
    names = dict(zip(CLIENTS, PINS, strict=True))
    for client, outcomes in results.items():
        print(table(f"{client} ({names[client]})", outcomes))
    print()
    for client, outcomes in results.items():
        print(f"{client}: {sum(o['passed'] for o in outcomes)} of {len(outcomes)}")
    record = {
        "date": time.strftime("%Y-%m-%d"),
        "cpu": cpu_kind(),
        "pins": list(PINS),
        "clients": {
            client: {
                "passed": sum(o["passed"] for o in outcomes),
                "total": len(outcomes),
                "outcomes": outcomes,
            }
            for client, outcomes in results.items()
        },
    }
    (run_dir / "results.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"written to {(run_dir / 'results.json').relative_to(REPO)}")


if __name__ == "__main__":
    main()
