"""Stage 3, search: VectorIndex.search on Milvus Lite beside brute-force numpy cosine.

The collection is the one formation creates (VectorIndex's defaults for Milvus Lite: FLAT, COSINE,
tenant_id as partition key), in a fresh Milvus Lite file, filled with N random unit vectors (384-d,
the local model's size) all in one tenant/user scope,
so the scope filter keeps every row (the worst case of SearchMemory's vector step). Queries are
distinct real questions embedded with LocalEmbedder: "included" times embedding + search, "excluded"
times the search of a pre-embedded query. The baseline is numpy: cosine against the same N vectors
(held normalised in memory) and the top 10 by argpartition, for the same query vectors.
Random vectors stand in for chain embeddings because embedding 10^4-10^5 chain texts on 2 cores would
take minutes. VectorIndex answers a Milvus Lite search from its copy of the user's vectors, read
from Milvus by the first search of that user: that first search is timed on its own ("user load").
The Milvus Lite file is the one a local stack's formation then opens: _search_rpc.py times the public
SearchMemory RPC over the same chains.

Cold users: the same number of chains spread over users of COLD_USER_CHAINS each (a real user's
count), in a Milvus Lite file of their own; the first search of a user (its vectors read from Milvus,
as during formation's warm-up or after the cache dropped the user) beside that user's next search;
then VectorIndex.warm on a new index over the file, as formation runs it at start, and the first
searches of other users after it. Last, the same file under a stack of its own, with one chain
document per vector (_search_rpc.run_cold_users_rpc): formation starts, warms its vectors and
lexicons, and users it never searched are searched through the public API.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from athena.embeddings import EmbeddingCache, LocalEmbedder
from athena_lab.bench._report import Figure, StageResult, percentile, summary
from athena_lab.bench._search_rpc import (
    COLLECTION,
    CONCURRENT_CALLERS,
    DATABASE,
    OPEN_WINDOW_TURNS,
    SCOPE,
    run_cold_users_rpc,
    run_search_rpc,
)
from athena_lab.bench._stores import BenchStores

__all__ = ["measure_search_at", "run_search_stage"]

DIM = 384
LIMIT = 10
INSERT_BATCH = 5000
_TOPICS = [
    "Kyoto temples",
    "the VAT number on my invoice",
    "a webhook KeyError",
    "chickpea curry",
    "the JR Pass",
    "pydantic validation",
    "coconut milk",
    "Nara day trip",
    "billing address",
    "cherry blossom crowds",
]


def _queries(n: int, salt: str) -> list[str]:
    return [f"What did we say about {_TOPICS[i % len(_TOPICS)]}? (question {salt}-{i})" for i in range(n)]


COLD_USER_CHAINS = 100
"""Chains per user in the cold-user phase."""


def _cold_user(j: int, n_users: int) -> str:
    return f"cold-{j % n_users}"


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random unit vectors (float32, DIM): the stand-ins for chain embeddings."""
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


async def _fill(index, vectors: np.ndarray, users: int = 0) -> None:
    """Every vector in SCOPE, or with `users`, chain j in user _cold_user(j, users) of SCOPE's tenant."""
    await index.open()
    client = index._connect()  # the bench fills in bulk; formation upserts one chain at a time
    tenant, user, agent = SCOPE
    for i in range(0, len(vectors), INSERT_BATCH):
        rows = [
            {
                "chain_id": f"c{j}",
                "tenant_id": tenant,
                "user_id": _cold_user(j, users) if users else user,
                "agent_id": agent,
                "embedding": vectors[j].tolist(),
            }
            for j in range(i, min(i + INSERT_BATCH, len(vectors)))
        ]
        await asyncio.to_thread(client.insert, index.collection, rows)
    await asyncio.to_thread(client.flush, index.collection)  # sealed segments, as formation's flushes leave them


