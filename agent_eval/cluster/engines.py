"""Engines on a Ray cluster: each served build's engine is an actor placed by the build's `resources:`.

The actor runs the same `serve()` as a local grid (launcher, pinning, memory sampling, guard) on its node,
listening on the node's address, and reports the endpoint; the head writes engines/<build>.json and .log
from what the actor sends back. A dead engine is restarted once per serving: in its actor if the actor
lives, else by a new actor, which Ray places on a node still alive. Endpoint builds are checked on the head.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agent_eval.agent.policy import Policy
from agent_eval.builds import Build, ServedBuild, Serving, serve
from agent_eval.builds.engine_kinds import ONE_AT_A_TIME
from agent_eval.builds.serving.launcher import MAX_RESTARTS
from agent_eval.chat.client import Usage, add_usage
from agent_eval.chat.endpoint import Endpoint
from agent_eval.cluster.connect import engine_options, ray_module
from agent_eval.errors import BuildError
from agent_eval.records import EngineRecord
from agent_eval.rundir import engine_log_path, write_engine_record
from agent_eval.runner.loop import BuildAgent
from agent_eval.task import TaskInstance

Say = Callable[[str], None]
UsageOf = Callable[[Endpoint], Usage]
START_TIMEOUT_S = 900.0


class EngineHost:
    """The body of an engine actor: serves one build on this node until stopped, for `serving` (as many slots
    as the grid has phones, as a local grid starts it)."""

    def __init__(self, build: Build, serving: Serving = ONE_AT_A_TIME) -> None:
        self.build = build
        self.serving = serving
        self.scratch = Path(tempfile.mkdtemp(prefix=f"agent-eval-engine-{build.name}-"))
        self.stack = contextlib.ExitStack()
        self.served: ServedBuild | None = None

    def start(self) -> tuple[Endpoint, str]:
        """Start the engine; its endpoint and this node (address/id)."""
        ray = ray_module()
        ip = ray.util.get_node_ip_address()
        os.environ["AGENT_EVAL_ENGINE_HOST"] = ip  # phones on other nodes must reach it
        self.served = self.stack.enter_context(serve(self.build, self.scratch, serving=self.serving))
        return self.served.endpoint, f"{ip}/{ray.get_runtime_context().get_node_id()[:8]}"

    def alive(self) -> bool:
        return self.served is not None and self.served.alive()

    def restart(self) -> Endpoint:
        assert self.served is not None
        self.served.restart()
        return self.served.endpoint

    def record(self, usage: Usage | None) -> tuple[str, bytes]:
        """engines/<build>.json as this node knows it (tok/s from `usage`), and the engine's log."""
        assert self.served is not None
        record = self.served.record(usage).model_dump_json(indent=2)
        try:
            log = self.served.log_path.read_bytes()
        except OSError:
            log = b""
        return record, log

    def stop(self) -> None:
        self.stack.close()


def _no_local_policy(instance: TaskInstance) -> Policy:
    raise RuntimeError("a build served on the cluster is played by cluster phones, which ask its endpoint")


class _Live:
    """One served build: its actor (None for an endpoint build) and where it answers."""

    def __init__(
        self, build: Build, actor: Any, endpoint: Endpoint, node: str, served: ServedBuild | None = None
    ) -> None:
        self.build, self.actor, self.endpoint, self.node = build, actor, endpoint, node
        self.served = served  # an endpoint build, checked and recorded on the head
        self.restarts = 0
        self.usage = Usage()  # of endpoints before a restart

    def agent(self, manifest: Any) -> BuildAgent:
        return BuildAgent(self.build.name, _no_local_policy, manifest, self.endpoint, self.build.agent)


