"""The encoder pilot (lab): the same decisions as the continuity model's, and an encoder that learns them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from athena.embeddings import LocalEmbedder
from athena_lab.segmentation.encoder_pilot import EncoderClassifier, PairExample, pair_examples
from athena_lab.segmentation.segmentation_data import load_dialogues, parse_dialogue
from athena_lab.segmentation.train_continuity import continuity_examples

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "segmentation"


async def test_the_encoder_reads_the_continuity_models_decisions_in_order_with_their_labels() -> None:
    dialogues = [
        *load_dialogues(SHARED / "superseg_validation.jsonl", limit=15),
        *load_dialogues(SHARED / "tiage_train.jsonl", limit=8),
    ]

    _, labels = await continuity_examples(dialogues, LocalEmbedder(), 20)
    pairs = pair_examples(dialogues, 20, context_turns=2)

    assert len(pairs) == len(labels) > 50
    assert [int(p.same) for p in pairs] == labels.tolist()
    turns = ["user: hi", "agent: hello", "user: my router", "agent: which one?", "user: the blue one"]
    dialogue = parse_dialogue("d", "[NEWLINE]".join(turns))
    assert [(p.new, p.context) for p in pair_examples([dialogue], 20, context_turns=2)] == [
        ("user: my router", "user: hi agent: hello"),
        ("user: the blue one", "user: my router agent: which one?"),  # the two turns before it
    ]


def test_the_encoder_fitted_on_a_few_decisions_ranks_them_by_their_labels() -> None:
    same = [
        ("user: and how long is the reset link valid?", "agent: I sent a password reset link to your email."),
        ("user: can I renew my passport by mail?", "agent: Passport renewals take six weeks by mail."),
    ]
    new = [
        ("user: what's a good vegetarian curry?", "agent: I sent a password reset link to your email."),
        ("user: which temples in Kyoto need booking?", "agent: Passport renewals take six weeks by mail."),
    ]
    examples = [PairExample(n, c, True) for n, c in same] + [PairExample(n, c, False) for n, c in new]
    encoder = EncoderClassifier(max_length=32, seed=0)
    before = encoder.probabilities(examples)

    encoder.fit(examples * 4, epochs=6, batch=8, learning_rate=5e-4, log=lambda _: None)
    after = encoder.probabilities(examples)

    assert after.shape == (4,) and ((after > 0) & (after < 1)).all()
    assert min(after[:2]) > max(after[2:])  # every continuing pair above every new topic
    assert not np.allclose(before, after)
