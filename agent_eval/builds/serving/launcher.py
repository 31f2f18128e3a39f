"""`serve(build, run_dir)`: starts a build's engine server, waits until it answers, and always stops it.

The server runs under a guard in its own process group: neither Ctrl-C, SIGTERM nor a SIGKILLed harness
leaves an engine behind. Memory is sampled on a timer; the EngineRecord goes to run_dir/engines/<build>.json.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from types import FrameType

import httpx

from agent_eval.builds.engine_kinds import ONE_AT_A_TIME, Launch, Serving
from agent_eval.builds.serving import host
from agent_eval.builds.serving.memory import MemorySampler
from agent_eval.builds.serving.weights import verify
from agent_eval.builds.spec import Build
from agent_eval.chat.client import Usage
from agent_eval.chat.endpoint import Endpoint
from agent_eval.errors import BuildError
from agent_eval.records import BuildManifest, EngineRecord
from agent_eval.rundir import (
    engine_log_path,
    engine_record_path,
    read_engine_record,
    write_engine_record,
)

GUARD = Path(__file__).with_name("_guard.py")
STOP_GRACE_S = 15.0
MAX_RESTARTS = 1


def log_tail(path: Path, lines: int = 12) -> str:
    """The log's last lines, after its first distinct exception messages (the root cause is often far up)."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    tail = text[-lines:]
    causes: list[str] = []
    for line in text[:-lines]:
        found = None if " WARNING " in line else _EXCEPTION.search(line)
        if found and found.group(0) not in causes:
            causes.append(found.group(0))
    shown = [*causes[:3], *(["..."] if causes else []), *tail]
    return "\n".join("    " + ln for ln in shown)


_EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception): .*$")