class ClusterEngines:
    """Like grid.schedule.Engines, with engines as actors; `usage_of` sums an endpoint's use by the phones;
    every engine is started for `serving` (its slots: the grid's phones)."""

    def __init__(
        self,
        run_dir: Path,
        manifests: dict[str, Any],
        usage_of: UsageOf,
        say: Say,
        serving: Serving = ONE_AT_A_TIME,
    ) -> None:
        self.run_dir, self.manifests, self.usage_of, self.say = run_dir, manifests, usage_of, say
        self.started_for = serving
        self.live: dict[str, _Live] = {}

    def endpoints(self) -> dict[str, Endpoint]:
        """Where each build being served answers, by build name."""
        return {name: live.endpoint for name, live in self.live.items()}

    @contextlib.contextmanager
    def teacher_forcing(self, builds: Sequence[Build]) -> Iterator[dict[str, Endpoint]]:
        """Where the served builds score given answers: their engines, every one started for `serving` (a
        grid with fidelity starts a GGUF build on the server that scores them, one request at a time)."""
        yield self.endpoints()

    def _start_actor(self, build: Build) -> tuple[Any, Endpoint, str]:
        ray = ray_module()
        host = ray.remote(max_restarts=0)(EngineHost).options(**engine_options(build))
        actor = host.remote(build, self.started_for)
        try:
            endpoint, ip = ray.get(actor.start.remote(), timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            ray.kill(actor)
            raise BuildError(
                f"build {build.name!r}: its engine actor did not start within {START_TIMEOUT_S:g} s "
                f"(asked for {build.resources or 'nothing'}; is a node with that free?)"
            ) from None
        except ray.exceptions.RayError as e:
            ray.kill(actor)
            cause = getattr(e, "cause", None)
            if isinstance(cause, BuildError):
                raise cause from None
            raise BuildError(f"build {build.name!r}: its engine actor failed: {e}") from None
        return actor, endpoint, ip

    def _start(self, build: Build, stack: contextlib.ExitStack) -> _Live:
        if not build.kind.starts_server:  # an endpoint build: served (checked) on the head
            served = stack.enter_context(serve(build, self.run_dir))
            return _Live(build, None, served.endpoint, "head", served)
        self.say(f"starting the {build.engine} engine for {build.name} on the cluster ...")
        actor, endpoint, ip = self._start_actor(build)
        self.say(f"{build.name} answers at {endpoint.base_url} (node {ip})")
        live = _Live(build, actor, endpoint, ip)
        self._write_record(live)
        return live

    @contextlib.contextmanager
    def serving(self, builds: Sequence[Build]) -> Iterator[dict[str, BuildAgent]]:
        with contextlib.ExitStack() as stack:
            try:
                for build in builds:
                    self.live[build.name] = self._start(build, stack)
                yield self.agents()
            finally:
                for name in list(self.live):
                    self._retire(name)

    def agents(self) -> dict[str, BuildAgent]:
        return {name: live.agent(self.manifests.get(name)) for name, live in self.live.items()}

    def _total_usage(self, live: _Live) -> Usage:
        return add_usage(live.usage, self.usage_of(live.endpoint))

    def _write_record(self, live: _Live, usage: Usage | None = None) -> None:
        if live.actor is None:
            return
        ray = ray_module()
        try:
            text, log = ray.get(live.actor.record.remote(usage), timeout=60)
        except ray.exceptions.RayError:
            return  # the node is gone: the head keeps the last record it wrote
        record = EngineRecord.model_validate_json(text).model_copy(update={"restarts": live.restarts})
        engine_log_path(self.run_dir, live.build.name).parent.mkdir(parents=True, exist_ok=True)
        engine_log_path(self.run_dir, live.build.name).write_bytes(log)
        write_engine_record(self.run_dir, record)

    def _retire(self, name: str) -> None:
        live = self.live.pop(name)
        if live.served is not None:
            live.served.write_record(self._total_usage(live))
        if live.actor is None:
            return
        ray = ray_module()
        self._write_record(live, self._total_usage(live))
        with contextlib.suppress(ray.exceptions.RayError):
            ray.get(live.actor.stop.remote(), timeout=60)
        with contextlib.suppress(Exception):
            ray.kill(live.actor)

    def died(self, name: str) -> bool:
        """Whether the engine serving `name` has died, or its actor is gone."""
        live = self.live.get(name)
        return live is not None and live.actor is not None and self._alive(live) is not True

    def _alive(self, live: _Live) -> bool | None:
        """True: answers; False: the engine died in a live actor; None: the actor (or its node) is gone."""
        ray = ray_module()
        try:
            return bool(ray.get(live.actor.alive.remote(), timeout=30))
        except ray.exceptions.RayError:
            return None

    def revive(self) -> list[str]:
        """Restart the engines that died, once per serving (a new actor if the old one's node is gone)."""
        ray = ray_module()
        restarted = []
        for name, live in self.live.items():
            state = True if live.actor is None else self._alive(live)
            if state:
                continue
            if live.restarts >= MAX_RESTARTS:
                raise BuildError(f"build {name!r}: its engine died again after {live.restarts} restart(s)")
            live.restarts += 1
            live.usage = self._total_usage(live)
            if state is False:
                self.say(f"[yellow]the engine of {name} died; restarting it on node {live.node}")
                live.endpoint = ray.get(live.actor.restart.remote(), timeout=START_TIMEOUT_S)
            else:
                self.say(f"[yellow]the engine actor of {name} on {live.node} is gone; starting a new one")
                with contextlib.suppress(Exception):
                    ray.kill(live.actor)
                live.actor, live.endpoint, live.node = self._start_actor(live.build)
            self._write_record(live)
            restarted.append(name)
        return restarted
