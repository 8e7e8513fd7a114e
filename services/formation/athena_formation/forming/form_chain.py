"""FormChain: analysis → quality gate → merge-or-create → chain in MongoDB and its embedding in Milvus.

Order of writes, so that a crash or retry between the stores never leaves a chain without its
embedding or an embedding without its chain:

1. record the plan in `formation_outcomes` (id = segment id; a concurrent or retried call adopts the
   recorded plan instead of deciding again);
2. write the chain document with `embedding_state: pending` (new chain: deterministic id from the
   segment id, insert-if-absent; merge: guarded by the chain's version and its segment_ids);
3. upsert the embedding in Milvus (idempotent by chain id);
4. set `embedding_state: indexed` (only indexed chains are searched or merged into);
5. point the segment's events at the chain, then mark the record done.

Every step is idempotent, so a retry simply runs the plan again from the top. A rejected segment
writes no chain and no embedding: its events are marked `formation: rejected` and the record keeps
the scores and the reason.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import numpy as np
from opentelemetry import trace

from athena.config import Settings
from athena.embeddings import Embedder, adopt_event_embeddings
from athena.errors import FieldViolation, InvalidArgument, RetryableError
from athena.events import doc_to_event, timestamp_of
from athena.internal.v1 import formation_pb2
from athena.llm import LLMClient
from athena.metrics import CHAIN_HEAT, FORMATION_OUTCOMES, FORMATION_SECONDS
from athena.text import tokens
from athena.tracing import tracer
from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.analysis import SMALL_TALK, Analysis, Entity, Topic, analyze
from athena_formation.forming.merge import MergeCandidate, choose_merge, words
from athena_formation.forming.profile_facts import fact_fields, merged_facts
from athena_formation.forming.quality_gate import QualityReport, assess_quality
from athena_formation.lifecycle.heat import HeatModel, importance, lifecycle_of
from athena_formation.search.lexicon import chain_lexicon, lexicon_length, merge_lexicons
from athena_formation.store.chain_agents import agents_key, chain_agents, with_agent
from athena_formation.store.chain_store import ChainStore, cutoff, epoch, from_epoch
from athena_formation.store.lexical_index import LexicalIndex, LexiconRow, chain_span, fact_texts
from athena_formation.store.vector_index import VectorIndex

__all__ = ["ChainFormer", "chain_vector", "key_phrases", "new_chain_id"]

log = logging.getLogger("athena.formation")

_ACTIVITY_TYPES = {memory_pb2.EVENT_TYPE_THOUGHT, memory_pb2.EVENT_TYPE_ACTION, memory_pb2.EVENT_TYPE_OBSERVATION}
_MAX_ANALYSED_EVENTS = 200


def new_chain_id(segment_id: str) -> str:
    return "ch_" + hashlib.sha256(segment_id.encode()).hexdigest()[:32]


_EVENTS_WEIGHT, _SUMMARY_WEIGHT, _KEY_PHRASES_WEIGHT = 0.7, 0.2, 0.1
_KEY_PHRASE_ENTITIES = 15


def chain_vector(
    event_vectors: np.ndarray,
    *,
    event_words: Sequence[int] | None = None,
    summary_vector: np.ndarray | None = None,
    key_phrase_vector: np.ndarray | None = None,
) -> np.ndarray:
    """A chain's one embedding: 0.7 x the mean of its events' embeddings, each weighted by the square
    root of its word count (an "ok, thanks" says less about the chain than a paragraph does), + 0.2 x
    its summary's + 0.1 x its key phrases' (topic, subtopics, entities: what people search by).
    Missing parts leave the others' weights as they are; the result is normalized."""
    weights = (
        np.sqrt(np.maximum(1, np.asarray(event_words, dtype=np.float64)))
        if event_words is not None
        else np.ones(len(event_vectors))
    )
    mean = (event_vectors * weights[:, None]).sum(axis=0)
    mean /= np.linalg.norm(mean) or 1.0
    out = _EVENTS_WEIGHT * mean
    for weight, vector in ((_SUMMARY_WEIGHT, summary_vector), (_KEY_PHRASES_WEIGHT, key_phrase_vector)):
        if vector is not None:
            out = out + weight * vector
    out /= np.linalg.norm(out) or 1.0
    return out.astype(np.float32)


