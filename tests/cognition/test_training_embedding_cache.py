"""The training embedding cache: a text's vector does not depend on its batch or on what was cached before."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from athena.embeddings import LocalEmbedder
from athena.embeddings._cache import EmbeddingCache
from athena_lab.segmentation.embedding_cache import DiskCachedEmbedder

TEXTS = [
    "How do I reset my password?",
    "ok",
    "Nice. Do you like cooking? I have been trying new pasta recipes with fresh basil lately.",
]


def _model() -> LocalEmbedder:
    return LocalEmbedder(cache=EmbeddingCache(16))  # a private in-memory cache: every miss reaches the model


async def test_vectors_do_not_depend_on_batch_or_earlier_runs(tmp_path: Path) -> None:
    all_at_once = DiskCachedEmbedder(_model(), tmp_path / "a.npz")
    together = await all_at_once.embed(TEXTS)

    piecewise = DiskCachedEmbedder(_model(), tmp_path / "b.npz")
    await piecewise.embed([TEXTS[2]])
    piecewise.save()
    reloaded = DiskCachedEmbedder(_model(), tmp_path / "b.npz")  # a later run starting from the saved file
    apart = await reloaded.embed(list(reversed(TEXTS)))

    assert together.tobytes() == apart[::-1].tobytes()
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
