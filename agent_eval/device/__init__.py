"""The device part: observing, acting on, querying and resetting an Android device over adb.

`Device` is the adb driver; `EpisodeDevice` is what an episode needs of any device, and a `DeviceBackend`
(registered by name; `adb` is built in) hands devices out for a run. `parse_ui` turns a UI dump into elements.
"""

from agent_eval.device.adb_backend import AdbBackend, free_phone_port
from agent_eval.device.backend import (
    DeviceBackend,
    DeviceRequest,
    EpisodeDevice,
    device_backend,
    register_device_backend,
)
from agent_eval.device.driver import Device, ShellResult, online_serials
from agent_eval.screen.uitree import parse_ui

__all__ = [
    "AdbBackend",
    "Device",
    "DeviceBackend",
    "DeviceRequest",
    "EpisodeDevice",
    "ShellResult",
    "device_backend",
    "free_phone_port",
    "online_serials",
    "parse_ui",
    "register_device_backend",
]
