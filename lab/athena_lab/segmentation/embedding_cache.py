"""An Embedder wrapper that keeps vectors on disk between training runs (under /tmp, never in the repo).

New texts are encoded one at a time. A text's vector then never depends on which other texts
shared its batch (padding and kernel shapes change the last float bits), nor on what an earlier
run had already cached, so the trained artifacts are reproducible byte for byte from the data.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from athena.embeddings import Embedder, LocalEmbedder
from athena.embeddings._cache import text_key
from athena_lab.segmentation.segmentation_data import Dialogue

__all__ = ["DiskCachedEmbedder", "default_cache_path", "embed_utterances", "int8_replay_embedder"]


def default_cache_path(model: str = "all-MiniLM-L6-v2") -> Path:
    return Path(tempfile.gettempdir()) / "athena-embedding-cache" / f"{model}.one-by-one.npz"


class DiskCachedEmbedder:
    """Serves known texts from an npz file; embeds the rest with `inner`, one text per call, and remembers them."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self._inner = inner
        self._path = path
        self._vectors: dict[bytes, np.ndarray] = {}
        self._dirty = False
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                for key, vec in zip(z["keys"], z["vectors"]):
                    self._vectors[key.tobytes()] = vec

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self._vectors))
        for text in missing:  # one per call: batch-independent vectors (module docstring)
            self._vectors[text_key(text)] = np.asarray((await self._inner.embed([text]))[0], dtype=np.float32)
            self._dirty = True
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32, copy=False)

    def save(self) -> None:
        if not self._dirty:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        # Raw uint8 rows: a bytes dtype would drop trailing zero bytes of a digest.
        keys = np.frombuffer(b"".join(self._vectors), dtype=np.uint8).reshape(len(self._vectors), -1)
        vectors = np.stack(list(self._vectors.values())).astype(np.float32)
        tmp = self._path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors)
        tmp.replace(self._path)  # atomic: a crash never leaves a half-written cache
        self._dirty = False


async def embed_utterances(
    dialogue_sets: Sequence[Sequence[Dialogue]], embedder: Embedder | None = None
) -> tuple[Embedder, DiskCachedEmbedder | None]:
    """The embedder a trainer uses, with every utterance of `dialogue_sets` embedded.

    Without an `embedder`, the local model behind the disk cache; that cache is returned too, for the
    trainer to save when it is done (None when the caller brought its own embedder).
    """
    # The eager encode: the committed artifacts and the cache were made with it (byte for byte).
    disk = DiskCachedEmbedder(LocalEmbedder(torchscript=False), default_cache_path()) if embedder is None else None
    chosen: Embedder = disk if disk is not None else embedder  # type: ignore[assignment]
    await chosen.embed(_utterance_texts(dialogue_sets))
    return chosen, disk


async def int8_replay_embedder(dialogue_sets: Sequence[Sequence[Dialogue]]) -> DiskCachedEmbedder:
    """The local model's int8 copy (what `EMBEDDING_INT8`, the default, runs in the product) behind a
    disk cache of its own, with every utterance of `dialogue_sets` embedded: for replaying decisions
    as the product makes them, while the models are still fitted on the float model's vectors."""
    disk = DiskCachedEmbedder(
        LocalEmbedder(torchscript=False, quantized=True), default_cache_path("all-MiniLM-L6-v2-int8")
    )
    await disk.embed(_utterance_texts(dialogue_sets))
    return disk


def _utterance_texts(dialogue_sets: Sequence[Sequence[Dialogue]]) -> list[str]:
    """Every utterance text of the sets, each once, in order of first appearance."""
    return list(dict.fromkeys(u.text for ds in dialogue_sets for d in ds for u in d.utterances))
