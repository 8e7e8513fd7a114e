"""Train the boundary-placement opener model (detector/_placement.py) from the shared data.

Recipe (docs/segmentation.md, "Boundary placement"):
- data: the same training dialogues as the continuity scorer: superseg_validation minus the fixed
  30% held out by id hash, plus tiage_train (weights 1 and 3);
- examples: every user message right after an agent message, with the segment the detector would
  hold if it had segmented correctly so far; label 1 when the reference opens a segment at that
  agent turn (and not again at the user message), else 0;
- model: standardized hand features (`OPENER_FEATURE_NAMES`), by default followed by the agent turn's
  embedding (`opener_v2`; without it, `--no-agent-embedding`, `opener_v1`, the opener of any
  embedding model) -> `ClassifierSpec` (logistic regression or one small tanh hidden layer), sklearn
  to fit, numpy to run;
- threshold: 5-fold cross-validation over the training dialogues. Each fold refits the continuity
  scorer (the `athena train continuity` recipe, committed gate) and the opener on the other folds,
  then replays the production `decide()` (no LLM) over the fold for every candidate threshold. The
  threshold with the lowest mean Pk over SuperDialseg and TIAGE (pooled over the folds) wins. The
  measured sets (held-out SuperDialseg, tiage_validation) are only reported.
"""

from __future__ import annotations

import asyncio
import json
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from athena.embeddings import Embedder
from athena_cognition.detector import ContinuityModel, ContinuityScorer, OpenerModel, Thresholds, load_continuity_model
from athena_cognition.detector._embedding_match import record_name
from athena_cognition.detector._placement import (
    OPENER_ARTIFACT,
    OPENER_FEATURE_NAMES,
    OPENER_VECTOR_ARTIFACT,
    opener_candidate,
    opener_feature_names,
    opener_features,
)
from athena_lab.segmentation.cross_validation import CrossValidated, cross_validated, fold_splits, summary
from athena_lab.segmentation.embedding_cache import DiskCachedEmbedder, embed_utterances, int8_replay_embedder
from athena_lab.segmentation.evaluate import EvaluationResult, dialogue_turns, evaluate, scores_record
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
    embedding_record,
    fit_continuity,
    gray_zone,
)

__all__ = ["OpenerConfig", "fit_opener", "opener_examples", "opener_parts", "train_opener"]

Rows = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class OpenerConfig:
    heldout_fraction: float = 0.3
    weight_superseg: float = 1.0
    weight_tiage: float = 3.0
    spec: ClassifierSpec = ClassifierSpec(hidden_units=8, alpha=10.0, ensemble=10)  # picked by cross-validation (docs)
    agent_embedding: bool = True
    """The agent turn's embedding among the inputs (opener_v2.npz); False: the hand features alone (opener_v1.npz)."""
    folds: int = 5
    thresholds: tuple[float, ...] = (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70)
    gate_midpoints: tuple[float, ...] = ()
    """Continuity gate midpoints swept together with the threshold (gate = midpoint +- the continuity
    recipe's half width); empty: every replay uses the committed continuity model's gate."""
    max_events_before_flush: int = 20
    replay_int8: bool = False
    """Replay the folds and the measured sets with the int8 copy's vectors (`EMBEDDING_INT8`, the
    product's default) instead of the float model's; every model is still fitted on the float
    model's vectors, as the committed artifacts are."""
    continuity: TrainConfig = field(default_factory=TrainConfig)  # the per-fold continuity models' recipe

    @classmethod
    def hand_features(cls) -> OpenerConfig:
        """opener_v1's recipe: the hand features alone (any embedding model), one 8-unit model, and per
        fold the continuity recipe of that time (one 64-unit model)."""
        return cls(
            agent_embedding=False,
            spec=ClassifierSpec(hidden_units=8, alpha=10.0),
            continuity=TrainConfig(ensemble=1),
        )

    @property
    def artifact(self) -> str:
        return OPENER_VECTOR_ARTIFACT if self.agent_embedding else OPENER_ARTIFACT


