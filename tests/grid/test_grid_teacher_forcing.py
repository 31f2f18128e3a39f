"""A grid with fidelity plays a GGUF build on llama-server (a slot per phone) and starts llama-cpp-python's
server, which scores given answers, for that build's probes alone; a vLLM build is probed on the engine that
played."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _null_client import NullChatClient

from agent_eval.builds import Serving, load_builds
from agent_eval.chat.client import Usage
from agent_eval.errors import BuildError
from agent_eval.grid import schedule
from agent_eval.grid.schedule import Engines
from agent_eval.rundir import fidelity_serving_dir

REPO = Path(__file__).resolve().parents[2]
FOUR_SCORING = Serving(slots=4, teacher_forcing=True)


class _Served:
    def __init__(self, name: str, n: int) -> None:
        self.endpoint = type("E", (), {"base_url": f"http://127.0.0.1:{8200 + n}/v1"})()

    def alive(self) -> bool:
        return True

    def write_record(self, usage: Usage | None = None) -> None:
        pass


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Path, Serving]]:
    """Every start and stop of a fake engine: (event, build, run directory, what it was started for)."""
    events: list[tuple[str, str, Path, Serving]] = []

    @contextlib.contextmanager
    def serve(
        build: Any,
        run_dir: Path,
        port: int | None = None,
        manifest: object = None,
        on_created: Any = None,
        serving: Serving = FOUR_SCORING,
    ) -> Iterator[_Served]:
        if build.name == "gguf-q4_k_m" and serving.teacher_forcing and "broken" in str(run_dir):
            raise BuildError(f"build {build.name!r}: its server exited")
        events.append(("start", build.name, run_dir, serving))
        try:
            yield _Served(build.name, len(events))
        finally:
            events.append(("stop", build.name, run_dir, serving))

    monkeypatch.setattr(schedule, "serve", serve)
    monkeypatch.setattr(schedule, "ChatClient", NullChatClient)
    monkeypatch.setattr(schedule, "_agent", lambda name, client, served: f"agent {name}")
    monkeypatch.setattr(schedule, "port_is_free", lambda port: True)
    return events


def _group() -> list[Any]:
    builds = load_builds(REPO / "builds" / "default.yaml")
    return [builds.get("bf16"), builds.get("gguf-q4_k_m")]


def test_the_gguf_build_plays_on_its_batching_server_and_is_probed_on_one_of_its_own(
    starts: list[tuple[str, str, Path, Serving]], tmp_path: Path
) -> None:
    engines = Engines(tmp_path, 8200, lambda line: None, resident=False, serving=FOUR_SCORING)
    bf16, gguf = _group()
    with engines.serving([bf16, gguf]):
        played = dict(engines.endpoints())
        assert [(e, b, s) for e, b, _, s in starts] == [
            ("start", "bf16", FOUR_SCORING),  # vLLM scores given answers on the server that plays
            ("start", "gguf-q4_k_m", Serving(slots=4)),  # llama-server: four slots, no teacher forcing
        ]
        with engines.teacher_forcing([bf16, gguf]) as scoring:
            assert scoring["bf16"] is played["bf16"]
            assert scoring["gguf-q4_k_m"] is not played["gguf-q4_k_m"]
            assert starts[-1] == (
                "start",
                "gguf-q4_k_m",
                fidelity_serving_dir(tmp_path),
                Serving(teacher_forcing=True),
            )
        assert starts[-1][:2] == ("stop", "gguf-q4_k_m") and starts[-1][2] == fidelity_serving_dir(tmp_path)
        assert engines.endpoints() == played  # the engines that play are still up, unchanged
    assert [(e, b) for e, b, _, _ in starts[-2:]] == [("stop", "bf16"), ("stop", "gguf-q4_k_m")]


def test_a_probe_server_that_does_not_start_leaves_that_build_unprobed_and_its_engine_up(
    starts: list[tuple[str, str, Path, Serving]], tmp_path: Path
) -> None:
    said: list[str] = []
    engines = Engines(tmp_path / "broken", 8200, said.append, resident=False, serving=FOUR_SCORING)
    bf16, gguf = _group()
    with engines.serving([bf16, gguf]):
        with engines.teacher_forcing([bf16, gguf]) as scoring:
            assert set(scoring) == {"bf16"}
        assert set(engines.endpoints()) == {"bf16", "gguf-q4_k_m"}
    assert any("gguf-q4_k_m not probed" in line and "its server exited" in line for line in said)


def test_without_fidelity_nothing_more_is_started(
    starts: list[tuple[str, str, Path, Serving]], tmp_path: Path
) -> None:
    engines = Engines(tmp_path, 8200, lambda line: None, resident=False, serving=Serving(slots=4))
    bf16, gguf = _group()
    with engines.serving([bf16, gguf]), engines.teacher_forcing([bf16, gguf]) as scoring:
        assert scoring == engines.endpoints()
    assert [s for _, _, _, s in starts] == [Serving(slots=4)] * 4
