"""`athena train encoder-cv`: the fine-tuned encoder beside the continuity model, replayed over 5 folds.

The pilot (encoder_pilot.py) measured AUC on one fold. What the product needs is Pk: the production
`decide()` replayed without an LLM over dialogues the models never saw, every fold in turn. For each
fold this fits the continuity model and the opener of the shipped recipes and fine-tunes the encoder
on the other folds, then replays the fold with the score

    (1 - w) x continuity probability + w x encoder probability

for each encoder share `w` (0 is the continuity model alone, the shipped detector's recipe) and each
no-LLM midpoint of the gate, the opener at the shipped threshold. The out-of-fold segmentations are
pooled over the folds and scored as the trainers score theirs (`cross_validated`). Each fold's
segmentations are written to `out_dir` as soon as the fold is done, so a long run can be resumed and
run a fold at a time. It also times one decision's encoder pass, float and int8, at two input
lengths (`encoder_timing` times that pass on its own, on a quiet machine). It writes no detector
artifact.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from athena.embeddings import Embedder
from athena_cognition.detector import ContinuityModel, ContinuityScorer, OpenerModel, Turn
from athena_lab.segmentation.cross_validation import cross_validated, fold_splits, summary
from athena_lab.segmentation.embedding_cache import embed_utterances
from athena_lab.segmentation.encoder_pilot import (
    EncoderClassifier,
    PairExample,
    PilotConfig,
    pair_examples,
    training_pairs,
)
from athena_lab.segmentation.evaluate import evaluate
from athena_lab.segmentation.segmentation_data import Dialogue, SharedSets, default_data_dir, load_shared_sets
from athena_lab.segmentation.train_continuity import fit_continuity, gray_zone
from athena_lab.segmentation.train_opener import OpenerConfig, fit_opener, opener_examples, opener_parts

__all__ = ["EncoderCvConfig", "MixedScorer", "encoder_cross_validation", "encoder_timing"]


@dataclass(frozen=True)
class EncoderCvConfig:
    pilot: PilotConfig = field(default_factory=PilotConfig)
    """The encoder's recipe (its `fold` is ignored: every fold of `folds` is run)."""
    folds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """The folds to run now; the pooled figures need all five, from this run or earlier ones."""
    weights: tuple[float, ...] = (0.0, 0.3, 0.5, 0.7)
    """The encoder's share in the mixed score; 0 replays the continuity model alone."""
    midpoints: tuple[float, ...] = (0.45, 0.50, 0.55, 0.60, 0.65, 0.70)
    """No-LLM midpoints of the gate (break below it); the gray zone is the midpoint +/- 0.15."""
    opener_threshold: float = 0.65
    """The hand-feature opener's threshold (opener_v1), used with every candidate."""


class MixedScorer(ContinuityScorer):
    """The continuity model's probability mixed with the fine-tuned encoder's (lab only).

    The encoder reads the same (new message, turns before it in the segment so far) pair it was
    trained on; its probabilities are cached by that pair, so replays at several midpoints pay for
    each distinct pair once.
    """

    def __init__(
        self,
        model: ContinuityModel,
        *,
        encoder: EncoderClassifier,
        weight: float,
        cache: dict[tuple[str, str], float],
        context_turns: int,
        opener: OpenerModel | None,
    ) -> None:
        super().__init__(model, opener=opener)
        self._encoder, self._weight, self._cache, self._context_turns = encoder, weight, cache, context_turns

    def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float:
        p = super().score(window, new_index, vectors)
        if self._weight == 0:
            return p
        before = window[max(0, new_index - self._context_turns) : new_index]
        key = (f"user: {window[new_index].content}", " ".join(f"{t.role}: {t.content}" for t in before))
        if key not in self._cache:
            self._cache[key] = float(self._encoder.probabilities([PairExample(*key, same=True)])[0])
        return (1 - self._weight) * p + self._weight * self._cache[key]


def _candidate(weight: float, midpoint: float) -> str:
    return f"w{weight:.2f}_m{midpoint:.2f}"


def _timing(encoder: EncoderClassifier, examples: Sequence[PairExample]) -> dict[str, float]:
    """Median ms of one decision's encoder pass over `examples`, one at a time: float and int8
    (dynamic quantization of the Linear layers), at 128 and 64 tokens."""
    import copy

    import torch

    out: dict[str, float] = {}
    int8 = copy.copy(encoder)
    int8.encoder = torch.ao.quantization.quantize_dynamic(
        copy.deepcopy(encoder.encoder), {torch.nn.Linear}, dtype=torch.qint8
    )
    for name, model in (("float", encoder), ("int8", int8)):
        for length in (128, 64):
            model.max_length = length
            model.probabilities(examples[:1])  # warm-up
            times = []
            for example in examples:
                t0 = time.perf_counter()
                model.probabilities([example])
                times.append(time.perf_counter() - t0)
            out[f"{name}_{length}_ms"] = round(1000 * float(np.median(times)), 2)
    encoder.max_length = int8.max_length = 128
    return out


