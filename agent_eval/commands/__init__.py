"""The `agent-eval` commands: reading flags and printing, above every part they call (see cli.py)."""
