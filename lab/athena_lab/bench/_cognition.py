"""Stage 4, cognition: decide() decisions/s over a replayed conversation, and the share spent embedding.

The demo's sample conversation is replayed the way the worker sees it, by the detector's `replay()`
(the one the segmentation evaluation and training use): each user message is decided against the
open segment (the turns since the last break), with the default scorer (continuity, with
its opener model), its calibrated thresholds, no arbiter (no LLM) and the local embedding model as
cognition runs it by default (its int8 copy, EMBEDDING_INT8); the time per decision is also
measured with the float model, as its baseline.
Each repeat starts from an empty embedding cache, so every text is embedded once, as in a worker
meeting a conversation for the first time. Baseline: the seed's pair_cosine scorer, same replay.
The same replay is then run again over the warm cache: the detector's own time per decision
(features, scorer, opener, gate), without the embedding model.

Per worker and per process: a cognition process runs MEMORY_WORKER_COUNT workers (default 2) that
share one embedder, whose concurrent calls share forward passes. So the replay also runs as that many
concurrent workers over one LocalEmbedder, each on its own copy of the conversation (texts made
distinct, so no worker's cache answers another's): decisions/s of the process, and per worker (the
process's figure over its workers), beside the single worker alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import numpy as np

from athena.config import Settings
from athena.embeddings import EmbeddingCache, LocalEmbedder
from athena_lab.bench._report import Figure, StageResult, summary

__all__ = ["run_cognition_stage"]


class _TimedEmbedder:
    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        t = time.perf_counter()
        try:
            return await self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t


INT8_DEFAULT: bool = Settings.model_fields["embedding_int8"].default


def _decision_embedder(*, int8: bool) -> LocalEmbedder:
    """As make_embedder builds cognition's, with an empty cache of its own."""
    return LocalEmbedder(cache=EmbeddingCache(), small_batch_threads=1, quantized=int8)


async def _replay(
    scorer_name: str, turns: list, passes: int, *, int8: bool = INT8_DEFAULT
) -> tuple[int, float, float, float]:
    """One worker alone. Returns (decisions, seconds, seconds inside embed(), seconds of the same
    replay again over the warm cache)."""
    embedder = _TimedEmbedder(_decision_embedder(int8=int8))
    t0 = time.perf_counter()
    decisions = await _decide_all(scorer_name, turns, passes, embedder, salt="")
    cold = time.perf_counter() - t0
    t1 = time.perf_counter()
    await _decide_all(scorer_name, turns, passes, embedder, salt="")
    return decisions, cold, embedder.seconds, time.perf_counter() - t1


async def _process_replay(turns: list, passes: int, workers: int) -> tuple[int, float]:
    """`workers` concurrent workers over one embedder, as a cognition process runs them. Returns
    (decisions of all workers, seconds)."""
    embedder = _decision_embedder(int8=INT8_DEFAULT)
    t0 = time.perf_counter()
    counts = await asyncio.gather(
        *(_decide_all("continuity", turns, passes, embedder, salt=f"w{w} ") for w in range(workers))
    )
    return sum(counts), time.perf_counter() - t0


async def _decide_all(
    scorer_name: str, turns: list, passes: int, embedder: _TimedEmbedder | LocalEmbedder, *, salt: str
) -> int:
    from athena_cognition.detector import Turn, default_thresholds, make_scorer, replay

    scorer = make_scorer(scorer_name)
    thresholds = default_thresholds(scorer_name)
    decisions = 0
    for p in range(passes):
        # A new pass changes every text, so the cache does not carry over between passes.
        seq = [Turn(role=t.role, type=t.type, content=f"{t.content} ({salt}{p})") for t in turns]
        replayed = await replay(
            seq, scorer=scorer, embedder=embedder, thresholds=thresholds, arbiter=None, max_events_before_flush=20
        )
        decisions += len(replayed.decisions)
    return decisions


