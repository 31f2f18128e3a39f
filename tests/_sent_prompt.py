"""What an agent's LLM policy sends for a step: its decision and the messages a scripted endpoint received."""

from __future__ import annotations

from typing import Any

from scripted_endpoint import ScriptedEndpoint, tap

from agent_eval.agent.agents import get_agent
from agent_eval.agent.policy import Decision, StepContext
from agent_eval.chat.client import ChatClient
from agent_eval.chat.endpoint import Endpoint


def sent_prompt(context: StepContext, agent: str) -> tuple[Decision, list[dict[str, Any]]]:
    """The decision of agent `agent`'s policy for `context`, and the messages its one request carried."""
    with ScriptedEndpoint([tap("x")]) as server:
        client = ChatClient(Endpoint(base_url=server.url, model="scripted"))
        decision = get_agent(agent).policy(client).decide(context)
        client.close()
    (request,) = server.requests
    return decision, request["messages"]
