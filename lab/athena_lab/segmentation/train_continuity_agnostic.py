"""Train the model-agnostic continuity scorer (`continuity_agnostic`) from the shared data, reproducibly.

Recipe (docs/segmentation.md, "The model-agnostic continuity scorer"):
- data and examples: the `athena train continuity` recipe (the SuperDialseg training part,
  tiage_train and seeded splices of it; weights 1 / 3 / 3), but each row holds the hand features
  only (`hand_features`): no raw embedding, so the embedding model's vectors enter only as cosines
  and any model of any dimension can run the artifact;
- model: standardize -> L2 logistic regression for P(same topic), sklearn to fit, numpy to run;
- selection, by k-fold cross-validation over the training dialogues only (fold = sha256('fold:'+id)
  mod k, as `athena train opener`): for every candidate L2 strength and gray-zone midpoint the model
  is fit on the other folds and the production `decide()` (no LLM, no opener) replays the held fold;
  the pair with the lowest pooled out-of-fold mean Pk over SuperDialseg and TIAGE wins. With that
  gate, the opener threshold is picked the same way (the opener refit per fold with the `athena
  train opener` recipe; "no opener" is a candidate);
- final: refit on all training dialogues; the held-out sets (the 30% of SuperDialseg, tiage_validation)
  are only measured, into the record.
"""

from __future__ import annotations

import asyncio
import json
import math
import platform
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TypedDict

import numpy as np

from athena.embeddings import Embedder
from athena_cognition.detector import (
    AgnosticContinuityScorer,
    ContinuityModel,
    OpenerModel,
    Thresholds,
)
from athena_cognition.detector._features import HAND_FEATURE_NAMES
from athena_cognition.detector._placement import OPENER_ARTIFACT, load_opener_model
from athena_cognition.detector._scorers import AGNOSTIC_ARTIFACT
from athena_lab.segmentation.cross_validation import fold_splits, pooled_scores
from athena_lab.segmentation.embedding_cache import embed_utterances
from athena_lab.segmentation.evaluate import EvaluationResult, evaluate, scores_record
from athena_lab.segmentation.fitting import ClassifierSpec, Part, fit_classifier
from athena_lab.segmentation.segmentation_data import (
    Dialogue,
    data_record,
    default_data_dir,
    file_sha256,
    load_shared_sets,
)
from athena_lab.segmentation.train_continuity import (
    DETECTOR_DIR,
    TrainConfig,
    continuity_examples,
    embedding_record,
    gray_zone,
    splices,
)
from athena_lab.segmentation.train_opener import OpenerConfig, fit_opener, opener_examples, opener_parts

__all__ = ["AgnosticConfig", "train_continuity_agnostic"]

RECORD_NAME = "continuity_agnostic_v1.record.json"

Rows = tuple[np.ndarray, np.ndarray]
Starts = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class AgnosticConfig:
    continuity: TrainConfig = field(default_factory=TrainConfig)
    """Data, weights, splices, gray-zone half width, flush size and midpoints; its model options
    (l2_c, hidden_units, alpha) are not used: the variant's own logistic regression is chosen from l2_cs."""
    l2_cs: tuple[float, ...] = (0.01, 0.1, 1.0)
    folds: int = 5
    opener_thresholds: tuple[float, ...] = (0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80)
    opener: OpenerConfig = field(default_factory=OpenerConfig.hand_features)
    """The per-fold openers' recipe (the committed opener_v1's: hand features, any embedding model)."""


def _stack(rows: Mapping[str, Rows], dialogues: Sequence[Dialogue], width: int) -> Rows:
    chosen = [rows[d.id] for d in dialogues if len(rows[d.id][1])]
    if not chosen:
        return np.zeros((0, width)), np.zeros(0, dtype=np.int64)
    return np.vstack([r[0] for r in chosen]), np.concatenate([r[1] for r in chosen])


