"""Stage 3, search through the public API: `SearchMemory` on a local stack (ingest -> formation).

The stack's Milvus Lite file is filled by the in-process measurement (_search.py) with formation's
VectorIndex before formation starts (a Milvus Lite file admits one process). Here its MongoDB
(nx-27017) gets one chain document per vector, written as formation writes a new chain (status
active, embedding_state indexed, the same scope, 2 to 20 events, a lexicon of ~80 terms drawn from a
Zipf-like vocabulary plus its topic's words, so the lexical side of the hybrid search has postings
of realistic lengths), then formation and ingest start and `SearchMemory`
is called through AsyncAthenaClient with distinct real questions: "included" pays the query embedding,
"excluded" asks the same questions again (formation's embedding cache answers them, so the call
costs everything but the model). The first call of the user loads its vectors and is timed alone
(sent straight to formation: at 100,000 chains it outlasts ingest's deadline for the hop), while
formation's search-cache warm-up runs; the timed calls wait for the warm-up to end (its gauge on
formation's /metrics), so that it does not share the cores with them.
Then the same scope gets an open short-term window (OPEN_WINDOW_TURNS turns about the bench topics,
one more before each repeat) and new questions are timed again: SearchMemory ranks the window's turns
beside the chains (the Redis read in ingest, the turns' words and the embedding of the best few in
formation).
Where the time of a call goes: the cached questions are also sent straight to formation's
SearchMemory (without ingest's hop), and Recall's two MongoDB steps (the fetch of the hits, the
recall warm-ups) are timed from this process against the same server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pymongo import AsyncMongoClient

from athena.formation_client import FormationClient
from athena.internal.v1 import formation_pb2
from athena_cli.stack import LocalStack, sample_total
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_lab.bench._report import percentile

__all__ = ["COLLECTION", "CONCURRENT_CALLERS", "DATABASE", "SCOPE", "run_cold_users_rpc", "run_search_rpc"]

DATABASE = "athena"
COLLECTION = "cognitive_chains"
SCOPE = ("bench", "u", "a")
DOC_BATCH = 1000
_SERVICES = ("formation", "ingest")


_VOCABULARY = 20_000
_TERMS_PER_CHAIN = 80


def _lexicon(index: int, topic_words: list[str], rng: np.random.Generator) -> dict[str, int]:
    """A chain's lexicon as formation would store it: ~80 distinct terms drawn from a Zipf-like
    vocabulary of 20,000 words (a few frequent, most rare), plus its topic's words, so a bench
    question's terms have postings of realistic lengths (each topic's words in a tenth of the chains)."""
    ranks = np.minimum(rng.zipf(1.3, size=_TERMS_PER_CHAIN), _VOCABULARY)
    lexicon: dict[str, int] = {}
    for r in ranks:
        lexicon[f"w{int(r)}"] = lexicon.get(f"w{int(r)}", 0) + 1
    for word in topic_words:
        lexicon[word] = 1 + index % 3
    return lexicon


def _chain_doc(
    chain_id: str, now: float, lexicon: dict[str, int] | None = None, event_count: int = 2, user: str | None = None
) -> dict[str, Any]:
    """A chain document with the fields formation's ChainFormer writes for a new, indexed chain (of
    SCOPE, or of `user` in SCOPE's tenant)."""
    tenant, scope_user, agent = SCOPE
    lexicon = lexicon or {}
    return {
        "_id": chain_id,
        "tenant_id": tenant,
        "user_id": user or scope_user,
        "agent_id": agent,
        "topic": f"topic {chain_id}",
        "subtopics": [{"name": "travel", "confidence": 0.8}],
        "summary": f"The user talked about plans numbered {chain_id} and what to book next.",
        "entities": [{"text": "Kyoto", "kind": "place"}],
        "analysis_path": "heuristic",
        "quality": {
            "coherence": 0.8,
            "completeness": 0.7,
            "relevance": 0.8,
            "engagement": 0.6,
            "cognitive_depth": 0.5,
            "overall": 0.77,
        },
        "recall_count": 0,
        "recall_strength": 0.0,
        "status": "active",
        "embedding_state": "indexed",
        "created_at": now,
        "updated_at": now,
        "last_accessed_at": now,
        "first_event_at": now - 60,
        "last_event_at": now,
        "event_ids": [f"{chain_id}-e{i}" for i in range(event_count)],
        "segment_ids": [f"{chain_id}-s0"],
        "event_count": event_count,
        "lexicon": lexicon,
        "lexicon_terms": sum(lexicon.values()),
        "merge_count": 0,
        "version": 0,
        "activity": 0.5,
        "continues_chain_id": "",
        "importance": 0.6,
        "heat_score": 0.6,
        "lifecycle": "warm",
    }


