"""Finding memories: SearchMemory (hybrid: embedding and words, ranking.py), GetChain, ListChains. A recall warms the chains it returns."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from datetime import datetime, timezone
from typing import Any, Mapping

from athena.embeddings import Embedder
from athena.errors import InvalidArgument, FieldViolation, NotFound
from athena.memory.v1 import memory_pb2
from athena.metrics import CHAIN_HEAT, SEARCH_HITS
from athena_formation.chain_docs import chain_to_proto
from athena_formation.chain_store import ChainStore, epoch
from athena_formation.heat import HeatModel, lifecycle_of, recall_strength
from athena_formation.lexical_index import LexicalIndex, LexicalScores, UserLexicon
from athena_formation.lexicon import query_terms, terms
from athena_formation.ranking import RankedChain, Ranking
from athena_formation.vector_index import VectorIndex

__all__ = ["Recall", "matched_terms"]

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]{2,}")
_STOP = frozenset("the and for with that this what when where which who how are was were you your have has had did does can could would should about from into they them their there then than".split())
_STATUS_NAMES = {memory_pb2.CHAIN_STATUS_ACTIVE: "active", memory_pb2.CHAIN_STATUS_ARCHIVED: "archived"}


def matched_terms(query: str, doc: Mapping[str, Any]) -> list[str]:
    """The query's words found in the chain: in its lexicon (by their stems), or for a chain without
    one, in its topic, summary and entities."""
    lexicon = doc.get("lexicon")
    text = "" if lexicon else " ".join([doc.get("topic", ""), doc.get("summary", ""), *(e["text"] for e in doc.get("entities", []))]).lower()
    found: list[str] = []
    for w in _WORD.findall(query):
        lw = w.lower()
        if lw in _STOP or lw in found:
            continue
        if (lexicon and any(t in lexicon for t in terms(lw))) or (not lexicon and lw in text):
            found.append(lw)
    return found


class Recall:
    def __init__(
        self,
        *,
        store: ChainStore,
        vectors: VectorIndex,
        embedder: Embedder,
        heat: HeatModel,
        lexical: LexicalIndex | None = None,
        ranking: Ranking | None = None,
    ) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.heat = heat
        self.lexical = lexical
        self.ranking = ranking or Ranking()

    async def search(self, request: memory_pb2.SearchMemoryRequest) -> memory_pb2.SearchMemoryResponse:
        """Hybrid search (ranking.py): the best chains by cosine and by the query's words, each scored
        on both and on its size, then hydrated from MongoDB, filtered and warmed."""
        scope = request.scope
        limit = request.limit or 5
        query_vec = (await self.embedder.embed([request.query]))[0]
        allowed: set[str] | None = None
        if request.metadata_filters:
            allowed = await self.store.events_with_metadata(
                tenant_id=scope.tenant_id, user_id=scope.user_id, filters=dict(request.metadata_filters)
            )
        agent_id = scope.agent_id or None
        pool = self.ranking.candidates(limit) if allowed is None else min(1000, max(self.ranking.candidates(limit), limit * 4 + 20))
        vector_hits = await self.vectors.search(query_vec, tenant_id=scope.tenant_id, user_id=scope.user_id, agent_id=agent_id, limit=pool)
        similarity = {h.chain_id: h.similarity for h in vector_hits}
        lexicon, lexical = await self._lexical(request.query, scope)
        if lexical is not None:
            # Found by their words alone: scored on their embedding too (a chain without one is not searchable).
            word_hits = [c for c, _ in lexical.top(pool) if c not in similarity]
            similarity.update(await self.vectors.similarities(query_vec, word_hits, tenant_id=scope.tenant_id, user_id=scope.user_id))
        provisional = sorted(
            (
                self._rank(chain_id, sim, lexical, lexicon.event_count(chain_id) if lexicon is not None else None)
                for chain_id, sim in similarity.items()
                if allowed is None or chain_id in allowed
            ),
            key=lambda r: -r.score,
        )
        # Over-fetch: a few may be dropped below (archived meanwhile, another agent's, under the threshold).
        provisional = provisional[: limit + 10 if allowed is None else min(1000, limit * 4 + 20)]
        docs = await self.store.get_many([r.chain_id for r in provisional])
        ranked = sorted(
            (self._rank(r.chain_id, r.similarity, lexical, int(docs[r.chain_id].get("event_count", 1))) for r in provisional if r.chain_id in docs),
            key=lambda r: -r.score,
        )
        out = []
        for hit in ranked:
            doc = docs[hit.chain_id]
            if doc.get("status") != "active" or doc.get("embedding_state") != "indexed" or doc.get("tenant_id") != scope.tenant_id or doc.get("user_id") != scope.user_id:
                continue
            if scope.agent_id and doc.get("agent_id") != scope.agent_id:
                continue
            if request.HasField("similarity_threshold") and hit.similarity < request.similarity_threshold:
                continue
            out.append((hit, doc))
            if len(out) == limit:
                break
        now = datetime.now(timezone.utc)
        SEARCH_HITS.observe(len(out))
        response = memory_pb2.SearchMemoryResponse()
        # The warm-ups are independent writes: one round of them, not one after another.
        warmed_docs = await asyncio.gather(*(self._warm(doc, now) for _, doc in out))
        for (hit, doc), warmed in zip(out, warmed_docs):
            terms = matched_terms(request.query, doc)
            why = f"cosine similarity {hit.similarity:.2f} to the chain's embedding"
            if terms:
                why += f"; words {', '.join(terms[:8])} (lexical score {hit.lexical:.2f})"
            response.hits.append(
                memory_pb2.SearchHit(
                    chain=chain_to_proto(warmed), similarity=hit.similarity, why=why, matched_terms=terms,
                    lexical_score=hit.lexical, score=hit.score,
                )
            )
        return response

    def _rank(self, chain_id: str, similarity: float, lexical: LexicalScores | None, event_count: int | None) -> RankedChain:
        return self.ranking.rank(
            chain_id=chain_id, similarity=similarity, lexical=lexical.of(chain_id) if lexical is not None else 0.0, event_count=event_count or 1
        )

    async def _lexical(self, query: str, scope: memory_pb2.Scope) -> tuple[UserLexicon | None, LexicalScores | None]:
        if self.lexical is None or self.ranking.lexical_weight <= 0:
            return None, None
        lexicon = await self.lexical.user(scope.tenant_id, scope.user_id)
        return lexicon, lexicon.query(query_terms(query), agent_id=scope.agent_id or None)

    async def _warm(self, doc: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        recalls = int(doc.get("recall_count", 0)) + 1
        heat = self.heat.heat(importance=float(doc.get("importance", 0.5)), recall_count=recalls, last_accessed_at=now, now=now)
        CHAIN_HEAT.observe(heat)
        fields = {"last_accessed_at": epoch(now), "recall_strength": recall_strength(recalls), "heat_score": heat, "lifecycle": lifecycle_of(heat)}
        await self.store.record_recall(doc["_id"], fields)
        return {**doc, **fields, "recall_count": recalls}

    async def get_chain(self, request: memory_pb2.GetChainRequest) -> memory_pb2.Chain:
        doc = await self.store.get(request.chain_id)
        scope = request.scope
        # Another tenant's or user's chain is indistinguishable from a missing one.
        if (
            doc is None
            or doc.get("tenant_id") != scope.tenant_id
            or doc.get("user_id") != scope.user_id
            or (scope.agent_id and doc.get("agent_id") != scope.agent_id)
        ):
            raise NotFound(f"chain {request.chain_id!r} not found")
        return chain_to_proto(doc)

    async def list_chains(self, request: memory_pb2.ListChainsRequest) -> memory_pb2.ListChainsResponse:
        scope = request.scope
        size = request.page_size or 20
        offset = _decode_token(request.page_token)
        query: dict[str, Any] = {"tenant_id": scope.tenant_id, "user_id": scope.user_id}
        if scope.agent_id:
            query["agent_id"] = scope.agent_id
        if request.status in _STATUS_NAMES:
            query["status"] = _STATUS_NAMES[request.status]
        docs = await self.store.list(query=query, skip=offset, limit=size + 1)
        more = len(docs) > size
        return memory_pb2.ListChainsResponse(
            chains=[chain_to_proto(d) for d in docs[:size]],
            next_page_token=_encode_token(offset + size) if more else "",
        )


_MAX_OFFSET = 2**31 - 1


def _encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


def _decode_token(token: str) -> int:
    if not token:
        return 0
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(token.encode()))["o"])
        # A forged offset past int64 overflows MongoDB's skip (INTERNAL); no real page is past int32.
        if not 0 <= offset <= _MAX_OFFSET:
            raise ValueError
        return offset
    except Exception:
        raise InvalidArgument([FieldViolation("page_token", "is not a token this service issued")]) from None


