"""The report's "what served each build" table: build manifests and engine records, from the run's own files.

So a reader can tell two builds apart (scheme, weights hash, mode, sampling) and open an engine's log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from agent_eval.records import BuildManifest, EngineRecord, EpisodeRecord


def _compact(value: dict[str, Any]) -> str:
    return escape(json.dumps(value, separators=(",", ":"), sort_keys=True)) if value else ""


def _manifests(episodes: Sequence[EpisodeRecord]) -> dict[str, BuildManifest]:
    found: dict[str, BuildManifest] = {}
    for episode in episodes:
        if episode.build_manifest is not None:
            found.setdefault(episode.build, episode.build_manifest)
    return found


def builds_table(
    builds: Sequence[str], episodes: Sequence[EpisodeRecord], engines: dict[str, EngineRecord]
) -> str:
    manifests = _manifests(episodes)
    headers = ["build", "scheme", "bits", "engine", "model", "weights", "mode", "sampling", "startup s",
               "requests", "restarts", "command", "log"]  # fmt: skip
    rows = []
    for build in builds:
        m, e = manifests.get(build), engines.get(build)
        weights = (m.weights_hash or "")[:12] if m else ""
        bits = "" if m is None or m.bits_per_weight is None else f"{m.bits_per_weight:g}"
        command = " ".join(e.command) if e else ""
        log = f'<a href="{escape(e.log)}">log</a>' if e and e.log else ""
        cells = [
            escape(m.scheme if m else ""),
            bits,
            escape(m.engine if m else (e.engine if e else "")),
            escape(m.model if m else ""),
            f'<code title="{escape(m.weights_hash or "")}">{escape(weights)}</code>' if m else "",
            escape((m.mode if m else None) or (e.mode if e else None) or ""),
            f"<code>{_compact(m.sampling)}</code>" if m else "",
            f"{e.startup_s:.1f}" if e and e.startup_s is not None else "",
            str(e.requests) if e else "",
            str(e.restarts) if e else "",
            f"<details><summary>show</summary><code>{escape(command)}</code></details>" if command else "",
            log,
        ]
        rows.append(
            f'<tr><td class="name">{escape(build)}</td>' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in headers)
    return (
        f'<div class="wide"><table id="builds"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