async def _fill_docs(
    mongo_uri: str, database: str, chain_ids: list[str], topics: list[str], user_of: Callable[[int], str] | None = None
) -> float:
    """One chain document per id (chain j of user `user_of(j)` when given, else of SCOPE); returns the seconds taken."""
    from athena_formation.search.lexicon import terms
    from athena_formation.store.chain_store import ChainStore

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_uri)
    rng = np.random.default_rng(11)
    topic_terms = [terms(t) for t in topics]
    try:
        store = ChainStore(client, database)
        await store.ensure_indexes()
        now = datetime.now(UTC).timestamp()
        t0 = time.perf_counter()
        for i in range(0, len(chain_ids), DOC_BATCH):
            docs = [
                _chain_doc(
                    c,
                    now,
                    _lexicon(j, topic_terms[j % len(topic_terms)], rng),
                    event_count=2 + j % 19,
                    user=user_of(j) if user_of is not None else None,
                )
                for j, c in enumerate(chain_ids[i : i + DOC_BATCH], start=i)
            ]
            await store.chains.insert_many(docs, ordered=False)
        return time.perf_counter() - t0
    finally:
        await client.close()


async def _mongo_steps(
    mongo_uri: str, database: str, chain_ids: list[str], *, fetch: int, warm: int, rounds: int
) -> dict[str, float]:
    """p50 of Recall's two MongoDB steps, as it runs them when its search cache does not have the
    hits: one read of the hits without their lexicons, then one bulk write of their warm-ups (which
    Recall sends behind the answer)."""
    from athena_formation.store.chain_store import SEARCH_SKIPS, ChainStore

    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_uri)
    fetch_ms, warm_ms = [], []
    try:
        store = ChainStore(client, database)
        await store.get_many(chain_ids[:1])  # connect
        for r in range(rounds):
            ids = [chain_ids[(r * 97 + k * 1009) % len(chain_ids)] for k in range(fetch)]
            t0 = time.perf_counter()
            await store.get_many(ids, without=SEARCH_SKIPS)
            t1 = time.perf_counter()
            await store.record_recalls([(c, 1, {"last_accessed_at": time.time()}) for c in ids[:warm]])
            t2 = time.perf_counter()
            fetch_ms.append((t1 - t0) * 1000)
            warm_ms.append((t2 - t1) * 1000)
    finally:
        await client.close()
    return {"mongo_fetch_p50_ms": percentile(fetch_ms, 50), "mongo_warm_ups_p50_ms": percentile(warm_ms, 50)}


OPEN_WINDOW_TURNS = 10
"""Turns (a user message and the agent's reply) stored in the bench scope's window for the open-window
phase: 20 events, what a window holds at most with the workers on (STM_MAX_EVENTS_BEFORE_FLUSH)."""


def _open_turn(topic: str, n: int) -> list[EventInput]:
    return [
        EventInput("user", f"About {topic}: what should we plan for step {n} of the trip?"),
        EventInput("agent", f"For {topic}, step {n} is to book early and compare the options we listed before."),
    ]


async def _open_window_calls(
    client: AsyncAthenaClient,
    scope: memory_pb2.Scope,
    queries: Callable[[str], list[str]],
    topics: list[str],
    *,
    limit: int,
    repeats: int,
) -> dict[str, list[float]]:
    """New questions (embedding included) with an open window: OPEN_WINDOW_TURNS turns about the bench
    topics stored first, and one more before each repeat (not embedded yet, as after a new turn of a
    conversation)."""
    await client.store_events(
        scope, [e for n in range(OPEN_WINDOW_TURNS) for e in _open_turn(topics[n % len(topics)], n)]
    )
    series: dict[str, list[float]] = {"open_p50": [], "open_p95": []}
    for r in range(repeats):
        await client.store_events(scope, _open_turn(topics[r % len(topics)], OPEN_WINDOW_TURNS + r))
        ms = []
        for text in queries(f"open{r}"):
            t0 = time.perf_counter()
            hits = await client.search_memory(scope, text, limit=limit)
            ms.append((time.perf_counter() - t0) * 1000)
            if len(hits) != limit:
                raise RuntimeError(f"SearchMemory with an open window returned {len(hits)} hits, expected {limit}")
        series["open_p50"].append(percentile(ms, 50))
        series["open_p95"].append(percentile(ms, 95))
    return series


CONCURRENT_CALLERS = 8
"""Callers of the concurrent phase: SearchMemory from several callers of the one bench scope at once."""