async def _measure(path: Path, n_chains: int, n_queries: int, repeats: int, tick: Callable[[], None]) -> dict:
    from athena_formation.store.vector_index import VectorIndex

    rng = np.random.default_rng(7)
    vectors = _unit_vectors(rng, n_chains)
    index = VectorIndex(str(path), collection=COLLECTION, dim=DIM)
    t_fill = time.perf_counter()
    await _fill(index, vectors)
    fill_s = time.perf_counter() - t_fill
    # As formation embeds queries (SEARCH_QUERY_INT8's default: the model's int8 copy).
    embedder = LocalEmbedder(cache=EmbeddingCache(), small_batch_threads=1, quantized=True)
    await embedder.embed(["warm-up"])
    t_load = time.perf_counter()
    await index.search(vectors[0], tenant_id=SCOPE[0], user_id=SCOPE[1], limit=LIMIT)  # reads the user's vectors
    load_s = time.perf_counter() - t_load

    out: dict[str, list[float]] = {
        k: [] for k in ("incl_p50", "incl_p95", "excl_p50", "excl_p95", "np_p50", "np_p95", "embed_p50", "np_incl_p95")
    }
    agree = 0
    total = 0
    try:
        for r in range(repeats):
            texts = _queries(n_queries, f"r{r}")
            incl, excl, base, emb, base_incl = [], [], [], [], []
            qvecs = []
            for text in texts:
                t0 = time.perf_counter()
                q = (await embedder.embed([text]))[0]
                t1 = time.perf_counter()
                hits = await index.search(q, tenant_id=SCOPE[0], user_id=SCOPE[1], limit=LIMIT)
                t2 = time.perf_counter()
                incl.append((t2 - t0) * 1000)
                emb.append((t1 - t0) * 1000)
                qvecs.append((q, hits))
            for q, _hits in qvecs:
                t0 = time.perf_counter()
                await index.search(q, tenant_id=SCOPE[0], user_id=SCOPE[1], limit=LIMIT)
                excl.append((time.perf_counter() - t0) * 1000)
            # The baseline in a loop of its own: numpy's BLAS threads and torch's (VectorIndex's scan)
            # spinning in turn slow each other down (both, 2-3x) when interleaved call by call.
            for q, hits in qvecs:
                t0 = time.perf_counter()
                sims = vectors @ q
                top = np.argpartition(-sims, LIMIT)[:LIMIT]
                top = top[np.argsort(-sims[top])]
                base.append((time.perf_counter() - t0) * 1000)
                agree += len({f"c{j}" for j in top} & {h.chain_id for h in hits})
                total += LIMIT
            base_incl = [e + b for e, b in zip(emb, base)]
            out["incl_p50"].append(percentile(incl, 50))
            out["incl_p95"].append(percentile(incl, 95))
            out["excl_p50"].append(percentile(excl, 50))
            out["excl_p95"].append(percentile(excl, 95))
            out["np_p50"].append(percentile(base, 50))
            out["np_p95"].append(percentile(base, 95))
            out["embed_p50"].append(percentile(emb, 50))
            out["np_incl_p95"].append(percentile(base_incl, 95))
            tick()
    finally:
        await _close_and_release(index, path)
    return {"series": out, "fill_s": fill_s, "user_load_s": load_s, "top10_agreement": agree / total if total else None}


async def _close_and_release(index, path: Path) -> None:
    await index.close()
    # Milvus Lite serves the file from this process until released (formation opens it next).
    from milvus_lite.server_manager import server_manager_instance

    await asyncio.to_thread(server_manager_instance.release_server, str(path))


