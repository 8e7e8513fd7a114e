"""Fit the opener's typical agent turns (detector/_typicality.py) from the shared data.

Recipe (docs/segmentation.md, "Typical agent turns"):
- turns: every agent message the opener is asked about in the training dialogues (the continuity
  scorer's and the opener's: superseg_validation minus the 30% held out by id hash, plus tiage_train),
  by the float model's unit embeddings;
- centres: k-means (k `clusters`, three starts, seed 0) of all of them;
- floor: the `alpha` quantile of each turn's typicality (largest cosine to a centre) to the centres of
  the other folds' turns (5 folds, the trainers' `cv_fold`): a held-out turn of the opener's own
  domains falls below it with probability `alpha`. Nothing is tuned: k and alpha are set, not searched;
- measured (reported only): the committed continuity model and opener on the held-out SuperDialseg
  dialogues and tiage_validation, with and without the gate; with `cross_validate`, the opener's
  5-fold cross-validation too: per fold the continuity model, the opener (the committed threshold) and
  the centres are fitted on the other folds and the fold is replayed with and without the gate.
"""

from __future__ import annotations

import asyncio
import json
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from athena.embeddings import Embedder
from athena_cognition.detector import (
    ContinuityModel,
    ContinuityScorer,
    OpenerModel,
    load_continuity_model,
    load_opener_model,
)
from athena_cognition.detector._embedding_match import record_name
from athena_cognition.detector._placement import opener_candidate
from athena_cognition.detector._typicality import TYPICAL_AGENT_TURNS_ARTIFACT, TypicalTurns
from athena_lab.segmentation.cross_validation import cross_validated, fold_splits, summary
from athena_lab.segmentation.embedding_cache import embed_utterances
from athena_lab.segmentation.evaluate import EvaluationResult, dialogue_turns, evaluate, scores_record
from athena_lab.segmentation.segmentation_data import (
    Dialogue,
    cv_fold,
    data_record,
    default_data_dir,
    file_sha256,
    load_shared_sets,
)
from athena_lab.segmentation.train_continuity import DETECTOR_DIR, embedding_record, fit_continuity
from athena_lab.segmentation.train_opener import OpenerConfig, fit_opener, opener_examples, opener_parts

__all__ = ["TypicalityConfig", "agent_turn_vectors", "command", "fit_typical_turns", "train_typicality"]


@dataclass(frozen=True)
class TypicalityConfig:
    clusters: int = 16
    """k of the k-means centres."""
    alpha: float = 0.05
    """Share of held-out training agent turns below the floor."""
    folds: int = 5
    heldout_fraction: float = 0.3
    max_events_before_flush: int = 20
    cross_validate: bool = False
    """Also measure the gate in the opener's 5-fold cross-validation (refits every fold's models: slow)."""


async def agent_turn_vectors(dialogues: Sequence[Dialogue], embedder: Embedder) -> tuple[np.ndarray, list[str]]:
    """The unit embeddings of the agent turns the opener is asked about, with their dialogues' ids."""
    rows: list[np.ndarray] = []
    ids: list[str] = []
    for dialogue in dialogues:
        turns = dialogue_turns(dialogue)
        asked = [i - 1 for i in range(1, len(turns)) if turns[i].role == "user" and opener_candidate(turns[: i + 1], i)]
        if asked:
            rows.append(np.asarray(await embedder.embed([turns[i].content for i in asked]), dtype=np.float64))
            ids += [dialogue.id] * len(asked)
    vectors = np.vstack(rows)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), ids


