"""The opener breaks only at an agent turn typical of the ones it learned from (detector/_typicality.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from athena.embeddings import LocalEmbedder
from athena_cognition.detector import ContinuityScorer, Turn, decide, default_thresholds, make_scorer
from athena_cognition.detector._classifier import packaged_artifact
from athena_cognition.detector._embedding_match import record_name
from athena_cognition.detector._typicality import (
    TYPICAL_AGENT_TURNS_ARTIFACT,
    TypicalTurns,
    load_typical_agent_turns,
)
from athena_lab.segmentation.segmentation_data import file_sha256
from athena_lab.segmentation.train_typicality import TypicalityConfig, fit_typical_turns

CHIT_CHAT = [
    ("user", "I just got back from a hiking trip in the mountains."),
    ("agent", "That sounds amazing! How long were you out there?"),
    ("user", "Three days, we camped by a lake every night."),
    ("agent", "Nice. Do you like cooking? I have been trying new pasta recipes lately."),
    ("user", "Yes, I love cooking pasta! Carbonara is my favorite."),
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


async def _decide(scorer: ContinuityScorer, embedder: LocalEmbedder) -> tuple[str, int | None]:
    window = [Turn(role=role, type="message", content=text) for role, text in CHIT_CHAT]
    d = await decide(
        window,
        new_index=len(window) - 1,
        scorer=scorer,
        embedder=embedder,
        thresholds=default_thresholds("continuity"),
        arbiter=None,
        max_events_before_flush=20,
    )
    return d.path, d.starts_at


async def test_the_opener_breaks_at_a_typical_agent_turn_and_not_at_one_below_the_floor(
    embedder: LocalEmbedder,
) -> None:
    shipped = make_scorer("continuity")
    assert isinstance(shipped, ContinuityScorer) and shipped.opener is not None
    assert shipped.opener.typical == load_typical_agent_turns()  # the default scorer carries the gate
    assert await _decide(shipped, embedder) == ("agent_opened", 3)

    # The same opener with a floor no turn reaches: the chit-chat question no longer opens the topic.
    strict = replace(shipped.opener.typical, floor=1.0)
    gated = ContinuityScorer(shipped.model, opener=replace(shipped.opener, typical=strict))
    path, starts_at = await _decide(gated, embedder)
    assert path != "agent_opened" and starts_at != 3


async def test_the_committed_centres_hold_help_desk_and_chit_chat_turns_and_not_a_stack_trace(
    embedder: LocalEmbedder,
) -> None:
    typical = load_typical_agent_turns()
    assert typical.centroids.shape == (16, 384) and 0.0 < typical.floor < 1.0
    turns = [
        "Nice. Do you like cooking? I have been trying new pasta recipes lately.",
        "Do you need to apply for benefits for yourself or for a family member?",
        "Traceback (most recent call last): File \"x.py\", line 3, in <module> KeyError: 'id'",
    ]
    vectors = await embedder.embed(turns)
    assert [typical.holds(v) for v in vectors] == [True, True, False]


def test_the_committed_artifact_is_the_one_its_record_describes() -> None:
    with packaged_artifact(record_name(TYPICAL_AGENT_TURNS_ARTIFACT)) as path:
        record = json.loads(path.read_text(encoding="utf-8"))
    with packaged_artifact(TYPICAL_AGENT_TURNS_ARTIFACT) as path:
        assert record["artifact_sha256"] == file_sha256(path)
    assert record["model"]["floor"] == load_typical_agent_turns().floor
    assert record["embedding"]["raw_vector_input"] is True  # all-MiniLM-L6-v2 space, as opener_v2's


def test_typical_turns_refuse_what_is_not_unit_centres_a_cosine_floor_or_the_same_dimension(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unit rows"):
        TypicalTurns(centroids=np.array([[2.0, 0.0]]), floor=0.5)
    with pytest.raises(ValueError, match="cosine"):
        TypicalTurns(centroids=np.eye(2), floor=1.5)
    typical = TypicalTurns(centroids=np.eye(3), floor=0.8)
    with pytest.raises(ValueError, match="3-d"):
        typical.holds(np.ones(4))
    assert typical.holds(np.array([1.0, 0.2, 0.0])) and not typical.holds(np.array([1.0, 1.0, 1.0]))
    assert not typical.holds(np.zeros(3))
    typical.save(tmp_path / "t.npz")
    loaded = TypicalTurns.load(tmp_path / "t.npz")
    np.testing.assert_allclose(loaded.centroids, typical.centroids)
    assert loaded.floor == typical.floor


def test_the_floor_is_the_alpha_quantile_of_held_out_turns_against_the_other_folds_centres() -> None:
    rng = np.random.default_rng(0)
    # Two tight groups of turns around two directions; every fold holds some of each.
    centres = np.eye(8)[:2]
    vectors = np.vstack([centres[k] + 0.05 * rng.standard_normal(8) for k in (0, 1) for _ in range(200)])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"d{n}" for n in range(len(vectors))]
    typical = fit_typical_turns(vectors, ids, TypicalityConfig(clusters=2, alpha=0.05))

    assert 0.9 < typical.floor < 1.0
    assert np.mean([typical.holds(v) for v in vectors]) >= 0.9  # about 95% of the turns are typical
    assert not typical.holds(np.eye(8)[5])  # a turn unlike both groups is not


def test_the_typicality_command_passes_its_options_to_the_trainer_and_records_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from athena_lab.commands.train_cmd import app
    from athena_lab.segmentation import train_typicality as trainer

    seen: list[TypicalityConfig] = []

    async def record_config(*, config: TypicalityConfig, **_: object) -> dict[str, object]:
        seen.append(config)  # the recipe the command built, not a training run
        return {"metrics_no_llm": {}}

    monkeypatch.setattr(trainer, "train_typicality", record_config)
    args = ["opener-typicality", "--out", str(tmp_path), "--clusters", "8", "--alpha", "0.1", "--cross-validate"]
    result = CliRunner().invoke(app, args)

    assert result.exit_code == 0, result.output
    (config,) = seen
    assert (config.clusters, config.alpha, config.cross_validate) == (8, 0.1, True)
    assert trainer.command(config) == "athena train opener-typicality --clusters 8 --alpha 0.1 --cross-validate"
    with packaged_artifact(record_name(TYPICAL_AGENT_TURNS_ARTIFACT)) as path:
        committed = json.loads(path.read_text(encoding="utf-8"))
    assert committed["command"] == trainer.command(TypicalityConfig(cross_validate=True))
