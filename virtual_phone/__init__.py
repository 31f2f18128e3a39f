"""A virtual Android 14 phone that the real adb server drives like an emulator (adbd protocol + console).

Public API: start_fleet / Fleet to run phones in a child process, FaultConfig to inject faults.
"""

from virtual_phone.faults import FaultConfig
from virtual_phone.fleet import Fleet, start_fleet

__all__ = ["FaultConfig", "Fleet", "start_fleet"]
