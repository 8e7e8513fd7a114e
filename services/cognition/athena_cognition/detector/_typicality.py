"""How typical an agent turn is of the agent turns the opener model learned from.

The opener (detector/_placement.py) learned what a topic-opening agent turn looks like in two kinds
of dialogue, chit-chat (TIAGE) and help desks (SuperDialseg), and it reads the agent turn's own
embedding. On agent turns unlike any of those it has no evidence, and there it fires far too often:
fitted on TIAGE alone, it opened a topic at 370 to 665 help-desk agent turns per fold of SuperDialseg,
where about 40 open one (docs/segmentation.md, "Typical agent turns"). So the opener only breaks at an
agent turn whose embedding is close to its training turns: the largest cosine to `centroids` (k-means
centres of the training agent turns' unit vectors) at least `floor`, the share `alpha` of held-out
training turns that fall below it (5%: a turn less typical than 95% of the opener's own domains).

Artifact `opener_v2_typical.npz` beside `opener_v2.npz`, in the same all-MiniLM-L6-v2 space, written by
`athena train opener-typicality` with `opener_v2_typical.record.json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from athena_cognition.detector._classifier import packaged_artifact

__all__ = ["TYPICAL_AGENT_TURNS_ARTIFACT", "TypicalTurns", "load_typical_agent_turns"]

TYPICAL_AGENT_TURNS_ARTIFACT = "opener_v2_typical.npz"


@dataclass(frozen=True, slots=True)
class TypicalTurns:
    """Centres of the training agent turns and the least typicality an agent turn needs to open a topic."""

    centroids: np.ndarray
    """(k, dim) unit rows: k-means centres of the training agent turns' unit embeddings."""
    floor: float
    """The least largest-cosine to a centre of an agent turn the opener may break at."""

    def __post_init__(self) -> None:
        if self.centroids.ndim != 2 or not len(self.centroids):
            raise ValueError("centroids must be a non-empty (k, dim) array")
        if not np.allclose(np.linalg.norm(self.centroids, axis=1), 1.0, atol=1e-4):
            raise ValueError("centroids must be unit rows")
        if not -1.0 <= self.floor <= 1.0:
            raise ValueError(f"floor {self.floor} is not a cosine")

    @property
    def dim(self) -> int:
        return int(self.centroids.shape[1])

    def typicality(self, vector: np.ndarray) -> float:
        """The largest cosine of `vector` to a centre (-1 for a zero vector)."""
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            return -1.0
        return float((self.centroids @ (np.asarray(vector, dtype=np.float64) / norm)).max())

    def holds(self, vector: np.ndarray) -> bool:
        """Whether an agent turn with this embedding is typical enough for the opener to break at."""
        if len(vector) != self.dim:
            raise ValueError(f"typical agent turns are {self.dim}-d, got a {len(vector)}-d vector")
        return self.typicality(vector) >= self.floor

    def save(self, path: str | Path) -> None:
        np.savez(path, centroids=self.centroids.astype(np.float32), floor=np.array(self.floor, dtype=np.float64))

    @classmethod
    def load(cls, path: str | Path) -> TypicalTurns:
        with np.load(path, allow_pickle=False) as z:
            centroids = z["centroids"].astype(np.float64)
            try:
                return cls(
                    centroids=centroids / np.linalg.norm(centroids, axis=1, keepdims=True), floor=float(z["floor"])
                )
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from exc


@lru_cache(maxsize=4)
def load_typical_agent_turns(path: str | None = None) -> TypicalTurns:
    """The committed artifact next to this module unless a path is given; loaded once per process."""
    if path is not None:
        return TypicalTurns.load(path)
    with packaged_artifact(TYPICAL_AGENT_TURNS_ARTIFACT) as p:
        return TypicalTurns.load(p)
