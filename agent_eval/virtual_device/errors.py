"""The virtual phone's own errors: what a user of `start_fleet` or `agent-eval device` can cause and fix.

The package imports nothing of the harness; the harness maps these onto its own error types at its edge.
"""

from __future__ import annotations


class VirtualDeviceError(Exception):
    """Base of every error the virtual phone reports with a message that says what to change."""


class PhoneConfigError(VirtualDeviceError):
    """An app file or a fault file is malformed."""


class PhoneStartError(VirtualDeviceError):
    """Phones cannot start or died: busy or odd ports, too many fault configs, the phone process exited."""
