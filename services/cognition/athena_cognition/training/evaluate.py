"""Run the production decision, `decide()`, over labelled dialogues and score the segmentation.

Each dialogue is replayed in order, one user message at a time, the way the worker sees it: the
window is the current segment so far plus the new message; after a predicted break the new
segment starts where `Decision.starts_at` says: the new message, or the agent turn right before it
when the detector judged that the agent opened the new topic (boundary placement).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from athena.embeddings import Embedder
from athena_cognition.detector import Arbiter, Decision, Scorer, Thresholds, Turn, decide, prefetch_embeddings
from athena_cognition.training.metrics import SegmentationScores, score_segmentations
from athena_cognition.training.segmentation_data import Dialogue

__all__ = ["DialoguePrediction", "EvaluationResult", "dialogue_turns", "evaluate", "scores_record", "segment_dialogue"]

PREFETCH_DIALOGUES = 32  # dialogues whose texts are embedded in one batch


@dataclass(frozen=True, slots=True)
class DialoguePrediction:
    id: str
    starts: tuple[int, ...]
    decisions: tuple[tuple[int, Decision], ...]  # (utterance index, decision) per user message


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    scores: SegmentationScores
    predictions: list[DialoguePrediction]
    paths: dict[str, int] = field(default_factory=dict)


def scores_record(result: EvaluationResult) -> dict[str, object]:
    """The scores (rounded to 4 places) and the decision paths, as the training records store them."""
    out: dict[str, object] = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(result.scores).items()}
    out["paths"] = result.paths
    return out


def dialogue_turns(dialogue: Dialogue) -> list[Turn]:
    return [Turn(role=u.role, type="message", content=u.text) for u in dialogue.utterances]


async def segment_dialogue(
    dialogue: Dialogue,
    *,
    scorer: Scorer,
    embedder: Embedder,
    thresholds: Thresholds,
    arbiter: Arbiter | None = None,
    max_events_before_flush: int,
) -> DialoguePrediction:
    turns = dialogue_turns(dialogue)
    starts = [0] * len(turns)
    decisions: list[tuple[int, Decision]] = []
    segment_start = 0
    for i, turn in enumerate(turns):
        if turn.role != "user":
            continue
        window = turns[segment_start : i + 1]  # causal: nothing after message i
        decision = await decide(
            window,
            new_index=len(window) - 1,
            scorer=scorer,
            embedder=embedder,
            thresholds=thresholds,
            arbiter=arbiter,
            max_events_before_flush=max_events_before_flush,
        )
        decisions.append((i, decision))
        if decision.is_break and decision.starts_at is not None:
            start = segment_start + decision.starts_at  # i, or i - 1 when the agent turn opened the topic
            if start > 0:
                starts[start] = 1
                segment_start = start  # the window restarts at the turn that opens the next segment
    return DialoguePrediction(id=dialogue.id, starts=tuple(starts), decisions=tuple(decisions))


async def evaluate(
    dialogues: Sequence[Dialogue],
    *,
    scorer: Scorer,
    embedder: Embedder,
    thresholds: Thresholds,
    arbiter: Arbiter | None = None,
    max_events_before_flush: int,
    on_dialogue: Callable[[int], None] | None = None,
) -> EvaluationResult:
    """Segment every dialogue with `decide()` and score against the references."""
    predictions: list[DialoguePrediction] = []
    paths: Counter[str] = Counter()
    for chunk_start in range(0, len(dialogues), PREFETCH_DIALOGUES):
        chunk = dialogues[chunk_start : chunk_start + PREFETCH_DIALOGUES]
        # One embedding batch per chunk; every decide() after this is served from the cache.
        if getattr(scorer, "reads_embeddings", True):
            await prefetch_embeddings(embedder, (u.text for d in chunk for u in d.utterances))
        for dialogue in chunk:
            prediction = await segment_dialogue(
                dialogue,
                scorer=scorer,
                embedder=embedder,
                thresholds=thresholds,
                arbiter=arbiter,
                max_events_before_flush=max_events_before_flush,
            )
            predictions.append(prediction)
            paths.update(d.path for _, d in prediction.decisions)
            if on_dialogue is not None:
                on_dialogue(1)
    scores = score_segmentations([d.starts for d in dialogues], [p.starts for p in predictions])
    return EvaluationResult(scores=scores, predictions=predictions, paths=dict(sorted(paths.items())))
