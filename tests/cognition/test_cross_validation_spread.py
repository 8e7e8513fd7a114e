"""The trainers' cross-validation: each fold scored on its own, and the spread over the folds reported."""

from __future__ import annotations

from athena_lab.segmentation.cross_validation import fold_scores, fold_splits, fold_spread, pooled_scores
from athena_lab.segmentation.segmentation_data import Dialogue, Utterance, cv_fold

FOLDS = 3


def _dialogue(n: int) -> Dialogue:
    utterances = tuple(Utterance("user" if i % 2 == 0 else "agent", f"turn {i}") for i in range(12))
    return Dialogue(id=f"d{n}", utterances=utterances, starts=(0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0))


DIALOGUES = [_dialogue(n) for n in range(30)]
NEVER_BREAKS = (0,) * 12


def test_each_fold_is_scored_on_its_own_dialogues_only() -> None:
    # Perfect predictions in fold 0, none elsewhere: only fold 0 scores Pk 0.
    starts = {d.id: d.starts if cv_fold(d.id, FOLDS) == 0 else NEVER_BREAKS for d in DIALOGUES}

    per_fold = fold_scores(DIALOGUES, starts, FOLDS)

    assert len(per_fold) == FOLDS
    assert per_fold[0]["pk"] == 0.0 and per_fold[0]["f1"] == 1.0
    assert all(f["pk"] > 0.0 and f["f1"] == 0.0 for f in per_fold[1:])
    pooled = pooled_scores(DIALOGUES, starts)
    assert min(f["pk"] for f in per_fold) < pooled["pk"] < max(f["pk"] for f in per_fold)


def test_the_spread_reports_mean_deviation_and_range_over_the_folds() -> None:
    superseg = [{"pk": 0.20, "wd": 0.2, "f1": 0.80}, {"pk": 0.30, "wd": 0.3, "f1": 0.70}]
    tiage = [{"pk": 0.40, "wd": 0.4, "f1": 0.5}, {"pk": 0.40, "wd": 0.4, "f1": 0.5}]

    spread = fold_spread(superseg, tiage)

    assert spread["superseg_pk_mean"] == 0.25
    assert spread["superseg_pk_min"] == 0.20 and spread["superseg_pk_max"] == 0.30
    assert spread["superseg_pk_sd"] == 0.0707  # sample deviation (n - 1) of two folds 0.1 apart
    assert spread["superseg_f1_mean"] == 0.75
    assert spread["tiage_pk_sd"] == 0.0 and spread["tiage_pk_mean"] == 0.40


def test_each_fold_is_held_out_once_and_trained_on_by_the_others() -> None:
    superseg, tiage = DIALOGUES[:20], DIALOGUES[20:]

    splits = fold_splits(superseg, tiage, FOLDS)

    held = [d.id for split in splits for d in split.held]
    assert sorted(held) == sorted(d.id for d in DIALOGUES)  # every dialogue held out exactly once
    for split in splits:
        assert not {d.id for d in split.held} & {d.id for d in (*split.train_superseg, *split.train_tiage)}
        assert len(split.train_superseg) + len(split.train_tiage) + len(split.held) == len(DIALOGUES)
        assert set(split.train_tiage) <= set(tiage)