async def _measure(repeats: int, passes: int, tick: Callable[[], None], workers: int) -> StageResult:
    from athena_cli.sample_conversation import sample_conversation

    turns = sample_conversation()
    # Untimed warm-up replays: both models load (and trace) outside the timing.
    await _replay("continuity", turns, 1)
    await _replay("continuity", turns, 1, int8=False)
    await _replay("pair_cosine", turns, 1)
    await _process_replay(turns, 1, workers)
    dps, share, base_dps, base_share, proc_dps, worker_dps, n_dec = [], [], [], [], [], [], 0
    warm_ms, base_warm_ms, float_dps = [], [], []
    for _ in range(repeats):
        n_dec, el, emb, warm = await _replay("continuity", turns, passes)
        dps.append(n_dec / el)
        share.append(emb / el)
        warm_ms.append(1000 * warm / n_dec)
        n_float, el, _, _ = await _replay("continuity", turns, passes, int8=False)
        float_dps.append(n_float / el)
        nb, el, emb, warm = await _replay("pair_cosine", turns, passes)
        base_dps.append(nb / el)
        base_share.append(emb / el)
        base_warm_ms.append(1000 * warm / nb)
        n_proc, el = await _process_replay(turns, passes, workers)
        proc_dps.append(n_proc / el)
        worker_dps.append(n_proc / el / workers)
        tick()
    one_worker = Figure(
        "decide() continuity scorer", "decisions/s", summary(dps), "pair_cosine scorer", summary(base_dps)
    )
    embedding_share = Figure(
        "share of time embedding", "fraction", summary(share), "pair_cosine scorer", summary(base_share)
    )
    per_decision = Figure(
        "decide() per decision, embedding included",
        "ms",
        summary([1000 / d for d in dps]),
        "the float model",
        summary([1000 / d for d in float_dps]),
    )
    per_decision_cached = Figure(
        "decide() per decision, embeddings cached", "ms", summary(warm_ms), "pair_cosine scorer", summary(base_warm_ms)
    )
    per_process = Figure(
        f"decide() per process, {workers} workers", "decisions/s", summary(proc_dps), "one worker alone", summary(dps)
    )
    per_worker = Figure(
        f"decide() per worker, {workers} in a process",
        "decisions/s",
        summary(worker_dps),
        "one worker alone",
        summary(dps),
    )
    res = StageResult(stage="cognition")
    res.figures = [one_worker, embedding_share, per_decision, per_decision_cached, per_process, per_worker]
    res.keys = {
        "decisions_per_s": one_worker.value["median"],
        "decision_embedding_share": embedding_share.value["median"],
        "decisions_per_s_pair_cosine": one_worker.baseline["median"],  # type: ignore[index]
        "decide_ms": per_decision.value["median"],
        "decide_ms_float_model": per_decision.baseline["median"],  # type: ignore[index]
        "decide_ms_cached": per_decision_cached.value["median"],
        "decisions_per_s_per_process": per_process.value["median"],
        "decisions_per_s_per_worker": per_worker.value["median"],
        "cognition_workers": workers,
    }
    res.detail = {
        "decisions_per_repeat": n_dec,
        "passes": passes,
        "repeats": repeats,
        "turns": len(turns),
        "workers": workers,
        "figures": {f.name: {"value": f.value, "baseline": f.baseline} for f in res.figures},
    }
    res.notes.append(
        f"sample conversation ({len(turns)} turns) x {passes} passes = {n_dec} decisions per repeat, cold cache, no LLM; "
        f"per process: {workers} concurrent workers (MEMORY_WORKER_COUNT's default) sharing one embedder"
    )
    return res


def run_cognition_stage(*, quick: bool, tick: Callable[[], None]) -> StageResult:
    repeats, passes = (3, 2) if quick else (5, 6)
    t0 = time.perf_counter()
    workers = Settings.model_fields["memory_worker_count"].default
    res = asyncio.run(_measure(repeats, passes, tick, workers))
    res.seconds = time.perf_counter() - t0
    return res
