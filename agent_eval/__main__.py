"""`python -m agent_eval …`: the `agent-eval` command, for scripts and tests that run a fresh interpreter."""

from agent_eval.cli import main

main()
