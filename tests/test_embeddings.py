"""Embedding providers: the local MiniLM model and the OpenAI-compatible client (with a fake transport)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from athena.config import load_settings
from athena.embeddings import (
    Embedder,
    EmbeddingCache,
    LocalEmbedder,
    OpenAIEmbedder,
    make_embedder,
    make_query_embedder,
    normalize_rows,
)


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder(cache=EmbeddingCache())


async def test_local_vectors_are_normalized_384d(local: LocalEmbedder) -> None:
    vecs = await local.embed(["The cat sat on the mat.", "Quarterly revenue grew by 4%."])
    assert isinstance(local, Embedder)
    assert local.dim == 384
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert float(vecs[0] @ vecs[1]) < 0.5


async def test_identical_texts_identical_vectors(local: LocalEmbedder) -> None:
    text = f"identical text {uuid.uuid4()}"
    vecs = await local.embed([text, text, "something else"])
    assert np.array_equal(vecs[0], vecs[1])
    again = await local.embed([text])
    assert np.array_equal(again[0], vecs[0])


async def test_cache_hit_does_not_reencode(local: LocalEmbedder) -> None:
    text = f"cache me {uuid.uuid4()}"
    before = local.encoded_texts
    await local.embed([text])
    assert local.encoded_texts == before + 1
    await local.embed([text, text])
    assert local.encoded_texts == before + 1  # served from the LRU cache
    assert (await local.embed([])).shape == (0, 384)


async def test_the_torchscript_encoder_gives_the_eager_models_vectors_for_short_long_and_padded_batches(
    local: LocalEmbedder,
) -> None:
    from athena.embeddings._local import _compiled

    eager = LocalEmbedder(cache=EmbeddingCache(), torchscript=False)
    texts = [
        "hi",
        "Which Kyoto temples need a reservation?",
        " ".join(["word"] * 400),
        f"a one-off text {uuid.uuid4()}",
    ]

    together = await local.embed(texts)
    one_by_one = np.vstack([await LocalEmbedder(cache=EmbeddingCache()).embed([t]) for t in texts])
    reference = await eager.embed(texts)

    assert any(v is not None for v in _compiled.values())  # the frozen graph is what ran
    np.testing.assert_allclose(together, reference, atol=1e-5)
    np.testing.assert_allclose(one_by_one, reference, atol=1e-5)


async def test_the_int8_query_encoder_gives_vectors_close_to_the_float_models_but_its_own(local: LocalEmbedder) -> None:
    from athena.embeddings._local import _compiled

    int8 = LocalEmbedder(cache=EmbeddingCache(), quantized=True)
    texts = ["Which Kyoto temples need a reservation?", "What did we say about the VAT number on my invoice?", "hi"]

    quantized = await int8.embed(texts)
    reference = await local.embed(texts)

    assert any(key.endswith(":int8") and v is not None for key, v in _compiled.items())  # the int8 graph is what ran
    np.testing.assert_allclose(np.linalg.norm(quantized, axis=1), 1.0, atol=1e-5)
    cosines = (quantized * reference).sum(axis=1)
    assert cosines.min() > 0.93  # measured: at least 0.957, mean 0.975, over 100 search questions
    assert np.abs(quantized - reference).max() > 1e-3  # not the float model's vectors
    assert float(quantized[0] @ reference[0]) > float(quantized[0] @ reference[1])  # still nearest its own text


def test_search_queries_use_the_int8_copy_of_the_local_model_against_float_chains_unless_turned_off() -> None:
    float_chains = load_settings(embedding_int8=False)
    local = make_embedder(float_chains)
    query = make_query_embedder(float_chains, embedder=local)
    assert isinstance(query, LocalEmbedder) and query is not local and query._quantized
    assert query.cache is not local.cache  # the two models' vectors never mix in one cache
    assert make_query_embedder(load_settings(embedding_int8=False, search_query_int8=False), embedder=local) is local
    remote = make_embedder(load_settings(embedding_provider="openai", embedding_base_url="http://x/v1"))
    assert make_query_embedder(load_settings(), embedder=remote) is remote


def test_the_services_embed_with_the_int8_copy_of_the_local_model_unless_turned_off() -> None:
    from athena_cognition.server import detector_setup

    settings = load_settings()
    chains = make_embedder(settings, small_batch_threads=None)  # as formation builds it
    decisions = detector_setup(settings).embedder  # what cognition's workers embed with
    query = make_query_embedder(settings, embedder=chains)
    assert isinstance(chains, LocalEmbedder) and chains._quantized
    # One model everywhere: the vectors cognition hands formation with a segment are formation's own.
    assert isinstance(decisions, LocalEmbedder) and decisions.model_key == chains.model_key
    assert isinstance(query, LocalEmbedder) and query._quantized and query.model_key == chains.model_key

    float_model = load_settings(embedding_int8=False)
    chains = make_embedder(float_model, small_batch_threads=None)
    assert isinstance(chains, LocalEmbedder) and not chains._quantized
    assert chains.model_key != make_embedder(settings).model_key  # the two models' vectors never mix
    assert make_query_embedder(float_model, embedder=chains) is not chains  # SEARCH_QUERY_INT8 still applies
    assert make_query_embedder(load_settings(embedding_int8=False, search_query_int8=False), embedder=chains) is chains


async def test_a_search_query_is_encoded_on_one_torch_thread_and_chains_keep_torchs_own_count() -> None:
    import torch

    chains = make_embedder(load_settings(), small_batch_threads=None)  # as formation builds them
    query = make_query_embedder(load_settings(), embedder=chains)
    assert isinstance(chains, LocalEmbedder) and isinstance(query, LocalEmbedder)
    seen: list[tuple[str, int]] = []

    def spy(name: str, embedder: LocalEmbedder) -> None:
        encode = embedder._encode_compiled

        def recorded(model: Any, compiled: Any, texts: list[str]) -> np.ndarray:
            seen.append((name, torch.get_num_threads()))
            return encode(model, compiled, texts)

        embedder._encode_compiled = recorded  # type: ignore[method-assign]

    spy("query", query)
    spy("chain", chains)
    loop_threads = torch.get_num_threads()
    await chains.embed([f"The user asked about Kyoto {uuid.uuid4()}."])  # the encoder thread's own count
    await query.embed([f"where did we go in Kyoto {uuid.uuid4()}?"])
    await chains.embed([f"The user planned a trip to Kyoto {uuid.uuid4()}."])  # same encoder thread, after the query
    (_, own), (_, for_query), (_, after) = seen
    assert [name for name, _ in seen] == ["chain", "query", "chain"]
    assert for_query == 1
    assert after == own  # the query's one thread was not left behind on the encoder thread
    assert torch.get_num_threads() == loop_threads  # the caller's (the vector scan's) count is its own


def test_lru_cache_evicts_oldest() -> None:
    cache = EmbeddingCache(max_entries=2)
    for key in (b"a", b"b", b"c"):
        cache.put(key, np.ones(3))
    assert cache.get(b"a") is None and cache.get(b"c") is not None and len(cache) == 2


class _FakeEmbeddings:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def create(self, *, input: list[str], model: str) -> Any:
        self.calls.append(list(input))
        # Answer out of order and unnormalized, as some servers do.
        data = [SimpleNamespace(index=i, embedding=[float(len(t)), 1.0, 0.0]) for i, t in enumerate(input)]
        return SimpleNamespace(data=list(reversed(data)))


async def test_openai_embedder_orders_normalizes_and_caches() -> None:
    fake = _FakeEmbeddings()
    emb = OpenAIEmbedder(
        base_url="http://unused/v1",
        model="m",
        dim=3,
        batch_size=2,
        client=SimpleNamespace(embeddings=fake),
        cache=EmbeddingCache(),
    )
    vecs = await emb.embed(["a", "bbb", "cc", "a"])
    np.testing.assert_allclose(vecs[1], normalize_rows(np.array([[3.0, 1.0, 0.0]]))[0], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vecs[0], vecs[3])
    assert fake.calls == [["a", "bbb"], ["cc"]]  # distinct texts only, in batches of 2
    await emb.embed(["bbb"])
    assert len(fake.calls) == 2


async def test_openai_embedder_rejects_wrong_dim() -> None:
    emb = OpenAIEmbedder(
        base_url="http://unused/v1",
        model="m",
        dim=8,
        client=SimpleNamespace(embeddings=_FakeEmbeddings()),
        cache=EmbeddingCache(),
    )
    with pytest.raises(ValueError):
        await emb.embed(["x"])


def test_make_embedder_follows_settings() -> None:
    assert isinstance(make_embedder(load_settings()), LocalEmbedder)
    remote = make_embedder(load_settings(embedding_provider="openai", embedding_base_url="http://x/v1"))
    assert isinstance(remote, OpenAIEmbedder) and remote.dim == 384
    with pytest.raises(ValueError):
        make_embedder(load_settings(embedding_provider="openai"))
