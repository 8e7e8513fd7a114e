"""The encoder cross-validation (lab): decide() replayed with the continuity model mixed with an encoder."""

from __future__ import annotations

from pathlib import Path

from athena.embeddings import LocalEmbedder
from athena_cognition.detector import ContinuityScorer, Thresholds, load_continuity_model
from athena_lab.segmentation.encoder_cv import MixedScorer
from athena_lab.segmentation.encoder_pilot import EncoderClassifier
from athena_lab.segmentation.evaluate import evaluate
from athena_lab.segmentation.segmentation_data import load_dialogues

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "segmentation"


async def test_a_zero_encoder_share_replays_exactly_the_continuity_model_and_a_full_share_follows_the_encoder() -> None:
    dialogues = load_dialogues(SHARED / "tiage_validation.jsonl", limit=4)
    model = load_continuity_model()
    embedder = LocalEmbedder()
    gate = Thresholds(high=0.8, low=0.5)
    encoder = EncoderClassifier(max_length=48, seed=0)
    cache: dict[tuple[str, str], float] = {}

    async def starts(scorer: ContinuityScorer) -> list[tuple[int, ...]]:
        result = await evaluate(
            dialogues, scorer=scorer, embedder=embedder, thresholds=gate, arbiter=None, max_events_before_flush=20
        )
        return [p.starts for p in result.predictions]

    alone = await starts(ContinuityScorer(model))
    mixed_none = await starts(
        MixedScorer(model, encoder=encoder, weight=0.0, cache=cache, context_turns=4, opener=None)
    )
    assert mixed_none == alone and cache == {}  # share 0: the encoder is never asked

    await starts(MixedScorer(model, encoder=encoder, weight=1.0, cache=cache, context_turns=4, opener=None))
    assert cache  # every decision's pair was scored once
    new, context = next(iter(cache))
    assert new.startswith("user: ") and all(0.0 < p < 1.0 for p in cache.values())
    assert context == "" or context.startswith(("user: ", "agent: "))


async def test_the_timing_measures_each_encoder_variant_beside_the_embedding_decide_pays_today() -> None:
    from athena_lab.segmentation.encoder_cv import encoder_timing

    timing = await encoder_timing(data_dir=SHARED, decisions=3)

    assert timing["decisions"] == 3 and timing["threads"] == 1
    for key in (
        "float_128_ms",
        "float_64_ms",
        "int8_128_ms",
        "int8_64_ms",
        "embed_one_message_float_ms",
        "embed_one_message_int8_ms",
    ):
        assert timing[key] > 0, key
