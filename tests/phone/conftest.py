"""Fixtures shared by the virtual phone's own tests: a fresh in-process phone, no adb server needed.

Tests that need a phone on the adb server start one per module with `_phones.one_phone(BASE)`.
"""

from __future__ import annotations

import pytest

from virtual_phone.phone import Phone


@pytest.fixture
def phone() -> Phone:
    """A phone just booted, in this process: its shell and screen are called directly."""
    return Phone("emulator-5554")
