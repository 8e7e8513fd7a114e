"""Pk / WindowDiff / F1 on hand-computed cases, and Def-DTS parsing."""

from __future__ import annotations

import pytest

from athena_lab.segmentation.metrics import (
    boundary_counts,
    pk,
    score_segmentations,
    window_diff,
    window_size,
)
from athena_lab.segmentation.segmentation_data import heldout_split, parse_dialogue, split_dialogues


def test_window_size_from_reference() -> None:
    assert window_size([0, 0, 0, 1, 0, 0]) == 2  # 6 / (2*2) = 1.5 -> 2
    assert window_size([0] * 12) == 6  # one segment: 12 / 2
    assert window_size([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]) == 3  # 12 / 4
    assert window_size([0, 1, 1, 1]) == 2  # floor of 2
    assert window_size([1, 0, 0, 0, 0, 0, 0, 0]) == 4  # the first utterance never counts


def test_boundary_off_by_one() -> None:
    ref, hyp = [0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0]
    # k=2; probes (0,2) ok, (1,3) ref differs only, (2,4) both differ, (3,5) hyp differs only.
    assert pk(ref, hyp) == pytest.approx(2 / 4)
    assert window_diff(ref, hyp) == pytest.approx(2 / 4)
    assert boundary_counts(ref, hyp) == (0, 1, 1)


def test_extra_boundary_pk_and_wd_differ() -> None:
    ref, hyp = [0, 0, 1, 0, 0, 0], [0, 0, 1, 1, 0, 0]
    # Pk only sees (2,4) as wrong; WindowDiff also counts the window (1,3) holding 2 boundaries instead of 1.
    assert pk(ref, hyp) == pytest.approx(1 / 4)
    assert window_diff(ref, hyp) == pytest.approx(2 / 4)


def test_perfect_and_too_short() -> None:
    ref = [0, 1, 0, 0, 1, 0, 0]
    assert pk(ref, ref) == 0.0 and window_diff(ref, ref) == 0.0
    assert pk([0, 0], [0, 1]) == 0.0  # no probe fits in a window of 2


def test_first_utterance_never_counts() -> None:
    assert boundary_counts([1, 0, 1], [0, 0, 1]) == (1, 0, 0)
    assert pk([1, 0, 0, 0], [0, 0, 0, 0]) == 0.0


def test_f1_is_micro_averaged() -> None:
    refs = [[0, 1, 0, 1], [0, 1, 0, 0]]
    hyps = [[0, 1, 0, 1], [0, 0, 1, 0]]
    scores = score_segmentations(refs, hyps)
    assert scores.precision == pytest.approx(2 / 3)
    assert scores.recall == pytest.approx(2 / 3)
    assert scores.f1 == pytest.approx(2 / 3)  # macro would be 0.5
    assert scores.dialogues == 2
    assert scores.pk == pytest.approx((pk(refs[0], hyps[0]) + pk(refs[1], hyps[1])) / 2)


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError):
        pk([0, 1], [0, 1, 0])


def test_parse_def_dts_with_stray_markers() -> None:
    text = (
        "[BOUNDARY][NEWLINE]user: Hi, I need help.[NEWLINE]agent: Sure.[NEWLINE][BOUNDARY][NEWLINE]"
        "user: New topic?[NEWLINE][BOUNDARY][NEWLINE][BOUNDARY][NEWLINE]agent: Agent opens one."
        "[NEWLINE]user:no space[NEWLINE][BOUNDARY]"
    )
    d = parse_dialogue("x", text)
    assert [u.role for u in d.utterances] == ["user", "agent", "user", "agent", "user"]
    assert [u.text for u in d.utterances] == ["Hi, I need help.", "Sure.", "New topic?", "Agent opens one.", "no space"]
    assert d.starts == (0, 0, 1, 1, 0)
    assert d.n_segments == 3


def test_heldout_split_is_fixed() -> None:
    ids = [f"superseg_validation_{i}" for i in range(1000)]
    held = [i for i in ids if heldout_split(i)]
    assert held == [i for i in ids if heldout_split(i)]  # stable
    assert 0.25 < len(held) / len(ids) < 0.35
    dialogues = [parse_dialogue(i, "user: a[NEWLINE]agent: b") for i in ids[:50]]
    train, heldout = split_dialogues(dialogues)
    assert len(train) + len(heldout) == 50 and not {d.id for d in train} & {d.id for d in heldout}
