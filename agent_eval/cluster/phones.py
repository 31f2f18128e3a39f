"""Phones on a Ray cluster: an actor per phone on a node that declares `phone`, playing the cells it is given.

The actor starts a virtual phone on its node (or takes an adb device connected there) and plays each attempt
with the same episode loop as a local phone (`LocalSeat`), into scratch space; the record and the step files
go back to the head, which writes them. A dead actor (or node) costs the attempt it was playing: the head
records it as an infra error, retires the seat and puts the cell back on the queue.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_eval.agent.agents import get_agent
from agent_eval.agent.policy import Policy
from agent_eval.chat.client import ChatClient, Usage, add_usage
from agent_eval.chat.endpoint import Endpoint
from agent_eval.cluster.connect import PHONE, check_phones, nodes, ray_module
from agent_eval.device.adb import online_serials
from agent_eval.device.driver import Device
from agent_eval.errors import AgentEvalError, ClusterError, DeviceError
from agent_eval.records import BuildManifest, EpisodeRecord
from agent_eval.runner.episode import Played, infra_error_record
from agent_eval.runner.loop import Attempt, BuildAgent, Cell, LocalSeat
from agent_eval.task import TaskInstance

Say = Callable[[str], None]
START_TIMEOUT_S = 180.0  # placing an actor and booting its phone


class PhoneHost:
    """The body of a phone actor (made a Ray actor by `phone_actor()`): one phone on this node."""

    def __init__(self) -> None:
        self.fleet: Any = None
        self.device: Device | None = None
        self._claim: int | None = None
        self.clients: dict[tuple[Endpoint, str | None], tuple[ChatClient, Policy]] = {}

    def start(self, base_port: int, serials: list[str] | None) -> dict[str, str]:
        """Boot a virtual phone on `base_port`, or claim one of `serials` connected here; where it is."""
        ray = ray_module()
        ip = ray.util.get_node_ip_address()
        if serials is None:
            from virtual_phone import start_fleet

            self.fleet = start_fleet(count=1, base_port=base_port)
            serial = self.fleet.serials[0]
        else:
            serial = self._claim_one(serials, ip)
        self.device = Device(serial)
        node = ray.get_runtime_context().get_node_id()
        return {"serial": serial, "ip": ip, "node": node}

    def _claim_one(self, serials: list[str], ip: str) -> str:
        try:
            here = online_serials()  # the adb server on this node (ANDROID_ADB_SERVER_PORT, as adb reads it)
        except DeviceError:
            here = []
        for serial in [s for s in serials if s in here]:
            lock = Path(tempfile.gettempdir()) / f"agent-eval-phone-{serial}.lock"
            fd = os.open(lock, os.O_CREAT | os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._claim = fd  # held while this actor lives: another actor on the node takes another phone
            return serial
        raise DeviceError(
            f"node {ip} declares `{PHONE}` but none of the phones {serials} is free in its adb server "
            f"(connected there: {here or 'none'}); connect one, or declare fewer `{PHONE}` on that node"
        )

    def _policy(self, endpoint: Endpoint, agent_name: str | None) -> Policy:
        """The build's agent (its `agent:`, from the registry) asking `endpoint`, one per pair."""
        if (endpoint, agent_name) not in self.clients:
            client = ChatClient(endpoint)
            self.clients[endpoint, agent_name] = (client, get_agent(agent_name).policy(client))
        return self.clients[endpoint, agent_name][1]

    def play(
        self,
        cell: Cell,
        name: str,
        manifest: BuildManifest | None,
        endpoint: Endpoint,
        attempt: Attempt,
        agent_name: str | None = None,
    ) -> tuple[str, dict[str, bytes]]:
        """Play one attempt in scratch space; the record as JSON and the episode's files by name."""
        assert self.device is not None
        policy = self._policy(endpoint, agent_name)

        def policy_for(instance: TaskInstance) -> Policy:
            return policy

        agent = BuildAgent(name, policy_for, manifest, endpoint, agent_name)
        relative = attempt.episode_dir.relative_to(attempt.run_dir)
        with tempfile.TemporaryDirectory(prefix="agent-eval-episode-") as scratch:
            here = Path(scratch) / relative
            here.mkdir(parents=True)
            place = Attempt(attempt.run_id, attempt.number, here, Path(scratch), attempt.snapshot)
            record = LocalSeat(self.device).play(cell, agent, place)
            files = {p.name: p.read_bytes() for p in sorted(here.iterdir()) if p.is_file()}
        return record.model_dump_json(), files

    def still_online(self) -> bool:
        assert self.device is not None
        return LocalSeat(self.device).still_online()

    def usage(self, endpoint: Endpoint) -> Usage:
        total = Usage()
        for (asked, _), (client, _) in self.clients.items():
            if asked == endpoint:
                total = add_usage(total, client.usage())
        return total

    def stop(self) -> None:
        for client, _ in self.clients.values():
            client.close()
        if self.fleet is not None:
            self.fleet.stop()
        if self._claim is not None:
            os.close(self._claim)


