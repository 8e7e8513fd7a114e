"""Any OpenAI-compatible /v1/embeddings endpoint through the openai SDK's AsyncOpenAI."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from athena.embeddings._cache import EmbeddingCache, cached_embed, shared_cache
from athena.embeddings._provider import normalize_rows

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder:
    """Remote embeddings; rows are re-normalized because not every compatible server normalizes."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        dim: int,
        batch_size: int = 256,
        timeout: float = 30.0,
        cache: EmbeddingCache | None = None,
        client: Any | None = None,
    ) -> None:
        if not base_url and client is None:
            raise ValueError("OpenAIEmbedder needs a base_url (EMBEDDING_BASE_URL)")
        self._base_url = base_url
        self._model = model
        self._api_key = api_key or "unused"  # local servers ignore it, but the SDK insists on one
        self._dim = dim
        self._batch_size = batch_size
        self._timeout = timeout
        self._client = client
        self._cache = cache if cache is not None else shared_cache(f"openai:{base_url}:{model}")

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def cache(self) -> EmbeddingCache:
        return self._cache

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(base_url=self._base_url, api_key=self._api_key, timeout=self._timeout)
        return self._client

    async def _encode(self, texts: list[str]) -> np.ndarray:
        client = self._get_client()
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            chunk = texts[start : start + self._batch_size]
            response = await client.embeddings.create(input=chunk, model=self._model)
            # The API may answer out of order; `index` says which input each row belongs to.
            rows.extend(item.embedding for item in sorted(response.data, key=lambda item: item.index))
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if matrix.shape[1] != self._dim:
            raise ValueError(f"endpoint returned {matrix.shape[1]}-d embeddings, EMBEDDING_DIM says {self._dim}")
        return normalize_rows(matrix)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await cached_embed(texts, self.dim, self._cache, self._encode, provider="openai")
