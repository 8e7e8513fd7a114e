"""Segmentation metrics exactly as shared/data/segmentation/README.md prescribes.

A segmentation is a 0/1 list over a dialogue's utterances, 1 where a new segment starts; the first
utterance never counts. Pk and WindowDiff follow segeval (Beeferman et al. 1999; Pevzner & Hearst
2002) with window k = max(2, round(n / (2 * number_of_segments))) taken from the reference, and
are averaged over dialogues. F1 is on exact boundary positions, micro-averaged over all dialogues.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["SegmentationScores", "boundary_counts", "pk", "score_segmentations", "window_diff", "window_size"]


def _labels(starts: Sequence[int]) -> list[int]:
    """Segment id per utterance; index 0 is ignored (the first utterance always opens segment 0)."""
    labels: list[int] = []
    seg = 0
    for i, s in enumerate(starts):
        if i > 0 and s:
            seg += 1
        labels.append(seg)
    return labels


def window_size(reference: Sequence[int]) -> int:
    segments = 1 + sum(1 for i, s in enumerate(reference) if i > 0 and s)
    return max(2, round(len(reference) / (2 * segments)))


def _check(reference: Sequence[int], hypothesis: Sequence[int]) -> None:
    if len(reference) != len(hypothesis):
        raise ValueError(f"reference and hypothesis differ in length ({len(reference)} vs {len(hypothesis)})")


def pk(reference: Sequence[int], hypothesis: Sequence[int], k: int | None = None) -> float:
    """Share of probe pairs (i, i+k) on whose same-segment status the two segmentations disagree."""
    _check(reference, hypothesis)
    k = window_size(reference) if k is None else k
    ref, hyp = _labels(reference), _labels(hypothesis)
    probes = len(ref) - k
    if probes <= 0:
        return 0.0  # too short to probe (segeval's convention)
    errors = sum((ref[i] == ref[i + k]) != (hyp[i] == hyp[i + k]) for i in range(probes))
    return errors / probes


def window_diff(reference: Sequence[int], hypothesis: Sequence[int], k: int | None = None) -> float:
    """Share of windows of k+1 utterances holding a different number of boundaries."""
    _check(reference, hypothesis)
    k = window_size(reference) if k is None else k
    ref, hyp = _labels(reference), _labels(hypothesis)
    probes = len(ref) - k
    if probes <= 0:
        return 0.0
    # Labels grow by one per boundary, so a window's boundary count is a label difference.
    errors = sum((ref[i + k] - ref[i]) != (hyp[i + k] - hyp[i]) for i in range(probes))
    return errors / probes


def boundary_counts(reference: Sequence[int], hypothesis: Sequence[int]) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) on exact positions, skipping index 0."""
    _check(reference, hypothesis)
    tp = fp = fn = 0
    for r, h in zip(reference[1:], hypothesis[1:]):
        tp += bool(r and h)
        fp += bool(h and not r)
        fn += bool(r and not h)
    return tp, fp, fn


@dataclass(frozen=True, slots=True)
class SegmentationScores:
    pk: float
    wd: float
    f1: float
    precision: float
    recall: float
    dialogues: int


def score_segmentations(references: Sequence[Sequence[int]], hypotheses: Sequence[Sequence[int]]) -> SegmentationScores:
    if len(references) != len(hypotheses):
        raise ValueError("need one hypothesis per reference")
    n = len(references)
    tp = fp = fn = 0
    pk_sum = wd_sum = 0.0
    for ref, hyp in zip(references, hypotheses):
        pk_sum += pk(ref, hyp)
        wd_sum += window_diff(ref, hyp)
        a, b, c = boundary_counts(ref, hyp)
        tp, fp, fn = tp + a, fp + b, fn + c
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return SegmentationScores(
        pk=pk_sum / n if n else 0.0,
        wd=wd_sum / n if n else 0.0,
        f1=f1,
        precision=precision,
        recall=recall,
        dialogues=n,
    )