async def _concurrent_calls(
    client: AsyncAthenaClient, scope: memory_pb2.Scope, texts: list[str], *, limit: int
) -> tuple[float, list[float]]:
    """New questions (embedding included) from CONCURRENT_CALLERS callers at once. Returns (calls/s, latencies in ms)."""
    ms: list[float] = []
    pending = iter(texts)

    async def caller() -> None:
        for text in pending:
            t0 = time.perf_counter()
            hits = await client.search_memory(scope, text, limit=limit)
            ms.append((time.perf_counter() - t0) * 1000)
            if len(hits) != limit:  # an answer cut short under load would make the figures meaningless
                raise RuntimeError(
                    f"SearchMemory under {CONCURRENT_CALLERS} callers returned {len(hits)} hits, expected {limit}"
                )

    t0 = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(CONCURRENT_CALLERS)))
    return len(texts) / (time.perf_counter() - t0), ms


SEARCH_STEPS = ("words", "embedding", "scan", "rank", "documents", "answer")
"""The steps of a search formation times on its /metrics (`memos_search_step_seconds`)."""


def _step_totals(stack: LocalStack) -> dict[str, tuple[float, float]]:
    """(seconds, searches) so far of each step of formation's searches (one read of its /metrics)."""
    samples = stack.metric_samples("formation")
    return {
        step: (
            sample_total(samples, "memos_search_step_seconds_sum", step=step),
            sample_total(samples, "memos_search_step_seconds_count", step=step),
        )
        for step in SEARCH_STEPS
    }


def _wait_for_warm_up(stack: LocalStack, *, timeout: float = 900.0) -> float:
    """Block until formation's search-cache warm-up has ended (its gauge is 0); returns how long this waited."""
    t0 = time.perf_counter()
    while stack.metric_total("formation", "memos_search_cache_warming") != 0:
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"formation's search cache still warming after {timeout:.0f} s")
        time.sleep(0.2)
    return time.perf_counter() - t0


async def _time_calls(
    stack: LocalStack,
    queries: Callable[[str], list[str]],
    topics: list[str],
    *,
    limit: int,
    repeats: int,
    tick: Callable[[], None],
) -> dict[str, Any]:
    tenant, user, agent = SCOPE
    series: dict[str, list[float]] = {
        k: []
        for k in (
            "incl_p50",
            "incl_p95",
            "excl_p50",
            "excl_p95",
            "incl_per_s",
            "concurrent_per_s",
            "concurrent_p50",
            "concurrent_p95",
        )
    }
    # Straight to formation, with a deadline long enough for the user's first search, which reads all
    # its vectors (tens of seconds at 100,000): through ingest it would outlast the hop's 10 s deadline.
    direct = FormationClient(stack.formation_target, timeout=900.0, attempts=1, metadata=stack.internal_metadata())

    def request(text: str) -> formation_pb2.SearchRequest:
        scope = memory_pb2.Scope(tenant_id=tenant, user_id=user, agent_id=agent)
        return formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=scope, query=text, limit=limit))

    step_seconds = dict.fromkeys(SEARCH_STEPS, 0.0)
    step_searches = dict.fromkeys(SEARCH_STEPS, 0.0)
    try:
        t0 = time.perf_counter()
        await direct.call(direct.stub.SearchMemory, request("What did we plan first?"))
        first_s = time.perf_counter() - t0
        warm_up_wait_s = await asyncio.to_thread(_wait_for_warm_up, stack)
        async with stack.client(tenant_id=tenant) as client:
            scope = client.scope(tenant, user, agent)
            hits = await client.search_memory(scope, "What did we plan next?", limit=limit)
            if len(hits) != limit:  # the documents are not what Recall keeps: the figures would be of an empty answer
                raise RuntimeError(f"SearchMemory returned {len(hits)} hits, expected {limit}")
            for r in range(repeats):
                texts = queries(f"rpc{r}")
                for key in ("incl", "excl"):  # new questions, then the same ones again (embedding cached)
                    before = _step_totals(stack) if key == "incl" else {}
                    ms = []
                    for text in texts:
                        t0 = time.perf_counter()
                        await client.search_memory(scope, text, limit=limit)
                        ms.append((time.perf_counter() - t0) * 1000)
                    series[f"{key}_p50"].append(percentile(ms, 50))
                    series[f"{key}_p95"].append(percentile(ms, 95))
                    if key == "incl":
                        series["incl_per_s"].append(len(ms) / (sum(ms) / 1000))
                        for step, (seconds, searches) in _step_totals(stack).items():
                            step_seconds[step] += seconds - before[step][0]
                            step_searches[step] += searches - before[step][1]
                rate, ms = await _concurrent_calls(client, scope, queries(f"concurrent{r}"), limit=limit)
                series["concurrent_per_s"].append(rate)
                series["concurrent_p50"].append(percentile(ms, 50))
                series["concurrent_p95"].append(percentile(ms, 95))
                tick()
            series.update(await _open_window_calls(client, scope, queries, topics, limit=limit, repeats=repeats))
        # The same cached questions straight to formation: the difference to the public call is ingest's hop.
        ms = []
        for text in texts:
            t0 = time.perf_counter()
            await direct.call(direct.stub.SearchMemory, request(text))
            ms.append((time.perf_counter() - t0) * 1000)
    finally:
        await direct.close()
    return {
        "series": series,
        "first_call_s": first_s,
        "warm_up_wait_s": warm_up_wait_s,
        "formation_direct_cached_p50_ms": percentile(ms, 50),
        "formation_step_mean_ms": {
            step: 1000 * step_seconds[step] / step_searches[step] if step_searches[step] else None
            for step in SEARCH_STEPS
        },
    }