async def _per_dialogue(dialogues: Sequence[Dialogue], embedder: Embedder, max_events: int) -> dict[str, Rows]:
    return {d.id: await continuity_examples([d], embedder, max_events, agnostic=True) for d in dialogues}


async def _parts(
    rows: Mapping[str, Rows],
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    config: TrainConfig,
) -> list[Part]:
    """The `athena train continuity` parts (splices made from these TIAGE dialogues), hand features only."""
    width = len(HAND_FEATURE_NAMES)
    spliced = splices(tiage, config.splices, random.Random(config.seed))
    await embedder.embed(list(dict.fromkeys(u.text for d in spliced for u in d.utterances)))
    return [
        (*_stack(rows, superseg, width), config.weight_superseg),
        (*_stack(rows, tiage, width), config.weight_tiage),
        (
            *await continuity_examples(spliced, embedder, config.max_events_before_flush, agnostic=True),
            config.weight_splice,
        ),
    ]


def _fit(parts: Sequence[Part], l2_c: float, thresholds: Thresholds) -> ContinuityModel:
    return ContinuityModel(fit_classifier(parts, HAND_FEATURE_NAMES, ClassifierSpec(l2_c=l2_c)), thresholds)


async def _evaluate(
    model: ContinuityModel,
    opener: OpenerModel | None,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    max_events: int,
) -> EvaluationResult:
    """The dialogues replayed by the production decide() (no LLM) with this model, its gate and the opener."""
    return await evaluate(
        dialogues,
        scorer=AgnosticContinuityScorer(model, opener=opener),
        embedder=embedder,
        thresholds=model.thresholds,
        arbiter=None,
        max_events_before_flush=max_events,
    )


async def _replay(
    model: ContinuityModel,
    opener: OpenerModel | None,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    max_events: int,
) -> Starts:
    result = await _evaluate(model, opener, dialogues, embedder, max_events)
    return {p.id: p.starts for p in result.predictions}


class _Pooled(TypedDict):
    superseg_train_cv: dict[str, float]
    tiage_train_cv: dict[str, float]
    objective_mean_pk: float


class _GateRow(_Pooled):
    """An (L2 strength, gate midpoint) candidate with its pooled out-of-fold scores."""

    l2_c: float
    midpoint: float


class _OpenerRow(_Pooled):
    """An opener threshold candidate (None: no opener) with its pooled out-of-fold scores."""

    opener_threshold: float | None


def _pooled(superseg: Sequence[Dialogue], tiage: Sequence[Dialogue], starts: Starts) -> _Pooled:
    """Out-of-fold Pk / WD / F1 of each domain and their mean Pk (the objective)."""

    ss, ti = pooled_scores(superseg, starts), pooled_scores(tiage, starts)
    return {"superseg_train_cv": ss, "tiage_train_cv": ti, "objective_mean_pk": round((ss["pk"] + ti["pk"]) / 2, 4)}


@dataclass
class _Folds:
    """Per fold: the held dialogues and the example parts of the other folds."""

    held: list[list[Dialogue]]
    parts: list[list[Part]]
    train: list[tuple[list[Dialogue], list[Dialogue]]]


async def _folds(
    rows: Mapping[str, Rows],
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    config: AgnosticConfig,
) -> _Folds:
    folds = _Folds(held=[], parts=[], train=[])
    for train_ss, train_ti, held in fold_splits(superseg, tiage, config.folds):
        folds.held.append(held)
        folds.train.append((train_ss, train_ti))
        folds.parts.append(await _parts(rows, train_ss, train_ti, embedder, config.continuity))
    return folds


