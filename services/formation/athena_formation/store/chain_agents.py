"""Which agents a chain belongs to, and the one string that names them in the indexes.

A chain starts as its first segment's agent's; a segment of another agent of the same user that
continues its topic is merged into it (SESSION_MERGE_ACROSS_AGENTS, the seed's rule), and the chain
then belongs to both: a search naming either agent finds it. The document keeps `agent_id` (the first
agent, the chain's scope in the API) and `agent_ids` (all of them). Milvus rows and the in-memory
indexes hold the agents key: the agent id itself for a chain of one agent (so rows written before
chains had several agents stay valid), "|a|b|" for several, sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["AGENTS_KEY_MAX_CHARS", "agents_key", "chain_agents", "holds_agent", "key_agents", "with_agent"]

AGENTS_KEY_MAX_CHARS = 128
"""The width of Milvus's agent_id field: a merge that would make the key longer does not happen (the
segment forms a chain of its own)."""


def chain_agents(doc: Mapping[str, Any]) -> list[str]:
    """The chain's agents, the first one first (a document written before `agent_ids` has one)."""
    return list(doc.get("agent_ids") or [doc.get("agent_id", "")])


def agents_key(agents: Iterable[str]) -> str:
    unique = sorted(set(agents))
    return unique[0] if len(unique) == 1 else "|" + "|".join(unique) + "|"


def key_agents(key: str) -> frozenset[str]:
    """The agents an agents key names ('|' is not an id character, so the two forms cannot collide)."""
    return frozenset(key.strip("|").split("|")) if key.startswith("|") else frozenset((key,))


def holds_agent(doc: Mapping[str, Any], agent_id: str) -> bool:
    return agent_id in chain_agents(doc)


def with_agent(doc: Mapping[str, Any], agent_id: str) -> list[str] | None:
    """The chain's agents once a segment of `agent_id` is merged into it; None when their key would
    not fit the indexes (AGENTS_KEY_MAX_CHARS)."""
    agents = chain_agents(doc)
    if agent_id not in agents:
        agents.append(agent_id)
    return agents if len(agents_key(agents)) <= AGENTS_KEY_MAX_CHARS else None
