"""The device part: observing, acting on, querying and resetting an Android device over adb.

`Device` is the driver; `parse_ui` turns a uiautomator dump into the elements an agent sees.
"""

from agent_eval.device.driver import Device, ShellResult, online_serials
from agent_eval.device.uitree import parse_ui

__all__ = ["Device", "ShellResult", "online_serials", "parse_ui"]
