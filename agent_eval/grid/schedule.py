"""What a grid runs on: its phones (started here or given), and its builds' engines, served as agents.

Engines are served one build at a time or side by side; each build's tok/s add up over the grid's phases.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from agent_eval.agent.agents import get_agent
from agent_eval.agent.policy import Policy
from agent_eval.builds import Build, ServedBuild, Serving, serve
from agent_eval.builds.engine_kinds import ONE_AT_A_TIME, teacher_forcing_apart
from agent_eval.builds.serving.host import port_is_free
from agent_eval.chat.client import ChatClient, Usage, add_usage
from agent_eval.chat.endpoint import Endpoint
from agent_eval.device.backend import DeviceRequest, EpisodeDevice, device_backend
from agent_eval.errors import BuildError, ConfigError
from agent_eval.grid.prestart import EarlyStart, room_to_start_early
from agent_eval.grid.spec import GridSpec
from agent_eval.records import BuildManifest
from agent_eval.rundir import fidelity_serving_dir
from agent_eval.runner.loop import BuildAgent
from agent_eval.task import TaskInstance

Say = Callable[[str], None]
ENGINE_PORTS = 100  # engines take ports engine_base_port .. +99


def phones(spec: GridSpec, say: Say) -> AbstractContextManager[list[EpisodeDevice]]:
    """The grid's devices: the serials it names, or that many virtual phones started (and stopped) here."""
    if isinstance(spec.devices, list):
        request = DeviceRequest(serials=tuple(spec.devices))
    else:
        request = DeviceRequest(count=spec.devices, phone_port=spec.phone_base_port)
    return device_backend(spec.device_backend).devices(request, say)


def _agent(name: str, client: ChatClient, served: ServedBuild) -> BuildAgent:
    """The build's player: one LLM policy shared by every episode (the seed travels in each step)."""
    policy = get_agent(served.build.agent).policy(client)

    def policy_for(instance: TaskInstance) -> Policy:
        return policy

    return BuildAgent(name, policy_for, served.manifest)


@dataclass
class ServedAgent:
    """A build whose engine answers, the chat client its episodes share, and the agent that plays it."""

    served: ServedBuild
    client: ChatClient
    agent: BuildAgent


