"""Scoring k-fold cross-validation: pooled out-of-fold figures and their spread over the folds.

The trainers pick thresholds on the pooled figures (every training dialogue scored by models that
never saw it) and report the per-fold figures beside them, so a difference between candidates can
be read against how much one fold differs from another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, TypedDict

import numpy as np

from athena_lab.segmentation.metrics import score_segmentations
from athena_lab.segmentation.segmentation_data import Dialogue, cv_fold

__all__ = [
    "CrossValidated",
    "FoldSplit",
    "cross_validated",
    "fold_scores",
    "fold_splits",
    "fold_spread",
    "pooled_scores",
    "summary",
]


class FoldSplit(NamedTuple):
    """One fold: the SuperDialseg and TIAGE dialogues of the other folds to fit on, and the fold's own."""

    train_superseg: list[Dialogue]
    train_tiage: list[Dialogue]
    held: list[Dialogue]


def fold_splits(superseg: Sequence[Dialogue], tiage: Sequence[Dialogue], folds: int) -> list[FoldSplit]:
    """The `folds` splits of the training dialogues (fold = `cv_fold`), in fold order."""
    return [
        FoldSplit(
            [d for d in superseg if cv_fold(d.id, folds) != f],
            [d for d in tiage if cv_fold(d.id, folds) != f],
            [d for d in (*superseg, *tiage) if cv_fold(d.id, folds) == f],
        )
        for f in range(folds)
    ]


def pooled_scores(dialogues: Sequence[Dialogue], starts: Mapping[str, tuple[int, ...]]) -> dict[str, float]:
    """Pk / WD / F1 of these dialogues' predicted segment starts against their references."""
    s = score_segmentations([d.starts for d in dialogues], [starts[d.id] for d in dialogues])
    return {"pk": round(s.pk, 4), "wd": round(s.wd, 4), "f1": round(s.f1, 4)}


def fold_scores(
    dialogues: Sequence[Dialogue], starts: Mapping[str, tuple[int, ...]], folds: int
) -> list[dict[str, float]]:
    """Pk / WD / F1 of each fold's dialogues on their own (fold = `cv_fold`)."""
    return [pooled_scores([d for d in dialogues if cv_fold(d.id, folds) == f], starts) for f in range(folds)]


def fold_spread(superseg: Sequence[Mapping[str, float]], tiage: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean, sample standard deviation, lowest and highest over the folds of each set's Pk and of
    SuperDialseg's F1 (the figures the targets are about)."""
    out: dict[str, float] = {}
    for name, values in (
        ("superseg_pk", [s["pk"] for s in superseg]),
        ("superseg_f1", [s["f1"] for s in superseg]),
        ("tiage_pk", [t["pk"] for t in tiage]),
    ):
        arr = np.asarray(values, dtype=np.float64)
        out[f"{name}_mean"] = round(float(arr.mean()), 4)
        out[f"{name}_sd"] = round(float(arr.std(ddof=1)) if arr.size > 1 else 0.0, 4)
        out[f"{name}_min"] = round(float(arr.min()), 4)
        out[f"{name}_max"] = round(float(arr.max()), 4)
    return out


class CrossValidated(TypedDict):
    """One candidate's out-of-fold figures: pooled (what picks it), per fold, and their spread."""

    objective_mean_pk: float
    superseg_train_cv: dict[str, float]
    tiage_train_cv: dict[str, float]
    superseg_per_fold: list[dict[str, float]]
    tiage_per_fold: list[dict[str, float]]
    spread: dict[str, float]


def cross_validated(
    superseg: Sequence[Dialogue], tiage: Sequence[Dialogue], starts: Mapping[str, tuple[int, ...]], folds: int
) -> CrossValidated:
    """The figures of one candidate's out-of-fold segmentations; the objective is the mean of both sets' pooled Pk."""
    ss_m, ti_m = pooled_scores(superseg, starts), pooled_scores(tiage, starts)
    ss_f, ti_f = fold_scores(superseg, starts, folds), fold_scores(tiage, starts, folds)
    return {
        "objective_mean_pk": round((ss_m["pk"] + ti_m["pk"]) / 2, 4),
        "superseg_train_cv": ss_m,
        "tiage_train_cv": ti_m,
        "superseg_per_fold": ss_f,
        "tiage_per_fold": ti_f,
        "spread": fold_spread(ss_f, ti_f),
    }


def summary(cv: CrossValidated) -> str:
    """One log line: each set's pooled Pk with its folds' range, and the objective."""
    ss, ti, spread = cv["superseg_train_cv"], cv["tiage_train_cv"], cv["spread"]
    return (
        f"superseg pk {ss['pk']} (folds {spread['superseg_pk_min']}-{spread['superseg_pk_max']}) f1 {ss['f1']} | "
        f"tiage pk {ti['pk']} (folds {spread['tiage_pk_min']}-{spread['tiage_pk_max']}) f1 {ti['f1']} "
        f"-> {cv['objective_mean_pk']}"
    )