async def _measure_cold_users(path: Path, n_chains: int, n_searched: int, repeats: int) -> dict:
    """n_chains vectors over n_chains // COLD_USER_CHAINS users; `n_searched` of them, in `repeats`
    groups, each searched twice: first with its vectors read from Milvus, then from the cache."""
    from athena_formation.store.vector_index import VectorIndex

    rng = np.random.default_rng(11)
    vectors = _unit_vectors(rng, n_chains)
    n_users = max(1, n_chains // COLD_USER_CHAINS)
    index = VectorIndex(str(path), collection=COLLECTION, dim=DIM)
    t_fill = time.perf_counter()
    await _fill(index, vectors, users=n_users)
    fill_s = time.perf_counter() - t_fill
    order = rng.permutation(n_users)
    searched, after_warm_up = order[:n_searched], order[n_searched : 2 * n_searched]
    out: dict[str, list[float]] = {
        "cold_p50": [],
        "cold_p95": [],
        "warm_p50": [],
        "warm_p95": [],
        "after_warm_up_p50": [],
        "after_warm_up_p95": [],
    }

    async def timed_search(idx, u: int) -> float:
        t0 = time.perf_counter()
        hits = await idx.search(
            vectors[rng.integers(n_chains)], tenant_id=SCOPE[0], user_id=_cold_user(int(u), n_users), limit=LIMIT
        )
        ms = (time.perf_counter() - t0) * 1000
        if len(hits) != min(LIMIT, COLD_USER_CHAINS):
            raise RuntimeError(f"a cold user's search found {len(hits)} chains, not {LIMIT}")
        return ms

    try:
        for group in np.array_split(searched, repeats):
            cold, warm = [], []
            for u in group:
                cold.append(await timed_search(index, u))
                warm.append(await timed_search(index, u))
            out["cold_p50"].append(percentile(cold, 50))
            out["cold_p95"].append(percentile(cold, 95))
            out["warm_p50"].append(percentile(warm, 50))
            out["warm_p95"].append(percentile(warm, 95))
    finally:
        await index.close()
    # As formation starts: a new index over the same file warms its cache, then users it never searched.
    index = VectorIndex(str(path), collection=COLLECTION, dim=DIM)
    try:
        t_warm = time.perf_counter()
        await index.warm()
        warm_up_s = time.perf_counter() - t_warm
        for group in np.array_split(after_warm_up, repeats):
            first = [await timed_search(index, u) for u in group]
            out["after_warm_up_p50"].append(percentile(first, 50))
            out["after_warm_up_p95"].append(percentile(first, 95))
    finally:
        await _close_and_release(index, path)
    return {"series": out, "users": n_users, "searched": len(searched), "fill_s": fill_s, "warm_up_s": warm_up_s}


def measure_search_at(
    n_chains: int,
    n_queries: int,
    repeats: int,
    tick: Callable[[], None],
    stores: BenchStores = BenchStores(),
    *,
    cold_users: bool = False,
) -> tuple[dict, dict]:
    """In-process figures (with `cold_users`, the cold-user phase too, in a Milvus file of its own), then
    the public RPC over the first phase's Milvus file, in one stack's data dir."""
    env = {"LLM_BASE_URL": "", "MILVUS_COLLECTION": COLLECTION, "MONGODB_DATABASE": DATABASE}
    ids = [f"c{j}" for j in range(n_chains)]
    with tempfile.TemporaryDirectory(prefix="athena-bench-search-") as tmp:
        cold_file = Path(tmp) / "cold-users.db"
        with stores.stack(tmp, services=("formation", "ingest"), env=env) as stack:
            m = asyncio.run(_measure(stack.data_dir / "milvus" / "milvus.db", n_chains, n_queries, repeats, tick))
            if cold_users:
                m["cold"] = asyncio.run(_measure_cold_users(cold_file, n_chains, n_queries, repeats))
            rpc = run_search_rpc(
                stack,
                ids,
                lambda salt: _queries(n_queries, salt),
                limit=LIMIT,
                repeats=repeats,
                tick=lambda: None,
                topics=_TOPICS,
            )
        if cold_users:  # the cold-user file through the public API, in a stack of its own
            n_users = m["cold"]["users"]
            searched = [_cold_user(int(u), n_users) for u in np.random.default_rng(13).permutation(n_users)[:n_queries]]
            with stores.stack(
                Path(tmp) / "cold-stack",
                services=("formation", "ingest"),
                env={**env, "VECTOR_INDEX_URI": str(cold_file)},
            ) as cold_stack:
                rpc["cold"] = run_cold_users_rpc(
                    cold_stack,
                    ids,
                    lambda j: _cold_user(j, n_users),
                    searched,
                    lambda salt: _queries(n_queries, salt),
                    limit=LIMIT,
                    repeats=repeats,
                    topics=_TOPICS,
                )
    return m, rpc


def run_search_stage(*, quick: bool, tick: Callable[[], None], stores: BenchStores = BenchStores()) -> StageResult:
    n_chains, n_queries, repeats = (10_000, 30, 3) if quick else (100_000, 60, 5)
    t0 = time.perf_counter()
    small = small_rpc = None
    if not quick:  # growth: the same figures at a tenth of the data, same run
        small, small_rpc = measure_search_at(n_chains // 10, n_queries, 3, lambda: None, stores)
    m, rpc = measure_search_at(n_chains, n_queries, repeats, tick, stores, cold_users=True)
    s = m["series"]
    cold = m["cold"]
    cold_rpc = rpc.pop("cold")
    rs = rpc["series"]
    res = StageResult(stage="search")
    res.figures = [
        Figure(
            f"vector step p50, query embedding included ({n_chains:,} chains)",
            "ms",
            summary(s["incl_p50"]),
            "numpy cosine + embedding",
            None,
        ),
        Figure(
            f"vector step p95, query embedding included ({n_chains:,} chains)",
            "ms",
            summary(s["incl_p95"]),
            "numpy cosine + embedding",
            summary(s["np_incl_p95"]),
        ),
        Figure(
            f"vector step p50, embedding excluded ({n_chains:,} chains)",
            "ms",
            summary(s["excl_p50"]),
            "numpy cosine",
            summary(s["np_p50"]),
        ),
        Figure(
            f"vector step p95, embedding excluded ({n_chains:,} chains)",
            "ms",
            summary(s["excl_p95"]),
            "numpy cosine",
            summary(s["np_p95"]),
        ),
        Figure("query embedding p50 (LocalEmbedder, 1 text)", "ms", summary(s["embed_p50"])),
        Figure(
            f"SearchMemory RPC p50, embedding included ({n_chains:,} chains)",
            "ms",
            summary(rs["incl_p50"]),
            "in-process embedding + VectorIndex.search",
            summary(s["incl_p50"]),
        ),
        Figure(
            f"SearchMemory RPC p95, embedding included ({n_chains:,} chains)",
            "ms",
            summary(rs["incl_p95"]),
            "in-process embedding + VectorIndex.search",
            summary(s["incl_p95"]),
        ),
        Figure(
            f"SearchMemory RPC p50, embedding cached ({n_chains:,} chains)",
            "ms",
            summary(rs["excl_p50"]),
            "in-process VectorIndex.search",
            summary(s["excl_p50"]),
        ),
        Figure(
            f"SearchMemory RPC p95, embedding cached ({n_chains:,} chains)",
            "ms",
            summary(rs["excl_p95"]),
            "in-process VectorIndex.search",
            summary(s["excl_p95"]),
        ),
        # Appended, so the figures above keep their indices.
        Figure(
            f"SearchMemory RPC throughput, {CONCURRENT_CALLERS} callers, embedding included ({n_chains:,} chains)",
            "calls/s",
            summary(rs["concurrent_per_s"]),
            "one caller",
            summary(rs["incl_per_s"]),
        ),
        Figure(
            f"SearchMemory RPC p95, {CONCURRENT_CALLERS} callers, embedding included ({n_chains:,} chains)",
            "ms",
            summary(rs["concurrent_p95"]),
            "one caller",
            summary(rs["incl_p95"]),
        ),
        Figure(
            f"vector step p50, a user's first search ({cold['users']:,} users x {COLD_USER_CHAINS} chains)",
            "ms",
            summary(cold["series"]["cold_p50"]),
            "the same user's next search",
            summary(cold["series"]["warm_p50"]),
        ),
        Figure(
            f"vector step p95, a user's first search ({cold['users']:,} users x {COLD_USER_CHAINS} chains)",
            "ms",
            summary(cold["series"]["cold_p95"]),
            "the same user's next search",
            summary(cold["series"]["warm_p95"]),
        ),
        Figure(
            f"vector step p95, a user's first search after the cache's warm-up ({cold['users']:,} users)",
            "ms",
            summary(cold["series"]["after_warm_up_p95"]),
            "without the warm-up",
            summary(cold["series"]["cold_p95"]),
        ),
        Figure(
            f"SearchMemory RPC p50, a user's first search after formation's warm-up ({cold['users']:,} users)",
            "ms",
            summary(cold_rpc["series"]["first_p50"]),
            "the same user's next search",
            summary(cold_rpc["series"]["next_p50"]),
        ),
        Figure(
            f"SearchMemory RPC p95, a user's first search after formation's warm-up ({cold['users']:,} users)",
            "ms",
            summary(cold_rpc["series"]["first_p95"]),
            "the same user's next search",
            summary(cold_rpc["series"]["next_p95"]),
        ),
        Figure(
            f"SearchMemory RPC p50, an open window of {2 * OPEN_WINDOW_TURNS}+ events, embedding included ({n_chains:,} chains)",
            "ms",
            summary(rs["open_p50"]),
            "no open window",
            summary(rs["incl_p50"]),
        ),
        Figure(
            f"SearchMemory RPC p95, an open window of {2 * OPEN_WINDOW_TURNS}+ events, embedding included ({n_chains:,} chains)",
            "ms",
            summary(rs["open_p95"]),
            "no open window",
            summary(rs["incl_p95"]),
        ),
    ]
    res.figures[0].baseline_name = ""
    # search_p95_ms is SearchMemory itself (the public RPC, hybrid ranking, MongoDB fetch included);
    # the in-process figures time the vector step alone (embedding + VectorIndex.search).
    res.keys = {
        "search_p95_ms": res.figures[6].value["median"],
        "search_chains": n_chains,
        "search_p95_ms_excluding_embedding": res.figures[8].value["median"],
        "search_vector_step_p95_ms": res.figures[1].value["median"],
        # What the RPC, the ranking and the document reads add to the vector step: the search target.
        "search_p95_vs_vector_step": res.figures[6].value["median"] / res.figures[1].value["median"],
        "search_vector_step_p95_ms_excluding_embedding": res.figures[3].value["median"],
        "search_numpy_p95_ms": res.figures[3].baseline["median"],  # type: ignore[index]
        "search_rpc_p50_ms": res.figures[5].value["median"],
        "search_rpc_p95_ms": res.figures[6].value["median"],
        "search_rpc_p95_ms_excluding_embedding": res.figures[8].value["median"],
        "search_rpc_chains": n_chains,
        "search_concurrent_per_s": res.figures[9].value["median"],
        "search_concurrent_vs_one_caller": res.figures[9].ratio(),
        "search_concurrent_p95_ms": res.figures[10].value["median"],
        "search_concurrent_callers": CONCURRENT_CALLERS,
        "search_cold_user_p50_ms": res.figures[11].value["median"],
        "search_cold_user_p95_ms": res.figures[12].value["median"],
        "search_cold_users": cold["users"],
        "search_cold_user_after_warm_up_p95_ms": res.figures[13].value["median"],
        "search_cache_warm_up_s": cold["warm_up_s"],
        "search_cold_user_rpc_p50_ms": res.figures[14].value["median"],
        "search_cold_user_rpc_p95_ms": res.figures[15].value["median"],
        "search_cold_user_rpc_next_p95_ms": res.figures[15].baseline["median"],  # type: ignore[index]
        "formation_warm_up_s": cold_rpc["warm_up_after_serving_s"],
        "search_open_window_p50_ms": res.figures[16].value["median"],
        "search_open_window_p95_ms": res.figures[17].value["median"],
    }
    res.detail = {
        "chains": n_chains,
        "queries_per_repeat": n_queries,
        "repeats": repeats,
        "limit": LIMIT,
        "fill_seconds": m["fill_s"],
        "first_search_user_load_seconds": m["user_load_s"],
        "milvus_vs_numpy_top10_agreement": m["top10_agreement"],
        "cold_users": {
            "users": cold["users"],
            "chains_per_user": COLD_USER_CHAINS,
            "users_searched": cold["searched"],
            "fill_seconds": cold["fill_s"],
            "rpc": {
                "chain_doc_fill_seconds": cold_rpc["doc_fill_s"],
                "services_start_seconds": cold_rpc["services_start_s"],
                "formation_warm_up_after_serving_seconds": cold_rpc["warm_up_after_serving_s"],
                "users_searched": n_queries,
            },
        },
        "rpc": _rpc_detail(rpc),
        "figures": {f.name: {"value": f.value, "baseline": f.baseline} for f in res.figures},
    }
    if small is not None and small_rpc is not None:
        g = {k: statistics.median(small["series"][k]) for k in ("incl_p95", "excl_p50", "excl_p95", "np_p95")}
        res.keys["search_vector_step_growth_10x_p95"] = res.figures[1].value["median"] / g["incl_p95"]
        res.keys["search_vector_step_growth_10x_p95_excluding_embedding"] = (
            res.figures[3].value["median"] / g["excl_p95"]
        )
        small_rpc_p95 = statistics.median(small_rpc["series"]["incl_p95"])
        small_rpc_cached_p95 = statistics.median(small_rpc["series"]["excl_p95"])
        res.keys["search_growth_10x_p95"] = res.figures[6].value["median"] / small_rpc_p95
        res.keys["search_growth_10x_p95_excluding_embedding"] = res.figures[8].value["median"] / small_rpc_cached_p95
        res.keys["search_rpc_growth_10x_p95"] = res.keys["search_growth_10x_p95"]
        res.detail["growth"] = {
            "chains": n_chains // 10,
            "repeats": 3,
            **{f"{k}_ms": v for k, v in g.items()},
            "fill_seconds": small["fill_s"],
            "first_search_user_load_seconds": small["user_load_s"],
            "rpc": _rpc_detail(small_rpc),
        }
    res.notes.append(
        f"{n_chains:,} random unit vectors in one scope, {n_queries} queries x {repeats} repeats; fill took {m['fill_s']:.1f}s"
    )
    res.notes.append(
        f"cold users: {n_chains:,} vectors over {cold['users']:,} users of {COLD_USER_CHAINS} in a Milvus file of their own "
        f"(fill {cold['fill_s']:.1f}s); {cold['searched']} of them searched twice, first with their vectors read from Milvus; "
        f"the cache's warm-up (as formation starts) {cold['warm_up_s']:.1f}s, then the first searches of {cold['searched']} others"
    )
    res.notes.append(
        f"cold users through SearchMemory: the same {cold['users']:,} users' chain documents in a stack of their own "
        f"(written in {cold_rpc['doc_fill_s']:.1f}s); formation's warm-up (vectors and lexicons) ended "
        f"{cold_rpc['warm_up_after_serving_s']:.1f}s after it served; then {n_queries} users searched twice"
    )
    res.notes.append(
        f"SearchMemory through ingest -> formation, limit {LIMIT}: {n_chains:,} chain documents written in {rpc['doc_fill_s']:.1f}s; "
        f"first call of the user (straight to formation) {rpc['first_call_s']:.1f}s; MongoDB fetch p50 {rpc['steps']['mongo_fetch_p50_ms']:.1f} ms, "
        f"warm-ups p50 {rpc['steps']['mongo_warm_ups_p50_ms']:.1f} ms; cached questions straight to formation p50 "
        f"{rpc['steps']['formation_direct_cached_p50_ms']:.1f} ms; formation's steps of the new questions, mean ms: "
        + ", ".join(f"{step} {ms:.2f}" for step, ms in rpc["steps"]["formation_step_mean_ms"].items() if ms is not None)
    )
    res.seconds = time.perf_counter() - t0
    return res


def _rpc_detail(rpc: dict) -> dict:
    return {
        "chain_doc_fill_seconds": rpc["doc_fill_s"],
        "services_start_seconds": rpc["services_start_s"],
        "first_call_user_load_seconds": rpc["first_call_s"],
        "formation_warm_up_wait_after_first_call_seconds": rpc["warm_up_wait_s"],
        **{
            k: statistics.median(v)
            for k, v in (
                ("p50_ms", rpc["series"]["incl_p50"]),
                ("p95_ms", rpc["series"]["incl_p95"]),
                ("cached_embedding_p50_ms", rpc["series"]["excl_p50"]),
                ("cached_embedding_p95_ms", rpc["series"]["excl_p95"]),
                ("concurrent_per_s", rpc["series"]["concurrent_per_s"]),
                ("concurrent_p95_ms", rpc["series"]["concurrent_p95"]),
                ("open_window_p50_ms", rpc["series"]["open_p50"]),
                ("open_window_p95_ms", rpc["series"]["open_p95"]),
            )
        },
        **rpc["steps"],
    }