async def opener_examples(
    dialogues: Sequence[Dialogue], embedder: Embedder, *, agent_embedding: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Teacher-forced rows and labels (1 = the agent turn before this user message opened a segment);
    `agent_embedding`: the agent turn's embedding follows the hand features in each row."""
    rows: list[np.ndarray] = []
    labels: list[int] = []
    for dialogue in dialogues:
        turns = dialogue_turns(dialogue)
        vecs = await embedder.embed([t.content for t in turns])
        segment_start, previous_start = 0, 0
        for i in range(1, len(turns)):
            # The segment before the agent turn at i - 1 (if a reference segment opened there, the one before).
            start = previous_start if segment_start == i - 1 else segment_start
            window = turns[start : i + 1]
            new_index = len(window) - 1
            if turns[i].role == "user" and opener_candidate(window, new_index):
                vectors = {k: vecs[start + k] for k in range(len(window))}
                rows.append(opener_features(window, new_index, vectors, agent_embedding=agent_embedding))
                labels.append(int(bool(dialogue.starts[i - 1]) and not dialogue.starts[i]))
            if dialogue.starts[i]:
                previous_start, segment_start = segment_start, i
    return np.asarray(rows, dtype=np.float64), np.asarray(labels, dtype=np.int64)


def fit_opener(parts: Sequence[Part], config: OpenerConfig) -> OpenerModel:
    """The config's opener classifier on the parts (its threshold 0.5 until one is chosen)."""
    names = opener_feature_names(parts[0][0].shape[1] - len(OPENER_FEATURE_NAMES))  # the rows' embedding columns
    return OpenerModel(classifier=fit_classifier(parts, names, config.spec), threshold=0.5)


def opener_parts(
    rows: Mapping[str, Rows], superseg: Sequence[Dialogue], tiage: Sequence[Dialogue], config: OpenerConfig
) -> list[Part]:
    """The opener's training parts of these dialogues (`rows` by dialogue id), each with its corpus's weight."""

    def stacked(ds: Sequence[Dialogue]) -> Rows:
        chosen = [rows[d.id] for d in ds if len(rows[d.id][1])]
        return np.vstack([r[0] for r in chosen]), np.concatenate([r[1] for r in chosen])

    return [(*stacked(superseg), config.weight_superseg), (*stacked(tiage), config.weight_tiage)]


async def _replay(
    continuity: ContinuityModel,
    opener: OpenerModel | None,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    gate: Thresholds,
    max_events: int,
) -> EvaluationResult:
    return await evaluate(
        dialogues,
        scorer=ContinuityScorer(continuity, opener=opener),
        embedder=embedder,
        thresholds=gate,
        arbiter=None,
        max_events_before_flush=max_events,
    )


class _ThresholdRow(CrossValidated):
    """A candidate threshold (None: no opener) under a continuity gate, with its out-of-fold figures."""

    threshold: float | None
    gate_high: float
    gate_low: float


async def _cross_validate(
    rows: Mapping[str, Rows],
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    gate: Thresholds,
    config: OpenerConfig,
    log: Callable[[str], None],
    replay_embedder: Embedder | None = None,
) -> list[_ThresholdRow]:
    """Pooled out-of-fold Pk / WD / F1 per candidate threshold (None = no opener), under the committed
    gate and, with `config.gate_midpoints`, under each of those gates too. The models are fitted on
    `embedder`'s vectors; the folds are replayed with `replay_embedder`'s (default: the same)."""
    replayer = replay_embedder or embedder
    gates = [
        gate,
        *(g for m in config.gate_midpoints if (g := gray_zone(m, config.continuity.gray_half_width)) != gate),
    ]
    candidates: tuple[float | None, ...] = (None, *config.thresholds)
    starts: dict[tuple[Thresholds, float | None], dict[str, tuple[int, ...]]] = {
        (g, c): {} for g in gates for c in candidates
    }
    for f, (train_ss, train_ti, held) in enumerate(fold_splits(superseg, tiage, config.folds)):
        continuity = await fit_continuity(train_ss, train_ti, embedder, config.continuity, gate)
        fitted = fit_opener(opener_parts(rows, train_ss, train_ti, config), config)
        for g in gates:
            for c in candidates:
                opener = None if c is None else replace(fitted, threshold=c)
                result = await _replay(continuity, opener, held, replayer, g, config.max_events_before_flush)
                starts[g, c].update((p.id, p.starts) for p in result.predictions)
        log(f"fold {f + 1}/{config.folds} done")
    sweep: list[_ThresholdRow] = []
    for g in gates:
        for c in candidates:
            cv = cross_validated(superseg, tiage, starts[g, c], config.folds)
            sweep.append({"threshold": c, "gate_high": g.high, "gate_low": g.low, **cv})
            log(f"gate {g.high}/{g.low} threshold {c}: {summary(cv)}")
    return sweep


async def _measure(
    continuity: ContinuityModel,
    opener: OpenerModel,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    gate: Thresholds,
    max_events: int,
) -> dict[str, object]:
    return scores_record(await _replay(continuity, opener, dialogues, embedder, gate, max_events))


async def train_opener(
    *,
    out_dir: Path = DETECTOR_DIR,
    data_dir: Path | None = None,
    config: OpenerConfig = OpenerConfig(),
    embedder: Embedder | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, object]:
    """Fit, pick the threshold by cross-validation on training data, measure; write the config's
    artifact (opener_v2.npz, or opener_v1.npz without the agent embedding) and its record."""
    data_dir = data_dir or default_data_dir()
    sets = load_shared_sets(data_dir, config.heldout_fraction)
    files = sets.files
    ss_train, ss_heldout = sets.superseg_train, sets.superseg_heldout
    tiage_train, tiage_val = sets.tiage_train, sets.tiage_validation

    embedder, disk = await embed_utterances((ss_train, ss_heldout, tiage_train, tiage_val), embedder)
    if disk is not None:
        disk.save()  # now: the hours of fitting after it never cost the embedding again

    rows = {
        d.id: await opener_examples([d], embedder, agent_embedding=config.agent_embedding)
        for d in (*ss_train, *tiage_train)
    }
    continuity = load_continuity_model()
    gate = continuity.thresholds
    max_events = config.max_events_before_flush

    replayer: Embedder = embedder
    if config.replay_int8:
        replayer = await int8_replay_embedder((ss_train, ss_heldout, tiage_train, tiage_val))
    sweep = await _cross_validate(rows, ss_train, tiage_train, embedder, gate, config, log, replayer)
    # The artifact's threshold is chosen under the committed gate (the one the product runs); the
    # other gates of `gate_midpoints` are reported for comparison.
    scored = [
        (r["threshold"], r["objective_mean_pk"])
        for r in sweep
        if (r["gate_high"], r["gate_low"]) == (gate.high, gate.low)
    ]
    best_threshold, _ = min(((t, pk) for t, pk in scored if t is not None), key=lambda tp: (tp[1], -tp[0]))
    if config.gate_midpoints:
        joint = min((r for r in sweep if r["threshold"] is not None), key=lambda r: r["objective_mean_pk"])
        log(
            f"best gate and threshold: {joint['gate_high']}/{joint['gate_low']} at {joint['threshold']}: {summary(joint)}"
        )
    parts = opener_parts(rows, ss_train, tiage_train, config)
    model = replace(fit_opener(parts, config), threshold=float(best_threshold))
    log(f"chosen opener threshold: {model.threshold}")

    metrics = {
        "superseg_validation_heldout": await _measure(continuity, model, ss_heldout, replayer, gate, max_events),
        "tiage_validation": await _measure(continuity, model, tiage_val, replayer, gate, max_events),
    }
    log(f"held-out: {json.dumps(metrics)}")
    if disk is not None:
        disk.save()
    if isinstance(replayer, DiskCachedEmbedder) and replayer is not disk:
        replayer.save()

    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - an offline training run: the loop serves nothing else
    artifact = out_dir / config.artifact
    model.save(artifact)
    import sklearn

    spec = config.spec
    record: dict[str, object] = {
        "artifact": config.artifact,
        "artifact_sha256": file_sha256(artifact),
        "command": _command(config),
        "model": {
            "kind": (
                f"standardize + one tanh hidden layer ({spec.hidden_units} units, L2 alpha {spec.alpha}) + logistic output"
                + (
                    f", {spec.ensemble} such models of consecutive seeds, their logits averaged"
                    + (", each on its own Poisson bootstrap of the rows" if spec.bootstrap else "")
                    if spec.ensemble > 1
                    else ""
                )
                if spec.hidden_units
                else f"standardize + L2 logistic regression (C {spec.l2_c})"
            ),
            "output": "P(the agent turn before the new user message opened a topic); break there when >= threshold",
            "inference": "numpy only (detector/_classifier.py)",
            "inputs": len(model.classifier.feature_names),
            "used_with": "continuity_v1.npz (its gate thresholds in every replay)",
        },
        "embedding": embedding_record(raw_vector_input=config.agent_embedding),
        "features": list(model.classifier.feature_names),
        "data": data_record(files),
        "split": {
            "superseg_heldout": f"sha256(id) as a 64-bit fraction < {config.heldout_fraction}",
            "threshold_selection": (
                f"{config.folds}-fold cross-validation over the training dialogues "
                "(superseg train part + tiage_train), fold = sha256('fold:'+id) mod folds; "
                "each fold refits the continuity scorer and the opener on the other folds"
            ),
        },
        "training_examples": {
            "superseg": len(parts[0][1]),
            "superseg_positive": int(parts[0][1].sum()),
            "tiage": len(parts[1][1]),
            "tiage_positive": int(parts[1][1].sum()),
        },
        "config": _jsonable(asdict(config)),
        "threshold_sweep_cv": sweep,
        "threshold": model.threshold,
        "metrics_no_llm": metrics,
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__},
    }
    (out_dir / record_name(config.artifact)).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {artifact} and {out_dir / record_name(config.artifact)}")
    return record


