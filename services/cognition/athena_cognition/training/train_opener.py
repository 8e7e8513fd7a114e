"""Train the boundary-placement opener model (detector/_placement.py) from the shared data.

Recipe (docs/segmentation.md, "Boundary placement"):
- data: the same training dialogues as the continuity scorer: superseg_validation minus the fixed
  30% held out by id hash, plus tiage_train (weights 1 and 3);
- examples: every user message right after an agent message, with the segment the detector would
  hold if it had segmented correctly so far; label 1 when the reference opens a segment at that
  agent turn (and not again at the user message), else 0;
- model: standardized 18 hand features -> L2 logistic regression, sklearn to fit, numpy to run;
- threshold: replay the production `decide()` (committed continuity model + this opener, no LLM)
  over the *training* dialogues, pick the threshold with the lowest mean Pk over SuperDialseg and
  TIAGE; the measured sets (held-out SuperDialseg, tiage_validation) are only reported.
"""

from __future__ import annotations

import asyncio
import json
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from athena.embeddings import Embedder, LocalEmbedder
from athena_cognition.detector import ContinuityScorer, OpenerModel, Thresholds, load_continuity_model
from athena_cognition.detector._placement import OPENER_ARTIFACT, OPENER_FEATURE_NAMES, opener_candidate, opener_features
from athena_cognition.training.embedding_cache import DiskCachedEmbedder, default_cache_path
from athena_cognition.training.evaluate import dialogue_turns, evaluate
from athena_cognition.training.segmentation_data import Dialogue, data_record, default_data_dir, file_sha256, load_shared_sets

__all__ = ["OpenerConfig", "opener_examples", "train_opener"]

RECORD_NAME = "opener_v1.record.json"
DETECTOR_DIR = Path(__file__).resolve().parent.parent / "detector"


@dataclass(frozen=True)
class OpenerConfig:
    heldout_fraction: float = 0.3
    weight_superseg: float = 1.0
    weight_tiage: float = 3.0
    l2_c: float = 0.1
    thresholds: tuple[float, ...] = (0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70)
    max_events_before_flush: int = 20


async def opener_examples(dialogues: Sequence[Dialogue], embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
    """Teacher-forced rows and labels (1 = the agent turn before this user message opened a segment)."""
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
                rows.append(opener_features(window, new_index, vectors))
                labels.append(int(bool(dialogue.starts[i - 1]) and not dialogue.starts[i]))
            if dialogue.starts[i]:
                previous_start, segment_start = segment_start, i
    return np.asarray(rows, dtype=np.float64), np.asarray(labels, dtype=np.int64)


def _fit(parts: Sequence[tuple[np.ndarray, np.ndarray, float]], config: OpenerConfig) -> OpenerModel:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    w = np.concatenate([np.full(len(p[1]), p[2]) for p in parts])
    scaler = StandardScaler().fit(x)
    clf = LogisticRegression(C=config.l2_c, max_iter=5000).fit(scaler.transform(x), y, sample_weight=w)
    return OpenerModel(
        feature_names=OPENER_FEATURE_NAMES,
        mean=scaler.mean_.astype(np.float64),
        scale=scaler.scale_.astype(np.float64),
        coef=clf.coef_[0].astype(np.float64),
        intercept=float(clf.intercept_[0]),
        threshold=0.5,
    )


async def _replay(
    opener: OpenerModel | None, dialogues: Sequence[Dialogue], embedder: Embedder, thresholds: Thresholds, max_events: int
) -> dict[str, object]:
    result = await evaluate(
        dialogues,
        scorer=ContinuityScorer(opener=opener),
        embedder=embedder,
        thresholds=thresholds,
        arbiter=None,
        max_events_before_flush=max_events,
    )
    out: dict[str, object] = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(result.scores).items()}
    out["paths"] = result.paths
    return out


