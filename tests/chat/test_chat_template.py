"""A base's chat template, read before training: the token that closes an answer comes from the template
(ChatML's <|im_end|>, Gemma's <end_of_turn>), and a template that cannot carry the agent's prompt is refused
with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from agent_eval.chat.template import turn_format
from agent_eval.errors import ConfigError

MESSAGES = [
    {"role": "system", "content": "You drive a phone."},
    {"role": "user", "content": "Goal: Turn Wi-Fi on."},
]
CHATML = (
    "{% for m in messages %}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
GEMMA_TURNS = (Path(__file__).resolve().parents[2] / "builds/chat_templates/gemma-turns.jinja").read_text()
SPECIALS = ["<unk>", "<bos>", "<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>"]


def tokenizer(template: str | None) -> PreTrainedTokenizerFast:
    words = ["You", "drive", "a", "phone", ".", "Goal", ":", "Turn", "Wi", "-", "Fi", "on", "\n"]
    words += ["system", "user", "assistant", "model", "ANSWER", "7f3c"]
    vocab = {w: i for i, w in enumerate([*SPECIALS, *dict.fromkeys(words)])}
    model = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    model.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=model, unk_token="<unk>", bos_token="<bos>")
    fast.add_special_tokens({"additional_special_tokens": SPECIALS[2:]})
    fast.chat_template = template
    return fast


def test_the_answer_ends_with_the_token_that_closes_the_template_s_turn() -> None:
    chatml = tokenizer(CHATML)
    turn = turn_format(chatml, MESSAGES, "base")
    assert turn.end_text == "<|im_end|>\n"
    assert chatml.convert_ids_to_tokens(turn.end_token) == "<|im_end|>"
    gemma = tokenizer(GEMMA_TURNS)
    turn = turn_format(gemma, MESSAGES, "base")
    assert turn.end_text == "<end_of_turn>\n"
    assert gemma.convert_ids_to_tokens(turn.end_token) == "<end_of_turn>"


def test_gemma_turns_put_the_system_message_in_the_first_user_turn() -> None:
    prompt = tokenizer(GEMMA_TURNS).apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    assert prompt == (
        "<bos><start_of_turn>user\nYou drive a phone.\n\nGoal: Turn Wi-Fi on.<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


@pytest.mark.parametrize(
    ("template", "says"),
    [
        (None, "has no chat template"),
        # Gemma's own instruction template raises on roles out of turn; a template's error is shown as it is
        (
            "{% if messages[0]['role'] == 'system' %}"
            "{{ raise_exception('System role not supported') }}{% endif %}",
            "System role not supported",
        ),
        # renders the user's message only: the system prompt would never reach the model
        (
            "{% for m in messages if m['role'] != 'system' %}{{ m['content'] }}{% endfor %}"
            "{% if add_generation_prompt %}>{% endif %}",
            "drops the agent's system message",
        ),
        # the answer's turn is not what follows the generation prompt
        (
            "{% for m in messages %}{{ m['role'] + m['content'] }}{% endfor %}"
            "{% if add_generation_prompt %}<start_of_turn>{% endif %}",
            "does not put the answer after the prompt",
        ),
        # nothing closes the answer, so training would never teach the model to stop
        (
            "{% for m in messages %}{{ m['content'] }}{% endfor %}",
            "writes nothing after an assistant answer",
        ),
    ],
)
def test_a_template_that_cannot_carry_the_agent_s_prompt_is_refused(template: str | None, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as refused:
        turn_format(tokenizer(template), MESSAGES, "models/some-base")
    assert "models/some-base" in str(refused.value) and "chat_template" in str(refused.value)
