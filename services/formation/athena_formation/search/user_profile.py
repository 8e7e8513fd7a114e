"""GetContext's profile: what the user has told of themselves, whatever the query.

A search finds a fact when the query is about it; an agent that passes the user's message as the
query ("Summarise this article for me") does not find "Always reply in German." that way, nor "I'm
vegetarian." for "Plan my week". The profile is every sentence of the user's messages in the scope
that states a lasting fact or a standing instruction (forming/personal_facts.py), newest first: those
of the chains (their `profile_facts`, forming/profile_facts.py) and those of the events in no chain yet
(the open segments ingest sends, as for a search), so a fact told a moment ago is in it at once.
Newest first puts a correction ("I moved to Munich") before what it corrects; the agent reads both
with their times. A sentence told again is given once, at its newest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from athena.events import doc_to_event
from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.profile_facts import profile_facts
from athena_formation.search.open_events import of_scope
from athena_formation.search.profile_cache import ProfileCache, ToldFacts
from athena_formation.store.chain_store import ChainStore
from athena_formation.store.lexical_index import LexicalIndex

__all__ = ["CHAINS_PER_FACT", "UNSHARED_TTL_SECONDS", "UserProfile"]

CHAINS_PER_FACT = 2
"""Chains read per fact asked for, the most recently added to first: room for sentences told again."""
UNSHARED_TTL_SECONDS = 60.0
"""How long the chains' part of a profile is kept when formation is the one writer of chains: every
write it makes drops it at once (profile_cache.py); the bound covers a chain written to MongoDB whose
indexing failed and is retried later, which the lexical index is told of only once it succeeds."""


class UserProfile:
    """Reads the profile of a scope from its chains and its open segments."""

    def __init__(self, store: ChainStore, *, changes: LexicalIndex | None = None) -> None:
        """`changes`: the lexical index formation tells of its writes of chains; with it, the chains'
        part of each profile is kept until the user's chains change (profile_cache.py)."""
        self.store = store
        self.cache: ProfileCache | None = None
        if changes is not None:
            ttl = changes.refresh_seconds if changes.shared else UNSHARED_TTL_SECONDS
            self.cache = ProfileCache(ttl_seconds=ttl)
            changes.on_change(self.cache.changed)

    async def facts(
        self, scope: memory_pb2.Scope, open_segments: Sequence[formation_pb2.Segment], *, limit: int
    ) -> list[memory_pb2.ProfileFact]:
        """At most `limit` facts of the scope (its tenant and user, and its agent when given), newest first."""
        # Oldest first, so that of two facts told at one time the later in this order is the newer:
        # the chains, then the parked segments (cut from windows), then the windows (no id).
        told = list(await self._of_chains(scope, limit=limit))
        for segment in sorted(open_segments, key=lambda s: not s.id):
            told += [(fact, "") for fact in profile_facts(_of(scope, segment.events))]
        return _newest_once(told, limit=limit)

    async def _of_chains(self, scope: memory_pb2.Scope, *, limit: int) -> ToldFacts:
        """The facts of the scope's chains, oldest first (of chains told at one time, the one formed
        earlier first), with their chain ids: kept, or read."""
        key, part = (scope.tenant_id, scope.user_id), (scope.agent_id, limit)
        if self.cache is not None and (kept := self.cache.get(key, part)) is not None:
            return kept
        since = self.cache.since() if self.cache is not None else 0
        docs = await self.store.fact_chains(
            tenant_id=scope.tenant_id,
            user_id=scope.user_id,
            agent_id=scope.agent_id or None,
            limit=limit * CHAINS_PER_FACT,
        )
        told: list[tuple[Mapping[str, Any], str]] = []
        read = await self._events_of_older_chains(docs)
        for doc in reversed(docs):
            facts = doc.get("profile_facts")
            if facts is None:
                facts = profile_facts(read[i] for i in doc.get("event_ids", []) if i in read)
            told += [(fact, str(doc["_id"])) for fact in facts]
        if self.cache is not None:
            self.cache.put(key, part, told, since=since)
        return told

    async def _events_of_older_chains(self, docs: Sequence[Mapping[str, Any]]) -> dict[str, memory_pb2.Event]:
        """The events still in the log of the chains formed before chains kept their `profile_facts`,
        in one read, by id: their facts are read from them."""
        ids = [i for doc in docs if "profile_facts" not in doc for i in doc.get("event_ids", [])]
        return {e["_id"]: doc_to_event(e) for e in await self.store.event_log.docs(ids)} if ids else {}


def _of(scope: memory_pb2.Scope, events: Iterable[memory_pb2.Event]) -> list[memory_pb2.Event]:
    return [e for e in events if of_scope(e, scope)]


def _newest_once(told: Sequence[tuple[Mapping[str, Any], str]], *, limit: int) -> list[memory_pb2.ProfileFact]:
    """The facts newest first (among events told at one time, the later in `told` first; the
    sentences of one event in their order), each sentence once."""
    events: dict[str, int] = {}
    for fact, _ in told:
        events.setdefault(str(fact["event_id"]), len(events))
    ordered = sorted(
        enumerate(told),
        key=lambda item: (-float(item[1][0]["told_at"]), -events[str(item[1][0]["event_id"])], item[0]),
    )
    seen: set[str] = set()
    out: list[memory_pb2.ProfileFact] = []
    for _, (fact, chain_id) in ordered:
        key = " ".join(str(fact["text"]).casefold().split())
        if key in seen:
            continue
        seen.add(key)
        out.append(_message(fact, chain_id))
        if len(out) == limit:
            break
    return out


def _message(fact: Mapping[str, Any], chain_id: str) -> memory_pb2.ProfileFact:
    message = memory_pb2.ProfileFact(text=str(fact["text"]), event_id=str(fact["event_id"]), chain_id=chain_id)
    message.told_at.FromNanoseconds(round(float(fact["told_at"]) * 1e9))
    return message
