"""A chat client that sends nothing: for grid tests that fake the engines and only watch their lifecycle."""

from __future__ import annotations

from typing import Any

from agent_eval.chat.client import Usage


class NullChatClient:
    def __init__(self, endpoint: Any) -> None:
        pass

    def __enter__(self) -> NullChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def usage(self) -> Usage:
        return Usage()

    def close(self) -> None:
        pass
