"""Run the production decision, `decide()`, over labelled dialogues and score the segmentation.

Each dialogue is segmented by the detector's `replay()` (the product's one replay through
`decide()`, shared with the training and the benchmark): in order, one user message at a time, the
way the worker sees it; after a predicted break the new segment starts where `Decision.starts_at`
says: the new message, or the agent turn right before it (boundary placement).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from athena.embeddings import Embedder
from athena_cognition.detector import Arbiter, Decision, Scorer, Thresholds, Turn, prefetch_embeddings, replay
from athena_lab.segmentation.metrics import SegmentationScores, score_segmentations
from athena_lab.segmentation.segmentation_data import Dialogue

__all__ = ["DialoguePrediction", "EvaluationResult", "dialogue_turns", "evaluate", "scores_record"]

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


async def evaluate(
    dialogues: Sequence[Dialogue],
    *,
    scorer: Scorer,
    embedder: Embedder,
    thresholds: Thresholds,
    arbiter: Arbiter | None = None,
    max_events_before_flush: int,
    flush_keep_events: int = 0,
    on_dialogue: Callable[[int], None] | None = None,
) -> EvaluationResult:
    """Segment every dialogue with `replay()` (so `decide()`) and score against the references.
    `flush_keep_events`: the events a force flush leaves in the window (STM_FLUSH_KEEP_EVENTS)."""
    predictions: list[DialoguePrediction] = []
    paths: Counter[str] = Counter()
    for chunk_start in range(0, len(dialogues), PREFETCH_DIALOGUES):
        chunk = dialogues[chunk_start : chunk_start + PREFETCH_DIALOGUES]
        # One embedding batch per chunk; every decide() after this is served from the cache.
        if getattr(scorer, "reads_embeddings", True):
            await prefetch_embeddings(embedder, (u.text for d in chunk for u in d.utterances))
        for dialogue in chunk:
            replayed = await replay(
                dialogue_turns(dialogue),
                scorer=scorer,
                embedder=embedder,
                thresholds=thresholds,
                arbiter=arbiter,
                max_events_before_flush=max_events_before_flush,
                flush_keep_events=flush_keep_events,
            )
            prediction = DialoguePrediction(id=dialogue.id, starts=replayed.starts, decisions=replayed.decisions)
            predictions.append(prediction)
            paths.update(d.path for _, d in prediction.decisions)
            if on_dialogue is not None:
                on_dialogue(1)
    scores = score_segmentations([d.starts for d in dialogues], [p.starts for p in predictions])
    return EvaluationResult(scores=scores, predictions=predictions, paths=dict(sorted(paths.items())))
