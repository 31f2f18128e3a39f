"""Hash once, serve once: a build's weights are read for their hash once per process unless a file changed
(its size or modification time), and a build served with the run's manifest is not checked or hashed again."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval.builds.serving import launcher
from agent_eval.builds.serving import weights as served_weights
from agent_eval.builds.spec import parse_builds
from agent_eval.errors import BuildError


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every weight file whose bytes are read for a hash."""
    seen: list[Path] = []
    real = served_weights.file_chunks

    def counting(path: Path) -> Iterator[bytes]:
        seen.append(path)
        yield from real(path)

    monkeypatch.setattr(served_weights, "file_chunks", counting)
    return seen


def test_weights_are_read_once_until_a_file_changes(tmp_path: Path, reads: list[Path]) -> None:
    weights = tmp_path / "model"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"first weights")
    first = served_weights.weights_hash(weights)
    assert served_weights.weights_hash(weights) == first and len(reads) == 1

    (weights / "model.safetensors").write_bytes(b"other weights")  # same size: the mtime tells
    stat = (weights / "model.safetensors").stat()
    os.utime(weights / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = served_weights.weights_hash(weights)
    assert second != first and len(reads) == 2

    (weights / "model-2.safetensors").write_bytes(b"a second shard")  # a new file: hashed again, both read
    third = served_weights.weights_hash(weights)
    assert third not in (first, second) and len(reads) == 4
    assert served_weights.weights_hash(weights) == third and len(reads) == 4


def test_serving_with_the_runs_manifest_neither_checks_the_host_nor_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = parse_builds(
        [
            {
                "name": "ep",
                "reference": True,
                "scheme": "endpoint",
                "engine": "endpoint",
                "base_url": "http://x/v1",
                "model": "m",
            }
        ],
        "test",
    ).builds[0]
    manifest = build.manifest()

    def refuse(*args: object) -> str:
        raise BuildError("checked again")

    monkeypatch.setattr(launcher, "_manifest", refuse)
    monkeypatch.setattr(launcher.ServedBuild, "start", lambda self: None)
    monkeypatch.setattr(launcher.ServedBuild, "write_record", lambda self, usage=None: None)
    with launcher.serve(build, tmp_path, manifest=manifest) as served:
        assert served.manifest is manifest
    with pytest.raises(BuildError, match="checked again"), launcher.serve(build, tmp_path):
        pass
