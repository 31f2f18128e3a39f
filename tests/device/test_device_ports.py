"""Virtual phones take the first port block no one listens on, so two runs on one host do not collide."""

from __future__ import annotations

import socket

from agent_eval.device.adb_backend import free_phone_port


def test_a_block_with_a_listening_port_is_skipped() -> None:
    start = free_phone_port(6720, count=3)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", start + 3))  # the second phone's adb port of the first block
        busy.listen()
        moved = free_phone_port(start, count=3)
        assert moved >= start + 4 and moved % 2 == 0
        assert free_phone_port(start, count=1) == start  # one phone still fits before the busy port
