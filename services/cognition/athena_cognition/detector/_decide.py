"""decide(): the one chain-break decision that both the cognition worker and the evaluation run.

Order of checks (seed "Chain-break detection", steps 1-4, after a time gap):
0. Time gap (not in the seed): more than STM_SESSION_GAP_SECONDS passed between two events since the
   previous user message: the conversation had stopped, so what came before is a finished segment
   (`time_gap`, starts_at = the first event after the silence: the new message, or the agent turn
   that resumed the conversation; `session_start`). Runs first: a session boundary holds whatever
   the topic.
1. Fewer than two user messages up to the new one: nothing to compare, the chain continues.
   Both latest user messages carry the same non-empty workflow_id or execution_id: steps of one
   automated execution are never topic breaks, the check is skipped.
2. Force flush: the window up to and including the new message holds STM_MAX_EVENTS_BEFORE_FLUSH
   events or more: break unconditionally. The seed says "independently of similarity", so it runs
   before the first-message and workflow checks and before scoring (and saves the embedding work).
   With STM_FLUSH_KEEP_EVENTS (`flush_keep_events`) above 0 the cut falls earlier: at the user
   message nearest to keeping that many of the newest events, which stay in the window as the start
   of the next segment (not in the seed: a cut at the newest message splits a live exchange, and
   leaves the session's last few turns to form a chain of their own; docs/formation.md).
   Messages the embedding model cannot read (`scorer.reads`, the continuity scorer: either of the two
   latest user messages mostly outside the Latin script): the arbiter decides if there is one, else
   the lexical-overlap rule (`unreadable`: break unless the new message repeats 60% of the words of
   the two messages before it), with no placement; the model's score would be noise there.
3. Boundary placement, if the scorer carries an opener model (`scorer.opener`, continuity only):
   when the turn right before the new message is an agent message and the opener gives
   P(that agent turn opened a new topic) >= its threshold, and the agent turn is typical of the
   opener's training turns (`OpenerModel.typical`, the `continuity` scorer's: detector/_typicality.py),
   break there (`agent_opened`, starts_at = new_index - 1), whatever the continuity score.
4. Score, then the three-way gate: high continues, low breaks, the gray zone asks the arbiter
   (the LLM); no arbiter or no answer: the fallback of `fallback_is_break`.

`Decision.starts_at`: window index of the turn that opens the new segment when `is_break`
(new_index, new_index - 1 for `agent_opened`, the first event after a silence for `time_gap`, an
earlier user message for a force flush that keeps the newest events); None when the chain continues.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from athena.embeddings import Embedder
from athena_cognition.detector._gate import Thresholds, fallback_is_break, gate
from athena_cognition.detector._placement import OpenerModel
from athena_cognition.detector._scorers import LEXICAL_OVERLAP_THRESHOLDS, LexicalOverlapScorer, Scorer
from athena_cognition.detector._turns import Turn, is_user_message, user_message_indices

__all__ = [
    "Arbiter",
    "Decision",
    "Path",
    "decide",
    "decision_texts",
    "flush_cut",
    "prefetch_embeddings",
    "session_start",
]

log = logging.getLogger(__name__)


class Path:
    """The `Decision.path` values (also the labels of the decision metrics)."""

    FIRST_MESSAGE = "first_message"
    WORKFLOW_SKIP = "workflow_skip"
    FORCE_FLUSH = "force_flush"
    HIGH = "high"
    LOW = "low"
    LLM_TRUE = "llm_true"
    LLM_FALSE = "llm_false"
    LLM_FALLBACK = "llm_fallback"
    AGENT_OPENED = "agent_opened"
    TIME_GAP = "time_gap"
    UNREADABLE = "unreadable"


@runtime_checkable
class Arbiter(Protocol):
    """Gray-zone judge (the LLM): True same topic, False topic change, None unavailable."""

    async def same_topic(self, previous: str, current: str, *, tenant_id: str | None = None) -> bool | None:
        """`tenant_id` (passed only when `decide` has one): whose messages, for the LLM's rate limit."""
        ...


