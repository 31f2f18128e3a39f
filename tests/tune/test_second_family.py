"""A model of a second architecture, brought as a user brings one, end to end on the real engines: a tiny
Gemma 3 (SentencePiece vocabulary, Gemma's turn format, sliding-window attention) shipped as a GGUF file with
no chat template, made a base by `dequantize-gguf`, LoRA-tuned a few steps on the agent's prompts, merged,
converted to a GGUF rung, and one episode each on vLLM and on llama.cpp's server through a grid.

No code of the project names the architecture: what differs (the tokenizer, the turn end, the template) is
read from the files (docs/extending.md, "A model of another family")."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from test_tune_engine import demonstrations

from agent_eval.builds import load_builds, prepare, unavailable_reason
from agent_eval.builds.preparing.gguf_recipe import convert, missing_tools
from agent_eval.builds.spec import repo_root
from agent_eval.grid import load_grid, run_grid
from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.tune.dataset import read_dataset, write_dataset
from agent_eval.tune.ship import ship
from agent_eval.tune.train import TrainConfig, train

pytestmark = [pytest.mark.engine, pytest.mark.slow]

TEMPLATE = "builds/chat_templates/gemma-turns.jinja"
TURN_MARKS = ["<start_of_turn>", "<end_of_turn>"]


def tiny_gemma(out: Path) -> None:
    """A Gemma 3 of a few hundred thousand weights with a SentencePiece BPE vocabulary trained on the agent's
    own words, saved as transformers saves it (weights, config, tokenizer.model and tokenizer.json)."""
    import sentencepiece as spm
    import torch
    from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

    corpus = [m["content"] for ex in demonstrations() for m in ex.messages] + [
        ex.answer for ex in demonstrations()
    ]
    corpus += ['{"type": "done"} {"type": "tap", "element": 0} {"type": "type", "text": "Lab Phone"}'] * 4
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus * 20),
        model_writer=model,
        model_type="bpe",
        vocab_size=400,
        byte_fallback=True,
        user_defined_symbols=TURN_MARKS,
        pad_id=0,
        eos_id=1,
        bos_id=2,
        unk_id=3,
        add_dummy_prefix=False,
        remove_extra_whitespaces=False,
        normalization_rule_name="identity",
        minloglevel=2,
    )
    out.mkdir(parents=True)
    (out / "tokenizer.model").write_bytes(model.getvalue())
    config = {
        "tokenizer_class": "GemmaTokenizer",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "pad_token": "<pad>",
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config | {"unk_token": "<unk>"}))
    tokenizer = AutoTokenizer.from_pretrained(out)
    tokenizer.save_pretrained(out)
    # As Gemma's own tokenizer_config.json says: the turn marks are special (llama.cpp's converter then
    # writes them as control tokens, which its tokenizer and the one rebuilt from the GGUF keep whole).
    saved = json.loads((out / "tokenizer_config.json").read_text())
    saved["added_tokens_decoder"] = {
        str(tokenizer.convert_tokens_to_ids(mark)): {"content": mark, "special": True} for mark in TURN_MARKS
    }
    (out / "tokenizer_config.json").write_text(json.dumps(saved))
    gemma = Gemma3TextConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        sliding_window=128,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=4096,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
    )
    torch.manual_seed(0)
    Gemma3ForCausalLM(gemma).to(torch.bfloat16).save_pretrained(out)


def builds_file(path: Path, adapter: Path | None) -> Path:
    pin, sampling = {"cpus": "0-1"}, {"temperature": 0.7, "top_p": 1.0, "max_tokens": 48}
    vllm_args = {"max_model_len": 2048, "kv_cache_space_gib": 0.1, "dtype": "bfloat16", "enforce_eager": True}
    base = {"name": "tiny-base", "scheme": "bf16", "engine": "vllm-cpu", "model_path": "tiny/bf16"}
    base |= {"prepare": {"kind": "dequantize-gguf", "gguf": "tiny/shipped.gguf", "chat_template": TEMPLATE}}
    builds: list[dict[str, Any]] = [base | {"reference": True, "engine_args": vllm_args, "pinning": pin}]
    if adapter is not None:
        builds[0].pop("reference")
        tuned = {"name": "tiny-tuned", "reference": True, "scheme": "bf16", "engine": "vllm-cpu"}
        tuned |= {"model_path": "tiny/bf16-agent", "agent": "compact", "engine_args": vllm_args}
        tuned |= {"prepare": {"kind": "merge-adapter", "source": "tiny-base", "adapter": str(adapter)}}
        builds.append(tuned | {"pinning": pin})
        for rung, source in (("bf16", "tiny-tuned"), ("q8_0", "tiny-gguf-bf16")):  # converted, then quantized
            gguf = {
                "name": f"tiny-gguf-{rung}",
                "scheme": f"gguf-{rung}",
                "engine": "llama.cpp",
                "agent": "compact",
            }
            gguf |= {"model_path": f"tiny/{rung}/model.gguf", "engine_args": {"max_model_len": 2048}}
            builds.append(
                gguf | {"prepare": {"kind": "gguf", "source": source, "gguf_type": rung}, "pinning": pin}
            )
    for build in builds:
        build["sampling"] = sampling
    path.write_text(yaml.safe_dump({"builds": builds}))
    return path


def test_a_tiny_model_of_another_family_is_prepared_tuned_served_and_played(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if why := missing_tools():
        pytest.skip(why)
    models = tmp_path / "models"
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(models))
    say: list[str] = []

    # A user's model, shipped as a GGUF: made here from a tiny Gemma 3 by llama.cpp's own converter.
    tiny_gemma(tmp_path / "made")
    convert(tmp_path / "made", models / "tiny" / "shipped.gguf", "bf16")

    # The base: dequantized, its tokenizer rebuilt from the GGUF's vocabulary, Gemma's turns as its template.
    first = load_builds(builds_file(tmp_path / "base.yaml", None))
    prepare(first, say=say.append)
    base = models / "tiny" / "bf16"
    assert (base / "tokenizer.model").is_file() and (base / "chat_template.jinja").is_file()
    assert json.loads((base / "generation_config.json").read_text())["eos_token_id"][-1] == 5  # <end_of_turn>
    assert any("turn_end_token: <end_of_turn>" in line for line in say), say
    # Tokenized as llama.cpp tokenizes the shipped GGUF: turn marks whole, runs of spaces, bytes for the rest.
    from llama_cpp import Llama
    from transformers import AutoTokenizer

    text = '<start_of_turn>user\nGoal:  Turn Wi-Fi on. é<end_of_turn>\n<start_of_turn>model\n{"type": "tap"}'
    llama = Llama(str(models / "tiny" / "shipped.gguf"), vocab_only=True, verbose=False)
    expected = llama.tokenize(text.encode(), add_bos=False, special=True)
    assert AutoTokenizer.from_pretrained(base)(text, add_special_tokens=False)["input_ids"] == expected

    # Tuned on the agent's prompts in Gemma's turns, each answer ending with <end_of_turn>.
    (tmp_path / "data").mkdir()
    write_dataset(demonstrations(), tmp_path / "data")
    examples, summary = read_dataset(tmp_path / "data")
    cfg = TrainConfig(rank=2, alpha=4, epochs=1.0, max_batch=2, checkpoint_every=1, warmup_steps=1)
    state = train(examples, base, tmp_path / "train", cfg, progress=False)
    assert state.step == 2 and all(loss > 0 for loss in state.losses)
    adapter = tmp_path / "adapter"
    ship(
        train_dir=tmp_path / "train",
        dataset=summary,
        held_out=[],
        base_dir=base,
        cfg=cfg,
        state=state,
        dest=adapter,
        prompt_format="compact",
    )

    # Merged, converted to a GGUF rung, and played: one episode on each engine.
    builds = builds_file(tmp_path / "builds.yaml", adapter)
    ready = prepare(load_builds(builds), say=say.append)
    assert {"tiny-base", "tiny-tuned", "tiny-gguf-q8_0"} <= set(ready)
    for name in ("tiny-tuned", "tiny-gguf-q8_0"):
        if reason := unavailable_reason(load_builds(builds).get(name)):
            pytest.skip(f"{name}: {reason}")
    grid = tmp_path / "grid.yaml"
    spec = {"tasks": [str(repo_root() / "tasks" / "wifi_on.yaml")], "builds_file": str(builds), "seeds": 1}
    spec |= {
        "builds": ["tiny-tuned", "tiny-gguf-q8_0"],
        "reference": "tiny-tuned",
        "adaptive": {"enabled": False},
    }
    spec |= {"devices": 1, "phone_base_port": 6420, "max_steps": 3, "run_dir": str(tmp_path / "run")}
    grid.write_text(yaml.safe_dump(spec))
    result = run_grid(load_grid(grid), console=Console(file=io.StringIO()), bars=False)
    assert result.problems == [], result.problems
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    episodes = [EpisodeRecord.model_validate_json(line) for line in lines if line.strip()]
    assert sorted(e.build for e in episodes) == ["tiny-gguf-q8_0", "tiny-tuned"]
    # An untrained model's episode ends as the agent's failure or success, never as the harness's error.
    assert all(e.outcome is not Outcome.INFRA_ERROR and e.steps >= 1 for e in episodes), episodes
