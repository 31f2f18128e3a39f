"""Grid files: defaults, errors naming the file and field, path resolution, task ids, CLI-style overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _cpu import ENV as CPU_ENV
from _cpu import HOSTS

from agent_eval.builds.engine_kinds import engine_kind
from agent_eval.errors import ConfigError, TaskError
from agent_eval.grid import GridSpec, is_grid_file, load_grid, spec_from
from agent_eval.grid.plan import resolve_builds, resolve_tasks
from agent_eval.grid.spec import resolve_path

REPO = Path(__file__).resolve().parents[2]


def write(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("kind", "builds"),
    [("avx2-only", ["bf16", "w8a8"]), ("avx512", ["bf16", "bf16-base", "w8a8", "w4a16"])],
)
def test_the_default_grid_file_loads_with_the_documented_defaults(
    kind: str, builds: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CPU_ENV, HOSTS[kind])  # w4a16 needs vLLM's AVX-512 int4 kernel: skipped, not refused
    spec = load_grid(REPO / "grids" / "default.yaml")
    assert spec.reference == "bf16" and spec.seeds == 5 and spec.margin == pytest.approx(0.10)
    assert spec.adaptive.enabled and spec.schedule == [5, 20] and spec.adaptive.budget_minutes == 22
    assert spec.serving == "one-at-a-time" and spec.navigation_probes == "stopped" and spec.fidelity is True
    assert resolve_path(spec.run_dir or "", spec.base).resolve() == REPO / "runs" / "default-grid"
    tasks = resolve_tasks(spec)
    assert len(tasks) == 6 and all((REPO / "tasks" / f"{t.id}.yaml").is_file() for t in tasks)
    chosen = resolve_builds(spec)
    # llama.cpp's Q4_K_M plays where llama.cpp is installed, on either CPU kind.
    llamacpp = engine_kind("llama.cpp").missing_software() is None
    assert chosen.names == builds + (["gguf-q4_k_m"] if llamacpp else []) and chosen.reference == "bf16"
    # Without AVX-512: w4a16 has no kernel, and the untuned baseline's long prompt is too slow to prefill.
    skipped = ([] if kind == "avx512" else ["bf16-base", "w4a16"]) + ([] if llamacpp else ["gguf-q4_k_m"])
    assert list(chosen.skipped) == skipped


def test_a_minimal_grid_gets_defaults_and_resolves_paths_against_its_folder(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    task = (REPO / "tasks" / "wifi_on.yaml").read_text()
    (tmp_path / "mine" / "wifi.yaml").write_text(task)
    grid = write(tmp_path / "g.yaml", {"tasks": ["mine", "airplane_mode_on"]})
    spec = load_grid(grid)
    assert spec.seeds == 5 and spec.devices == 1 and spec.run_dir == str(Path.cwd() / "runs" / "g")
    assert spec.base == tmp_path.resolve()
    assert [t.id for t in resolve_tasks(spec)] == ["wifi_on", "airplane_mode_on"]


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"tasks": ["wifi_on"], "seeds": 0}, "seeds", "greater than or equal to 1"),
        ({"tasks": ["wifi_on"], "margin": 1.5}, "margin", "less than 1"),
        ({"tasks": ["wifi_on"], "serving": "parallel"}, "serving", "one-at-a-time"),
        ({"tasks": ["wifi_on"], "adaptive": {"schedule": [20, 10]}}, "adaptive.schedule", "must increase"),
        ({"tasks": ["wifi_on"], "devices": 0}, "devices", "at least 1"),
        ({"tasks": ["wifi_on"], "devices": ["emulator-5554", "emulator-5554"]}, "devices", "appears twice"),
        ({"tasks": ["wifi_on"], "sedes": 3}, "sedes", "unknown field"),
        ({"tasks": []}, "tasks", "at least 1"),
        ({"seeds": 3}, "tasks", "Field required"),
        ({"tasks": ["wifi_on"], "builds": ["w8a8"], "reference": "bf16"}, "(top level)", "not among builds"),
    ],
)
def test_a_bad_grid_file_names_the_file_and_the_field(
    tmp_path: Path, data: object, field: str, says: str
) -> None:
    grid = write(tmp_path / "bad.yaml", data)
    with pytest.raises(ConfigError) as e:
        load_grid(grid)
    message = str(e.value)
    assert str(grid) in message and f"  {field}:" in message and says in message


def test_not_a_mapping_or_not_yaml_or_missing_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such grid file"):
        load_grid(tmp_path / "nope.yaml")
    (tmp_path / "list.yaml").write_text("- wifi_on\n")
    with pytest.raises(ConfigError, match="a grid file is a YAML mapping"):
        load_grid(tmp_path / "list.yaml")
    (tmp_path / "broken.yaml").write_text("tasks: [wifi_on\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_grid(tmp_path / "broken.yaml")


def test_unknown_task_ids_and_builds_are_named() -> None:
    with pytest.raises(TaskError, match=r"no task with id 'wifi_of'.*known ids: .*wifi_off"):
        resolve_tasks(GridSpec(tasks=["wifi_of"]))
    with pytest.raises(ConfigError, match="no build named 'w2'"):
        resolve_builds(GridSpec(tasks=["wifi_on"], builds=["bf16", "w2"]))
    with pytest.raises(ConfigError, match="reference build 'bf16' is not among the grid's builds"):
        resolve_builds(GridSpec(tasks=["wifi_on"], builds=["w8a8"]))


def test_a_build_this_host_cannot_run_is_skipped_when_optional_and_refused_otherwise(tmp_path: Path) -> None:
    builds = {
        "builds": [
            {
                "name": "ref",
                "reference": True,
                "scheme": "endpoint",
                "engine": "endpoint",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
            },
            {
                "name": "amx",
                "scheme": "w4a8",
                "engine": "vllm-cpu",
                "model_path": "x",
                "requires_cpu_flags": ["no_such_flag"],
                "optional": True,
            },
        ]
    }
    file = write(tmp_path / "b.yaml", builds)
    chosen = resolve_builds(GridSpec(tasks=["wifi_on"], builds_file=str(file)))
    assert chosen.names == ["ref"] and "no_such_flag" in chosen.skipped["amx"]
    builds["builds"][1]["optional"] = False
    write(file, builds)
    with pytest.raises(ConfigError, match="build 'amx' cannot run on this host"):
        resolve_builds(GridSpec(tasks=["wifi_on"], builds_file=str(file)))


def test_schedule_and_what_run_json_compares() -> None:
    spec = GridSpec(tasks=["wifi_on"], seeds=7, adaptive={"schedule": [5, 10, 20]})
    assert spec.schedule == [7, 10, 20]
    assert GridSpec(tasks=["wifi_on"], adaptive={"enabled": False}).schedule == [5]
    measured = spec.measured()
    # Seeds may grow and devices may change between sessions; tasks and builds are compared resolved.
    assert not {"seeds", "devices", "tasks", "builds", "builds_file", "run_dir"} & set(measured)
    assert measured["margin"] == pytest.approx(0.1) and measured["adaptive"]["schedule"] == [5, 10, 20]


def test_overrides_and_task_paths_make_a_spec_like_flags_would(tmp_path: Path) -> None:
    grid = write(tmp_path / "g.yaml", {"tasks": ["wifi_on"], "seeds": 3})
    assert is_grid_file(grid) and not is_grid_file(REPO / "tasks" / "wifi_on.yaml")
    spec = spec_from([grid], seeds=6, adaptive=False, serving="side-by-side", devices=None)
    assert spec.seeds == 6 and not spec.adaptive.enabled and spec.serving == "side-by-side"
    assert spec.base == tmp_path.resolve()
    # A path given on the command line is relative to the user's folder, not the grid file's.
    moved = spec_from([grid], builds_file="builds/default.yaml", run_dir="out/here")
    assert moved.builds_file == str(Path.cwd() / "builds" / "default.yaml")
    assert moved.run_dir == str(Path.cwd() / "out" / "here")
    plain = spec_from([REPO / "tasks" / "wifi_on.yaml", REPO / "tasks" / "wifi_off.yaml"], devices=2)
    assert [t.id for t in resolve_tasks(plain)] == ["wifi_on", "wifi_off"] and plain.devices == 2
    with pytest.raises(ConfigError, match=r"the command line(.|\n)*seeds"):
        spec_from([grid], seeds=0)
    with pytest.raises(ConfigError, match="one grid file, or task files"):
        spec_from([grid, REPO / "tasks" / "wifi_on.yaml"])
