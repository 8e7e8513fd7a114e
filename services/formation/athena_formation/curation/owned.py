"""The one check every per-chain call makes: the chain exists and belongs to the request's scope."""

from __future__ import annotations

from typing import Any

from athena.errors import NotFound, RetryableError
from athena_client.memory.v1 import memory_pb2
from athena_formation.store.chain_agents import holds_agent
from athena_formation.store.chain_store import ChainStore

__all__ = ["WRITE_ROUNDS", "ChainContended", "in_scope", "owned_chain"]


def in_scope(doc: dict[str, Any], scope: memory_pb2.Scope) -> bool:
    """The tenant and user always; the agent when the scope names one (a chain of several agents, or a
    formation record, which has one)."""
    return (
        doc.get("tenant_id") == scope.tenant_id
        and doc.get("user_id") == scope.user_id
        and (not scope.agent_id or holds_agent(doc, scope.agent_id))
    )


async def owned_chain(store: ChainStore, scope: memory_pb2.Scope, chain_id: str) -> dict[str, Any]:
    """The chain's document; NotFound when it is missing or another tenant's or user's (the two are
    indistinguishable, so ids of other tenants' chains cannot be probed)."""
    doc = await store.get(chain_id)
    if doc is None or not in_scope(doc, scope):
        raise NotFound(f"chain {chain_id!r} not found")
    return doc


WRITE_ROUNDS = 5
"""Reads and version-guarded writes of one chain a call makes before it gives up to a merge racing it."""


class ChainContended(RetryableError):
    """The chain kept changing (merges) while a call wrote it: UNAVAILABLE, and the client's retry goes on."""