async def _gate_sweep(
    folds: _Folds,
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    config: AgnosticConfig,
    log: Callable[[str], None],
) -> list[_GateRow]:
    """Pooled out-of-fold scores of every (L2 strength, gate midpoint), without the opener."""
    c = config.continuity
    sweep: list[_GateRow] = []
    for l2_c in config.l2_cs:
        starts: dict[float, Starts] = {m: {} for m in c.midpoints}
        for f, held in enumerate(folds.held):
            model = _fit(folds.parts[f], l2_c, gray_zone(0.5, c.gray_half_width))
            for mid in c.midpoints:
                fold_model = replace(model, thresholds=gray_zone(mid, c.gray_half_width))
                starts[mid].update(await _replay(fold_model, None, held, embedder, c.max_events_before_flush))
        for mid in c.midpoints:
            pooled = _pooled(superseg, tiage, starts[mid])
            sweep.append({"l2_c": l2_c, "midpoint": mid, **pooled})
            log(f"C {l2_c} midpoint {mid:.2f}: {json.dumps(pooled)}")
    return sweep


async def _opener_sweep(
    folds: _Folds,
    opener_rows: Mapping[str, Rows],
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    l2_c: float,
    gate: Thresholds,
    config: AgnosticConfig,
    log: Callable[[str], None],
) -> list[_OpenerRow]:
    """Pooled out-of-fold scores of every opener threshold (None: no opener) with the chosen gate."""
    candidates: tuple[float | None, ...] = (None, *config.opener_thresholds)
    starts: dict[float | None, Starts] = {t: {} for t in candidates}
    oc = config.opener
    for f, held in enumerate(folds.held):
        model = _fit(folds.parts[f], l2_c, gate)
        train_ss, train_ti = folds.train[f]
        fitted = fit_opener(opener_parts(opener_rows, train_ss, train_ti, oc), oc)
        for t in candidates:
            opener = None if t is None else replace(fitted, threshold=t)
            starts[t].update(await _replay(model, opener, held, embedder, config.continuity.max_events_before_flush))
        log(f"opener fold {f + 1}/{config.folds} done")
    sweep: list[_OpenerRow] = []
    for t in candidates:
        pooled = _pooled(superseg, tiage, starts[t])
        sweep.append({"opener_threshold": t, **pooled})
        log(f"opener threshold {t}: {json.dumps(pooled)}")
    return sweep


async def _measure(
    model: ContinuityModel,
    opener: OpenerModel | None,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    max_events: int,
) -> dict[str, object]:
    return scores_record(await _evaluate(model, opener, dialogues, embedder, max_events))


