"""Text embeddings for Athena: one async interface, a local CPU model and an OpenAI-compatible client."""

from athena.embeddings._cache import EmbeddingCache, shared_cache
from athena.embeddings._factory import make_embedder, make_query_embedder
from athena.embeddings._local import LocalEmbedder, bundled_model_path
from athena.embeddings._openai import OpenAIEmbedder
from athena.embeddings._provider import Embedder, normalize_rows

__all__ = [
    "Embedder",
    "EmbeddingCache",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "bundled_model_path",
    "make_embedder",
    "make_query_embedder",
    "normalize_rows",
    "shared_cache",
]
