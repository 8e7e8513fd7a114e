"""The shipped chain-break detector, re-measured on fixed samples of the shared data, stays above floors.

`athena eval segmentation` runs the production `decide()` (no LLM) over the first 120 dialogues of
SuperDialseg's held-out part and the first 50 of TIAGE's validation file. The floors sit a little
outside what the shipped defaults score there (docs/segmentation.md, "Regression floors"), so a change
that makes segmentation worse fails here, while the float noise of another CPU does not.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from athena_lab.commands.eval_cmd import app
from athena_lab.segmentation.segmentation_data import default_data_dir

pytestmark = pytest.mark.slow

runner = CliRunner()


def _scores(file: str, *args: str) -> dict[str, float]:
    try:
        data = default_data_dir() / file
    except FileNotFoundError:
        pytest.skip("shared segmentation data not present")
    result = runner.invoke(app, ["segmentation", "--data", str(data), "--json", *args])
    assert result.exit_code == 0, result.output
    scores: dict[str, float] = json.loads(result.stdout)
    return scores


def test_superdialseg_held_out_sample_keeps_its_pk_and_f1() -> None:
    scores = _scores("superseg_validation.jsonl", "--split", "heldout", "--limit", "120")

    assert scores["dialogues"] == 120
    assert scores["pk"] <= 0.145
    assert scores["f1"] >= 0.875


def test_tiage_validation_sample_keeps_its_pk() -> None:
    scores = _scores("tiage_validation.jsonl", "--limit", "50")

    assert scores["dialogues"] == 50
    assert scores["pk"] <= 0.38


def test_a_detector_that_breaks_at_every_user_message_is_below_the_floor() -> None:
    """The floors mean something: the trivial baseline does not reach them."""
    scores = _scores("superseg_validation.jsonl", "--split", "heldout", "--limit", "120", "--scorer", "every_user")

    assert scores["pk"] > 0.145 or scores["f1"] < 0.875
