"""Tuning the default agent on the phone's own demonstrations: `agent-eval tune collect | train | ship`."""