def key_phrases(*, topic: str, subtopics: Sequence[str], entities: Sequence[str]) -> str:
    """The names a chain is searched by, as one text: topic, subtopics and its first entities."""
    names = [topic] if topic and topic != SMALL_TALK else []
    return ", ".join([*names, *subtopics, *entities[:_KEY_PHRASE_ENTITIES]])


def activity_share(events: Sequence[memory_pb2.Event]) -> float:
    return min(1.0, 2.0 * sum(e.type in _ACTIVITY_TYPES for e in events) / max(1, len(events)))


def _analysis_doc(a: Analysis) -> dict[str, Any]:
    return {
        "topic": a.main_topic.name,
        "topic_confidence": a.main_topic.confidence,
        "subtopics": [asdict(t) for t in a.subtopics],
        "entities": [asdict(e) for e in a.entities],
        "summary": a.summary,
        "analysis_path": a.path,
    }


def _analysis_from(doc: Mapping[str, Any]) -> Analysis:
    return Analysis(
        main_topic=Topic(doc["topic"], doc.get("topic_confidence", 1.0)),
        subtopics=tuple(Topic(**t) for t in doc.get("subtopics", [])),
        entities=tuple(Entity(**e) for e in doc.get("entities", [])),
        summary=doc["summary"],
        path=doc.get("analysis_path", "heuristic"),
    )


def _quality_doc(q: QualityReport) -> dict[str, float]:
    return {
        "coherence": q.coherence,
        "completeness": q.completeness,
        "relevance": q.relevance,
        "engagement": q.engagement,
        "cognitive_depth": q.cognitive_depth,
        "overall": q.overall,
    }


def validate_segment(segment: formation_pb2.Segment) -> None:
    violations = []
    if not segment.id:
        violations.append(FieldViolation("segment.id", "is required"))
    s = segment.scope
    for name in ("tenant_id", "user_id", "agent_id"):
        if not getattr(s, name):
            violations.append(FieldViolation(f"segment.scope.{name}", "is required"))
    if not segment.events:
        violations.append(FieldViolation("segment.events", "must not be empty"))
    for i, e in enumerate(segment.events):
        if (e.scope.tenant_id, e.scope.user_id, e.scope.agent_id) != (s.tenant_id, s.user_id, s.agent_id):
            violations.append(FieldViolation(f"segment.events[{i}].scope", "must equal the segment's scope"))
            break
    if violations:
        raise InvalidArgument(violations)