class ServedBuild:
    """A build whose engine answers at `.endpoint`; made by `serve()`, which also stops it."""

    def __init__(
        self,
        build: Build,
        run_dir: Path,
        manifest: BuildManifest,
        port: int | None,
        serving: Serving = ONE_AT_A_TIME,
    ) -> None:
        self.build = build
        self.serving = serving
        self.run_dir = run_dir
        self.manifest = manifest
        self.log_path = engine_log_path(run_dir, build.name)
        self.record_path = engine_record_path(run_dir, build.name)
        self._port = port
        self._proc: subprocess.Popen[bytes] | None = None
        self._sampler: MemorySampler | None = None
        self._launch: Launch | None = None
        self._lease: host.PortLease | None = None
        self._peak_mb = 0.0
        self._settled_mb: float | None = None
        self._startup_s: float | None = None
        self.start_waited_s: float | None = None  # set by a grid that started this engine early
        self._cancelled = threading.Event()
        self.restarts = 0
        self.endpoint: Endpoint = (
            _placeholder(build) if build.kind.starts_server else build.kind.connect(build)
        )

    def start(self) -> None:
        if not self.build.kind.starts_server:
            started = time.monotonic()
            self._check_endpoint()
            self._startup_s = round(time.monotonic() - started, 2)
            return
        path = self.manifest.model_path
        assert path is not None
        self._lease = self._lease_port()
        launch = self.build.kind.launch(self.build, Path(path), self._lease.port, self.serving)
        self._launch = pinned(self.build, launch)
        self.endpoint = self._launch.endpoint
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            log.write(f"\n=== agent-eval: starting {self.build.name} at {time.ctime()} ===\n".encode())
            log.write((" ".join(self._launch.command) + "\n").encode())
            log.flush()
            self._proc = subprocess.Popen(
                [str(host.engine_python()), str(GUARD), str(os.getpid()), "--", *self._launch.command],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_environment(self._launch),
                start_new_session=True,
            )
        self._sampler = MemorySampler(self._proc.pid, exclude=frozenset({self._proc.pid})).start()
        try:
            self._wait_ready(started)
        except BaseException:
            self._stop_process()
            raise
        self._startup_s = round(time.monotonic() - started, 2)
        self._settled_mb = self._sampler.settle()

    def _lease_port(self) -> host.PortLease:
        if self.restarts and self._port is not None:
            # On a restart the old port may still linger; any free one will do.
            try:
                return host.lease_port(self.build.name, self._port)
            except BuildError:
                return host.lease_port(self.build.name)
        return host.lease_port(self.build.name, self._port)

    def _wait_ready(self, started: float) -> None:
        assert self._launch is not None and self._proc is not None
        url = self.endpoint.base_url.removesuffix("/v1") + self._launch.ready_path
        deadline = started + self.build.engine_args.startup_timeout_s
        with httpx.Client(timeout=5.0) as http:
            while True:
                if self._cancelled.is_set():
                    raise BuildError(f"build {self.build.name!r}: its engine's start was cancelled")
                code = self._proc.poll()
                if code is not None:
                    raise BuildError(
                        f"build {self.build.name!r}: the {self.build.engine} server exited (code {code}) "
                        f"before answering; the engine may reject this scheme or the weights. "
                        f"Last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                    )
                try:
                    if http.get(url).status_code == 200:
                        self._check_it_is_ours(http)
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise BuildError(
                        f"build {self.build.name!r}: the server did not answer {url} within "
                        f"{self.build.engine_args.startup_timeout_s:g} s (on a busy machine raise "
                        f"engine_args.startup_timeout_s). Last lines of {self.log_path}:\n"
                        f"{log_tail(self.log_path)}"
                    )
                time.sleep(0.5)
        self._first_token()

    def _first_token(self) -> None:
        """One token through the model: some schemes load fine and only fail in their first matmul."""
        url = self.endpoint.base_url + "/completions"
        body = {"model": self.endpoint.model, "prompt": "Hello", "max_tokens": 1, "temperature": 0.0}
        problem = ""
        try:
            response = httpx.post(url, json=body, timeout=120.0)
            if response.status_code == 200:
                return
            problem = f"HTTP {response.status_code}"
        except httpx.HTTPError as e:
            problem = str(e) or type(e).__name__
        # Give a dying server a moment to write its traceback before quoting the log.
        time.sleep(2.0)
        raise BuildError(
            f"build {self.build.name!r}: the {self.build.engine} server started but its first token failed "
            f"({problem}); the engine likely cannot run scheme {self.build.scheme!r} on this CPU. "
            f"Last lines of {self.log_path}:\n{log_tail(self.log_path)}"
        )

    def _check_it_is_ours(self, http: httpx.Client) -> None:
        served = [m.get("id") for m in http.get(self.endpoint.base_url + "/models").json().get("data", [])]
        if self.endpoint.model not in served:
            raise BuildError(
                f"build {self.build.name!r}: another server ({served}) answers on {self.endpoint.base_url}; "
                "stop it or give this build another port"
            )

    def _check_endpoint(self) -> None:
        url = self.endpoint.base_url + "/models"
        try:
            response = httpx.get(
                url, timeout=10.0, headers={"Authorization": f"Bearer {self.endpoint.api_key}"}
            )
            response.raise_for_status()
            served = [m.get("id") for m in response.json().get("data", [])]
        except (httpx.HTTPError, ValueError, AttributeError) as e:
            raise BuildError(
                f"build {self.build.name!r}: the endpoint {url} does not answer as an OpenAI-compatible "
                f"server ({e}); start it or fix base_url"
            ) from None
        if served and self.endpoint.model not in served:
            raise BuildError(
                f"build {self.build.name!r}: {self.build.base_url} serves {served}, "
                f"not {self.endpoint.model!r}; fix the build's 'model'"
            )

    def cancel(self) -> None:
        """End a start under way in another thread: its wait for the server raises BuildError and stops it."""
        self._cancelled.set()

    def alive(self) -> bool:
        if not self.build.kind.starts_server:
            try:
                self._check_endpoint()
            except BuildError:
                return False
            return True
        return self._proc is not None and self._proc.poll() is None

    def restart(self) -> None:
        """Start a died server again, once per serve(); BuildError when it died before or will not start."""
        if self.restarts >= MAX_RESTARTS:
            raise BuildError(
                f"build {self.build.name!r}: its server died again after {self.restarts} restart(s); "
                f"giving up. Last lines of {self.log_path}:\n{log_tail(self.log_path)}"
            )
        self.restarts += 1
        self.start_waited_s = None  # a restart is waited for in full
        self._stop_process()
        self.start()
        self.write_record()

    def stop(self) -> None:
        self._stop_process()

    def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        if self._sampler is not None:
            self._peak_mb = max(self._peak_mb, self._sampler.peak_mb)
            self._sampler.stop()
            self._sampler = None
        if proc is not None:
            _kill_group(proc)
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def record(self, usage: Usage | None = None) -> EngineRecord:
        """The engine record so far; tok/s come from `usage`, the episodes' own client's counters."""
        peak = max(self._peak_mb, self._sampler.peak_mb if self._sampler else 0.0)
        launch = self._launch
        return EngineRecord(
            build=self.build.name,
            engine=self.build.engine,
            command=launch.command if launch else [],
            env=launch.env if launch else {},
            pinning=launch.pinning if launch else {},
            mode=self.manifest.mode,
            startup_s=self._startup_s,
            start_waited_s=self.start_waited_s,
            peak_rss_mb=round(peak, 1) if peak else None,
            settled_rss_mb=round(self._settled_mb, 1) if self._settled_mb is not None else None,
            decode_tok_s=_round(usage.decode_tok_s) if usage else None,
            prefill_tok_s=_round(usage.prefill_tok_s) if usage else None,
            requests=usage.requests if usage else 0,
            restarts=self.restarts,
            log=str(self.log_path.relative_to(self.run_dir)) if launch else None,
        )

    def write_record(self, usage: Usage | None = None) -> EngineRecord:
        record = self.record(usage)
        write_engine_record(self.run_dir, record)
        return record


def pinned(build: Build, launch: Launch) -> Launch:
    """The kind's launch under the build's pinning: numactl or taskset in front of its command, and the
    record of what was applied (the kind's own entries, such as its thread count, after it)."""
    prefix, applied = host.pinning_prefix(build.name, build.pinning)
    return replace(launch, command=[*prefix, *launch.command], pinning={**applied, **launch.pinning})


def _environment(launch: Launch) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k not in launch.unset}
    return {**inherited, **launch.env}