async def encoder_timing(
    *, data_dir: Path | None = None, threads: int = 1, decisions: int = 200, config: PilotConfig | None = None
) -> dict[str, float]:
    """What one decision's encoder pass would add to decide(), beside the embedding decide() pays today.

    The pass costs the same whatever the weights, so the bundled model with an untrained head is
    timed on `decisions` real pairs (the first decisions of tiage_validation), on `threads` torch
    threads; `embed_one_message_<float|int8>_ms` is the production embedder (`LocalEmbedder`, the
    float model and the int8 copy the services run by default) embedding each pair's new message
    alone, timed the same way.
    """
    import torch

    from athena.embeddings import EmbeddingCache, LocalEmbedder

    config = config or PilotConfig()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        recipe = config.continuity
        sets = load_shared_sets(data_dir or default_data_dir(), recipe.heldout_fraction)
        examples = pair_examples(
            sets.tiage_validation, recipe.max_events_before_flush, context_turns=config.context_turns
        )[:decisions]
        out = _timing(EncoderClassifier(max_length=config.max_length, seed=config.seed), examples)
        # Distinct texts, each embedder with a cache of its own and warmed on another text: every timed
        # call encodes (the process-wide cache may hold these messages from earlier work).
        texts = list(dict.fromkeys(e.new.removeprefix("user: ") for e in examples))
        for name, embedder in (
            ("float", LocalEmbedder(cache=EmbeddingCache())),
            ("int8", LocalEmbedder(quantized=True, cache=EmbeddingCache())),
        ):
            await embedder.embed(["a message that warms the model up"])
            times = []
            for text in texts:
                t0 = time.perf_counter()
                await embedder.embed([text])
                times.append(time.perf_counter() - t0)
            out[f"embed_one_message_{name}_ms"] = round(1000 * float(np.median(times)), 2)
    finally:
        torch.set_num_threads(before)  # the caller's setting, as it was
    out["threads"] = threads
    out["decisions"] = len(examples)
    return out


async def _run_fold(
    fold: int,
    sets: SharedSets,
    embedder: Embedder,
    opener_rows: Mapping[str, tuple[np.ndarray, np.ndarray]],
    config: EncoderCvConfig,
    log: Callable[[str], None],
) -> dict[str, Any]:
    pilot = config.pilot
    recipe = pilot.continuity
    opener_config = OpenerConfig.hand_features()  # the opener of the hand features, as measured
    train_ss, train_ti, held = fold_splits(sets.superseg_train, sets.tiage_train, recipe.folds)[fold]
    max_events = recipe.max_events_before_flush

    gate = gray_zone(0.5, recipe.gray_half_width)
    continuity = await fit_continuity(train_ss, train_ti, embedder, recipe, gate)
    opener = replace(
        fit_opener(opener_parts(opener_rows, train_ss, train_ti, opener_config), opener_config),
        threshold=config.opener_threshold,
    )

    training = training_pairs(train_ss, train_ti, pilot)
    log(f"fold {fold}: the encoder on {len(training)} decisions")
    encoder = EncoderClassifier(max_length=pilot.max_length, seed=pilot.seed)
    started = time.perf_counter()
    encoder.fit(
        training, epochs=pilot.epochs, batch=pilot.batch, learning_rate=pilot.learning_rate, seed=pilot.seed, log=log
    )
    training_seconds = round(time.perf_counter() - started, 1)

    cache: dict[tuple[str, str], float] = {}
    starts: dict[str, dict[str, list[int]]] = {}
    for weight in config.weights:
        for midpoint in config.midpoints:
            scorer = MixedScorer(
                continuity,
                encoder=encoder,
                weight=weight,
                cache=cache,
                context_turns=pilot.context_turns,
                opener=opener,
            )
            result = await evaluate(
                held,
                scorer=scorer,
                embedder=embedder,
                thresholds=gray_zone(midpoint, recipe.gray_half_width),
                arbiter=None,
                max_events_before_flush=max_events,
            )
            starts[_candidate(weight, midpoint)] = {p.id: list(p.starts) for p in result.predictions}
        log(f"fold {fold}: share {weight} replayed ({len(cache)} encoder passes so far)")
    examples = pair_examples(held, max_events, context_turns=pilot.context_turns)[:30]
    return {
        "fold": fold,
        "training_decisions": len(training),
        "training_seconds": training_seconds,
        "encoder_passes": len(cache),
        "one_decision": _timing(encoder, examples),
        "starts": starts,
    }


async def encoder_cross_validation(
    *,
    out_dir: Path,
    data_dir: Path | None = None,
    config: EncoderCvConfig = EncoderCvConfig(),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the folds of `config.folds` not yet in `out_dir`; once all five are there, the pooled figures."""
    recipe = config.pilot.continuity
    sets = load_shared_sets(data_dir or default_data_dir(), recipe.heldout_fraction)
    out_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - an offline training run
    embedder, disk = await embed_utterances((sets.superseg, sets.tiage_train, sets.tiage_validation), None)
    if disk is not None:
        disk.save()
    # The opener's rows of every training dialogue, read once for all the folds still to run.
    opener_rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for fold in config.folds:
        path = out_dir / f"fold_{fold}.json"
        if path.exists():
            log(f"fold {fold}: already in {path}")
            continue
        if not opener_rows:
            opener_rows = {
                d.id: await opener_examples([d], embedder, agent_embedding=False)
                for d in (*sets.superseg_train, *sets.tiage_train)
            }
        record = await _run_fold(fold, sets, embedder, opener_rows, config, log)
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        log(f"fold {fold}: done in {record['training_seconds']} s of training; {record['one_decision']}")

    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out_dir.glob("fold_*.json"))]  # noqa: ASYNC240
    report: dict[str, Any] = {
        "folds_done": [r["fold"] for r in records],
        "per_fold": [{k: v for k, v in r.items() if k != "starts"} for r in records],
    }
    if len(records) < recipe.folds:
        return report
    report["candidates"] = _pooled(records, sets.superseg_train, sets.tiage_train, recipe.folds, log)
    return report


def _pooled(
    records: Sequence[Mapping[str, Any]],
    superseg: Sequence[Dialogue],
    tiage: Sequence[Dialogue],
    folds: int,
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    out = []
    for name in records[0]["starts"]:
        starts = {i: tuple(s) for r in records for i, s in r["starts"][name].items()}
        cv = cross_validated(superseg, tiage, starts, folds)
        log(f"{name}: {summary(cv)}")
        out.append({"candidate": name, **cv})
    return out
