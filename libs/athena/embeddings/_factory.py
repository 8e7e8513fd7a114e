"""Pick the embedder the settings ask for."""

from __future__ import annotations

from athena.config import EmbeddingProvider, Settings
from athena.embeddings._local import MINILM_DIM, LocalEmbedder
from athena.embeddings._openai import OpenAIEmbedder
from athena.embeddings._provider import Embedder

__all__ = ["make_embedder", "make_query_embedder"]


def make_embedder(settings: Settings, *, small_batch_threads: int | None = 1) -> Embedder:
    """The configured embedder; `small_batch_threads` is for the local model (LocalEmbedder).

    The local model runs as its int8 copy unless EMBEDDING_INT8=false: embedding is nearly all of a
    chain-break decision's time and most of formation's, and the int8 copy takes a decision from about
    28 ms to 11 (docs/benchmarks.md, "decide() per decision"). Cognition and formation both build
    theirs here, so the vectors cognition hands formation with a segment are of formation's model."""
    if settings.embedding_provider == EmbeddingProvider.OPENAI:
        return OpenAIEmbedder(
            base_url=settings.embedding_base_url,
            model=settings.embedding_model,
            api_key=settings.embedding_api_key,
            dim=settings.embedding_dim,
        )
    if settings.embedding_dim != MINILM_DIM:
        raise ValueError(f"EMBEDDING_DIM is {settings.embedding_dim}, but the local model gives {MINILM_DIM}-d vectors")
    return LocalEmbedder(small_batch_threads=small_batch_threads, quantized=settings.embedding_int8)


def make_query_embedder(settings: Settings, *, embedder: Embedder) -> Embedder:
    """What embeds search queries: with the local model, its int8 copy (as the chains are with
    EMBEDDING_INT8, the default; against float chains with SEARCH_QUERY_INT8 alone), a query on one
    torch thread; otherwise `embedder`, the one that embeds chains.

    One thread: with OMP_WAIT_POLICY=PASSIVE (athena/omp.py) each of a forward pass's many small
    parallel regions wakes a sleeping second thread, which costs a one-text int8 encode more than the
    second thread gives (docs/benchmarks.md, "Measured choices in the code"). The setting is the
    encoder thread's own (OpenMP's thread count is per thread): the event loop's vector scan keeps
    both."""
    if isinstance(embedder, LocalEmbedder) and (settings.embedding_int8 or settings.search_query_int8):
        return LocalEmbedder(small_batch_threads=1, quantized=True)
    return embedder
