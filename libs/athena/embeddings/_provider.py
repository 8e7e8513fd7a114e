"""The embedding provider interface every part of Athena talks to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Embedder", "normalize_rows"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 rows (one per text, in order), so a dot product is a cosine."""

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """float32 copy with unit-length rows; an all-zero row stays zero instead of turning into NaN."""
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {out.shape}")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)
