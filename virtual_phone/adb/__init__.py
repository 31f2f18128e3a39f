"""The phone as the adb server sees it: adbd's wire protocol and services, the emulator console, and the
listeners and process that serve a fleet of phones. The top of the phone's layers: it starts phones."""
