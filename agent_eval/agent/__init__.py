"""Agents: turn an observation into a prompt and the model's answer into an action (plus the oracle)."""
