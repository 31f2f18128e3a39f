"""What a grid runs on: its phones (started here or given), and its builds' engines, served as agents.

Engines are served one build at a time or side by side; each build's tok/s add up over the grid's phases.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from agent_eval.agent.agents import get_agent
from agent_eval.agent.policy import Policy
from agent_eval.builds import Build, ServedBuild, serve
from agent_eval.builds.chat_client import ChatClient, Usage, add_usage
from agent_eval.builds.endpoint import Endpoint
from agent_eval.builds.host import port_is_free
from agent_eval.device.backend import DeviceRequest, EpisodeDevice, device_backend
from agent_eval.errors import ConfigError
from agent_eval.grid.spec import GridSpec
from agent_eval.records import BuildManifest
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
    the next phase's top-up reuses it instead of starting it again (~40-70 s on 2 cores); `close()` stops
    what is left at the end of the session.
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
    ) -> None:
        self.run_dir = run_dir
        self.base_port = base_port
        self.say = say
        self.resident = resident
        self.reserve_gib = reserve_gib
        # Made once per run (host checked, weights hashed); each serving reuses them.
        self.manifests = {m.name: m for m in manifests}
        self.usage: dict[str, Usage] = {}
        self.live: dict[str, ServedAgent] = {}
        self._held: dict[str, contextlib.ExitStack] = {}

    def endpoints(self) -> dict[str, Endpoint]:
        """Where each build being served answers, by build name."""
        return {name: live.served.endpoint for name, live in self.live.items()}

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

    def _start(self, build: Build) -> None:
        stack = contextlib.ExitStack()
        try:
            if build.kind.starts_server:
                self.say(f"starting the {build.engine} engine for {build.name} ...")
            manifest, port = self.manifests.get(build.name), self._port(build)
            served = stack.enter_context(serve(build, self.run_dir, port=port, manifest=manifest))
            client = stack.enter_context(ChatClient(served.endpoint))
            self.live[build.name] = ServedAgent(served, client, _agent(build.name, client, served))
            stack.callback(self._retire, build.name)
        except BaseException:
            stack.close()
            raise
        self._held[build.name] = stack
        if build.kind.starts_server:
            self.say(f"{build.name} answers at {served.endpoint.base_url}")

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
                if build.name in self.live and self.live[build.name].served.alive():
                    self.say(f"{build.name}: its engine is still up, reused")
                    continue
                self._stop(build.name)
                self._start(build)
            yield {name: s.agent for name, s in self.live.items()}
        finally:
            for build in builds:
                if not (self.resident and available_gib() >= self.reserve_gib):
                    self._stop(build.name)

    def close(self) -> None:
        """Stop every engine still up (the resident ones), recording their usage."""
        for name in list(self._held):
            self._stop(name)

    def _retire(self, name: str) -> None:
        # Runs before the client closes and the engine stops, so the record still has the engine's numbers.
        live = self.live.pop(name)
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