def _command(config: OpenerConfig) -> str:
    """The CLI call that reproduces this run (model flags only when they differ from the defaults)."""
    default = OpenerConfig() if config.agent_embedding else OpenerConfig.hand_features()
    spec = config.spec
    flags = [
        f"--{name.replace('_', '-')} {getattr(spec, name)}"
        for name in ("hidden_units", "alpha", "l2_c", "ensemble")
        if getattr(spec, name) != getattr(default.spec, name)
    ]
    if spec.bootstrap:
        flags.append("--bootstrap")
    if not config.agent_embedding:
        flags.append("--no-agent-embedding")
    if config.continuity.ensemble != default.continuity.ensemble:
        flags.append(f"--continuity-ensemble {config.continuity.ensemble}")
    if config.continuity.bootstrap:
        flags.append("--continuity-bootstrap")
    if config.replay_int8:
        flags.append("--replay-int8")
    if config.gate_midpoints:
        flags.append("--gate-midpoints " + ",".join(f"{m:g}" for m in config.gate_midpoints))
    if config.thresholds != default.thresholds:
        flags.append("--thresholds " + ",".join(f"{t:g}" for t in config.thresholds))
    return " ".join(["athena train opener", *flags])


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def main() -> None:
    asyncio.run(train_opener())


if __name__ == "__main__":
    main()
