"""The opener trainer's options (lab): `--gate-midpoints` adds gates to the cross-validation without
moving the committed gate's figures; `--replay-int8` replays the folds with the int8 copy of the
embedding model; the command hands every option to the trainer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from athena.embeddings import LocalEmbedder
from athena_cognition.detector import Thresholds
from athena_lab.segmentation.fitting import ClassifierSpec
from athena_lab.segmentation.segmentation_data import load_dialogues
from athena_lab.segmentation.train_continuity import TrainConfig
from athena_lab.segmentation.train_opener import OpenerConfig, _cross_validate, opener_examples

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "segmentation"


def _small_config() -> OpenerConfig:
    """A quick cross-validation: logistic regressions, two folds, one candidate threshold."""
    return OpenerConfig(
        agent_embedding=False,
        spec=ClassifierSpec(hidden_units=0, l2_c=0.1),
        folds=2,
        thresholds=(0.5,),
        continuity=TrainConfig(hidden_units=0, ensemble=1, splices=8, folds=2),
    )


async def test_swept_gates_are_reported_beside_the_committed_gate_whose_figures_stay_as_without_the_sweep() -> None:
    superseg = load_dialogues(SHARED / "superseg_validation.jsonl", limit=16)
    tiage = load_dialogues(SHARED / "tiage_train.jsonl", limit=16)
    embedder = LocalEmbedder()
    rows = {d.id: await opener_examples([d], embedder, agent_embedding=False) for d in (*superseg, *tiage)}
    committed = Thresholds(high=0.75, low=0.45)
    config = _small_config()

    def log(_: str) -> None:
        return None

    alone = await _cross_validate(rows, superseg, tiage, embedder, committed, config, log)
    swept_config = replace(config, gate_midpoints=(0.6, 0.0))  # 0.6 is the committed gate
    swept = await _cross_validate(rows, superseg, tiage, embedder, committed, swept_config, log)

    gates = [(r["gate_high"], r["gate_low"], r["threshold"]) for r in swept]
    assert gates == [(0.75, 0.45, None), (0.75, 0.45, 0.5), (0.15, 0.0, None), (0.15, 0.0, 0.5)]
    assert swept[:2] == alone  # the committed gate's rows are the run without the sweep, figure for figure
    # A gate at 0 never breaks on the continuity score: without the opener only the first message
    # and the force flush open segments, so its boundaries match the reference less well.
    never, committed_row = swept[2], swept[0]
    assert never["superseg_train_cv"]["f1"] < committed_row["superseg_train_cv"]["f1"]


class _RecordingEmbedder:
    """The int8 copy of the local model, noting every text it is asked to embed."""

    def __init__(self) -> None:
        self._inner = LocalEmbedder(quantized=True)
        self.texts: set[str] = set()

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.update(texts)
        return await self._inner.embed(texts)


async def test_int8_replays_replay_every_fold_with_the_int8_copy_and_score_the_same_candidates() -> None:
    superseg = load_dialogues(SHARED / "superseg_validation.jsonl", limit=12)
    tiage = load_dialogues(SHARED / "tiage_train.jsonl", limit=12)
    embedder = LocalEmbedder()
    rows = {d.id: await opener_examples([d], embedder, agent_embedding=False) for d in (*superseg, *tiage)}
    config = _small_config()
    gate = Thresholds(high=0.75, low=0.45)
    int8 = _RecordingEmbedder()

    def log(_: str) -> None:
        return None

    as_float = await _cross_validate(rows, superseg, tiage, embedder, gate, config, log)
    as_int8 = await _cross_validate(rows, superseg, tiage, embedder, gate, config, log, replay_embedder=int8)

    # Every fold was replayed with the int8 copy's vectors, and it embedded nothing else.
    assert int8.texts == {u.text for d in (*superseg, *tiage) for u in d.utterances}
    assert [(r["gate_high"], r["threshold"]) for r in as_int8] == [(r["gate_high"], r["threshold"]) for r in as_float]


def test_the_opener_command_passes_the_ensembles_the_bagging_and_the_gates_to_the_trainer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from athena_lab.commands.train_cmd import app
    from athena_lab.segmentation import train_opener as trainer

    seen: list[OpenerConfig] = []

    async def record_config(*, config: OpenerConfig, **_: object) -> dict[str, object]:
        seen.append(config)  # the recipe the command built, not a training run
        return {"metrics_no_llm": {}, "command": trainer._command(config)}

    monkeypatch.setattr(trainer, "train_opener", record_config)
    args = ["opener", "--out", str(tmp_path), "--ensemble", "3", "--continuity-ensemble", "2"]
    flags = ["--bootstrap", "--continuity-bootstrap", "--replay-int8", "--gate-midpoints", "0.5,0.7"]
    flags += ["--thresholds", "0.2,0.25"]
    result = CliRunner().invoke(app, [*args, *flags])

    assert result.exit_code == 0, result.output
    (config,) = seen
    assert (config.spec.ensemble, config.continuity.ensemble, config.gate_midpoints) == (3, 2, (0.5, 0.7))
    assert config.spec.bootstrap and config.continuity.bootstrap and config.replay_int8
    assert config.thresholds == (0.2, 0.25)
    assert trainer._command(config) == (
        "athena train opener --ensemble 3 --bootstrap --continuity-ensemble 2 --continuity-bootstrap"
        " --replay-int8 --gate-midpoints 0.5,0.7 --thresholds 0.2,0.25"
    )
    assert trainer._command(OpenerConfig()) == "athena train opener"  # the defaults are the committed recipe


@pytest.mark.parametrize("given", ["0.2,x", "0.2,1.5", ","])
def test_the_opener_command_refuses_thresholds_that_are_not_probabilities(given: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from athena_lab.commands.train_cmd import app

    result = CliRunner().invoke(app, ["opener", "--out", str(tmp_path), "--thresholds", given])

    assert result.exit_code == 2
    assert "--thresholds" in result.output
