"""`athena train encoder-pilot`: the MiniLM encoder fine-tuned as a chain-break classifier, on one fold.

The continuity model reads hand features and one raw vector of the new message. This pilot measures
what the encoder itself learns when it is trained whole on the decision: all-MiniLM-L6-v2 with a
logistic head on its mean-pooled output reads (the new user message, the turns before it in the
segment so far) and says whether the topic continues. It trains on one of the trainers' 5 folds
(the same teacher-forced decisions, splices and weights as the continuity recipe), and reports the
AUC of "same topic" on that fold's held-out decisions for the encoder, for the continuity model of
the recipe fitted on the same dialogues, and for the mean of the two probabilities
(docs/segmentation.md, "A first measurement of that model"). It writes no artifact: one fold is a
measurement, not a selection.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from athena_lab.segmentation.cross_validation import fold_splits
from athena_lab.segmentation.embedding_cache import embed_utterances
from athena_lab.segmentation.segmentation_data import Dialogue, default_data_dir, load_shared_sets
from athena_lab.segmentation.train_continuity import (
    TrainConfig,
    continuity_examples,
    fit_continuity,
    gray_zone,
    splices,
    teacher_forced,
)

__all__ = ["EncoderClassifier", "PairExample", "PilotConfig", "encoder_pilot", "pair_examples", "training_pairs"]


@dataclass(frozen=True)
class PairExample:
    new: str
    """The new user message, as "user: <text>"."""
    context: str
    """The turns before it in the segment so far, oldest first, each as "<role>: <text>"."""
    same: bool
    """The topic continues (the continuity model's label 1)."""
    weight: float = 1.0


@dataclass(frozen=True)
class PilotConfig:
    fold: int = 0
    """Which of the trainers' folds is held out (0-based)."""
    context_turns: int = 4
    """Turns of the segment before the new message that the encoder reads."""
    max_length: int = 128
    """Tokens of a pair; the context is cut first."""
    epochs: int = 1
    batch: int = 32
    learning_rate: float = 3e-5
    seed: int = 0
    continuity: TrainConfig = field(default_factory=TrainConfig)
    """The recipe whose folds, splices, weights and continuity model the encoder is compared with."""


def pair_examples(
    dialogues: Sequence[Dialogue], max_events: int, *, weight: float = 1.0, context_turns: int = 4
) -> list[PairExample]:
    """The decisions `continuity_examples` makes rows of (same order, same labels), as text pairs."""
    out = []
    for dialogue in dialogues:
        for window, new_index, _, same in teacher_forced(dialogue, max_events):
            before = window[max(0, new_index - context_turns) : new_index]
            out.append(
                PairExample(
                    new=f"user: {window[new_index].content}",
                    context=" ".join(f"{t.role}: {t.content}" for t in before),
                    same=same,
                    weight=weight,
                )
            )
    return out


def training_pairs(superseg: Sequence[Dialogue], tiage: Sequence[Dialogue], config: PilotConfig) -> list[PairExample]:
    """The continuity recipe's training decisions as text pairs: both corpora and the recipe's splices
    of TIAGE dialogues, with the recipe's weights."""
    recipe, turns = config.continuity, config.context_turns
    max_events = recipe.max_events_before_flush
    spliced = splices(tiage, recipe.splices, random.Random(recipe.seed))
    return [
        *pair_examples(superseg, max_events, weight=recipe.weight_superseg, context_turns=turns),
        *pair_examples(tiage, max_events, weight=recipe.weight_tiage, context_turns=turns),
        *pair_examples(spliced, max_events, weight=recipe.weight_splice, context_turns=turns),
    ]


class EncoderClassifier:
    """all-MiniLM-L6-v2 (the bundled copy) with a logistic head on its mean-pooled output, trained whole."""

    def __init__(self, *, max_length: int = 128, seed: int = 0) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from athena.embeddings import bundled_model_path

        torch.manual_seed(seed)
        path = str(bundled_model_path())
        self._torch = torch
        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.encoder = AutoModel.from_pretrained(path)
        self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

    def _logits(self, batch: Sequence[PairExample]) -> Any:
        tokens = self.tokenizer(
            [e.new for e in batch],
            [e.context for e in batch],
            truncation="only_second",
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        hidden = self.encoder(**tokens).last_hidden_state
        mask = tokens["attention_mask"].unsqueeze(-1).float()
        return self.head((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)

    def fit(
        self,
        examples: Sequence[PairExample],
        *,
        epochs: int = 1,
        batch: int = 32,
        learning_rate: float = 3e-5,
        seed: int = 0,
        log: Callable[[str], None] = print,
    ) -> None:
        """AdamW with a linear warm-up over the first 6% of the steps and a linear decay, weighted
        binary cross-entropy, gradients clipped at 1; the examples shuffled once by `seed`."""
        torch = self._torch
        data = list(examples)
        random.Random(seed).shuffle(data)
        params = [*self.encoder.parameters(), *self.head.parameters()]
        optimizer = torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.01)
        steps = epochs * ((len(data) + batch - 1) // batch)
        warm_up = max(1.0, 0.06 * steps)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min(1.0, (s + 1) / warm_up) * max(0.0, (steps - s) / steps)
        )
        self.encoder.train()
        started, step = time.perf_counter(), 0
        for _ in range(epochs):
            for at in range(0, len(data), batch):
                part = data[at : at + batch]
                labels = torch.tensor([float(e.same) for e in part])
                weights = torch.tensor([e.weight for e in part])
                losses = torch.nn.functional.binary_cross_entropy_with_logits(
                    self._logits(part), labels, reduction="none"
                )
                loss = (losses * weights).sum() / weights.sum()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad()
                step += 1
                if step % 50 == 0 or step == steps:
                    log(f"step {step}/{steps}: loss {loss.item():.3f} ({time.perf_counter() - started:.0f} s)")
        self.encoder.eval()

    def probabilities(self, examples: Sequence[PairExample], *, batch: int = 64) -> np.ndarray:
        """P(same topic) of each example."""
        torch = self._torch
        with torch.no_grad():
            parts = [
                torch.sigmoid(self._logits(examples[i : i + batch])).numpy() for i in range(0, len(examples), batch)
            ]
        return np.concatenate(parts) if parts else np.zeros(0)


async def encoder_pilot(
    *, data_dir: Path | None = None, config: PilotConfig = PilotConfig(), log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Fit both models on the fold's training dialogues; the AUC of each, and of their mean, per corpus."""
    from sklearn.metrics import roc_auc_score

    recipe = config.continuity
    sets = load_shared_sets(data_dir or default_data_dir(), recipe.heldout_fraction)
    tiage_ids = {d.id for d in sets.tiage_train}
    train_ss, train_ti, held = fold_splits(sets.superseg_train, sets.tiage_train, recipe.folds)[config.fold]
    held_by_corpus = {
        "superseg": [d for d in held if d.id not in tiage_ids],
        "tiage": [d for d in held if d.id in tiage_ids],
    }
    max_events = recipe.max_events_before_flush

    log("the continuity model of the recipe on the fold's training dialogues")
    embedder, disk = await embed_utterances((sets.superseg, sets.tiage_train, sets.tiage_validation), None)
    continuity = await fit_continuity(train_ss, train_ti, embedder, recipe, gray_zone(0.5, recipe.gray_half_width))
    if disk is not None:
        disk.save()

    training = training_pairs(train_ss, train_ti, config)
    log(f"the encoder on {len(training)} decisions")
    encoder = EncoderClassifier(max_length=config.max_length, seed=config.seed)
    started = time.perf_counter()
    encoder.fit(
        training,
        epochs=config.epochs,
        batch=config.batch,
        learning_rate=config.learning_rate,
        seed=config.seed,
        log=log,
    )
    report: dict[str, Any] = {
        "fold": config.fold,
        "training_decisions": len(training),
        "training_seconds": round(time.perf_counter() - started, 1),
    }
    for corpus, dialogues in held_by_corpus.items():
        rows, labels = await continuity_examples(dialogues, embedder, max_events)
        by_features = np.array([continuity.predict(row) for row in rows])
        by_encoder = encoder.probabilities(pair_examples(dialogues, max_events, context_turns=config.context_turns))
        report[corpus] = {
            "dialogues": len(dialogues),
            "decisions": len(labels),
            "auc_continuity": round(float(roc_auc_score(labels, by_features)), 4),
            "auc_encoder": round(float(roc_auc_score(labels, by_encoder)), 4),
            "auc_mean_of_both": round(float(roc_auc_score(labels, (by_features + by_encoder) / 2)), 4),
        }
    one = pair_examples(held_by_corpus["superseg"][:1], max_events, context_turns=config.context_turns)[:1]
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        encoder.probabilities(one)
        times.append(time.perf_counter() - t0)
    report["one_decision_ms"] = round(1000 * float(np.median(times)), 1)
    return report
