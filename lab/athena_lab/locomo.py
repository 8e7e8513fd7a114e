"""`athena eval locomo`: how well SearchMemory finds the evidence of LoCoMo questions.

Each conversation is replayed through the public API (speaker_a as the user, speaker_b as the agent,
each turn stamped with its session's date and time, its dia_id in the metadata; sessions days apart
are cut at their boundaries by the time gap) and closed with FlushWindow. Once the pipeline has
decided every user message and formed the last topic, each question of categories 1-4 goes to SearchMemory; a question
counts as recalled when all its evidence turns are inside the top-k chains. With `agent_per_session`,
each session is replayed under an agent of its own (`s1`, `s2`, ...: the same user talking to a
different agent each time), its window flushed and formed before the next session starts, and the
questions and the chain listing name no agent (all of the user's agents). The fixed-size-chunk
baseline runs in the same process over the same turns with the same embedding model, with chunks of
the mean size of the chains formed (per conversation), averaged over where the cuts fall.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import groupby, pairwise
from pathlib import Path
from typing import Any

import numpy as np

from athena import keys
from athena.embeddings import Embedder
from athena.queue import TaskResult
from athena_cli.demo import wait_until_processed
from athena_client import AsyncAthenaClient, EventInput
from athena_formation.search.lexicon import chain_lexicon, query_terms
from athena_formation.search.query_period import Named, query_periods, told_in_each
from athena_formation.search.ranking import Ranking
from athena_formation.store.lexical_index import LexiconRow, UserLexicon

__all__ = [
    "BaselineResult",
    "Conversation",
    "LocomoReport",
    "RankedUnits",
    "chunk_baseline",
    "evidence_recall",
    "load_conversation",
    "question_periods",
    "rank_units",
    "replay_parts",
    "run_locomo",
    "unit_vectors",
]

_SESSION = re.compile(r"^session_(\d+)$")
TENANT = "locomo-eval"
AGENT = "locomo"
"""The one agent of a replay (without `agent_per_session`)."""


@dataclass
class Turn:
    dia_id: str
    role: str
    text: str
    timestamp: datetime
    session: int = 0
    """The LoCoMo session number (session_N)."""


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[dict[str, Any]]


def _parse_when(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text())
    conv = data.get("conversation", data)
    speaker_a = conv["speaker_a"]
    sessions = sorted((int(m.group(1)), k) for k in conv if (m := _SESSION.match(k)) and isinstance(conv[k], list))
    turns = []
    for number, key in sessions:
        start = _parse_when(conv[f"session_{number}_date_time"])
        for i, t in enumerate(conv[key]):
            text = t["text"]
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            turns.append(
                Turn(
                    t["dia_id"],
                    "user" if t["speaker"] == speaker_a else "agent",
                    text,
                    start + timedelta(seconds=30 * i),
                    number,
                )
            )
    questions = [
        {**q, "evidence": _evidence_ids(q["evidence"])}
        for q in data.get("qa", [])
        if q.get("category") in (1, 2, 3, 4) and q.get("evidence")
    ]
    return Conversation(path.stem, turns, questions)


def _evidence_ids(evidence: Sequence[str]) -> list[str]:
    """The dia_ids of a question's evidence; the data writes a few as one string ("D8:6; D9:17")."""
    return [part.strip() for entry in evidence for part in entry.split(";") if part.strip()]


def evidence_recall(hits: Sequence[set[str]], evidence: set[str]) -> bool:
    found: set[str] = set().union(*hits) if hits else set()
    return evidence <= found


def _chunks(n: int, size: int, offset: int) -> list[tuple[int, int]]:
    """Consecutive chunks of `size` turns, the first one `offset` turns long (0: all full)."""
    cuts = sorted({0, *range(offset, n, size), n})
    return [(a, b) for a, b in pairwise(cuts) if b > a]


def question_periods(conv: Conversation, ranking: Ranking) -> list[list[Named]]:
    """The dates each question names, as SearchMemory reads them ("yesterday": at the time of the search)."""
    now = datetime.now(UTC)
    return [query_periods(q["question"], now=now) if ranking.date_weight > 0 else [] for q in conv.questions]


