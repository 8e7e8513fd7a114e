"""The formation part of ForgetUser, and the tombstone checks FormChain honours.

Ingest writes the tombstone (athena.tombstones) before it calls FormationService.ForgetUser. An event
is erased when it was stored at or before the user's latest tombstone, or is no longer in the log
(an earlier erasure deleted it); what formation made of erased events goes, what it made of later
events stays:

- a chain of erased events only: its embedding first (search can never return a chain about to
  disappear), then its document;
- a chain that also holds later events (a later segment merged into it, or it raced the forget):
  re-formed from those events alone (ChainFormer.reform: analysis, scores, words and embedding anew);
- a formation record of erased events only is deleted; a finished one that also names later events
  keeps only those (and loses its analysis); an unfinished one is deleted (its FormChain plans again).

FormChain drops erased events from the segment it is handed (nothing left: REJECTED, reason
"erased", nothing written). A FormChain running when the forget happened is checked again when it
finishes: what it wrote of events erased meanwhile is taken back the same way, so a merge into a
chain that stays removes only the segment's own erased part. Both times come from ingest's clock
(stored_at, erased_at), so the comparison does not depend on formation's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from athena.errors import RetryableError
from athena.events import doc_to_event
from athena.internal.v1 import formation_pb2
from athena.tombstones import MongoTombstones, erases
from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.form_chain import ChainFormer
from athena_formation.store.chain_store import ChainStore
from athena_formation.store.lexical_index import LexicalIndex
from athena_formation.store.vector_index import VectorIndex

__all__ = ["ERASED", "FormationEraser"]

log = logging.getLogger("athena.formation.erasure")

ERASED = "erased"
_REFORM_ROUNDS = 5


@dataclass
class _EventTimes:
    """When the events a chain names were stored, read from the log once each; erased or not."""

    store: ChainStore
    erased_at: float
    known: dict[str, datetime] = field(default_factory=dict)

    async def learn(self, event_ids: Sequence[str]) -> None:
        unknown = [e for e in event_ids if e not in self.known]
        if unknown:
            self.known.update(await self.store.event_log.stored_times(event_ids=unknown))

    async def kept(self, event_ids: Sequence[str]) -> list[str]:
        """Those of the ids not erased, in order (an id missing from the log was erased before)."""
        await self.learn(event_ids)
        return [e for e in event_ids if e in self.known and not erases(self.erased_at, self.known[e])]


@dataclass
class _Tally:
    chains: int = 0
    chains_rebuilt: int = 0
    formation_records: int = 0
    embeddings: int = 0


@dataclass
class FormationEraser:
    tombstones: MongoTombstones
    store: ChainStore
    vectors: VectorIndex
    former: ChainFormer
    lexical: LexicalIndex | None = None

    async def without_erased(self, segment: formation_pb2.Segment) -> formation_pb2.Segment | None:
        """The segment without its erased events: itself when none is, None when all are."""
        s = segment.scope
        if not (s.tenant_id and s.user_id and segment.events):
            return segment  # invalid: the former reports it
        erased_at = await self.tombstones.latest(s.tenant_id, s.user_id)
        kept = [e for e in segment.events if not erases(erased_at, e.stored_at)]
        if len(kept) == len(segment.events):
            return segment
        if not kept:
            return None
        out = formation_pb2.Segment()
        out.CopyFrom(segment)
        del out.events[:]
        out.events.extend(kept)
        return out

    async def after_forming(
        self, segment: formation_pb2.Segment, response: formation_pb2.FormChainResponse
    ) -> formation_pb2.FormChainResponse:
        """Check a formed segment against the tombstone again: a forget that ran meanwhile may have
        erased some of its events after the chain took them. Takes those back (the chain is re-formed
        without them, or deleted when nothing else is left); "erased" when the whole segment was."""
        s = segment.scope
        erased_at = await self.tombstones.latest(s.tenant_id, s.user_id)
        erased = [e.id for e in segment.events if erases(erased_at, e.stored_at)]
        if not erased:
            return response
        assert erased_at is not None
        times = _EventTimes(self.store, erased_at)
        tally = _Tally()
        records: dict[str, Mapping[str, Any]] = {
            r["_id"]: r for r in await self.store.user_outcomes(s.tenant_id, s.user_id)
        }
        if response.chain_id:
            chain = await self.store.get(response.chain_id)
            if chain is not None:
                await self._scrub_chain(chain, records, times, tally)
        await self._scrub_records([records[segment.id]] if segment.id in records else [], times, tally)
        log.info(
            "segment %s raced the erasure of %s/%s: %d of its events taken back",
            segment.id,
            s.tenant_id,
            s.user_id,
            len(erased),
        )
        return erased_response() if len(erased) == len(segment.events) else response

    async def forget(self, tenant_id: str, user_id: str) -> memory_pb2.ForgetUserResponse:
        erased_at = await self.tombstones.latest(tenant_id, user_id)
        if erased_at is None:
            return memory_pb2.ForgetUserResponse()  # no tombstone: ingest writes it first, so nothing to erase
        times = _EventTimes(self.store, erased_at, await self.store.event_log.stored_times(user=(tenant_id, user_id)))
        tally = _Tally()
        records: dict[str, Mapping[str, Any]] = {
            r["_id"]: r for r in await self.store.user_outcomes(tenant_id, user_id)
        }
        chains = await self.store.user_chains(tenant_id, user_id)
        for chain in chains:
            await self._scrub_chain(chain, records, times, tally)
        # Embeddings without a chain document (a crash between the two deletes of an earlier forget);
        # a document is written before its embedding, so one written since the read above is seen here.
        unread = await self.vectors.ids_of_user(tenant_id=tenant_id, user_id=user_id) - {c["_id"] for c in chains}
        orphans = unread - set(await self.store.get_many(sorted(unread), without=("lexicon",)))
        await self._delete_embeddings(tenant_id, user_id, sorted(orphans), tally)
        await self._scrub_records(list(records.values()), times, tally)
        receipt = memory_pb2.ForgetUserResponse(
            chains=tally.chains,
            chains_rebuilt=tally.chains_rebuilt,
            formation_records=tally.formation_records,
            embeddings=tally.embeddings,
        )
        log.info("erased formation data of %s/%s: %s", tenant_id, user_id, tally)
        return receipt

    async def _scrub_chain(
        self, chain: Mapping[str, Any], records: dict[str, Mapping[str, Any]], times: _EventTimes, tally: _Tally
    ) -> None:
        """Delete the chain or re-form it from its kept events; re-read and retried when a write to
        it lands in between (a merge of later events)."""
        current: Mapping[str, Any] | None = chain
        for _ in range(_REFORM_ROUNDS):
            if current is None:
                return
            event_ids = list(current.get("event_ids", []))
            kept = await times.kept(event_ids)
            if len(kept) == len(event_ids):
                return
            if not kept:
                await self._delete_embeddings(current["tenant_id"], current["user_id"], [current["_id"]], tally)
                if await self.store.delete_chain(current):
                    tally.chains += 1
                    return
            else:
                events = [doc_to_event(d) for d in await self.store.event_log.docs(kept)]
                if await self.former.reform(
                    current, events, segment_ids=await _kept_segments(current, records, times, self.store)
                ):
                    tally.chains_rebuilt += 1
                    return
            current = await self.store.get(chain["_id"])  # a merge of later events landed in between
        raise _Contended(f"chain {chain['_id']} kept changing while it was erased")

    async def _delete_embeddings(self, tenant_id: str, user_id: str, chain_ids: Sequence[str], tally: _Tally) -> None:
        """First of a chain's deletion: search can never return a chain about to disappear."""
        if not chain_ids:
            return
        embedded = await self.vectors.existing(chain_ids)
        await self.vectors.delete(sorted(embedded))
        tally.embeddings += len(embedded)
        if self.lexical is not None:
            self.lexical.drop(tenant_id, user_id, chain_ids)

    async def _scrub_records(self, records: Sequence[Mapping[str, Any]], times: _EventTimes, tally: _Tally) -> None:
        doomed = []
        for record in records:
            event_ids = list(record.get("event_ids", []))
            kept = await times.kept(event_ids)
            if len(kept) == len(event_ids):
                continue
            if kept and record.get("state") == "done":
                await self.store.cut_outcome(record["_id"], kept)
            else:
                doomed.append(record["_id"])
            tally.formation_records += 1
        await self.store.delete_outcomes(doomed)


async def _kept_segments(
    chain: Mapping[str, Any], records: dict[str, Mapping[str, Any]], times: _EventTimes, store: ChainStore
) -> list[str]:
    """The chain's segments that keep some of their events (their records stay). A segment merged
    after the records were read is read now: its record is written before the chain takes it."""
    out = []
    for segment_id in chain.get("segment_ids", []):
        if segment_id not in records:
            found = await store.outcome(segment_id)
            if found is not None:
                records[segment_id] = found
        record = records.get(segment_id)
        if record is not None and await times.kept(record.get("event_ids", [])):
            out.append(segment_id)
    return out


class _Contended(RetryableError):
    """A chain kept changing under the erasure: the forget fails UNAVAILABLE and its retry goes on."""


def erased_response() -> formation_pb2.FormChainResponse:
    return formation_pb2.FormChainResponse(outcome=formation_pb2.FORM_OUTCOME_REJECTED, reason=ERASED)