@dataclass(frozen=True, slots=True)
class Decision:
    """`starts_at`: when `is_break`, the window index where the new segment starts: `new_index`, or
    `new_index - 1` when the agent message right before the new user message opened the new topic
    (path `agent_opened`), or the first event after a silence (`time_gap`, `session_start`), or an
    earlier user message for a force flush that keeps the newest events (`flush_cut`). None when the
    chain continues."""

    is_break: bool
    path: str
    score: float | None
    scorer: str
    starts_at: int | None = None

    def __post_init__(self) -> None:
        if self.is_break != (self.starts_at is not None):
            raise ValueError("starts_at is set exactly when is_break")


def _same_run(a: Turn, b: Turn) -> bool:
    for key in ("workflow_id", "execution_id"):
        va, vb = a.metadata.get(key, ""), b.metadata.get(key, "")
        if va and va == vb:
            return True
    return False


def _gap(before: Turn, after: Turn) -> float:
    """Seconds between two turns (0 when either has no time)."""
    if before.timestamp is None or after.timestamp is None:
        return 0.0
    return after.timestamp - before.timestamp


def session_start(window: Sequence[Turn], new_index: int, *, gap_seconds: float) -> int | None:
    """Where the conversation resumed after a silence of more than `gap_seconds`, among the events
    since the user message before the new one (those before it were its decision's): the first event
    after the earliest such gap, or None (no gap, `gap_seconds` 0, or the gap is before the window's
    first event). The agent may speak first when a conversation resumes (a greeting, a reminder): the
    gap is then before that agent turn, not before the user's message, and the agent turn opens the
    new segment."""
    if gap_seconds <= 0:
        return None
    resumed = None
    for j in range(new_index, 0, -1):  # back to the previous user message, the earliest gap last
        if _gap(window[j - 1], window[j]) > gap_seconds:
            resumed = j
        if is_user_message(window[j - 1]):
            break
    return resumed


def flush_cut(window: Sequence[Turn], new_index: int, *, keep: int) -> int:
    """Where a force flush opens the next segment: the new message when `keep` is 0; otherwise the user
    message (up to the new one) nearest to leaving `keep` events in the window, the earlier one on a
    tie, never the window's first turn. Cutting before a user message keeps each question with its
    answer."""
    if keep <= 0:
        return new_index
    target = new_index + 1 - keep
    users = [i for i in user_message_indices(window, new_index) if i > 0]
    return min(users, key=lambda i: (abs(i - target), i)) if users else new_index


def decision_texts(window: Sequence[Turn], new_index: int, scorer: Scorer) -> list[str]:
    """The texts `decide` will embed for this decision (empty when it stops before scoring)."""
    return [window[i].content for i in scorer.needed_indices(window, new_index)]


async def prefetch_embeddings(embedder: Embedder, texts: Iterable[str]) -> None:
    """Embed many texts in one call so the decisions that follow are all cache hits (workers batch)."""
    unique = list(dict.fromkeys(texts))
    if unique:
        await embedder.embed(unique)