def phone_actor() -> Any:
    """PhoneHost as a Ray actor class: one `phone` per actor, no CPU held while idle."""
    ray = ray_module()
    return ray.remote(num_cpus=0, resources={PHONE: 1}, max_restarts=0, max_concurrency=2)(PhoneHost)


class RemoteSeat:
    """A phone actor seen from the head: a `Seat` of run_cells."""

    def __init__(self, actor: Any, where: dict[str, str]) -> None:
        self.actor = actor
        self.where = where
        self.dead: str | None = None  # why the actor is gone

    @property
    def serial(self) -> str:
        return f"{self.where['serial']}@{self.where['ip']}/{self.where['node'][:8]}"

    def play(self, cell: Cell, agent: BuildAgent, attempt: Attempt) -> EpisodeRecord:
        ray = ray_module()
        if agent.endpoint is None:
            raise ValueError(f"build {agent.name} has no endpoint; a cluster phone cannot ask it")
        started = datetime.now(UTC)
        call = self.actor.play.remote(cell, agent.name, agent.manifest, agent.endpoint, attempt, agent.agent)
        try:
            text, files = ray.get(call)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause
            raise (cause if isinstance(cause, AgentEvalError) else e) from None
        except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as e:
            self.dead = f"the phone actor on node {self.where['ip']} ({self.where['node'][:8]}) died"
            return _lost_attempt(cell, agent, attempt, self, started, f"{self.dead}: {type(e).__name__}")
        for name, data in files.items():
            (attempt.episode_dir / name).write_bytes(data)
        # The serial alone is ambiguous on a cluster: two nodes may both have emulator-5554.
        return EpisodeRecord.model_validate_json(text).model_copy(update={"device": self.serial})

    def still_online(self) -> bool:
        if self.dead is not None:
            return False
        ray = ray_module()
        try:
            return bool(ray.get(self.actor.still_online.remote()))
        except ray.exceptions.RayError:
            self.dead = f"the phone actor on node {self.where['ip']} died"
            return False

    def usage(self, endpoint: Endpoint) -> Usage:
        ray = ray_module()
        if self.dead is None:
            with contextlib.suppress(ray.exceptions.RayError):
                return ray.get(self.actor.usage.remote(endpoint), timeout=30)  # type: ignore[no-any-return]
        return Usage()


def _lost_attempt(
    cell: Cell, agent: BuildAgent, attempt: Attempt, seat: RemoteSeat, started: datetime, error: str
) -> EpisodeRecord:
    """The infra-error record of an attempt whose actor died with it (nothing of it reached the head)."""
    where = str(attempt.episode_dir.relative_to(attempt.run_dir))
    played = Played(
        attempt.run_id, cell.kind, cell.build, seat.serial, agent.manifest, attempt.number, where, started
    )
    return infra_error_record(cell.task.instantiate(cell.seed), played, error)


@contextlib.contextmanager
def cluster_phones(
    count: int, serials: list[str] | None, base_port: int, say: Say
) -> Iterator[list[RemoteSeat]]:
    """`count` phone actors spread over the nodes that declare phones (fewer if they declare fewer)."""
    ray = ray_module()
    slots = check_phones(nodes())
    if slots < count:
        say(f"[yellow]the cluster declares {slots} `{PHONE}`; running {slots} phone(s), not {count}")
        count = slots
    cls = phone_actor()
    actors = [cls.options(scheduling_strategy="SPREAD").remote() for _ in range(count)]
    starts = [a.start.remote(base_port + 2 * i, serials) for i, a in enumerate(actors)]
    seats, problems = [], []
    try:
        for actor, start in zip(actors, starts, strict=True):
            try:
                seats.append(RemoteSeat(actor, ray.get(start, timeout=START_TIMEOUT_S)))
            except ray.exceptions.GetTimeoutError:
                problems.append(f"a phone actor was not placed and started within {START_TIMEOUT_S:g} s")
            except ray.exceptions.RayError as e:
                cause = getattr(e, "cause", None) or e
                problems.append(str(cause).strip().splitlines()[-1])
        for problem in problems:
            say(f"[yellow]{problem}")
        if not seats:
            raise ClusterError("no phone could start on the cluster: " + "; ".join(problems))
        say(f"phones up: {', '.join(s.serial for s in seats)}")
        yield seats
    finally:
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.get(actor.stop.remote(), timeout=30)
            with contextlib.suppress(Exception):
                ray.kill(actor)
