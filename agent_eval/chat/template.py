"""What a model's chat template makes of the agent's prompt: checked before training starts, and when a base
is made from a GGUF.

Training renders each example's messages with the base's own chat template, as the server will, and ends
the answer with the token that closes an assistant turn in that template (`<|im_end|>` in SmolLM2's ChatML,
`<end_of_turn>` in a Gemma-style template). Both are read off the template here, so a model of another family
needs no code of its own; a template that cannot carry the agent's prompt is refused, with what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError

_ANSWER = "ANSWER-7f3c"  # a marker the template cannot contain: where the answer sits in a rendered turn
TEMPLATE_HELP = (
    "give the base a chat template that renders a system and a user message and an assistant answer: as a "
    "chat_template.jinja beside its weights, or, for a base made from a GGUF, with the `chat_template:` "
    "field of its `dequantize-gguf` recipe (docs/extending.md, 'A model of another family')"
)


@dataclass(frozen=True)
class TurnFormat:
    """How the base's chat template closes an assistant turn: the token the answer ends with."""

    end_text: str  # what the template writes after the answer (e.g. "<|im_end|>\n")
    end_token: int  # the first token of that text: the one the model learns to stop with


def turn_format(tokenizer: Any, messages: list[dict[str, str]], where: Path | str) -> TurnFormat:
    """Checks that the template at `where` carries `messages` (a system and a user message, as the agent
    sends them) and an answer after the generation prompt; returns how it closes the answer's turn."""
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"the base at {where} has no chat template, so the agent's prompt has no form; "
                          f"{TEMPLATE_HELP}")  # fmt: skip
    try:
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        answered = [*messages, {"role": "assistant", "content": _ANSWER}]
        full = tokenizer.apply_chat_template(answered, tokenize=False)
    except Exception as exc:  # a template's own error (jinja's raise_exception) is the message
        raise ConfigError(
            f"the chat template of the base at {where} cannot render the agent's prompt (a system and a user "
            f"message): {exc}; {TEMPLATE_HELP}"
        ) from exc
    lost = [m["role"] for m in messages if m["content"].strip() and m["content"].strip() not in prompt]
    if lost:
        raise ConfigError(
            f"the chat template of the base at {where} drops the agent's {' and '.join(lost)} message text "
            f"from the prompt; {TEMPLATE_HELP}"
        )
    if not full.startswith(prompt) or _ANSWER not in full[len(prompt) :]:
        raise ConfigError(
            f"the chat template of the base at {where} does not put the answer after the prompt it renders "
            f"for generation, so what training teaches would not be what the server asks; {TEMPLATE_HELP}"
        )
    end_text = full[len(prompt) :].split(_ANSWER, 1)[1]
    end_ids = tokenizer(end_text, add_special_tokens=False)["input_ids"] if end_text else []
    if not end_text.strip() or not end_ids:
        raise ConfigError(
            f"the chat template of the base at {where} writes nothing after an assistant answer, so the "
            f"model could not learn where its answer ends; {TEMPLATE_HELP}"
        )
    return TurnFormat(end_text=end_text, end_token=int(end_ids[0]))
