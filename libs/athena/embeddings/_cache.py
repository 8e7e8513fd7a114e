"""In-process LRU cache of embeddings keyed by a hash of the text, shared by all embedders of one model.

A worker embeds the same recent messages again and again (every decision looks back at the
segment), so each text is encoded once per process and then served from memory.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
from opentelemetry import trace

from athena.metrics import EMBEDDING_CACHE, EMBEDDING_SECONDS

__all__ = ["EmbeddingCache", "cached_embed", "shared_cache", "text_key"]

DEFAULT_MAX_ENTRIES = 50_000  # 50k x 384 float32 is about 77 MB at most


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class EmbeddingCache:
    """Thread-safe LRU map text-hash -> read-only float32 vector."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._max = max_entries
        self._items: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: bytes) -> np.ndarray | None:
        with self._lock:
            vec = self._items.get(key)
            if vec is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return vec

    def peek(self, key: bytes) -> np.ndarray | None:
        """The vector if cached, without counting a hit or a miss or refreshing its place."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: bytes, vec: np.ndarray) -> None:
        vec = np.array(vec, dtype=np.float32)
        vec.setflags(write=False)  # rows are handed out shared: nobody may change them
        with self._lock:
            self._items[key] = vec
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0


_registry: dict[str, EmbeddingCache] = {}
_registry_lock = threading.Lock()


def shared_cache(model_key: str, max_entries: int = DEFAULT_MAX_ENTRIES) -> EmbeddingCache:
    """The process-wide cache of one model (texts embed differently per model, so one cache each)."""
    with _registry_lock:
        cache = _registry.get(model_key)
        if cache is None:
            cache = _registry[model_key] = EmbeddingCache(max_entries)
        return cache


async def cached_embed(
    texts: Sequence[str],
    dim: int,
    cache: EmbeddingCache,
    compute: Callable[[list[str]], Awaitable[np.ndarray]],
    *,
    provider: str = "local",
) -> np.ndarray:
    """Rows for `texts`, computing only the distinct texts the cache lacks, in one `compute` call."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    missing: dict[bytes, tuple[str, list[int]]] = {}
    for i, text in enumerate(texts):
        key = text_key(text)
        vec = cache.get(key) if key not in missing else None
        if vec is not None:
            out[i] = vec
        else:
            missing.setdefault(key, (text, []))[1].append(i)
    hits = len(texts) - sum(len(idx) for _, idx in missing.values())
    if hits:
        EMBEDDING_CACHE.labels("hit").inc(hits)
    if missing:
        EMBEDDING_CACHE.labels("miss").inc(len(missing))
        keys = list(missing)
        started = time.perf_counter()
        with trace.get_tracer("athena").start_as_current_span(
            "embedding", attributes={"athena.embedding.texts": len(keys), "athena.embedding.provider": provider}
        ):
            fresh = await compute([missing[k][0] for k in keys])
        EMBEDDING_SECONDS.labels(provider).observe(time.perf_counter() - started)
        if fresh.shape != (len(keys), dim):
            raise ValueError(f"embedding model returned shape {fresh.shape}, expected {(len(keys), dim)}")
        for key, vec in zip(keys, fresh):
            cache.put(key, vec)
            out[missing[key][1]] = vec
    return out