def _centres(vectors: np.ndarray, clusters: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    centres = KMeans(clusters, n_init=3, random_state=0).fit(vectors).cluster_centers_
    return np.asarray(centres / np.linalg.norm(centres, axis=1, keepdims=True), dtype=np.float64)


def fit_typical_turns(vectors: np.ndarray, ids: Sequence[str], config: TypicalityConfig) -> TypicalTurns:
    """Centres of all the turns; the floor from each fold's turns against the other folds' centres."""
    folds = np.array([cv_fold(i, config.folds) for i in ids])
    held_out = np.empty(len(vectors))
    for f in range(config.folds):
        centres = _centres(vectors[folds != f], config.clusters)
        held_out[folds == f] = (vectors[folds == f] @ centres.T).max(axis=1)
    floor = float(np.quantile(held_out, config.alpha))
    return TypicalTurns(centroids=_centres(vectors, config.clusters), floor=round(floor, 4))


async def train_typicality(
    *,
    out_dir: Path = DETECTOR_DIR,
    data_dir: Path | None = None,
    config: TypicalityConfig = TypicalityConfig(),
    log: Callable[[str], None] = print,
) -> dict[str, object]:
    """Fit, measure, and write opener_v2_typical.npz with its record."""
    sets = load_shared_sets(data_dir or default_data_dir(), config.heldout_fraction)
    parts = (sets.superseg_train, sets.superseg_heldout, sets.tiage_train, sets.tiage_validation)
    embedder, disk = await embed_utterances(parts, None)
    vectors, ids = await agent_turn_vectors([*sets.superseg_train, *sets.tiage_train], embedder)
    typical = fit_typical_turns(vectors, ids, config)
    log(f"{len(vectors)} agent turns, {config.clusters} centres, floor {typical.floor}")

    continuity, opener = load_continuity_model(), load_opener_model()
    metrics: dict[str, dict[str, object]] = {}
    for name, dialogues in (
        ("superseg_validation_heldout", sets.superseg_heldout),
        ("tiage_validation", sets.tiage_validation),
    ):
        for variant, result in await _both_ways(continuity, opener, typical, dialogues, embedder, config):
            metrics.setdefault(name, {})[variant] = scores_record(result)
            log(f"{name} {variant}: pk {result.scores.pk:.4f} f1 {result.scores.f1:.4f}")
    if config.cross_validate:
        metrics["cross_validation"] = await _cross_validate(
            sets.superseg_train, sets.tiage_train, embedder, config, log
        )
    if disk is not None:
        disk.save()

    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - an offline training run: the loop serves nothing else
    artifact = out_dir / TYPICAL_AGENT_TURNS_ARTIFACT
    typical.save(artifact)
    import sklearn

    record: dict[str, object] = {
        "artifact": TYPICAL_AGENT_TURNS_ARTIFACT,
        "artifact_sha256": file_sha256(artifact),
        "command": command(config),
        "model": {
            "kind": f"k-means centres ({config.clusters}, three starts, seed 0) of the training agent turns' unit "
            "embeddings and a floor on the largest cosine to them",
            "floor": typical.floor,
            "floor_rule": f"the {config.alpha} quantile of each turn's largest cosine to the centres of the other "
            f"{config.folds - 1} folds' turns (fold = sha256('fold:'+id) mod {config.folds})",
            "used_with": "opener_v2.npz (the continuity scorer's opener breaks only at a turn at or above the floor)",
        },
        "embedding": embedding_record(raw_vector_input=True),
        "data": data_record(sets.files),
        "agent_turns": len(vectors),
        "config": asdict(config),
        "metrics_no_llm": metrics,
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__},
    }
    (out_dir / record_name(TYPICAL_AGENT_TURNS_ARTIFACT)).write_text(
        json.dumps(record, indent=2) + "\n", encoding="utf-8"
    )
    log(f"wrote {artifact} and {out_dir / record_name(TYPICAL_AGENT_TURNS_ARTIFACT)}")
    return record


def command(config: TypicalityConfig) -> str:
    """The CLI call that reproduces this run (options only where they differ from the defaults)."""
    default = TypicalityConfig()
    flags = [f"--clusters {config.clusters}"] if config.clusters != default.clusters else []
    flags += [f"--alpha {config.alpha:g}"] if config.alpha != default.alpha else []
    flags += ["--cross-validate"] if config.cross_validate else []
    return " ".join(["athena train opener-typicality", *flags])


async def _both_ways(
    continuity: ContinuityModel,
    opener: OpenerModel,
    typical: TypicalTurns,
    dialogues: Sequence[Dialogue],
    embedder: Embedder,
    config: TypicalityConfig,
) -> list[tuple[str, EvaluationResult]]:
    """The dialogues replayed with the opener breaking at every agent turn, then only at typical ones."""
    out: list[tuple[str, EvaluationResult]] = []
    for variant, gated in (("without_gate", opener), ("with_gate", replace(opener, typical=typical))):
        result = await evaluate(
            dialogues,
            scorer=ContinuityScorer(continuity, opener=gated),
            embedder=embedder,
            thresholds=continuity.thresholds,
            max_events_before_flush=config.max_events_before_flush,
        )
        out.append((variant, result))
    return out


async def _cross_validate(
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    embedder: Embedder,
    config: TypicalityConfig,
    log: Callable[[str], None],
) -> dict[str, object]:
    """The opener's out-of-fold figures without and with the gate, each fold's models fitted on the others."""
    recipe = OpenerConfig()
    rows = {d.id: await opener_examples([d], embedder, agent_embedding=True) for d in (*superseg, *tiage)}
    threshold, gate = load_opener_model().threshold, load_continuity_model().thresholds
    starts: dict[str, dict[str, tuple[int, ...]]] = {"without_gate": {}, "with_gate": {}}
    for f, (train_ss, train_ti, held) in enumerate(fold_splits(superseg, tiage, recipe.folds)):
        continuity = await fit_continuity(train_ss, train_ti, embedder, recipe.continuity, gate)
        opener = replace(fit_opener(opener_parts(rows, train_ss, train_ti, recipe), recipe), threshold=threshold)
        vectors, ids = await agent_turn_vectors([*train_ss, *train_ti], embedder)
        typical = fit_typical_turns(vectors, ids, config)
        for variant, result in await _both_ways(continuity, opener, typical, held, embedder, config):
            starts[variant].update((p.id, p.starts) for p in result.predictions)
        log(f"fold {f + 1}/{recipe.folds} done (floor {typical.floor})")
    out: dict[str, object] = {}
    for variant, predicted in starts.items():
        cv = cross_validated(superseg, tiage, predicted, recipe.folds)
        log(f"cross-validated {variant}: {summary(cv)}")
        out[variant] = cv
    return out


def main() -> None:
    asyncio.run(train_typicality())


if __name__ == "__main__":
    main()
