"""Vectors handed from cognition to formation with a segment, so formation does not encode again the
texts cognition already encoded with the same model (FormChainRequest.embeddings).

Cognition reads them from its cache (no encoding for this); formation puts them into its own cache
when its embedder is the model named, and then embeds as usual: the texts are cache hits. Anything
else (another model, a missing vector, a wrong size) is ignored: the hint never changes an outcome.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from athena.embeddings._cache import EmbeddingCache, text_key
from athena.embeddings._provider import Embedder
from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2

__all__ = ["adopt_event_embeddings", "cached_event_embeddings"]


def _identity(embedder: Embedder) -> tuple[str, EmbeddingCache] | None:
    """The embedder's model key and cache, when it has both (the local model's embedder)."""
    key, cache = getattr(embedder, "model_key", None), getattr(embedder, "cache", None)
    return (key, cache) if isinstance(key, str) and key and isinstance(cache, EmbeddingCache) else None


def cached_event_embeddings(
    embedder: Embedder, events: Sequence[memory_pb2.Event]
) -> formation_pb2.EventEmbeddings | None:
    """The vectors the embedder's cache holds for these events' texts, or None when it holds none."""
    identity = _identity(embedder)
    if identity is None:
        return None
    model, cache = identity
    out = formation_pb2.EventEmbeddings(model=model, dim=embedder.dim)
    for event in events:
        vec = cache.peek(text_key(event.content))
        if vec is not None and vec.shape == (embedder.dim,):
            out.event_ids.append(event.id)
            out.values.extend(vec.tolist())
    return out if out.event_ids else None


def adopt_event_embeddings(
    embedder: Embedder, hint: formation_pb2.EventEmbeddings, events: Sequence[memory_pb2.Event]
) -> int:
    """Put the hint's vectors into the embedder's cache under their events' texts when the hint is of
    this embedder's model; returns how many were taken."""
    identity = _identity(embedder)
    if identity is None or hint.model != identity[0] or hint.dim != embedder.dim:
        return 0
    if len(hint.values) != len(hint.event_ids) * hint.dim:
        return 0
    cache = identity[1]
    content = {e.id: e.content for e in events}
    rows = np.asarray(hint.values, dtype=np.float32).reshape(len(hint.event_ids), hint.dim)
    taken = 0
    for event_id, row in zip(hint.event_ids, rows):
        text = content.get(event_id)
        if text is not None:
            cache.put(text_key(text), row)
            taken += 1
    return taken