def unit_vectors(vectors: np.ndarray, units: Sequence[Sequence[int]]) -> np.ndarray:
    """Each unit (turn indices) as the normalised mean of its turns' embeddings."""
    mat = np.stack([vectors[list(u)].mean(axis=0) for u in units])
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    return mat


@dataclass
class RankedUnits:
    recall: float
    found: list[bool]
    """Per question: all its evidence inside the top k units."""
    turns_per_hit: list[float]
    """Per question: the mean number of turns of its top k units."""


def rank_units(
    conv: Conversation,
    units: Sequence[Sequence[int]],
    matrix: np.ndarray,
    question_vectors: np.ndarray,
    *,
    k: int,
    ranking: Ranking,
    periods: Sequence[Sequence[Named]],
) -> RankedUnits:
    """Units of the conversation's turns (each a sorted list of turn indices; `matrix` their vectors,
    unit_vectors) ranked for each question the way SearchMemory ranks chains (ranking.py: cosine, the
    unit's words, the dates the question names against its first and last turn's times, its size)."""
    sets = [{conv.turns[i].dia_id for i in u} for u in units]
    spans = np.array([(conv.turns[u[0]].timestamp.timestamp(), conv.turns[u[-1]].timestamp.timestamp()) for u in units])
    lexicon = UserLexicon()
    for j, u in enumerate(units):
        lexicon.put(
            LexiconRow(
                chain_id=str(j), agent_id="", lexicon=chain_lexicon(conv.turns[i].text for i in u), event_count=len(u)
            )
        )
    found: list[bool] = []
    turns_per_hit: list[float] = []
    for q, v, named in zip(conv.questions, question_vectors, periods):
        sims = matrix @ v
        lexical = lexicon.query(query_terms(q["question"]))
        told = told_in_each(list(named), spans, unknown=False)
        scores = [
            ranking.rank(
                chain_id=str(j),
                similarity=float(sims[j]),
                lexical=lexical.of(str(j)),
                event_count=len(sets[j]),
                told=bool(told[j]),
            ).score
            for j in range(len(units))
        ]
        top = np.argsort(-np.asarray(scores), kind="stable")[:k]
        turns_per_hit.append(float(np.mean([len(sets[j]) for j in top])))
        found.append(evidence_recall([sets[j] for j in top], set(q["evidence"])))
    return RankedUnits(sum(found) / max(1, len(found)), found, turns_per_hit)


@dataclass
class BaselineResult:
    recall: float
    """Mean over the alignments of the cuts."""
    recall_aligned_at_start: float
    turns_per_hit: list[float]
    """Per question, mean over the alignments."""
    hybrid_recall: float
    """The same chunks ranked the way SearchMemory ranks chains (ranking.py), mean over the alignments."""
    hybrid_turns_per_hit: list[float]
    hybrid_found: list[float] = field(default_factory=list)
    """Per question: the share of the alignments whose hybrid-ranked top k hold all its evidence."""


