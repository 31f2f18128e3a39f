"""The registry every plug point keeps its kinds in (engine kinds, agents, device backends, predicates ...).

Each plug point owns one `Registry`; plug-in packages add to them through `agent_eval.plugins`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from agent_eval.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Things of one kind (engine kinds, agents, device backends ...) by name; a later one replaces."""

    def __init__(self, what: str, on_register: Callable[[T], None] | None = None) -> None:
        self.what = what  # e.g. "engine", used in the error that lists the known names
        self._items: dict[str, T] = {}
        self._on_register = on_register

    def register(self, name: str, item: T) -> None:
        self._items[name] = item
        if self._on_register is not None:
            self._on_register(item)

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def names(self) -> list[str]:
        return sorted(self._items)

    def in_order(self) -> list[tuple[str, T]]:
        """(name, item) in the order they were registered (built-ins first)."""
        return list(self._items.items())

    def values(self) -> Iterator[T]:
        return iter(list(self._items.values()))
