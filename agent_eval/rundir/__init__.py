"""The run directory, the one way into a run: layout, run.json, the torn-line rule, readers, settling.

The runner writes through `RunStore`; scoring and the report read through `read_episodes`, `read_steps`,
`read_engines`, `read_run_settings` and `settle_attempts`. Nothing else opens a run's files.
"""

from agent_eval.rundir.attempts import SettledEpisodes, episode_key, infra_attempts_by_task, settle_attempts
from agent_eval.rundir.layout import (
    ENGINES_DIR,
    EPISODES_FILE,
    MANIFEST_FILE,
    STEPS_FILE,
    EpisodeKey,
    engine_log_path,
    engine_record_path,
    episode_dir,
)
from agent_eval.rundir.lines import Lines, parse_lines, read_lines
from agent_eval.rundir.manifest import (
    RunManifest,
    RunSettings,
    TaskEntry,
    configuration_differences,
    host_info,
    package_versions,
    read_manifest,
    read_run_settings,
)
from agent_eval.rundir.records import (
    read_engine_record,
    read_engines,
    read_episodes,
    read_steps,
    write_engine_record,
)
from agent_eval.rundir.store import RunStore

__all__ = [
    "ENGINES_DIR",
    "EPISODES_FILE",
    "MANIFEST_FILE",
    "STEPS_FILE",
    "EpisodeKey",
    "Lines",
    "RunManifest",
    "RunSettings",
    "RunStore",
    "SettledEpisodes",
    "TaskEntry",
    "configuration_differences",
    "engine_log_path",
    "engine_record_path",
    "episode_dir",
    "episode_key",
    "host_info",
    "infra_attempts_by_task",
    "package_versions",
    "parse_lines",
    "read_engine_record",
    "read_engines",
    "read_episodes",
    "read_lines",
    "read_manifest",
    "read_run_settings",
    "read_steps",
    "settle_attempts",
    "write_engine_record",
]