def available_gib() -> float:
    """MemAvailable of this host in GiB (0 when /proc/meminfo cannot be read: keep nothing resident)."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


class Engines:
    """Serves builds for a grid and keeps each build's usage across servings; `serving()` starts them.

    With `resident`, an engine stays up (idle) after its block while the host keeps `reserve_gib` free, so
    the next phase's top-up reuses it instead of starting it again (~40-70 s on 2 cores). With `early`,
    `start_early(build)` starts the next block's engine while the current block's last cells play, when
    memory leaves room (grid/prestart.py); `serving()` takes it over. `close()` stops what is left.
    `serving`: what each engine is started for: its slots, requests answered at once (the grid's phones),
    and whether it must also score given answers (a grid with fidelity probes them). A kind whose play server
    cannot (`teacher_forcing_apart`: llama.cpp) plays on its fast server; `teacher_forcing()` starts the
    other for the probes.
    """

    def __init__(
        self,
        run_dir: Path,
        base_port: int,
        say: Say,
        *,
        resident: bool = True,
        reserve_gib: float = 4.0,
        manifests: Sequence[BuildManifest] = (),
        early: bool = False,
        available: Callable[[], float] = available_gib,
        serving: Serving = ONE_AT_A_TIME,
    ) -> None:
        self.run_dir = run_dir
        self.base_port = base_port
        self.say = say
        self.resident = resident
        self.reserve_gib = reserve_gib
        self.early = early
        self.available = available  # MemAvailable in GiB (a fake in tests)
        self.started_for = serving
        # Made once per run (host checked, weights hashed); each serving reuses them.
        self.manifests = {m.name: m for m in manifests}
        self.usage: dict[str, Usage] = {}
        self.live: dict[str, ServedAgent] = {}
        self._held: dict[str, contextlib.ExitStack] = {}
        self._early: dict[str, EarlyStart[ServedAgent]] = {}

    def endpoints(self) -> dict[str, Endpoint]:
        """Where each build being served answers, by build name."""
        return {name: live.served.endpoint for name, live in self.live.items()}

    def died(self, name: str) -> bool:
        """Whether the engine serving `name` has died (its server process is gone)."""
        live = self.live.get(name)
        return live is not None and not live.served.alive()

    def _port(self, build: Build) -> int | None:
        if not build.kind.starts_server:
            return None
        taken = {a.served.endpoint.base_url for a in self.live.values()}
        for port in range(self.base_port, self.base_port + ENGINE_PORTS):
            if port_is_free(port) and not any(f":{port}/" in url for url in taken):
                return port
        raise ConfigError(
            f"no free engine port in {self.base_port}..{self.base_port + ENGINE_PORTS - 1}; "
            "set engine_base_port in the grid file"
        )

    def _open(
        self, build: Build, on_created: Callable[[ServedBuild], None] | None = None
    ) -> tuple[ServedAgent, contextlib.ExitStack]:
        """Start the build's engine and its client; the stack stops them (recording usage) when closed."""
        stack = contextlib.ExitStack()
        try:
            manifest, port = self.manifests.get(build.name), self._port(build)
            served = stack.enter_context(
                serve(
                    build,
                    self.run_dir,
                    port=port,
                    manifest=manifest,
                    on_created=on_created,
                    serving=self.serving_for(build),
                )
            )
            client = stack.enter_context(ChatClient(served.endpoint))
            live = ServedAgent(served, client, _agent(build.name, client, served))
            stack.callback(self._retire, build.name, live)
        except BaseException:
            stack.close()
            raise
        return live, stack

    def _start(self, build: Build) -> None:
        if build.kind.starts_server:
            self.say(f"starting the {build.engine} engine for {build.name} ...")
        live, stack = self._open(build)
        self.live[build.name], self._held[build.name] = live, stack
        if build.kind.starts_server:
            self.say(f"{build.name} answers at {live.served.endpoint.base_url}")

    def _stop(self, name: str) -> None:
        stack = self._held.pop(name, None)
        if stack is not None:
            stack.close()

    @contextlib.contextmanager
    def serving(self, builds: Sequence[Build]) -> Iterator[dict[str, BuildAgent]]:
        """Serve `builds` at once for the block (reusing resident engines); on the way out stop them unless
        they may stay resident. Usage and tok/s are recorded when an engine stops."""
        try:
            for build in builds:
                began = time.monotonic()
                if not self._take_early(build):
                    if build.name in self.live and self.live[build.name].served.alive():
                        self.say(f"{build.name}: its engine is still up, reused")
                        continue
                    self._stop(build.name)
                    self._start(build)
                # What this block waited for its engine (engines/<build>.json, the busy table): a whole start,
                # or what was left of one begun early.
                served = self.live[build.name].served
                served.start_waited_s = round(time.monotonic() - began, 2)
                served.write_record()
            yield {name: s.agent for name, s in self.live.items()}
        finally:
            for build in builds:
                if not (self.resident and self.available() >= self.reserve_gib):
                    self._stop(build.name)

    def _scores_apart(self, build: Build) -> bool:
        """Whether the grid's probes need a server of their own for `build` (its play server cannot score)."""
        return self.started_for.teacher_forcing and teacher_forcing_apart(build.kind)

    def serving_for(self, build: Build) -> Serving:
        """What `build`'s engine is started for: the grid's, but a kind that teacher-forces on a server of
        its own plays on its play server (fidelity's probes get the other from `teacher_forcing()`)."""
        if self._scores_apart(build):
            return replace(self.started_for, teacher_forcing=False)
        return self.started_for

    @contextlib.contextmanager
    def teacher_forcing(self, builds: Sequence[Build]) -> Iterator[dict[str, Endpoint]]:
        """Where each served build of `builds` scores given answers, for fidelity's probes: its engine, or,
        for a kind that plays on a server that cannot (llama.cpp's llama-server), a server started for the
        probes beside it and stopped after them (its record and log in fidelity/engines/). A build whose
        probe server does not start is said and left out; its episodes are not touched."""
        endpoints = self.endpoints()
        with contextlib.ExitStack() as stack:
            for build in builds:
                if build.name not in endpoints or not self._scores_apart(build):
                    continue
                self.say(f"starting the {build.engine} server that scores given answers for {build.name} ...")
                try:
                    served = stack.enter_context(
                        serve(
                            build,
                            fidelity_serving_dir(self.run_dir),
                            port=self._port(build),
                            manifest=self.manifests.get(build.name),
                            serving=Serving(teacher_forcing=True),
                        )
                    )
                except BuildError as e:
                    self.say(f"[yellow]fidelity: {build.name} not probed: {e}")
                    del endpoints[build.name]
                    continue
                endpoints[build.name] = served.endpoint
            yield endpoints

    def close(self) -> None:
        """Stop every engine still up (the resident ones, and any started early), recording their usage."""
        self.drop_early()
        for name in list(self._held):
            self._stop(name)

    def start_early(self, build: Build) -> None:
        """Start `build`'s engine on a thread now, when memory leaves room for it beside the engines up;
        never raises (it runs in an episode worker), what it did is said."""
        name = build.name
        if not self.early or name in self._early or (name in self.live and self.live[name].served.alive()):
            return
        try:
            room, why = room_to_start_early(build, self.run_dir, self.reserve_gib, self.available)
            if not room:
                self.say(f"[dim]{name}: not started early ({why})")
                return
            self.say(f"starting the {build.engine} engine for {name} early, beside the last cells ({why})")
            self._early[name] = EarlyStart.begin(build, self._open)
        except Exception as e:  # the usual start still runs when the block begins
            self.say(f"[yellow]{name}: not started early: {e}")

    def drop_early(self) -> None:
        """Stop the engines started early that no block took (their build has nothing left to play)."""
        for name, early in list(self._early.items()):
            del self._early[name]
            if early.opened is not None or early.thread is not None:
                self.say(f"{name}: its engine started early is not needed; stopping it")
            early.cancel()

    def _take_early(self, build: Build) -> bool:
        """Hand the engine started early for `build` to this block; False when there is none or it failed
        or died (the block then starts it the usual way)."""
        early = self._early.pop(build.name, None)
        if early is None:
            return False
        opened, waited = early.take()
        if opened is None:
            problem = str(early.error).splitlines()[0] if early.error else "no engine"
            self.say(f"[yellow]{build.name}: its early start failed ({problem}); starting it again")
            return False
        live, stack = opened
        if not live.served.alive():
            self.say(f"[yellow]{build.name}: its engine started early died; starting it again")
            stack.close()
            return False
        self._stop(build.name)
        self.live[build.name], self._held[build.name] = live, stack
        self.say(f"{build.name}: its engine was started early; waited {waited:.0f} s for it")
        return True

    def _retire(self, name: str, live: ServedAgent) -> None:
        # Runs before the client closes and the engine stops, so the record still has the engine's numbers.
        if self.live.get(name) is live:
            del self.live[name]
        total = add_usage(self.usage.get(name, Usage()), live.client.usage())
        self.usage[name] = total
        live.served.write_record(total)
        live.client.close()  # a revived engine's client is not in the exit stack

    def revive(self) -> list[str]:
        """Restart the engines that died (once per serving); the names restarted. BuildError: cannot."""
        restarted = []
        for name, live in self.live.items():
            if not live.served.alive():
                self.say(f"[yellow]the engine of {name} died; restarting it")
                self.usage[name] = add_usage(self.usage.get(name, Usage()), live.client.usage())
                live.served.restart()
                live.client.close()
                live.client = ChatClient(live.served.endpoint)
                live.agent = _agent(name, live.client, live.served)
                restarted.append(name)
        return restarted

    def agents(self) -> dict[str, BuildAgent]:
        return {name: s.agent for name, s in self.live.items()}
