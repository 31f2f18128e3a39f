"""`Closing`: something the harness holds open (an endpoint session, a run store, a report server) and closes
when its `with` block ends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self


class Closing(ABC):
    """A `with` block yields the object itself and closes it on the way out, exception or not."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