class ChainFormer:
    def __init__(
        self,
        *,
        settings: Settings,
        store: ChainStore,
        vectors: VectorIndex,
        embedder: Embedder,
        llm: LLMClient | None,
        lexical: LexicalIndex | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.vectors = vectors
        self.lexical = lexical
        """The searched users' lexical indexes, told of every chain made searchable here."""
        self.embedder = embedder
        self.llm = llm
        self.heat = HeatModel(half_life_hours=settings.heat_half_life_hours, recall_weight=settings.heat_recall_weight)
        self.step_hook: Callable[[str], Awaitable[None]] | None = None
        """Called at each step boundary (planning, plan_recorded, chain_written, vector_written, indexed, events_marked):
        fault-injection tests raise here to stop formation between two writes."""

    async def _step(self, name: str) -> None:
        if self.step_hook is not None:
            await self.step_hook(name)

    async def form(
        self, segment: formation_pb2.Segment, *, embeddings: formation_pb2.EventEmbeddings | None = None
    ) -> formation_pb2.FormChainResponse:
        """`embeddings`: vectors of the events' texts the caller already had (cognition's); those of
        this embedder's model go into its cache, so the texts are not encoded again."""
        validate_segment(segment)
        with FORMATION_SECONDS.time(), tracer().start_as_current_span("formation.form_chain") as span:
            handed = adopt_event_embeddings(self.embedder, embeddings, segment.events) if embeddings else 0
            span.set_attributes(
                {
                    "athena.segment.id": segment.id,
                    "athena.segment.events": len(segment.events),
                    "athena.segment.embeddings_handed": handed,
                }
            )
            response = await self._form(segment)
            span.set_attributes(
                {
                    "athena.formation.outcome": formation_pb2.FormOutcome.Name(response.outcome),
                    "athena.chain.id": response.chain_id,
                }
            )
            return response

    async def _form(self, segment: formation_pb2.Segment) -> formation_pb2.FormChainResponse:
        record = await self.store.outcome(segment.id)
        if record is None:
            await self._step("planning")
            record = await self.store.record_plan(await self._plan(segment))
            await self._step("plan_recorded")
        if record.get("state") != "done":
            await self._carry_out(segment, record)
            record = await self.store.outcome(segment.id) or record
        return _response(record)

    async def _analyse(self, events: Sequence[memory_pb2.Event]) -> tuple[Analysis, np.ndarray]:
        s = self.settings
        vectors = await self.embedder.embed([e.content for e in events])
        with tracer().start_as_current_span("formation.analysis") as span:
            analysis = await analyze(
                events,
                llm=self.llm,
                max_topics=s.topic_analysis_max_topics,
                min_confidence=s.topic_analysis_min_confidence,
                llm_timeout=s.topic_analysis_llm_timeout,
                embedder=self.embedder,
                # Every event of a segment or chain has its scope: the LLM call goes to that tenant's budget.
                tenant_id=(events[0].scope.tenant_id or None) if events else None,
            )
            span.set_attributes(
                {"athena.analysis.path": analysis.path, "athena.analysis.topic": analysis.main_topic.name[:100]}
            )
        return analysis, vectors

    async def _embedding(
        self,
        events: Sequence[memory_pb2.Event],
        *,
        summary: str,
        topic: str,
        subtopics: Sequence[str],
        entities: Sequence[str],
    ) -> np.ndarray:
        phrases = key_phrases(topic=topic, subtopics=subtopics, entities=entities)
        vectors = await self.embedder.embed([e.content for e in events] + [t for t in (summary, phrases) if t])
        n = len(events)
        extra = iter(vectors[n:])
        return chain_vector(
            vectors[:n],
            event_words=[len(tokens(e.content)) for e in events],  # any script: CJK counts its bigrams
            summary_vector=next(extra) if summary else None,
            key_phrase_vector=next(extra) if phrases else None,
        )

    async def chain_embedding(self, doc: Mapping[str, Any], events: Sequence[memory_pb2.Event]) -> np.ndarray:
        """A stored chain's embedding from these events and its summary, topic, subtopics and entities
        as the document has them now (a corrected summary included)."""
        return await self._embedding(
            events,
            summary=doc.get("summary", ""),
            topic=doc.get("topic", ""),
            subtopics=[t["name"] for t in doc.get("subtopics", [])],
            entities=[e["text"] for e in doc.get("entities", [])],
        )

    async def index_chain(self, doc: Mapping[str, Any], vector: np.ndarray) -> None:
        """Make a stored chain searchable with this embedding: Milvus, then `embedding_state: indexed`,
        then the lexical index."""
        scope = memory_pb2.Scope(tenant_id=doc["tenant_id"], user_id=doc["user_id"], agent_id=doc["agent_id"])
        await self._index(
            doc["_id"],
            scope,
            vector,
            lexicon=doc.get("lexicon", {}),
            event_count=int(doc.get("event_count", 0)),
            agents=chain_agents(doc),
            span=chain_span(doc),
            told=doc,
        )

    async def carry_out(self, segment: formation_pb2.Segment, record: Mapping[str, Any]) -> None:
        """Carry out a recorded plan (AdmitRejection records one for a rejected segment)."""
        await self._carry_out(segment, record)

    async def analyse(self, events: Sequence[memory_pb2.Event]) -> dict[str, Any]:
        """The analysis of these events as a formation record stores it."""
        analysis, _ = await self._analyse(events)
        return _analysis_doc(analysis)

    async def _analysis_embedding(self, events: Sequence[memory_pb2.Event], analysis: Analysis) -> np.ndarray:
        return await self._embedding(
            events,
            summary=analysis.summary,
            topic=analysis.main_topic.name,
            subtopics=[t.name for t in analysis.subtopics],
            entities=[e.text for e in analysis.entities],
        )

    async def _plan(self, segment: formation_pb2.Segment) -> dict[str, Any]:
        s = self.settings
        events = list(segment.events)
        analysis, vectors = await self._analyse(events)
        with tracer().start_as_current_span("formation.quality_gate") as span:
            quality = assess_quality(
                events,
                analysis,
                mode=s.memory_os_mtm_quality_mode.value,
                min_score=s.mtm_quality_min_score,
                embeddings=vectors,
            )
            span.set_attributes(
                {
                    "athena.quality.overall": quality.overall,
                    "athena.quality.passed": quality.passed,
                    "athena.quality.reason": quality.reason,
                }
            )
        scope = segment.scope
        record: dict[str, Any] = {
            "_id": segment.id,
            "tenant_id": scope.tenant_id,
            "user_id": scope.user_id,
            "agent_id": scope.agent_id,
            "state": "planned",
            "event_ids": [e.id for e in events],
            "analysis": _analysis_doc(analysis),
            "quality": _quality_doc(quality),
            **fact_fields(events),
            "created_at": epoch(datetime.now(UTC)),
        }
        if not quality.passed:
            return {**record, "outcome": "rejected", "chain_id": "", "reason": quality.reason}

        seg_vec = await self._analysis_embedding(events, analysis)
        first_at = timestamp_of(events[0].timestamp)
        candidates = await self.store.merge_candidates(
            tenant_id=scope.tenant_id,
            user_id=scope.user_id,
            agent_id=None if s.session_merge_across_agents else scope.agent_id,
            since=cutoff(first_at, s.session_max_age_hours),
            limit=s.session_max_chains_per_user,
        )
        candidates = [c for c in candidates if with_agent(c, scope.agent_id) is not None]
        stored = await self.vectors.vectors([c["_id"] for c in candidates])
        decision = choose_merge(
            [
                MergeCandidate(
                    chain_id=c["_id"],
                    similarity=float(np.dot(seg_vec, stored[c["_id"]])),
                    entities=frozenset(e["text"].lower() for e in c.get("entities", [])),
                    topic_words=words([c.get("topic", ""), *(t["name"] for t in c.get("subtopics", []))]),
                    last_event_at=from_epoch(c["last_event_at"]),
                    event_count=int(c.get("event_count", 0)),
                )
                for c in candidates
                if c["_id"] in stored
            ],
            segment_entities=frozenset(e.text.lower() for e in analysis.entities),
            segment_topic_words=words([analysis.main_topic.name, *(t.name for t in analysis.subtopics)]),
            segment_first_event_at=first_at,
            segment_event_count=len(events),
            min_confidence=s.session_merge_min_confidence,
            similarity_threshold=s.session_similarity_threshold,
            max_chain_events=s.session_merge_max_chain_events,
        )
        merge: dict[str, float | str] = {
            "confidence": decision.confidence,
            "similarity": decision.similarity,
            "continuity": decision.continuity,
            "continues": decision.continues or "",
        }
        trace.get_current_span().add_event(
            "merge_decision", {**merge, "candidates": len(candidates), "merge_into": decision.chain_id or ""}
        )
        if decision.chain_id is not None:
            return {**record, "outcome": "merged", "chain_id": decision.chain_id, "reason": "", "merge": merge}
        return {**record, "outcome": "created", "chain_id": new_chain_id(segment.id), "reason": "", "merge": merge}

    async def _carry_out(self, segment: formation_pb2.Segment, record: Mapping[str, Any]) -> None:
        event_ids = [e.id for e in segment.events]
        outcome = record["outcome"]
        chain_id = record.get("chain_id", "")
        if outcome == "rejected":
            await self.store.event_log.mark(event_ids, {"formation": "rejected", "segment_id": segment.id})
        elif outcome == "created":
            await self._create(segment, record)
        else:
            chain_id, outcome = await self._merge(segment, record)
        if outcome != "rejected":
            await self.store.event_log.mark(
                event_ids, {"formation": "chained", "chain_id": chain_id, "segment_id": segment.id}
            )
        await self._step("events_marked")
        await self.store.finish(
            segment.id, {"finished_at": epoch(datetime.now(UTC)), "chain_id": chain_id, "outcome": outcome}
        )
        FORMATION_OUTCOMES.labels(outcome, record.get("reason") or "").inc()
        log.info("segment %s: %s %s", segment.id, outcome, chain_id or record.get("reason"))

    def _heat_fields(
        self,
        *,
        quality: Mapping[str, float],
        entity_count: int,
        activity: float,
        recall_count: int,
        last_accessed_at: datetime,
        now: datetime,
    ) -> dict[str, Any]:
        imp = importance(overall=quality["overall"], entity_count=entity_count, activity=activity)
        heat = self.heat.heat(importance=imp, recall_count=recall_count, last_accessed_at=last_accessed_at, now=now)
        CHAIN_HEAT.observe(heat)
        return {"importance": imp, "heat_score": heat, "lifecycle": lifecycle_of(heat)}

    async def _create(self, segment: formation_pb2.Segment, record: Mapping[str, Any]) -> None:
        chain_id = record["chain_id"]
        events = list(segment.events)
        analysis = _analysis_from(record["analysis"])
        continues = record.get("merge", {}).get("continues", "")
        now = datetime.now(UTC)
        words = _lexicon_fields(events)
        existing = await self.store.get(chain_id)
        if existing is None:
            doc = {
                "_id": chain_id,
                "tenant_id": segment.scope.tenant_id,
                "user_id": segment.scope.user_id,
                "agent_id": segment.scope.agent_id,
                "agent_ids": [segment.scope.agent_id],
                **record["analysis"],
                "quality": record["quality"],
                "lasting_fact": bool(record.get("lasting_fact", False)),
                "updates_fact": bool(record.get("updates_fact", False)),
                "profile_facts": list(record.get("profile_facts", [])),
                "moment_facts": list(record.get("moment_facts", [])),
                "recall_count": 0,
                "recall_strength": 0.0,
                "status": "active",
                "embedding_state": "pending",
                "created_at": epoch(now),
                "updated_at": epoch(now),
                "last_accessed_at": epoch(now),
                "first_event_at": epoch(timestamp_of(events[0].timestamp)),
                "last_event_at": epoch(timestamp_of(events[-1].timestamp)),
                "event_ids": [e.id for e in events],
                **words,
                "segment_ids": [segment.id],
                "event_count": len(events),
                "merge_count": 0,
                "version": 0,
                "activity": activity_share(events),
                "continues_chain_id": continues,
                **self._heat_fields(
                    quality=record["quality"],
                    entity_count=len(analysis.entities),
                    activity=activity_share(events),
                    recall_count=0,
                    last_accessed_at=now,
                    now=now,
                ),
            }
            await self.store.insert_new(doc)
            await self._step("chain_written")
        if existing is None or existing.get("embedding_state") != "indexed":
            await self._index(
                chain_id,
                segment.scope,
                await self._analysis_embedding(events, analysis),
                lexicon=words["lexicon"],
                event_count=len(events),
                span=(epoch(timestamp_of(events[0].timestamp)), epoch(timestamp_of(events[-1].timestamp))),
                told=existing or record,
            )
        if continues:
            await self._warm_continued(continues, now)

    async def _warm_continued(self, chain_id: str, now: datetime) -> None:
        """A returning topic whose chain is full still counts as an access of that chain (idempotent)."""
        doc = await self.store.get(chain_id)
        if doc is None or doc.get("status") != "active":
            return
        heat = self.heat.heat(
            importance=float(doc.get("importance", 0.5)),
            recall_count=int(doc.get("recall_count", 0)),
            last_accessed_at=now,
            now=now,
        )
        await self.store.set_fields(
            chain_id, {"last_accessed_at": epoch(now), "heat_score": heat, "lifecycle": lifecycle_of(heat)}
        )

    async def _index(
        self,
        chain_id: str,
        scope: memory_pb2.Scope,
        vector: np.ndarray,
        *,
        lexicon: Mapping[str, int],
        event_count: int,
        agents: Sequence[str] = (),
        span: tuple[float | None, float | None] = (None, None),
        told: Mapping[str, Any] | None = None,
    ) -> None:
        """`agents`: the chain's agents (chain_agents.py); none given: the scope's agent. `span`: the
        epoch seconds of its first and last event, for the dates a search names. `told`: the chain
        document or formation record whose `profile_facts` and `moment_facts` it keeps
        (LexiconRow.facts and moments)."""
        key = agents_key(agents or [scope.agent_id])
        await self.vectors.upsert(
            chain_id=chain_id, tenant_id=scope.tenant_id, user_id=scope.user_id, agent_id=key, embedding=vector
        )
        await self._step("vector_written")
        await self.store.set_fields(chain_id, {"embedding_state": "indexed"})
        if self.lexical is not None:
            row = LexiconRow(
                chain_id=chain_id,
                agent_id=key,
                lexicon=lexicon,
                event_count=event_count,
                first_event_at=span[0],
                last_event_at=span[1],
                facts=fact_texts((told or {}).get("profile_facts") or ()),
                moments=fact_texts((told or {}).get("moment_facts") or ()),
            )
            # Into the embedder's cache, which a search's shares (the same model by default): a search
            # embeds the user's newest facts (fact_evidence.FACTS_NEWEST), and a sentence of a longer
            # message was not embedded on its own yet.
            if row.facts or row.moments:
                await self.embedder.embed([*row.facts, *row.moments])
            self.lexical.put(scope.tenant_id, scope.user_id, row)
        await self._step("indexed")

    async def _merge(self, segment: formation_pb2.Segment, record: Mapping[str, Any]) -> tuple[str, str]:
        """Returns (chain id, outcome): the target may have been erased since the plan was made."""
        chain_id = record["chain_id"]
        chain = await self.store.get(chain_id)
        agents = with_agent(chain, segment.scope.agent_id) if chain is not None else None
        if chain is None or chain.get("status") != "active" or agents is None:
            # Archived or erased since the plan (or its agents grew past what the indexes hold): the
            # segment becomes a chain of its own.
            fresh_id = new_chain_id(segment.id)
            await self._create(segment, {**record, "chain_id": fresh_id})
            return fresh_id, "created"
        new_events = list(segment.events)
        already = segment.id in chain.get("segment_ids", [])
        old_events = [doc_to_event(d) for d in await self.store.event_log.docs(chain.get("event_ids", []))]
        new_ids = {n.id for n in new_events}
        combined = old_events if already else [e for e in old_events if e.id not in new_ids] + new_events
        if not already:
            analysed = combined[-_MAX_ANALYSED_EVENTS:]
            analysis, _ = await self._analyse(analysed)
            seg_analysis = _analysis_from(record["analysis"])
            entities = _union_entities(
                chain.get("entities", []),
                [asdict(e) for e in analysis.entities],
                [asdict(e) for e in seg_analysis.entities],
            )
            now = datetime.now(UTC)
            quality = _merged_quality(
                chain.get("quality", {}), int(chain.get("event_count", 0)), record["quality"], len(new_events)
            )
            updates = {
                **_analysis_doc(analysis),
                "agent_ids": agents,
                "entities": entities,
                "quality": quality,
                "lasting_fact": bool(chain.get("lasting_fact")) or bool(record.get("lasting_fact", False)),
                "updates_fact": bool(chain.get("updates_fact")) or bool(record.get("updates_fact", False)),
                "profile_facts": merged_facts(chain.get("profile_facts", []), record.get("profile_facts", [])),
                "moment_facts": merged_facts(chain.get("moment_facts", []), record.get("moment_facts", [])),
                "embedding_state": "pending",
                "updated_at": epoch(now),
                "last_accessed_at": epoch(now),
                "last_event_at": max(float(chain["last_event_at"]), epoch(timestamp_of(new_events[-1].timestamp))),
                "activity": activity_share(combined),
                # The chain's words plus the segment's (the chain's own events may be gone from the log).
                **_lexicon_fields(new_events, adding_to=chain.get("lexicon")),
                **self._heat_fields(
                    quality=quality,
                    entity_count=len(entities),
                    activity=activity_share(combined),
                    recall_count=int(chain.get("recall_count", 0)),
                    last_accessed_at=now,
                    now=now,
                ),
            }
            updates = self._keeping_edits(chain, updates, now)
            if not await self.store.apply_merge(chain, segment.id, updates, [e.id for e in new_events]):
                # Lost a race with another write to the chain: plan again from the top on the retry.
                raise _RetryMerge(f"chain {chain_id} changed while merging")
            await self._step("chain_written")
        doc = await self.store.get(chain_id) or chain
        vector = await self.chain_embedding(doc, combined)
        await self._index(
            chain_id,
            segment.scope,
            vector,
            lexicon=doc.get("lexicon", {}),
            event_count=int(doc.get("event_count", len(combined))),
            agents=chain_agents(doc),
            span=chain_span(doc),
            told=doc,
        )
        return chain_id, "merged"

    def _keeping_edits(self, chain: Mapping[str, Any], updates: dict[str, Any], now: datetime) -> dict[str, Any]:
        """A merge's new analysis without what a person corrected (UpdateChain's edited_fields): a
        corrected summary or topic stays, and a set importance keeps weighing in the heat."""
        edited = set(chain.get("edited_fields", []))
        out = {k: v for k, v in updates.items() if k not in edited or k == "importance"}
        return self._keeping_importance(chain, out, last_accessed_at=now, now=now)

    def _keeping_importance(
        self, chain: Mapping[str, Any], fields: dict[str, Any], *, last_accessed_at: datetime, now: datetime
    ) -> dict[str, Any]:
        """The fields with the chain's importance (and the heat it gives) when a person set it."""
        if "importance" not in chain.get("edited_fields", []):
            return fields
        imp = float(chain.get("importance", fields["importance"]))
        heat = self.heat.heat(
            importance=imp,
            recall_count=int(chain.get("recall_count", 0)),
            last_accessed_at=last_accessed_at,
            now=now,
        )
        return {**fields, "importance": imp, "heat_score": heat, "lifecycle": lifecycle_of(heat)}

    async def reform(
        self, chain: Mapping[str, Any], events: Sequence[memory_pb2.Event], *, segment_ids: Sequence[str]
    ) -> bool:
        """Re-form a chain, as it was read, from these of its events alone (an erasure took the others):
        analysis, scores, words and embedding anew; its id, recalls and lifecycle stay. The write is
        guarded by the chain's version: False when it changed since it was read (read it again)."""
        s = self.settings
        analysis, vectors = await self._analyse(list(events)[-_MAX_ANALYSED_EVENTS:])
        quality = _quality_doc(
            assess_quality(
                events,
                analysis,
                mode=s.memory_os_mtm_quality_mode.value,
                min_score=s.mtm_quality_min_score,
                embeddings=vectors,
            )
        )
        now = datetime.now(UTC)
        words = _lexicon_fields(events)
        fields = {
            **_analysis_doc(analysis),
            "quality": quality,
            # What the erasure left decides whether the chain still states a lasting fact.
            **fact_fields(events),
            "event_ids": [e.id for e in events],
            "segment_ids": list(segment_ids),
            "event_count": len(events),
            "merge_count": max(0, len(segment_ids) - 1),
            "first_event_at": epoch(timestamp_of(events[0].timestamp)),
            "last_event_at": epoch(timestamp_of(events[-1].timestamp)),
            "activity": activity_share(events),
            **words,
            "agent_ids": _agents_of(events, first=chain.get("agent_id", "")),
            # A corrected summary or topic may tell of the erased events: the new analysis replaces it.
            "edited_fields": [f for f in chain.get("edited_fields", []) if f == "importance"],
            "updated_at": epoch(now),
            **self._heat_fields(
                quality=quality,
                entity_count=len(analysis.entities),
                activity=activity_share(events),
                recall_count=int(chain.get("recall_count", 0)),
                last_accessed_at=from_epoch(chain.get("last_accessed_at")),
                now=now,
            ),
        }
        fields = self._keeping_importance(
            chain, fields, last_accessed_at=from_epoch(chain.get("last_accessed_at")), now=now
        )
        active = chain.get("status") == "active"
        if active:
            fields["embedding_state"] = "pending"
        else:
            fields["lifecycle"] = chain.get(
                "lifecycle", fields["lifecycle"]
            )  # archived: stays out of search, unembedded
        if not await self.store.rewrite(chain, fields):
            return False
        if not active:
            return True
        scope = memory_pb2.Scope(tenant_id=chain["tenant_id"], user_id=chain["user_id"], agent_id=chain["agent_id"])
        vector = await self._analysis_embedding(events, analysis)
        await self._index(
            chain["_id"],
            scope,
            vector,
            lexicon=words["lexicon"],
            event_count=len(events),
            agents=fields["agent_ids"],
            span=chain_span(fields),
            told=fields,
        )
        return True


def _agents_of(events: Sequence[memory_pb2.Event], *, first: str) -> list[str]:
    """The agents of these events, `first` first when it is among them, else in order of appearance."""
    agents = list(dict.fromkeys(e.scope.agent_id for e in events))
    return sorted(agents, key=lambda a: a != first)


def _lexicon_fields(
    events: Sequence[memory_pb2.Event], *, adding_to: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The words the chain is found by (lexicon.py): over these events, added to a lexicon it already has."""
    lexicon = chain_lexicon(e.content for e in events)
    if adding_to:
        lexicon = merge_lexicons(adding_to, lexicon)
    return {"lexicon": lexicon, "lexicon_terms": lexicon_length(lexicon)}


class _RetryMerge(RetryableError):
    pass


def _union_entities(*lists: Sequence[Mapping[str, str]], limit: int = 100) -> list[dict[str, str]]:
    seen: dict[str, dict[str, str]] = {}
    for entities in lists:
        for e in entities:
            seen.setdefault(e["text"].lower(), {"text": e["text"], "kind": e["kind"]})
    return list(seen.values())[:limit]


def _merged_quality(a: Mapping[str, float], na: int, b: Mapping[str, float], nb: int) -> dict[str, float]:
    """Event-weighted mean of the two parts' scores; overall recomputed from the seed's weights."""
    total = max(1, na + nb)
    keys = ("coherence", "completeness", "relevance", "engagement", "cognitive_depth")
    out = {k: (float(a.get(k, 0.0)) * na + float(b.get(k, 0.0)) * nb) / total for k in keys}
    out["overall"] = 0.4 * out["coherence"] + 0.3 * out["completeness"] + 0.3 * out["relevance"]
    return out


def _response(record: Mapping[str, Any]) -> formation_pb2.FormChainResponse:
    outcome = {
        "created": formation_pb2.FORM_OUTCOME_CREATED,
        "merged": formation_pb2.FORM_OUTCOME_MERGED,
        "rejected": formation_pb2.FORM_OUTCOME_REJECTED,
    }[record["outcome"]]
    return formation_pb2.FormChainResponse(
        outcome=outcome,
        chain_id=record.get("chain_id", ""),
        reason=record.get("reason", ""),
        quality=memory_pb2.QualityScores(**record.get("quality", {})),
    )
