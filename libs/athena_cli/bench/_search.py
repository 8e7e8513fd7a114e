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
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from athena.embeddings import EmbeddingCache, LocalEmbedder
from athena_cli.bench._report import Figure, StageResult, percentile, summary
from athena_cli.bench._search_rpc import COLLECTION, CONCURRENT_CALLERS, DATABASE, SCOPE, run_search_rpc
from athena_cli.bench._stores import BenchStores

__all__ = ["measure_search_at", "run_search_stage"]

DIM = 384
LIMIT = 10
INSERT_BATCH = 5000
_TOPICS = ["Kyoto temples", "the VAT number on my invoice", "a webhook KeyError", "chickpea curry", "the JR Pass",
           "pydantic validation", "coconut milk", "Nara day trip", "billing address", "cherry blossom crowds"]


def _queries(n: int, salt: str) -> list[str]:
    return [f"What did we say about {_TOPICS[i % len(_TOPICS)]}? (question {salt}-{i})" for i in range(n)]


async def _fill(index, vectors: np.ndarray) -> None:
    await index.open()
    client = index._connect()  # the bench fills in bulk; formation upserts one chain at a time
    tenant, user, agent = SCOPE
    for i in range(0, len(vectors), INSERT_BATCH):
        rows = [
            {"chain_id": f"c{j}", "tenant_id": tenant, "user_id": user, "agent_id": agent, "embedding": vectors[j].tolist()}
            for j in range(i, min(i + INSERT_BATCH, len(vectors)))
        ]
        await asyncio.to_thread(client.insert, index.collection, rows)
    await asyncio.to_thread(client.flush, index.collection)  # sealed segments, as formation's flushes leave them


