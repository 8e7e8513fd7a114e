"""Finding memories: SearchMemory (hybrid: embedding and words, ranking.py; the chains and the events
in no chain yet, open_events.py), GetChain, ListChains. A recall warms the chains it returns."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from athena.embeddings import Embedder, normalize_rows
from athena.internal.v1 import formation_pb2
from athena.metrics import CHAIN_HEAT, SEARCH_HITS, SEARCH_STEP_SECONDS
from athena.text import found_words
from athena_client.memory.v1 import memory_pb2
from athena_formation.curation.owned import owned_chain
from athena_formation.lifecycle.heat import HeatModel, lifecycle_of, recall_strength
from athena_formation.page_tokens import decode_offset, encode_offset
from athena_formation.search.chain_message import chain_to_proto
from athena_formation.search.fact_evidence import FACT_EXPANSION_WEIGHT, FACTS_NEWEST, best_facts, fact_scores, lift
from athena_formation.search.fact_kinds import asked_kinds, asks_of_the_user_alone, expansion_kinds, the_users_own
from athena_formation.search.hit_prefetch import HitPrefetch
from athena_formation.search.lexicon import query_terms, terms
from athena_formation.search.newest_first import SCORED_FACT, newest_first, open_turn_fact
from athena_formation.search.open_events import (
    OPEN_EMBEDDED_TURNS,
    OPEN_NEWEST_TURNS,
    EventTerms,
    OpenTurn,
    best_turns,
    lexical_scores,
    newest_turns,
    open_turns,
    rank_turns,
    tells_fact,
    turn_as_chain,
    turn_spans,
)
from athena_formation.search.query_period import Named, query_periods, told_in, told_in_each
from athena_formation.search.ranking import RankedChain, Ranking
from athena_formation.search.recall_warm_ups import WarmUps
from athena_formation.store.chain_agents import holds_agent
from athena_formation.store.chain_store import ChainStore, agent_query, epoch
from athena_formation.store.lexical_index import (
    Corpus,
    LexicalIndex,
    LexicalScores,
    ToldFact,
    UserLexicon,
    chain_span,
)
from athena_formation.store.vector_index import VectorIndex
from athena_formation.text.english_words import is_english_text

__all__ = ["TOLD_WHY", "Recall", "matched_terms"]

TOLD_WHY = "; told at a date the query names"
"""Ends a hit's `why` when its score was lifted by the dates the query names (ranking.py)."""

_STATUS_NAMES = {memory_pb2.CHAIN_STATUS_ACTIVE: "active", memory_pb2.CHAIN_STATUS_ARCHIVED: "archived"}


def _searchable(doc: Mapping[str, Any], scope: memory_pb2.Scope) -> bool:
    """An active, indexed chain of the scope (the tenant and user always; the agent when given)."""
    return (
        doc.get("status") == "active"
        and doc.get("embedding_state") == "indexed"
        and doc.get("tenant_id") == scope.tenant_id
        and doc.get("user_id") == scope.user_id
        and (not scope.agent_id or holds_agent(doc, scope.agent_id))
    )