async def decide(
    window: Sequence[Turn],
    *,
    new_index: int,
    scorer: Scorer,
    embedder: Embedder,
    thresholds: Thresholds,
    arbiter: Arbiter | None,
    max_events_before_flush: int,
    flush_keep_events: int = 0,
    session_gap_seconds: float = 0.0,
    tenant_id: str | None = None,
) -> Decision:
    """Does the user message at window[new_index] break the current segment? Turns after it are ignored.
    `flush_keep_events`: how many of the newest events a force flush leaves in the window (0: the cut
    is at the new message). `session_gap_seconds` 0 turns the time-gap check off. `tenant_id`: whose
    window it is, passed to the arbiter (the tenant's share of the LLM rate limit)."""
    if not 0 <= new_index < len(window):
        raise IndexError(f"new_index {new_index} outside a window of {len(window)} turns")
    if not is_user_message(window[new_index]):
        raise ValueError("decide() is called for user messages only")
    name = scorer.name
    resumed_at = session_start(window, new_index, gap_seconds=session_gap_seconds)
    if resumed_at is not None:
        return Decision(is_break=True, path=Path.TIME_GAP, score=None, scorer=name, starts_at=resumed_at)

    # The force flush holds "independently of similarity" (the seed), so before the first-message and
    # workflow checks too: a window of one automated execution is cut at the limit like any other.
    if new_index > 0 and new_index + 1 >= max_events_before_flush:
        starts_at = flush_cut(window, new_index, keep=flush_keep_events)
        return Decision(is_break=True, path=Path.FORCE_FLUSH, score=None, scorer=name, starts_at=starts_at)

    users = user_message_indices(window, new_index)
    if len(users) < 2:
        return Decision(is_break=False, path=Path.FIRST_MESSAGE, score=None, scorer=name)
    previous, current = window[users[-2]], window[users[-1]]
    if _same_run(previous, current):  # the skip spares one execution's steps the similarity check only
        return Decision(is_break=False, path=Path.WORKFLOW_SKIP, score=None, scorer=name)

    reads = getattr(scorer, "reads", None)
    if reads is not None and not (reads(previous.content) and reads(current.content)):
        return await _unreadable(window, new_index, previous, current, name=name, arbiter=arbiter, tenant_id=tenant_id)

    indices = scorer.needed_indices(window, new_index)
    rows = await embedder.embed([window[i].content for i in indices]) if indices else np.zeros((0, 0))
    vectors = {i: rows[k] for k, i in enumerate(indices)}
    score = scorer.score(window, new_index, vectors)

    opener = getattr(scorer, "opener", None)
    if isinstance(opener, OpenerModel):
        p_open = opener.probability(window, new_index, vectors)
        if p_open is not None and opener.opens(p_open, vectors[new_index - 1]):
            return Decision(is_break=True, path=Path.AGENT_OPENED, score=score, scorer=name, starts_at=new_index - 1)

    outcome = gate(score, thresholds)
    if outcome == "high":
        return Decision(is_break=False, path=Path.HIGH, score=score, scorer=name)
    if outcome == "low":
        return Decision(is_break=True, path=Path.LOW, score=score, scorer=name, starts_at=new_index)

    arbitrated = await _arbitrated(
        previous, current, score=score, name=name, new_index=new_index, arbiter=arbiter, tenant_id=tenant_id
    )
    if arbitrated is not None:
        return arbitrated
    return _at_new_message(fallback_is_break(score, thresholds), Path.LLM_FALLBACK, score, name, new_index)


async def _unreadable(
    window: Sequence[Turn],
    new_index: int,
    previous: Turn,
    current: Turn,
    *,
    name: str,
    arbiter: Arbiter | None,
    tenant_id: str | None,
) -> Decision:
    """The decision on messages the embedding model cannot read (`previous` and `current`, the two
    latest user messages): the arbiter's (it reads any language), else the lexical-overlap rule's,
    which needs no embedding."""
    arbitrated = await _arbitrated(
        previous, current, score=None, name=name, new_index=new_index, arbiter=arbiter, tenant_id=tenant_id
    )
    if arbitrated is not None:
        return arbitrated
    score = _LEXICAL_OVERLAP.score(window, new_index, {})
    return _at_new_message(gate(score, LEXICAL_OVERLAP_THRESHOLDS) == "low", Path.UNREADABLE, score, name, new_index)


def _at_new_message(is_break: bool, path: str, score: float | None, name: str, new_index: int) -> Decision:
    """A decision whose break, if any, opens the next segment at the new message."""
    return Decision(is_break=is_break, path=path, score=score, scorer=name, starts_at=new_index if is_break else None)


async def _arbitrated(
    previous: Turn,
    current: Turn,
    *,
    score: float | None,
    name: str,
    new_index: int,
    arbiter: Arbiter | None,
    tenant_id: str | None,
) -> Decision | None:
    """The arbiter's decision on the two latest user messages (`llm_true` / `llm_false`); None without
    an arbiter or an answer. A failing arbiter must not lose the decision: the caller falls back."""
    if arbiter is None:
        return None
    try:
        if tenant_id is None:
            verdict = await arbiter.same_topic(previous.content, current.content)
        else:
            verdict = await arbiter.same_topic(previous.content, current.content, tenant_id=tenant_id)
    except Exception:
        log.warning("gray-zone arbiter failed; using the fallback", exc_info=True)
        return None
    if verdict is None:
        return None
    return _at_new_message(not verdict, Path.LLM_TRUE if verdict else Path.LLM_FALSE, score, name, new_index)


_LEXICAL_OVERLAP = LexicalOverlapScorer()
