"""Work shared among devices: one worker thread per device takes the next item until none is left.

Used where every item needs a device but no scheduling beyond that (validating tasks, collecting
demonstrations); grids have their own loop (`runner/loop.py`), with retries and lost phones.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from agent_eval.device.backend import EpisodeDevice

Item = TypeVar("Item")
Result = TypeVar("Result")


def on_devices(
    items: Iterable[Item],
    devices: Sequence[EpisodeDevice],
    work: Callable[[EpisodeDevice, Item], Result],
) -> Iterator[Result]:
    """`work(device, item)` for every item, one worker per device, each result yielded in the caller's thread
    as soon as it is known (with one device, in the items' order). A worker's exception stops the others
    (after their current item) and is raised here."""
    if not devices:
        raise ValueError("no device to work on")
    todo: queue.Queue[Item] = queue.Queue()
    for item in items:
        todo.put(item)
    done: queue.Queue[tuple[Result] | BaseException | None] = queue.Queue()
    stop = threading.Event()

    def worker(device: EpisodeDevice) -> None:
        try:
            while not stop.is_set():
                try:
                    item = todo.get_nowait()
                except queue.Empty:
                    return
                done.put((work(device, item),))
        except BaseException as e:  # raised again in the caller's thread
            done.put(e)
        finally:
            done.put(None)

    threads = [threading.Thread(target=worker, args=(d,), daemon=True) for d in devices]
    for thread in threads:
        thread.start()
    running = len(threads)
    try:
        while running:
            got = done.get()
            if got is None:
                running -= 1
            elif isinstance(got, BaseException):
                raise got
            else:
                yield got[0]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