def matched_terms(query: str, doc: Mapping[str, Any], chain_terms: set[str] | None) -> list[str]:
    """The query's words (as written) found in the chain: by their terms among `chain_terms` (the
    query terms its lexicon holds), or for a chain the lexical index does not know, in its topic,
    summary and entities. Words of any script (athena.text.found_words: CJK by its found stretches)."""
    if chain_terms is not None:
        return found_words(query, lambda word: any(t in chain_terms for t in terms(word)))
    text = " ".join(
        [doc.get("topic", ""), doc.get("summary", ""), *(e["text"] for e in doc.get("entities", []))]
    ).casefold()
    return found_words(query, lambda word: word in text)


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
        self.warm_ups = WarmUps(store)
        """The recalls' warm-ups, written behind the answers (recall_warm_ups.py)."""
        self.open_terms = EventTerms()
        """The open events' term counts, kept between searches (open_events.py)."""

    async def search(
        self, request: memory_pb2.SearchMemoryRequest, open_segments: Sequence[formation_pb2.Segment] = ()
    ) -> memory_pb2.SearchMemoryResponse:
        """Hybrid search (ranking.py): the best chains by cosine and by the query's words, each scored
        on both, on the dates it names and on its size, then hydrated from MongoDB, filtered and warmed;
        and the turns of the `open_segments` (events in no chain yet, open_events.py), scored the same
        way, among them."""
        clock = _StepClock()
        scope = request.scope
        limit = request.limit or 5
        query = query_terms(request.query)
        kind_of = expansion_kinds(request.query, query)
        expansion = list(kind_of)
        weight = self.ranking.expansion_weight
        periods = query_periods(request.query, now=datetime.now(UTC)) if self.ranking.date_weight > 0 else []
        turns = open_turns(open_segments, scope, dict(request.metadata_filters), self.open_terms)
        # The user's own question: their told facts are scored too (fact_evidence.py, and the open
        # turns' by their meaning: _open_hits), by the embedding alone only in English, where the
        # bundled model's cosines follow the meaning (english_words.is_english_text).
        own = self.ranking.told_facts and the_users_own(request.query)
        own_in_english = own and is_english_text(request.query)
        # What kinds of fact it asks for: read here only for the user's own question (a search of
        # someone else's reads it in _newest_first, and only when two hits state a lasting fact)
        asked = asked_kinds(request.query, query) if own else None
        turn_told = told_in_each(periods, turn_spans(turns), unknown=False) if periods else None
        # The query is embedded (in a thread) while the user's lexical index is read (first search)
        # and the query's words are scored: the two sides of the search overlap.
        embedding = asyncio.ensure_future(self.embedder.embed([request.query]))
        lexicon_task = asyncio.ensure_future(self._lexicon(scope))
        turn_embedding: asyncio.Future[np.ndarray] | None = None
        turn_vectors: np.ndarray | None = None
        facts: list[tuple[ToldFact, float]] = []
        fact_vectors: np.ndarray | None = None
        prefetch: HitPrefetch | None = None
        try:
            allowed: set[str] | None = None
            if request.metadata_filters:
                allowed = await self.store.event_log.chains_with_metadata(
                    tenant_id=scope.tenant_id, user_id=scope.user_id, filters=dict(request.metadata_filters)
                )
            lexicon = await lexicon_task
            lexical = (
                lexicon.query(
                    query,
                    agent_id=scope.agent_id or None,
                    expansion=expansion,
                    expansion_weight=weight,
                )
                if lexicon is not None
                else None
            )
            clock.mark("words")
            guess = self._likely_hits(lexical, lexicon, periods, limit=limit) if allowed is None else []
            if guess:  # their documents are read while the query is embedded and the vectors scanned
                prefetch = HitPrefetch(self.store, guess)
            turn_lexical = self._turn_lexical(
                turns, query, lexical.corpus if lexical is not None else None, kind_of, asked=bool(asked)
            )
            candidates = best_turns(turns, turn_lexical, self.ranking, most=OPEN_EMBEDDED_TURNS, told=turn_told)
            candidates += newest_turns(turns, most=OPEN_NEWEST_TURNS, besides=candidates)
            if lexical is not None and lexicon is not None and own:
                facts = best_facts(
                    lexicon,
                    query,
                    lexical.corpus,
                    agent_id=scope.agent_id or None,
                    expansion=kind_of,
                    # a question asking for a kind of fact is answered by the facts of that kind
                    expansion_weight=FACT_EXPANSION_WEIGHT if asked and weight > 0 else weight,
                    of_the_user=asks_of_the_user_alone(request.query, query),
                    newest=FACTS_NEWEST if own_in_english else 0,
                )
            texts = [turns[i].content for i in candidates] + [f.text for f, _ in facts]
            if texts:  # embedded after the query (one model), while the chains' vectors are scanned
                turn_embedding = asyncio.ensure_future(self.embedder.embed(texts))
            query_vec = (await embedding)[0]
            clock.mark("embedding")
            pool = (
                self.ranking.candidates(limit)
                if allowed is None
                else min(1000, max(self.ranking.candidates(limit), limit * 4 + 20))
            )
            vector_hits = await self.vectors.search(
                query_vec, tenant_id=scope.tenant_id, user_id=scope.user_id, agent_id=scope.agent_id or None, limit=pool
            )
            if turn_embedding is not None:
                vectors = await turn_embedding
                turn_vectors, fact_vectors = vectors[: len(candidates)], vectors[len(candidates) :]
        finally:
            tasks: list[asyncio.Future[Any]] = [
                lexicon_task,
                embedding,
                *([turn_embedding] if turn_embedding is not None else []),
            ]
            for task in tasks:
                if not task.done():
                    task.cancel()  # a lexicon read itself is shielded in LexicalIndex and goes on
                elif not task.cancelled():
                    task.exception()  # retrieved: a search that failed earlier never awaited it
        clock.mark("scan")
        similarity = {h.chain_id: h.similarity for h in vector_hits}
        by_fact = (
            fact_scores(facts, fact_vectors, query_vec, self.ranking, by_meaning=own_in_english)
            if fact_vectors is not None
            else {}
        )
        if lexical is not None and lexicon is not None:
            # Found by their words alone, by a fact told in them, or told in the period the query
            # names ("what did I say yesterday?"): scored on their embedding too (a chain without one
            # is not searchable).
            more = dict.fromkeys(c for c, _ in lexical.top(pool) if c not in similarity)
            more.update(dict.fromkeys(c for c in by_fact if c not in similarity))
            if periods:
                told = lexicon.latest_where(
                    lambda spans: told_in_each(periods, spans, unknown=False),
                    most=pool,
                    agent_id=scope.agent_id or None,
                )
                more.update(dict.fromkeys(c for c in told if c not in similarity))
            similarity.update(
                await self.vectors.similarities(query_vec, list(more), tenant_id=scope.tenant_id, user_id=scope.user_id)
            )
        most = limit + 10 if allowed is None else min(1000, limit * 4 + 20)
        provisional = self._rank_candidates(
            [c for c in similarity if allowed is None or c in allowed],
            similarity,
            lexical,
            lexicon,
            periods,
            most=most,
            by_fact=by_fact,
        )
        clock.mark("rank")
        out = await self._hydrate(
            request, provisional, lexical, periods, limit=limit, prefetch=prefetch, by_fact=by_fact, cosines=similarity
        )
        clock.mark("documents")
        open_hits = self._open_hits(
            request,
            out,
            turns,
            candidates,
            turn_lexical,
            turn_vectors,
            query_vec,
            turn_told,
            by_meaning=own_in_english,
        )
        found: list[tuple[RankedChain, dict[str, Any] | OpenTurn]] = [*out, *open_hits]
        best = sorted(found, key=lambda pair: -pair[0].score)[:limit]
        if not periods:  # a question about a time asks what was told then, not what holds now
            subjects = _fact_subjects(facts, fact_vectors, by_fact)
            if turn_vectors is not None:
                units = normalize_rows(turn_vectors)
                subjects.update((turns[i].events[0].id, units[k]) for k, i in enumerate(candidates))
            positions = {turn.events[0].id: i for i, turn in enumerate(turns)}
            best = await self._newest_first(scope, best, subjects, positions, (request.query, query), asked=asked)
        SEARCH_HITS.observe(len(best))
        warmed = iter(self._warm([doc for _, doc in best if isinstance(doc, dict)], datetime.now(UTC)))
        response = memory_pb2.SearchMemoryResponse()
        # The words shown for a chain the index knows depend only on which query terms it holds, and
        # the hits mostly hold the same ones: each set's words are found once (the query's words are
        # tokenised and stemmed for every one of them).
        shown: dict[frozenset[str], list[str]] = {}
        for hit, doc in best:
            if isinstance(doc, OpenTurn):
                response.hits.append(_open_hit(request.query, hit, doc, query))
                continue
            warm = next(warmed)
            known = lexicon is not None and lexicon.row_of(hit.chain_id) is not None
            if known and lexical is not None:
                held = frozenset(lexical.terms_in(hit.chain_id))
                if held not in shown:
                    shown[held] = matched_terms(request.query, doc, set(held))
                words = shown[held]
            else:
                words = matched_terms(request.query, doc, None)
            why = f"cosine similarity {hit.similarity:.2f} to the chain's embedding"
            if hit.fact:
                why = f"a fact told in it, {hit.fact!r}: cosine similarity {hit.similarity:.2f} to its embedding"
            if hit.correction:  # what holds now, when a fact told in the chain was corrected later in it
                why += f"; {'' if hit.fact else 'a fact in it '}corrected later: {hit.correction!r}"
            if words:
                why += f"; words {', '.join(words[:8])} (lexical score {hit.lexical:.2f})"
            why += TOLD_WHY if hit.told else ""
            response.hits.append(
                memory_pb2.SearchHit(
                    chain=chain_to_proto(warm),
                    similarity=hit.similarity,
                    why=why,
                    matched_terms=words,
                    lexical_score=hit.lexical,
                    score=hit.score,
                    source=memory_pb2.HIT_SOURCE_CHAIN,
                    event_ids=doc.get("event_ids", []),
                )
            )
        clock.mark("answer")
        return response

    async def _newest_first(
        self,
        scope: memory_pb2.Scope,
        best: list[tuple[RankedChain, dict[str, Any] | OpenTurn]],
        subjects: Mapping[str, np.ndarray],
        positions: Mapping[str, int],
        question: tuple[str, list[str]],
        *,
        asked: frozenset[str] | None = None,
    ) -> list[tuple[RankedChain, dict[str, Any] | OpenTurn]]:
        """A later correction of a lasting fact before the fact it corrects, among the chains and the
        open turns (newest_first.py). `subjects`: the unit embeddings of the chains' told facts the
        search embedded and of the open turns, by id; a chain without one is compared by its own.
        `positions`: each open turn's place in the window, by id (turns told in one call share a time).
        `question`: the query and its terms; `asked`: the kinds of fact it asks for
        (fact_kinds.asked_kinds), when the search read them already (None: read from `question`,
        only when two hits state a lasting fact)."""
        docs = {
            hit.chain_id: ({**doc, SCORED_FACT: hit.fact} if hit.fact else doc)
            if isinstance(doc, dict)
            else open_turn_fact(doc, position=positions[hit.chain_id], read=self.open_terms)
            for hit, doc in best
        }
        facts = [d["_id"] for d in docs.values() if d.get("lasting_fact")]
        if len(facts) < 2:
            return best
        vectors = dict(subjects)
        own = [c for c in facts if c not in vectors]
        vectors.update(await self.vectors.unit_vectors(own, tenant_id=scope.tenant_id, user_id=scope.user_id))
        kinds = asked_kinds(*question) if asked is None else asked
        return newest_first(best, lambda pair: docs[pair[0].chain_id], vectors, asked=kinds, question=question[1])

    def _turn_lexical(
        self,
        turns: Sequence[OpenTurn],
        query: Sequence[str],
        corpus: Corpus | None,
        kind_of: Mapping[str, str],
        *,
        asked: bool,
    ) -> np.ndarray:
        """The open turns' lexical scores (open_events.lexical_scores; `kind_of`: the query's
        expansion terms with their kinds). When the question asks for a kind of fact (`asked`), a turn
        that tells a fact of the user's (open_events.tells_fact) weighs the kinds' words as a chain's
        told facts weigh them (fact_evidence.FACT_EXPANSION_WEIGHT, a further word of a kind at
        open_events.FURTHER_KIND_WORD_SHARE): a fact just told is scored as it will be once formed (so
        not with SEARCH_TOLD_FACTS off)."""

        def scored(weight: float, *, fact: bool = False) -> np.ndarray:
            return lexical_scores(
                [t.lexicon for t in turns],
                query,
                corpus,
                expansion=list(kind_of),
                expansion_weight=weight,
                kind_of=kind_of if fact else None,
            )

        weight = self.ranking.expansion_weight
        scores = scored(weight)
        stating = [tells_fact(turn, self.open_terms) for turn in turns] if asked and weight > 0 else []
        return np.where(stating, scored(FACT_EXPANSION_WEIGHT, fact=True), scores) if any(stating) else scores

    def _open_hits(
        self,
        request: memory_pb2.SearchMemoryRequest,
        chains: list[tuple[RankedChain, dict[str, Any]]],
        turns: list[OpenTurn],
        candidates: list[int],
        lexical: np.ndarray,
        vectors: np.ndarray | None,
        query_vector: np.ndarray,
        told: np.ndarray | None,
        *,
        by_meaning: bool = False,
    ) -> list[tuple[RankedChain, OpenTurn]]:
        """The embedded turns that may be hits: scored, above the similarity threshold, and holding no
        event of a chain found (a segment formed while its hand-off was still parked: its chain is the hit).
        `by_meaning`: a turn that tells a fact of the user's has the better of its relevance and its
        cosine alone (Ranking.rank)."""
        if vectors is None:
            return []
        chained = {e for _, doc in chains for e in doc.get("event_ids", [])}
        stated = [by_meaning and tells_fact(turns[i], self.open_terms) for i in candidates]
        ranked_turns = rank_turns(
            turns, candidates, lexical, vectors, query_vector, self.ranking, told=told, stated=stated
        )
        return [
            (ranked, turn)
            for ranked, turn in ranked_turns
            if not (request.HasField("similarity_threshold") and ranked.similarity < request.similarity_threshold)
            and chained.isdisjoint(turn.event_ids)
        ]

    async def _hydrate(
        self,
        request: memory_pb2.SearchMemoryRequest,
        provisional: list[RankedChain],
        lexical: LexicalScores | None,
        periods: list[Named],
        *,
        limit: int,
        prefetch: HitPrefetch | None = None,
        by_fact: Mapping[str, RankedChain] | None = None,
        cosines: Mapping[str, float] | None = None,
    ) -> list[tuple[RankedChain, dict[str, Any]]]:
        """The best `limit` of the `provisional` candidates (best first) that pass the checks on their
        documents, reading as few documents as it can: `limit` first, then more only when some fail.
        `prefetch`: the likely hits' read (`_likely_hits`, hit_prefetch.py); a hit it reads is not read again.

        A candidate's provisional score assumed the size and the time span the lexical index knows (1
        and told in the query's dates if none); its document's can only lower it, so a read candidate
        is taken once its final score is at least the provisional score of every candidate not read yet.
        `by_fact`: the chains' best told facts' scores (fact_evidence.py), the same in both; a candidate
        lifted by one carries the fact's cosine, so its own is taken from `cosines` (the chains')."""
        scope = request.scope
        read: list[tuple[RankedChain, dict[str, Any]]] = []  # read and passing, not yet taken
        out: list[tuple[RankedChain, dict[str, Any]]] = []
        start = 0
        while len(out) < limit:
            next_score = provisional[start].score if start < len(provisional) else None
            read.sort(key=lambda pair: -pair[0].score)
            if read and (next_score is None or read[0][0].score >= next_score):
                out.append(read.pop(0))
                continue
            if next_score is None:
                break
            chunk = provisional[start : start + limit - len(out)]
            start += len(chunk)
            ids = [r.chain_id for r in chunk]
            docs, missing = self.store.cached_for_search(ids)
            if missing and prefetch is not None:
                docs.update(await prefetch.take(missing))
            rest = [c for c in missing if c not in docs and not (prefetch is not None and prefetch.covers(c))]
            if rest:
                docs.update(await self.store.get_for_search(rest))
            for r in chunk:
                doc = docs.get(r.chain_id)
                if doc is None or not _searchable(doc, scope):
                    continue
                told = bool(periods) and _told(periods, doc)
                cosine = cosines.get(r.chain_id, r.similarity) if cosines is not None else r.similarity
                final = self._rank(r.chain_id, cosine, lexical, int(doc.get("event_count", 1)), told=told)
                final = lift(final, by_fact or {}, date_weight=self.ranking.date_weight)
                if request.HasField("similarity_threshold") and final.similarity < request.similarity_threshold:
                    continue
                read.append((final, doc))
        return out

    def _likely_hits(
        self, lexical: LexicalScores | None, lexicon: UserLexicon | None, periods: list[Named], *, limit: int
    ) -> list[str]:
        """The chains most likely to be hits before the embedding's side is known: the best 2 x `limit`
        by their words alone (the larger share of the relevance) and their size. Their documents are
        read while the query is embedded and the vectors scanned; a hit not among them is read after,
        as before. Twice the hits because the cosine reorders them (their coverage: docs/formation.md,
        SearchMemory step 4)."""
        if lexical is None or lexicon is None:
            return []
        found = [c for c, _ in lexical.top(limit * 8)]
        ranked = self._rank_candidates(found, dict.fromkeys(found, 0.0), lexical, lexicon, periods, most=2 * limit)
        return [r.chain_id for r in ranked]

    def _rank_candidates(
        self,
        chain_ids: list[str],
        similarity: dict[str, float],
        lexical: LexicalScores | None,
        lexicon: UserLexicon | None,
        periods: list[Named],
        *,
        most: int,
        by_fact: Mapping[str, RankedChain] | None = None,
    ) -> list[RankedChain]:
        """The best `most` candidates by their provisional score (the size and time span the lexical
        index knows; 1 and told in the query's dates if it knows none: never below the final score),
        a chain's best told fact's score where that is higher (`by_fact`)."""
        n = len(chain_ids)
        told = None
        if periods:
            spans = lexicon.spans(chain_ids) if lexicon is not None else np.full((n, 2), np.nan)
            told = told_in_each(periods, spans, unknown=True)
        ranked = self.ranking.rank_many(
            chain_ids,
            np.fromiter((similarity[c] for c in chain_ids), np.float64, n),
            lexical.of_many(chain_ids) if lexical is not None else np.zeros(n),
            lexicon.event_counts(chain_ids) if lexicon is not None else np.ones(n, dtype=np.int64),
            most=n if by_fact else most,
            told=told,
        )
        if not by_fact:
            return ranked
        lifted = (lift(r, by_fact, date_weight=self.ranking.date_weight) for r in ranked)
        return sorted(lifted, key=lambda r: -r.score)[:most]

    def _rank(
        self,
        chain_id: str,
        similarity: float,
        lexical: LexicalScores | None,
        event_count: int | None,
        *,
        told: bool = False,
    ) -> RankedChain:
        return self.ranking.rank(
            chain_id=chain_id,
            similarity=similarity,
            lexical=lexical.of(chain_id) if lexical is not None else 0.0,
            event_count=event_count or 1,
            told=told,
        )

    async def _lexicon(self, scope: memory_pb2.Scope) -> UserLexicon | None:
        if self.lexical is None or self.ranking.lexical_weight <= 0:
            return None
        return await self.lexical.user(scope.tenant_id, scope.user_id)

    def _warm(self, docs: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
        """The chains as warmed by this recall; their writes go out behind the answer (recall_warm_ups.py)."""
        warmed = []
        for doc in docs:
            # What MongoDB has, the recalls still on their way there, and this one.
            recalls = int(doc.get("recall_count", 0)) + self.warm_ups.unwritten(doc["_id"]) + 1
            heat = self.heat.heat(
                importance=float(doc.get("importance", 0.5)), recall_count=recalls, last_accessed_at=now, now=now
            )
            CHAIN_HEAT.observe(heat)
            fields = {
                "last_accessed_at": epoch(now),
                "recall_strength": recall_strength(recalls),
                "heat_score": heat,
                "lifecycle": lifecycle_of(heat),
            }
            self.warm_ups.record(doc["_id"], fields)
            warmed.append({**doc, **fields, "recall_count": recalls})
        return warmed

    async def settle(self) -> None:
        """Write the warm-ups gathered behind earlier answers (shutdown, tests)."""
        await self.warm_ups.settle()

    async def get_chain(self, request: memory_pb2.GetChainRequest) -> memory_pb2.Chain:
        return chain_to_proto(await owned_chain(self.store, request.scope, request.chain_id))

    async def list_chains(self, request: memory_pb2.ListChainsRequest) -> memory_pb2.ListChainsResponse:
        scope = request.scope
        size = request.page_size or 20
        offset = decode_offset(request.page_token)
        query: dict[str, Any] = {"tenant_id": scope.tenant_id, "user_id": scope.user_id}
        if scope.agent_id:
            query.update(agent_query(scope.agent_id))
        if request.status in _STATUS_NAMES:
            query["status"] = _STATUS_NAMES[request.status]
        docs = await self.store.list_page(query=query, skip=offset, limit=size + 1)
        more = len(docs) > size
        return memory_pb2.ListChainsResponse(
            chains=[chain_to_proto(d) for d in docs[:size]],
            next_page_token=encode_offset(offset + size) if more else "",
        )


class _StepClock:
    """Times a search's consecutive steps into SEARCH_STEP_SECONDS: where a slow search's time went."""

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def mark(self, step: str) -> None:
        now = time.perf_counter()
        SEARCH_STEP_SECONDS.labels(step).observe(now - self._last)
        self._last = now


def _fact_subjects(
    facts: Sequence[tuple[ToldFact, float]], vectors: np.ndarray | None, by_fact: Mapping[str, RankedChain]
) -> dict[str, np.ndarray]:
    """Per chain, the unit embedding of the told fact that scored it (fact_evidence.py), if embedded."""
    if vectors is None:
        return {}
    return {
        fact.chain_id: vector
        for (fact, _), vector in zip(facts, normalize_rows(vectors))
        if fact.chain_id in by_fact and by_fact[fact.chain_id].fact == fact.text
    }


def _told(periods: list[Named], doc: Mapping[str, Any]) -> bool:
    """Whether the chain document was told in one of the periods (a chain without times never is)."""
    first, last = chain_span(doc)
    if first is None:
        return False
    return told_in(periods, first, last if last is not None else first)


def _open_hit(query: str, hit: RankedChain, turn: OpenTurn, query_terms: list[str]) -> memory_pb2.SearchHit:
    """A turn of open events as a WINDOW hit."""
    words = matched_terms(query, {}, {t for t in query_terms if t in turn.lexicon})
    why = f"not in a chain yet; cosine similarity {hit.similarity:.2f} to its events' embedding"
    if words:
        why += f"; words {', '.join(words[:8])} (lexical score {hit.lexical:.2f})"
    why += TOLD_WHY if hit.told else ""
    return memory_pb2.SearchHit(
        chain=turn_as_chain(turn),
        similarity=hit.similarity,
        why=why,
        matched_terms=words,
        lexical_score=hit.lexical,
        score=hit.score,
        source=memory_pb2.HIT_SOURCE_WINDOW,
        event_ids=turn.event_ids,
    )