async def chunk_baseline(
    conv: Conversation,
    *,
    size: int,
    k: int,
    embedder: Embedder,
    ranking: Ranking | None = None,
    query_embedder: Embedder | None = None,
) -> BaselineResult:
    """Fixed-size chunks of consecutive turns, each the mean of its turns' embeddings, ranked by cosine.

    Where the cuts fall matters (recall at sizes 18 and 20 differs by 0.06 on the shared files), so the
    figures are the mean over the `size` possible alignments of the cuts. Beside it, the same chunks
    ranked by SearchMemory's hybrid ranking (cosine, the chunk's words, the dates a question names
    against the chunk's turns' times, its size): what the search alone is worth, without the
    pipeline's segmentation. `query_embedder` embeds the questions (as
    formation's embeds search queries; `embedder` when None)."""
    ranking = ranking or Ranking()
    vecs = await embedder.embed([t.text for t in conv.turns])
    qv = await (query_embedder or embedder).embed([q["question"] for q in conv.questions])
    periods_of = question_periods(conv, ranking)
    recalls: list[float] = []
    hybrid_recalls: list[float] = []
    turns_per_hit = np.zeros(len(conv.questions))
    hybrid_turns_per_hit = np.zeros(len(conv.questions))
    hybrid_found = np.zeros(len(conv.questions))
    for offset in range(size):
        chunks = _chunks(len(conv.turns), size, offset)
        units = [list(range(a, b)) for a, b in chunks]
        mat = unit_vectors(vecs, units)
        sets = [{t.dia_id for t in conv.turns[a:b]} for a, b in chunks]
        recalled = 0
        for i, (q, v) in enumerate(zip(conv.questions, qv)):
            top = np.argsort(-(mat @ v))[:k]
            turns_per_hit[i] += float(np.mean([len(sets[j]) for j in top])) / size
            recalled += evidence_recall([sets[j] for j in top], set(q["evidence"]))
        recalls.append(recalled / max(1, len(conv.questions)))
        ranked = rank_units(conv, units, mat, qv, k=k, ranking=ranking, periods=periods_of)
        hybrid_turns_per_hit += np.asarray(ranked.turns_per_hit) / size
        hybrid_found += np.asarray(ranked.found, dtype=np.float64) / size
        hybrid_recalls.append(ranked.recall)
    return BaselineResult(
        recall=float(np.mean(recalls)),
        recall_aligned_at_start=recalls[0],
        turns_per_hit=turns_per_hit.tolist(),
        hybrid_recall=float(np.mean(hybrid_recalls)),
        hybrid_turns_per_hit=hybrid_turns_per_hit.tolist(),
        hybrid_found=hybrid_found.tolist(),
    )


@dataclass
class LocomoReport:
    k: int
    conversations: int = 0
    questions: int = 0
    recalled: int = 0
    turns_per_hit: list[float] = field(default_factory=list)
    chains: int = 0
    merges: int = 0
    rejections: int = 0
    chain_sizes: list[int] = field(default_factory=list)
    baseline_recalled: float = 0.0
    baseline_recalled_aligned_at_start: float = 0.0
    baseline_turns_per_hit: list[float] = field(default_factory=list)
    baseline_chunk_sizes: list[int] = field(default_factory=list)
    baseline_hybrid_recalled: float = 0.0
    baseline_hybrid_turns_per_hit: list[float] = field(default_factory=list)
    unformed_turns: int = 0
    evidence_in_rejected: int = 0
    """Questions with an evidence turn in no chain (the window is flushed, so: in a rejected segment)."""
    per_conversation: list[dict[str, Any]] = field(default_factory=list)
    """Each conversation's own figures, so a difference can be read against the spread between them."""
    by_question: list[tuple[bool, bool, float]] = field(default_factory=list)
    """Per question: its evidence spans several sessions, SearchMemory found it, the share of the
    hybrid chunk baseline's alignments that found it."""

    def by_evidence_sessions(self) -> dict[str, dict[str, Any]]:
        """Recall of SearchMemory and of the hybrid-ranked chunks over the questions whose evidence was
        told in one session and over those spanning several: where a cut inside a session can help,
        and where only merging returning topics can bring the evidence together."""
        out: dict[str, dict[str, Any]] = {}
        for name, several in (("one", False), ("several", True)):
            rows = [(found, chunks) for spans, found, chunks in self.by_question if spans == several]
            n = max(1, len(rows))
            out[name] = {
                "questions": len(rows),
                "recall_at_k": round(sum(found for found, _ in rows) / n, 4),
                "baseline_hybrid_recall_at_k": round(sum(chunks for _, chunks in rows) / n, 4),
            }
        return out

    def as_json(self) -> dict[str, Any]:
        q = max(1, self.questions)
        return {
            "k": self.k,
            "conversations": self.conversations,
            "questions": self.questions,
            "recall_at_k": round(self.recalled / q, 4),
            "mean_turns_per_hit": round(float(np.mean(self.turns_per_hit)) if self.turns_per_hit else 0.0, 2),
            "baseline_recall_at_k": round(self.baseline_recalled / q, 4),
            "baseline_recall_at_k_aligned_at_start": round(self.baseline_recalled_aligned_at_start / q, 4),
            "baseline_mean_turns_per_hit": round(
                float(np.mean(self.baseline_turns_per_hit)) if self.baseline_turns_per_hit else 0.0, 2
            ),
            "baseline_chunk_sizes": self.baseline_chunk_sizes,
            "baseline_hybrid_recall_at_k": round(self.baseline_hybrid_recalled / q, 4),
            "baseline_hybrid_mean_turns_per_hit": round(
                float(np.mean(self.baseline_hybrid_turns_per_hit)) if self.baseline_hybrid_turns_per_hit else 0.0, 2
            ),
            "chains": self.chains,
            "merges": self.merges,
            "rejections": self.rejections,
            "mean_chain_turns": round(float(np.mean(self.chain_sizes)), 2) if self.chain_sizes else 0.0,
            "turns_left_in_short_term_window": self.unformed_turns,
            "evidence_in_rejected": self.evidence_in_rejected,
            "per_conversation": self.per_conversation,
            "by_evidence_sessions": self.by_evidence_sessions(),
        }