def _round(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def _placeholder(build: Build) -> Endpoint:
    return Endpoint(base_url="http://127.0.0.1:0/v1", model=build.served_name)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the guard's process group (the server and its workers), then SIGKILL what is left."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        proc.wait()
        return
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE_S)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _manifest(build: Build) -> BuildManifest:
    if not build.kind.starts_server:
        return build.manifest()
    reason = host.unavailable_reason(build)
    if reason:
        raise BuildError(f"build {build.name!r} cannot run on this host: {reason}")
    return build.manifest(weights_hash=verify(build))


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit while serving, so the `finally` below runs (only where Python allows)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield  # someone (the runner) already handles SIGTERM; the guard still covers a hard kill
        return

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def serve(
    build: Build,
    run_dir: Path,
    *,
    port: int | None = None,
    manifest: BuildManifest | None = None,
    on_created: Callable[[ServedBuild], None] | None = None,
    serving: Serving = ONE_AT_A_TIME,
) -> Iterator[ServedBuild]:
    """Serve `build` for the duration of the `with` block; the engine is stopped however the block ends.

    `manifest`: the build's manifest as the run already made it (host checked, weights hashed); None: make
    it here. `on_created` gets the ServedBuild before its start (a grid starting it early may cancel it).
    `serving`: how many requests it should answer at once (the phones), and whether it will teacher-force.
    Raises BuildError naming the build when its weights are missing or changed, it cannot run on
    this host, or its server exits or does not answer in time (quoting the server log's last lines).
    """
    served = ServedBuild(build, Path(run_dir), manifest or _manifest(build), port, serving)
    if on_created is not None:
        on_created(served)
    with _sigterm_as_exit():
        try:
            served.start()
            served.write_record()
            yield served
        finally:
            served.stop()
            if served._launch is not None or served._startup_s is not None:
                _keep_usage(served)


def _keep_usage(served: ServedBuild) -> None:
    # The runner writes tok/s through write_record(usage); here only memory and restarts are refreshed.
    old = read_engine_record(served.run_dir, served.build.name)
    record = served.record()
    if old is not None:
        record = record.model_copy(
            update={
                "decode_tok_s": old.decode_tok_s,
                "prefill_tok_s": old.prefill_tok_s,
                "requests": old.requests,
            }
        )
    write_engine_record(served.run_dir, record)
