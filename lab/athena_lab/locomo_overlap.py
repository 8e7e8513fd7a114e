"""`athena eval locomo-overlap`: chains that share turns across a cut, measured offline.

The chains of a full run (`athena eval locomo --chains-out FILE`) become units of the conversation's
turns, ranked for each question the way SearchMemory ranks chains (locomo.rank_units; a unit's vector
the plain mean of its turns', as the chunks'), beside fixed chunks of the units' mean size ranked
alike (chunk_baseline). With an overlap of `turns`, the chain after a cut inside a session also holds
the last `turns` turns before the cut, so evidence told on both sides of it can meet in one hit. Which
cuts: `flush`, those after a chain of at least `flush_events` events (the force flush, where the
detector had not seen the topic end); `topic`, the others (the detector's breaks); `every`, both.
Cuts between sessions are never overlapped. Nothing here changes the product: it measures whether
one chain per event is worth giving up (docs/formation.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from athena.embeddings import Embedder
from athena_formation.search.ranking import Ranking
from athena_lab.locomo import (
    Conversation,
    chunk_baseline,
    load_conversation,
    question_periods,
    rank_units,
    unit_vectors,
)

__all__ = ["Cuts", "OverlapResult", "chain_units", "measure_overlaps", "overlapped"]

Cuts = Literal["flush", "topic", "every"]


def chain_units(conv: Conversation, chains: Sequence[dict[str, Any]]) -> list[list[int]]:
    """The chains (each with its `turns`, dia_ids, as `--chains-out` writes them) as sorted lists of
    turn indices, ordered by their first turn."""
    index = {t.dia_id: i for i, t in enumerate(conv.turns)}
    units = [sorted(index[d] for d in c["turns"] if d in index) for c in chains]
    return sorted((u for u in units if u), key=lambda u: u[0])


def overlapped(
    conv: Conversation, units: Sequence[Sequence[int]], *, turns: int, at: Cuts, flush_events: int = 20
) -> list[list[int]]:
    """Each unit with the `turns` turns before its first one added when the cut there is of the kind
    `at` (see the module docstring), those of the same session only."""
    owner = {i: j for j, u in enumerate(units) for i in u}
    out = []
    for u in units:
        first = u[0]
        before = owner.get(first - 1)
        session = conv.turns[first].session
        flush = before is not None and len(units[before]) >= flush_events
        kind_ok = at == "every" or (at == "flush") == flush
        if turns <= 0 or before is None or conv.turns[first - 1].session != session or not kind_ok:
            out.append(list(u))
            continue
        added = [i for i in range(max(0, first - turns), first) if conv.turns[i].session == session]
        out.append(sorted({*added, *u}))
    return out


@dataclass
class OverlapResult:
    turns: int
    at: Cuts
    recalled: int = 0
    chunks_recalled: float = 0.0
    turns_per_hit: list[float] = field(default_factory=list)
    chunks_turns_per_hit: list[float] = field(default_factory=list)
    per_conversation: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self, questions: int) -> dict[str, Any]:
        recall = self.recalled / max(1, questions)
        chunks = self.chunks_recalled / max(1, questions)
        return {
            "overlap_turns": self.turns,
            "at": self.at,
            "recall_at_k": round(recall, 4),
            "mean_turns_per_hit": round(float(np.mean(self.turns_per_hit or [0.0])), 2),
            "baseline_hybrid_recall_at_k": round(chunks, 4),
            "baseline_hybrid_mean_turns_per_hit": round(float(np.mean(self.chunks_turns_per_hit or [0.0])), 2),
            "chains_minus_chunks": round(recall - chunks, 4),
            "per_conversation": self.per_conversation,
        }


async def measure_overlaps(
    files: Sequence[Path],
    chains: dict[str, Sequence[dict[str, Any]]],
    *,
    k: int,
    embedder: Embedder,
    query_embedder: Embedder,
    ranking: Ranking,
    overlaps: Sequence[int],
    at: Cuts,
    flush_events: int = 20,
) -> dict[str, Any]:
    """Each overlap of `overlaps` (0: the chains as formed) over the conversations of `files`, whose
    chains `chains` holds by conversation name; with the fixed-chunk baseline of each variant's mean
    unit size. The units and the chunks are embedded by `embedder`, the questions by `query_embedder`."""
    results = [OverlapResult(m, at) for m in overlaps]
    questions = 0
    for path in files:
        conv = load_conversation(path)
        if conv.name not in chains:
            raise ValueError(f"no chains of conversation {conv.name} in the chains file")
        vectors = await embedder.embed([t.text for t in conv.turns])
        question_vectors = await query_embedder.embed([q["question"] for q in conv.questions])
        periods = question_periods(conv, ranking)
        formed = chain_units(conv, chains[conv.name])
        n = len(conv.questions)
        questions += n
        for result in results:
            units = overlapped(conv, formed, turns=result.turns, at=at, flush_events=flush_events)
            ranked = rank_units(
                conv, units, unit_vectors(vectors, units), question_vectors, k=k, ranking=ranking, periods=periods
            )
            size = max(1, round(float(np.mean([len(u) for u in units]))))
            chunks = await chunk_baseline(
                conv, size=size, k=k, embedder=embedder, ranking=ranking, query_embedder=query_embedder
            )
            result.recalled += sum(ranked.found)
            result.chunks_recalled += chunks.hybrid_recall * n
            result.turns_per_hit.extend(ranked.turns_per_hit)
            result.chunks_turns_per_hit.extend(chunks.hybrid_turns_per_hit)
            result.per_conversation.append(
                {
                    "conversation": conv.name,
                    "recall_at_k": round(ranked.recall, 4),
                    "mean_turns_per_hit": round(float(np.mean(ranked.turns_per_hit)), 2) if n else 0.0,
                    "baseline_hybrid_recall_at_k": round(chunks.hybrid_recall, 4),
                    "baseline_chunk_size": size,
                    "chains_minus_chunks": round(ranked.recall - chunks.hybrid_recall, 4),
                }
            )
    return {"k": k, "questions": questions, "variants": [r.as_json(questions) for r in results]}