async def _measure(path: Path, n_chains: int, n_queries: int, repeats: int, tick: Callable[[], None]) -> dict:
    from athena_formation.vector_index import VectorIndex

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((n_chains, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex(str(path), collection=COLLECTION, dim=DIM)
    t_fill = time.perf_counter()
    await _fill(index, vectors)
    fill_s = time.perf_counter() - t_fill
    # As formation embeds queries (SEARCH_QUERY_INT8's default: the model's int8 copy).
    embedder = LocalEmbedder(cache=EmbeddingCache(), small_batch_threads=None, quantized=True)
    await embedder.embed(["warm-up"])
    t_load = time.perf_counter()
    await index.search(vectors[0], tenant_id=SCOPE[0], user_id=SCOPE[1], limit=LIMIT)  # reads the user's vectors
    load_s = time.perf_counter() - t_load

    out: dict[str, list[float]] = {k: [] for k in ("incl_p50", "incl_p95", "excl_p50", "excl_p95", "np_p50", "np_p95", "embed_p50", "np_incl_p95")}
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
            for q, hits in qvecs:
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
            out["incl_p50"].append(percentile(incl, 50)), out["incl_p95"].append(percentile(incl, 95))
            out["excl_p50"].append(percentile(excl, 50)), out["excl_p95"].append(percentile(excl, 95))
            out["np_p50"].append(percentile(base, 50)), out["np_p95"].append(percentile(base, 95))
            out["embed_p50"].append(percentile(emb, 50)), out["np_incl_p95"].append(percentile(base_incl, 95))
            tick()
    finally:
        await index.close()
        # Milvus Lite serves the file from this process until released; formation opens it next.
        from milvus_lite.server_manager import server_manager_instance

        await asyncio.to_thread(server_manager_instance.release_server, str(path))
    return {"series": out, "fill_s": fill_s, "user_load_s": load_s, "top10_agreement": agree / total if total else None}


def measure_search_at(n_chains: int, n_queries: int, repeats: int, tick: Callable[[], None],
                      stores: BenchStores = BenchStores()) -> tuple[dict, dict]:
    """In-process figures, then the public RPC over the same Milvus file, in one stack's data dir."""
    with tempfile.TemporaryDirectory(prefix="athena-bench-search-") as tmp, stores.stack(
            tmp, services=("formation", "ingest"),
            env={"LLM_BASE_URL": "", "MILVUS_COLLECTION": COLLECTION, "MONGODB_DATABASE": DATABASE}) as stack:
        m = asyncio.run(_measure(stack.data_dir / "milvus" / "milvus.db", n_chains, n_queries, repeats, tick))
        rpc = run_search_rpc(stack, [f"c{j}" for j in range(n_chains)], lambda salt: _queries(n_queries, salt),
                             limit=LIMIT, repeats=repeats, tick=lambda: None, topics=_TOPICS)
    return m, rpc


def run_search_stage(*, quick: bool, tick: Callable[[], None], stores: BenchStores = BenchStores()) -> StageResult:
    n_chains, n_queries, repeats = (10_000, 30, 3) if quick else (100_000, 60, 5)
    t0 = time.perf_counter()
    small = small_rpc = None
    if not quick:  # growth: the same figures at a tenth of the data, same run
        small, small_rpc = measure_search_at(n_chains // 10, n_queries, 3, lambda: None, stores)
    m, rpc = measure_search_at(n_chains, n_queries, repeats, tick, stores)
    s = m["series"]
    rs = rpc["series"]
    res = StageResult(stage="search")
    res.figures = [
        Figure(f"vector step p50, query embedding included ({n_chains:,} chains)", "ms", summary(s["incl_p50"]), "numpy cosine + embedding", None),
        Figure(f"vector step p95, query embedding included ({n_chains:,} chains)", "ms", summary(s["incl_p95"]), "numpy cosine + embedding", summary(s["np_incl_p95"])),
        Figure(f"vector step p50, embedding excluded ({n_chains:,} chains)", "ms", summary(s["excl_p50"]), "numpy cosine", summary(s["np_p50"])),
        Figure(f"vector step p95, embedding excluded ({n_chains:,} chains)", "ms", summary(s["excl_p95"]), "numpy cosine", summary(s["np_p95"])),
        Figure("query embedding p50 (LocalEmbedder, 1 text)", "ms", summary(s["embed_p50"])),
        Figure(f"SearchMemory RPC p50, embedding included ({n_chains:,} chains)", "ms", summary(rs["incl_p50"]), "in-process embedding + VectorIndex.search", summary(s["incl_p50"])),
        Figure(f"SearchMemory RPC p95, embedding included ({n_chains:,} chains)", "ms", summary(rs["incl_p95"]), "in-process embedding + VectorIndex.search", summary(s["incl_p95"])),
        Figure(f"SearchMemory RPC p50, embedding cached ({n_chains:,} chains)", "ms", summary(rs["excl_p50"]), "in-process VectorIndex.search", summary(s["excl_p50"])),
        Figure(f"SearchMemory RPC p95, embedding cached ({n_chains:,} chains)", "ms", summary(rs["excl_p95"]), "in-process VectorIndex.search", summary(s["excl_p95"])),
        # Appended, so the figures above keep their indices.
        Figure(f"SearchMemory RPC throughput, {CONCURRENT_CALLERS} callers, embedding included ({n_chains:,} chains)", "calls/s",
               summary(rs["concurrent_per_s"]), "one caller", summary(rs["incl_per_s"])),
        Figure(f"SearchMemory RPC p95, {CONCURRENT_CALLERS} callers, embedding included ({n_chains:,} chains)", "ms",
               summary(rs["concurrent_p95"]), "one caller", summary(rs["incl_p95"])),
    ]
    res.figures[0].baseline_name = ""
    # search_p95_ms is SearchMemory itself (the public RPC, hybrid ranking, MongoDB fetch included);
    # the in-process figures time the vector step alone (embedding + VectorIndex.search).
    res.keys = {
        "search_p95_ms": res.figures[6].value["median"],
        "search_chains": n_chains,
        "search_p95_ms_excluding_embedding": res.figures[8].value["median"],
        "search_vector_step_p95_ms": res.figures[1].value["median"],
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
    }
    res.detail = {
        "chains": n_chains,
        "queries_per_repeat": n_queries,
        "repeats": repeats,
        "limit": LIMIT,
        "fill_seconds": m["fill_s"],
        "first_search_user_load_seconds": m["user_load_s"],
        "milvus_vs_numpy_top10_agreement": m["top10_agreement"],
        "rpc": _rpc_detail(rpc),
        "figures": {f.name: {"value": f.value, "baseline": f.baseline} for f in res.figures},
    }
    if small is not None and small_rpc is not None:
        g = {k: statistics.median(small["series"][k]) for k in ("incl_p95", "excl_p50", "excl_p95", "np_p95")}
        res.keys["search_vector_step_growth_10x_p95"] = res.figures[1].value["median"] / g["incl_p95"]
        res.keys["search_vector_step_growth_10x_p95_excluding_embedding"] = res.figures[3].value["median"] / g["excl_p95"]
        small_rpc_p95 = statistics.median(small_rpc["series"]["incl_p95"])
        small_rpc_cached_p95 = statistics.median(small_rpc["series"]["excl_p95"])
        res.keys["search_growth_10x_p95"] = res.figures[6].value["median"] / small_rpc_p95
        res.keys["search_growth_10x_p95_excluding_embedding"] = res.figures[8].value["median"] / small_rpc_cached_p95
        res.keys["search_rpc_growth_10x_p95"] = res.keys["search_growth_10x_p95"]
        res.detail["growth"] = {"chains": n_chains // 10, "repeats": 3, **{f"{k}_ms": v for k, v in g.items()},
                                "fill_seconds": small["fill_s"], "first_search_user_load_seconds": small["user_load_s"],
                                "rpc": _rpc_detail(small_rpc)}
    res.notes.append(f"{n_chains:,} random unit vectors in one scope, {n_queries} queries x {repeats} repeats; fill took {m['fill_s']:.1f}s")
    res.notes.append(f"SearchMemory through ingest -> formation, limit {LIMIT}: {n_chains:,} chain documents written in {rpc['doc_fill_s']:.1f}s; "
                     f"first call of the user (straight to formation) {rpc['first_call_s']:.1f}s; MongoDB fetch p50 {rpc['steps']['mongo_fetch_p50_ms']:.1f} ms, "
                     f"warm-ups p50 {rpc['steps']['mongo_warm_ups_p50_ms']:.1f} ms; cached questions straight to formation p50 "
                     f"{rpc['steps']['formation_direct_cached_p50_ms']:.1f} ms")
    res.seconds = time.perf_counter() - t0
    return res


def _rpc_detail(rpc: dict) -> dict:
    return {
        "chain_doc_fill_seconds": rpc["doc_fill_s"],
        "services_start_seconds": rpc["services_start_s"],
        "first_call_user_load_seconds": rpc["first_call_s"],
        **{k: statistics.median(v) for k, v in (("p50_ms", rpc["series"]["incl_p50"]), ("p95_ms", rpc["series"]["incl_p95"]),
                                                 ("cached_embedding_p50_ms", rpc["series"]["excl_p50"]),
                                                 ("cached_embedding_p95_ms", rpc["series"]["excl_p95"]),
                                                 ("concurrent_per_s", rpc["series"]["concurrent_per_s"]),
                                                 ("concurrent_p95_ms", rpc["series"]["concurrent_p95"]))},
        **rpc["steps"],
    }
