"""The virtual phone's own errors: what a user of `start_fleet` or `virtual-phone` can cause and fix.

The package imports nothing of the harness; the harness maps these onto its own error types at its edge.
"""

from __future__ import annotations

ERROR_PREFIX = "virtual-phone: error: "
"""How the command prints an error on stderr; `start_fleet` reads the message after it in the child's log."""


class VirtualPhoneError(Exception):
    """Base of every error the virtual phone reports with a message that says what to change."""


class PhoneConfigError(VirtualPhoneError):
    """An app file or a fault file is malformed."""


class PhoneStartError(VirtualPhoneError):
    """Phones cannot start or died: busy or odd ports, too many fault configs, the phone process exited."""
