"""replay(): a whole conversation segmented by the production `decide()`, the way the worker sees it.

The one replay that the segmentation evaluation, the detector's training and the cognition benchmark
share. The turns are replayed in order, one user message at a time: the window handed to `decide()`
is the open segment (the turns since the last break) plus the new message, nothing after it (causal).
After a break the next segment starts where `Decision.starts_at` says: the new message, or the agent
turn right before it when the opener judged that the agent opened the new topic (boundary placement).
This mirrors the worker, whose window after a cut holds the events from `starts_at` on.

Nothing is embedded ahead: a caller that replays many conversations can batch their texts first with
`prefetch_embeddings` (the evaluation does; the benchmark does not, it times cold decisions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from athena.embeddings import Embedder
from athena_cognition.detector._decide import Arbiter, Decision, decide
from athena_cognition.detector._gate import Thresholds
from athena_cognition.detector._scorers import Scorer
from athena_cognition.detector._turns import Turn, is_user_message

__all__ = ["Replay", "replay"]


@dataclass(frozen=True, slots=True)
class Replay:
    """`starts`: one flag per turn, 1 where a predicted segment opens (the first turn is always 0), the
    labelled data's format. `decisions`: (turn index, decision) for every user message, in order."""

    starts: tuple[int, ...]
    decisions: tuple[tuple[int, Decision], ...]


async def replay(
    turns: Sequence[Turn],
    *,
    scorer: Scorer,
    embedder: Embedder,
    thresholds: Thresholds,
    arbiter: Arbiter | None = None,
    max_events_before_flush: int,
    flush_keep_events: int = 0,
    session_gap_seconds: float = 0.0,
) -> Replay:
    """Segment `turns` with `decide()`: one decision per user message, against the open segment."""
    starts = [0] * len(turns)
    decisions: list[tuple[int, Decision]] = []
    segment_start = 0
    for i, turn in enumerate(turns):
        if not is_user_message(turn):
            continue
        window = turns[segment_start : i + 1]  # causal: nothing after turn i
        decision = await decide(
            window,
            new_index=len(window) - 1,
            scorer=scorer,
            embedder=embedder,
            thresholds=thresholds,
            arbiter=arbiter,
            max_events_before_flush=max_events_before_flush,
            flush_keep_events=flush_keep_events,
            session_gap_seconds=session_gap_seconds,
        )
        decisions.append((i, decision))
        if decision.is_break and decision.starts_at is not None:
            start = segment_start + decision.starts_at  # i, i - 1 (agent_opened), or earlier (flush_cut)
            if start > 0:
                starts[start] = 1
            segment_start = start  # the window restarts at the turn that opens the next segment
    return Replay(starts=tuple(starts), decisions=tuple(decisions))
