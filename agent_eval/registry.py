"""The registry every plug point keeps its kinds in (engine kinds, agents, device backends, predicates ...).

Each plug point owns one `Registry`; plug-in packages add to them through `agent_eval.plugins`, which this
module runs the first time any registry is asked for what it holds (`before_first_use`), so code that uses
the library, not only the `agent-eval` command, sees installed plug-ins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from agent_eval.errors import ConfigError

T = TypeVar("T")

_first_use: list[Callable[[], object]] = []  # run once, before any registry first answers a question
_used = False


def before_first_use(hook: Callable[[], object]) -> None:
    """Run `hook` (plug-in loading) once, before the first question asked of any registry."""
    _first_use.append(hook)


def in_use() -> None:
    """Run the first-use hooks now if they have not run (a file about to be validated against the kinds
    calls this first: its schema must hold every kind before validation starts)."""
    global _used
    if _used:
        return
    _used = True  # first: a hook that asks a registry must not run itself again
    for hook in _first_use:
        hook()


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
        in_use()
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        in_use()
        return name in self._items

    def names(self) -> list[str]:
        in_use()
        return sorted(self._items)

    def in_order(self) -> list[tuple[str, T]]:
        """(name, item) in the order they were registered (built-ins first)."""
        in_use()
        return self.registered()

    def registered(self) -> list[tuple[str, T]]:
        """`in_order` without loading plug-ins: for building a schema while modules are still importing."""
        return list(self._items.items())

    def values(self) -> Iterator[T]:
        in_use()
        return iter(list(self._items.values()))