def replay_parts(conv: Conversation, *, agent_per_session: bool) -> list[tuple[str, list[Turn]]]:
    """The conversation's turns as (agent id, turns) in replay order: all under AGENT, or each session
    under its own agent `s<N>` (N the LoCoMo session number)."""
    if not agent_per_session:
        return [(AGENT, conv.turns)]
    return [(f"s{n}", list(turns)) for n, turns in groupby(conv.turns, key=lambda t: t.session)]


async def run_locomo(
    connect: Callable[..., AsyncAthenaClient],
    redis_url: str,
    files: Sequence[Path],
    *,
    k: int,
    embedder: Embedder,
    timeout: float,
    progress: Callable[[str, int, int], None] | None = None,
    dump: list[dict[str, Any]] | None = None,
    ranking: Ranking | None = None,
    query_embedder: Embedder | None = None,
    agent_per_session: bool = False,
) -> LocomoReport:
    """Replay, wait, ask. `connect(tenant_id=...)` opens a client with a credential of that tenant (as
    LocalStack.client does). `dump`, when given, receives each conversation's chains (turn ids per chain).
    `ranking`, `query_embedder`: what the stack's formation ranks with and embeds queries with (for the
    baselines; the defaults and `embedder` otherwise). `agent_per_session`: each session under its own
    agent (`s1`, `s2`, ...), flushed and formed before the next; questions and listing across all agents."""
    report = LocomoReport(k=k)
    async with connect(tenant_id=TENANT) as client:
        for path in files:
            conv = load_conversation(path)
            user = f"conv-{conv.name}"
            deadline = time.monotonic() + timeout
            event_to_dia: dict[str, str] = {}
            results: dict[str, TaskResult] = {}
            replayed = 0
            agents: list[str] = []
            for agent, turns in replay_parts(conv, agent_per_session=agent_per_session):
                agents.append(agent)
                scope = client.scope(TENANT, user, agent)
                task_ids: list[str] = []
                batch = 25
                for start in range(0, len(turns), batch):
                    part = turns[start : start + batch]
                    resp = await client.store_events(
                        scope,
                        [
                            EventInput(
                                t.role,
                                t.text,
                                timestamp=t.timestamp,
                                metadata={"dia_id": t.dia_id},
                                event_id=f"{conv.name}-{t.dia_id.replace(':', '.')}",
                            )
                            for t in part
                        ],
                    )
                    for t, r in zip(part, resp.results):
                        event_to_dia[r.event_id] = t.dia_id
                        if r.task_id:
                            task_ids.append(r.task_id)
                    replayed += len(part)
                    if progress:
                        progress(f"replaying {conv.name}", replayed, len(conv.turns))
                # The conversation (with this agent) is over: FlushWindow forms its last topic, after
                # every check queued before it. Per session, the next session starts once it is formed,
                # as when the user comes back later to another agent.
                flush = await client.flush_window(scope)
                task_ids += [flush.task_id] if flush.task_id else []
                results |= await wait_until_processed(
                    redis_url,
                    keys.scope_id(TENANT, user, agent),
                    task_ids,
                    timeout=max(0.0, deadline - time.monotonic()),
                )
            outcomes = [r.get("formation_outcome", "") for r in results.values()]
            report.merges += outcomes.count("FORM_OUTCOME_MERGED")
            report.rejections += outcomes.count("FORM_OUTCOME_REJECTED")
            for agent in agents:
                report.unformed_turns += len(await client.get_full_context(client.scope(TENANT, user, agent)))

            # Per session, no agent: the user's chains and searches across all of the user's agents.
            scope = client.scope(TENANT, user, "" if agent_per_session else AGENT)
            chains = await client.list_chains(scope)
            # Every turn is in a chain, the window or a rejected segment: with the window empty, an
            # evidence turn in no chain is one the quality gate rejected.
            chained = {event_to_dia.get(e, "") for c in chains for e in c.event_ids}
            report.evidence_in_rejected += sum(1 for q in conv.questions if not set(q["evidence"]) <= chained)
            if dump is not None:
                dump.append(
                    {
                        "conversation": conv.name,
                        "chains": [
                            {
                                "id": c.id,
                                "agents": list(c.agent_ids),
                                "topic": c.topic,
                                "subtopics": [t.name for t in c.subtopics],
                                "entities": [e.text for e in c.entities],
                                "summary": c.summary,
                                "turns": [event_to_dia.get(e, "") for e in c.event_ids],
                            }
                            for c in chains
                        ],
                    }
                )
            report.chains += len(chains)
            report.chain_sizes.extend(c.event_count for c in chains)
            hits_before = len(report.turns_per_hit)
            found: list[bool] = []
            for i, q in enumerate(conv.questions):
                hits = await client.search_memory(scope, q["question"], limit=k)
                sets = [{event_to_dia.get(e, "") for e in h.chain.event_ids} for h in hits]
                found.append(evidence_recall(sets, set(q["evidence"])))
                report.recalled += found[-1]
                if sets:
                    report.turns_per_hit.append(float(np.mean([len(s) for s in sets])))
                if progress:
                    progress(f"questions of {conv.name}", i + 1, len(conv.questions))
            report.questions += len(conv.questions)
            report.conversations += 1
            size = max(1, round(float(np.mean([c.event_count for c in chains])))) if chains else 10
            base = await chunk_baseline(
                conv, size=size, k=k, embedder=embedder, ranking=ranking, query_embedder=query_embedder
            )
            report.baseline_recalled += base.recall * len(conv.questions)
            report.baseline_recalled_aligned_at_start += base.recall_aligned_at_start * len(conv.questions)
            report.baseline_turns_per_hit.extend(base.turns_per_hit)
            report.baseline_hybrid_recalled += base.hybrid_recall * len(conv.questions)
            report.baseline_hybrid_turns_per_hit.extend(base.hybrid_turns_per_hit)
            report.baseline_chunk_sizes.append(size)
            report.by_question += [  # a dia_id names its session: "D8:6" is the 6th turn of session 8
                (len({e.split(":")[0] for e in q["evidence"]}) > 1, hit, chunks)
                for q, hit, chunks in zip(conv.questions, found, base.hybrid_found)
            ]
            n, own_hits = max(1, len(conv.questions)), report.turns_per_hit[hits_before:]
            report.per_conversation.append(
                {
                    "conversation": conv.name,
                    "questions": len(conv.questions),
                    "recall_at_k": round(sum(found) / n, 4),
                    "mean_turns_per_hit": round(float(np.mean(own_hits)), 2) if own_hits else 0.0,
                    "baseline_hybrid_recall_at_k": round(base.hybrid_recall, 4),
                    "baseline_hybrid_mean_turns_per_hit": round(float(np.mean(base.hybrid_turns_per_hit)), 2)
                    if base.hybrid_turns_per_hit
                    else 0.0,
                }
            )
    return report