async def train_continuity_agnostic(
    *,
    out_dir: Path = DETECTOR_DIR,
    data_dir: Path | None = None,
    config: AgnosticConfig = AgnosticConfig(),
    embedder: Embedder | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, object]:
    """Select by cross-validation, fit, measure; write continuity_agnostic_v1.npz and its record into `out_dir`."""
    c = config.continuity
    data_dir = data_dir or default_data_dir()
    sets = load_shared_sets(data_dir, c.heldout_fraction)
    ss_train, ss_heldout = sets.superseg_train, sets.superseg_heldout
    tiage_train, tiage_val = sets.tiage_train, sets.tiage_validation
    max_events = c.max_events_before_flush

    log("embedding all utterances (cached on disk after the first run)")
    embedder, disk = await embed_utterances((sets.superseg, tiage_train, tiage_val), embedder)
    rows = await _per_dialogue((*ss_train, *tiage_train), embedder, max_events)
    opener_rows = {
        d.id: await opener_examples([d], embedder, agent_embedding=config.opener.agent_embedding)
        for d in (*ss_train, *tiage_train)
    }

    # 1. L2 strength and gate midpoint, by cross-validation over the training dialogues.
    folds = await _folds(rows, ss_train, tiage_train, embedder, config)
    gate_sweep = await _gate_sweep(folds, ss_train, tiage_train, embedder, config, log)
    best = min(gate_sweep, key=lambda r: (r["objective_mean_pk"], abs(float(r["midpoint"]) - 0.5), float(r["l2_c"])))
    l2_c, gate = float(best["l2_c"]), gray_zone(float(best["midpoint"]), c.gray_half_width)
    log(f"chosen: C {l2_c}, high {gate.high} low {gate.low} (midpoint {best['midpoint']})")

    # 2. The opener threshold with that gate, the same way.
    opener_sweep = await _opener_sweep(folds, opener_rows, ss_train, tiage_train, embedder, l2_c, gate, config, log)
    best_opener = min(
        opener_sweep,
        key=lambda r: (r["objective_mean_pk"], r["opener_threshold"] is not None, -float(r["opener_threshold"] or 0.0)),
    )
    opener_threshold = best_opener["opener_threshold"]
    log(f"chosen opener threshold: {opener_threshold}")

    # 3. Refit on all training dialogues; measure on the held-out sets with the committed opener.
    parts = await _parts(rows, ss_train, tiage_train, embedder, c)
    stored = math.inf if opener_threshold is None else float(opener_threshold)  # inf: no placement
    model = replace(_fit(parts, l2_c, gate), opener_threshold=stored)
    opener = (
        None
        if opener_threshold is None
        else replace(load_opener_model(artifact=OPENER_ARTIFACT), threshold=float(opener_threshold))
    )
    metrics = {
        "superseg_validation_heldout": await _measure(model, opener, ss_heldout, embedder, max_events),
        "tiage_validation": await _measure(model, opener, tiage_val, embedder, max_events),
    }
    metrics_no_placement = {
        "superseg_validation_heldout": await _measure(model, None, ss_heldout, embedder, max_events),
        "tiage_validation": await _measure(model, None, tiage_val, embedder, max_events),
    }
    log(f"held-out: {json.dumps(metrics)}")
    if disk is not None:
        disk.save()

    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - an offline training run: the loop serves nothing else
    artifact = out_dir / AGNOSTIC_ARTIFACT
    model.save(artifact)
    import sklearn

    record: dict[str, object] = {
        "artifact": AGNOSTIC_ARTIFACT,
        "artifact_sha256": file_sha256(artifact),
        "command": "athena train continuity --agnostic",
        "model": {
            "kind": "standardize + L2 logistic regression, output P(same topic)",
            "inference": "numpy only: sigmoid(((x - mean) / scale) . coef + intercept)",
            "l2_C": l2_c,
            "inputs": len(model.feature_names),
            "used_with": "opener_v1.npz at opener_threshold (the placement the cross-validation chose), if any",
        },
        "embedding": embedding_record(raw_vector_input=False),
        "features": {"hand": list(HAND_FEATURE_NAMES), "embedding": "none: the vectors enter only as cosines"},
        "data": data_record(sets.files),
        "split": {
            "superseg_heldout": f"sha256(id) as a 64-bit fraction < {c.heldout_fraction}",
            "superseg_train_dialogues": len(ss_train),
            "superseg_heldout_dialogues": len(ss_heldout),
            "tiage_train_dialogues": len(tiage_train),
            "tiage_validation_dialogues": len(tiage_val),
            "selection": (
                f"{config.folds}-fold cross-validation over the training dialogues (superseg train part + "
                "tiage_train), fold = sha256('fold:'+id) mod folds; pooled out-of-fold mean Pk"
            ),
        },
        "training_examples": {
            "superseg": len(parts[0][1]),
            "tiage": len(parts[1][1]),
            "tiage_splices": len(parts[2][1]),
        },
        "config": _jsonable(asdict(config)),
        "gate_sweep_cv": gate_sweep,
        "opener_sweep_cv": opener_sweep,
        "thresholds": {"high": gate.high, "low": gate.low, "no_llm_fallback": "break if score < (high + low) / 2"},
        "opener_threshold": opener_threshold,
        "metrics_no_llm": metrics,
        "metrics_no_llm_no_placement": metrics_no_placement,
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__},
    }
    (out_dir / RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {artifact} and {out_dir / RECORD_NAME}")
    return record


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def main() -> None:
    asyncio.run(train_continuity_agnostic())


if __name__ == "__main__":
    main()