def run_search_rpc(
    stack: LocalStack,
    chain_ids: list[str],
    queries: Callable[[str], list[str]],
    *,
    limit: int,
    repeats: int,
    tick: Callable[[], None],
    topics: list[str],
) -> dict[str, Any]:
    """Fill the stack's MongoDB with the chains whose vectors are already in its Milvus file, start
    formation and ingest, time SearchMemory; the stack is stopped on return."""
    stack.start_dependencies()
    try:
        fill_s = asyncio.run(_fill_docs(stack.mongodb_uri, stack.mongodb_database, chain_ids, topics))
        start_s = _start_services(stack)
        out = asyncio.run(_time_calls(stack, queries, topics, limit=limit, repeats=repeats, tick=tick))
        out["steps"] = asyncio.run(
            _mongo_steps(stack.mongodb_uri, stack.mongodb_database, chain_ids, fetch=limit, warm=limit, rounds=60)
        )
    finally:
        stack.stop()
    out["steps"]["formation_direct_cached_p50_ms"] = out.pop("formation_direct_cached_p50_ms")
    out["steps"]["formation_step_mean_ms"] = out.pop("formation_step_mean_ms")
    return {**out, "doc_fill_s": fill_s, "services_start_s": start_s}


def _start_services(stack: LocalStack) -> float:
    t0 = time.perf_counter()
    for name in _SERVICES:
        stack.start_service(name)
    for name in _SERVICES:
        stack.wait_serving(name, timeout=300)
    return time.perf_counter() - t0


async def _first_searches(
    stack: LocalStack, users: list[str], queries: Callable[[str], list[str]], *, limit: int, repeats: int
) -> dict[str, list[float]]:
    """Each user's first SearchMemory (a new question) and then its next (another), in `repeats` groups."""
    tenant, _, agent = SCOPE
    series: dict[str, list[float]] = {"first_p50": [], "first_p95": [], "next_p50": [], "next_p95": []}
    async with stack.client(tenant_id=tenant) as client:
        for g, group in enumerate(np.array_split(np.array(users), repeats)):
            first: list[float] = []
            after: list[float] = []
            texts = queries(f"cold{g}")
            for k, user in enumerate(group):
                scope = client.scope(tenant, str(user), agent)
                for bucket, text in ((first, texts[(2 * k) % len(texts)]), (after, texts[(2 * k + 1) % len(texts)])):
                    t0 = time.perf_counter()
                    hits = await client.search_memory(scope, text, limit=limit)
                    bucket.append((time.perf_counter() - t0) * 1000)
                    if len(hits) != limit:
                        raise RuntimeError(
                            f"SearchMemory of cold user {user} returned {len(hits)} hits, expected {limit}"
                        )
            series["first_p50"].append(percentile(first, 50))
            series["first_p95"].append(percentile(first, 95))
            series["next_p50"].append(percentile(after, 50))
            series["next_p95"].append(percentile(after, 95))
    return series


def run_cold_users_rpc(
    stack: LocalStack,
    chain_ids: list[str],
    user_of: Callable[[int], str],
    searched: list[str],
    queries: Callable[[str], list[str]],
    *,
    limit: int,
    repeats: int,
    topics: list[str],
) -> dict[str, Any]:
    """Many users through the public API: the chains (their vectors already in the stack's Milvus
    file, chain j of user `user_of(j)`) get their documents, formation and ingest start and warm
    their search caches (timed to the gauge's 0), then each of the `searched` users, never searched
    before, is searched twice; the stack is stopped on return."""
    stack.start_dependencies()
    try:
        fill_s = asyncio.run(_fill_docs(stack.mongodb_uri, stack.mongodb_database, chain_ids, topics, user_of=user_of))
        start_s = _start_services(stack)
        warm_up_s = _wait_for_warm_up(stack)
        series = asyncio.run(_first_searches(stack, searched, queries, limit=limit, repeats=repeats))
    finally:
        stack.stop()
    return {"series": series, "doc_fill_s": fill_s, "services_start_s": start_s, "warm_up_after_serving_s": warm_up_s}
