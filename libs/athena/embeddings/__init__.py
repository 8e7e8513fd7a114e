"""Text embeddings for Athena: one async interface, a local CPU model and an OpenAI-compatible client."""

from athena.embeddings._cache import EmbeddingCache, shared_cache
from athena.embeddings._factory import make_embedder, make_query_embedder
from athena.embeddings._handoff import adopt_event_embeddings, cached_event_embeddings
from athena.embeddings._local import LocalEmbedder, bundled_model_path
from athena.embeddings._openai import OpenAIEmbedder
from athena.embeddings._provider import Embedder, normalize_rows

__all__ = [
    "Embedder",
    "EmbeddingCache",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "adopt_event_embeddings",
    "bundled_model_path",
    "cached_event_embeddings",
    "make_embedder",
    "make_query_embedder",
    "normalize_rows",
    "shared_cache",
]
