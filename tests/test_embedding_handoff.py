"""Vectors handed from cognition to formation with a segment (FormChainRequest.embeddings): formation
does not encode again what cognition encoded with the same model, and ignores any other model's."""

from __future__ import annotations

import numpy as np
from support.formation_data import KYOTO, make_segment

from athena.embeddings import EmbeddingCache, LocalEmbedder, adopt_event_embeddings, cached_event_embeddings


async def test_formation_takes_cognitions_vectors_and_encodes_none_of_those_texts_again() -> None:
    segment = make_segment(KYOTO)
    cognition = LocalEmbedder(cache=EmbeddingCache())  # two processes: one model, two caches
    formation = LocalEmbedder(cache=EmbeddingCache())
    users = [e for e in segment.events if e.role == 1]
    own = await cognition.embed([e.content for e in users])  # what cognition encoded to decide

    hint = cached_event_embeddings(cognition, segment.events)
    assert hint is not None and list(hint.event_ids) == [e.id for e in users]  # only what it has
    assert adopt_event_embeddings(formation, hint, segment.events) == len(users)

    rows = await formation.embed([e.content for e in segment.events])
    assert formation.encoded_texts == len(segment.events) - len(users)  # the agent replies only
    np.testing.assert_allclose(rows[[i for i, e in enumerate(segment.events) if e.role == 1]], own, atol=1e-6)


async def test_vectors_of_another_model_are_ignored() -> None:
    segment = make_segment(KYOTO)
    float_model = LocalEmbedder(cache=EmbeddingCache())
    await float_model.embed([e.content for e in segment.events])
    hint = cached_event_embeddings(float_model, segment.events)
    int8 = LocalEmbedder(cache=EmbeddingCache(), quantized=True)

    assert hint is not None and adopt_event_embeddings(int8, hint, segment.events) == 0
    await int8.embed([e.content for e in segment.events])
    assert int8.encoded_texts == len(segment.events)


async def test_nothing_is_handed_when_the_cache_holds_none_of_the_texts() -> None:
    assert cached_event_embeddings(LocalEmbedder(cache=EmbeddingCache()), make_segment(KYOTO).events) is None