async def train_opener(
    *,
    out_dir: Path = DETECTOR_DIR,
    data_dir: Path | None = None,
    config: OpenerConfig = OpenerConfig(),
    embedder: Embedder | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, object]:
    """Fit, pick the threshold on training data, measure; write opener_v1.npz and its record; return the record."""
    data_dir = data_dir or default_data_dir()
    sets = load_shared_sets(data_dir, config.heldout_fraction)
    files = sets.files
    ss_train, ss_heldout = sets.superseg_train, sets.superseg_heldout
    tiage_train, tiage_val = sets.tiage_train, sets.tiage_validation

    disk: DiskCachedEmbedder | None = None
    if embedder is None:
        disk = DiskCachedEmbedder(LocalEmbedder(), default_cache_path())
        embedder = disk
    texts = list(dict.fromkeys(u.text for ds in (ss_train, ss_heldout, tiage_train, tiage_val) for d in ds for u in d.utterances))
    await embedder.embed(texts)

    parts = [
        (*await opener_examples(ss_train, embedder), config.weight_superseg),
        (*await opener_examples(tiage_train, embedder), config.weight_tiage),
    ]
    fitted = _fit(parts, config)
    gate = load_continuity_model().thresholds
    max_events = config.max_events_before_flush

    sweep: list[dict[str, object]] = []
    for threshold in (None, *config.thresholds):
        opener = None if threshold is None else replace(fitted, threshold=threshold)
        ss_m = await _replay(opener, ss_train, embedder, gate, max_events)
        ti_m = await _replay(opener, tiage_train, embedder, gate, max_events)
        objective = (float(ss_m["pk"]) + float(ti_m["pk"])) / 2  # type: ignore[arg-type]
        sweep.append({"threshold": threshold, "objective_mean_pk": round(objective, 4),
                      "superseg_train": {k: ss_m[k] for k in ("pk", "wd", "f1")},
                      "tiage_train": {k: ti_m[k] for k in ("pk", "wd", "f1")}})
        log(f"threshold {threshold}: superseg pk {ss_m['pk']} f1 {ss_m['f1']} | tiage pk {ti_m['pk']} -> {objective:.4f}")
    candidates = [r for r in sweep if r["threshold"] is not None]
    best = min(candidates, key=lambda r: (r["objective_mean_pk"], -float(r["threshold"])))  # type: ignore[arg-type]
    model = replace(fitted, threshold=float(best["threshold"]))  # type: ignore[arg-type]
    log(f"chosen opener threshold: {model.threshold}")

    metrics = {
        "superseg_validation_heldout": await _replay(model, ss_heldout, embedder, gate, max_events),
        "tiage_validation": await _replay(model, tiage_val, embedder, gate, max_events),
    }
    log(f"held-out: {json.dumps(metrics)}")
    if disk is not None:
        disk.save()

    out_dir.mkdir(parents=True, exist_ok=True)
    artifact = out_dir / OPENER_ARTIFACT
    model.save(artifact)
    import sklearn

    record: dict[str, object] = {
        "artifact": OPENER_ARTIFACT,
        "artifact_sha256": file_sha256(artifact),
        "command": "athena train opener",
        "model": {
            "kind": "standardize + L2 logistic regression, output P(the agent turn before the new user message opened a topic)",
            "inference": "numpy only: sigmoid(((x - mean) / scale) . coef + intercept) >= threshold",
            "l2_C": config.l2_c,
            "inputs": len(OPENER_FEATURE_NAMES),
            "used_with": "continuity_v1.npz (its gate thresholds in the replay)",
        },
        "features": list(OPENER_FEATURE_NAMES),
        "data": data_record(files),
        "split": {
            "superseg_heldout": f"sha256(id) as a 64-bit fraction < {config.heldout_fraction}",
            "threshold_selection": "replay of decide() over the training dialogues (superseg train part + tiage_train)",
        },
        "training_examples": {
            "superseg": int(len(parts[0][1])),
            "superseg_positive": int(parts[0][1].sum()),
            "tiage": int(len(parts[1][1])),
            "tiage_positive": int(parts[1][1].sum()),
        },
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
        "threshold_sweep": sweep,
        "threshold": model.threshold,
        "metrics_no_llm": metrics,
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__},
    }
    (out_dir / RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {artifact} and {out_dir / RECORD_NAME}")
    return record


def main() -> None:
    asyncio.run(train_opener())


if __name__ == "__main__":
    main()
