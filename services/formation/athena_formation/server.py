"""The formation process: FormationService on FORMATION_GRPC_PORT; owns the chains and Milvus."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from athena.auth import internal_auth_interceptor, server_credentials
from athena.config import Settings
from athena.embeddings import make_embedder, make_query_embedder
from athena.errors import DependencyUnavailable
from athena.gc_tuning import freeze_long_lived
from athena.grpc_util import DependencyCheck, ServiceHost
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.llm import connect_budget_redis, make_llm
from athena.metrics import SEARCH_CACHE_WARMING, instrument_llm
from athena.stores import connect_mongo
from athena.telemetry import run_service
from athena.tombstones import MongoTombstones
from athena_formation.forming.form_chain import ChainFormer
from athena_formation.lifecycle.archiver import Archiver
from athena_formation.lifecycle.erasure import FormationEraser
from athena_formation.lifecycle.heat import HeatModel
from athena_formation.search.ranking import Ranking
from athena_formation.search.search_memory import Recall
from athena_formation.servicer import FormationServicer
from athena_formation.store.chain_cache import ChainDocCache
from athena_formation.store.chain_store import ChainStore
from athena_formation.store.lexical_index import LexicalIndex
from athena_formation.store.vector_index import VectorIndex

__all__ = ["Formation", "build_formation", "main", "serve"]

log = logging.getLogger("athena.formation")

SERVICE = formation_pb2.DESCRIPTOR.services_by_name["FormationService"]
SERVICE_NAME = SERVICE.full_name


@dataclass
class Formation:
    host: ServiceHost
    former: ChainFormer
    recall: Recall
    archiver: Archiver
    store: ChainStore
    vectors: VectorIndex
    eraser: FormationEraser
    lexical: LexicalIndex


async def build_formation(settings: Settings) -> Formation:
    # Configuration first: without the internal credential formation must not start (unless AUTH_DISABLED).
    auth = internal_auth_interceptor(settings, [SERVICE])
    credentials = server_credentials(settings, internal=True)
    mongo = connect_mongo(settings)
    vectors = VectorIndex(
        settings.vector_index_uri,
        collection=settings.milvus_collection,
        dim=settings.embedding_dim,
        cache_max_chains=settings.vector_index_cache_max_chains,
    )
    await vectors.open()
    # One writer of chains (Milvus Lite): searches may serve the documents they read again from memory.
    cache_size = settings.search_chain_cache_max_documents
    store = ChainStore(
        mongo,
        settings.mongodb_database,
        search_cache=ChainDocCache(max_documents=cache_size) if cache_size and not vectors.shared else None,
    )
    # Chains on torch's own thread count (a chain's text is long enough for two threads to help);
    # search queries on one (make_query_embedder).
    embedder = make_embedder(settings, small_batch_threads=None)
    await embedder.embed(["warm-up"])  # load the model before reporting SERVING
    query_embedder = make_query_embedder(settings, embedder=embedder)  # int8 by default: SEARCH_QUERY_INT8
    await query_embedder.embed(["warm-up query"])
    heat = HeatModel(half_life_hours=settings.heat_half_life_hours, recall_weight=settings.heat_recall_weight)
    lexical = LexicalIndex(
        store,
        shared=vectors.shared,
        refresh_seconds=settings.search_lexicon_refresh_seconds,
        max_chains=settings.vector_index_cache_max_chains,
    )
    # The LLM's rate limit (per tenant and in total) and breaker are shared with cognition and the other
    # replicas through Redis (REDIS_URL), formation's only use of it: while Redis does not answer (or
    # REDIS_URL does not lead to it), the LLM budget is this process's own.
    budget_redis = connect_budget_redis(settings.redis_url) if settings.llm_base_url.strip() else None
    former = ChainFormer(
        settings=settings,
        store=store,
        vectors=vectors,
        embedder=embedder,
        llm=instrument_llm(make_llm(settings, redis=budget_redis)),
        lexical=lexical,
    )
    ranking = Ranking.from_settings(settings)
    recall = Recall(store=store, vectors=vectors, embedder=query_embedder, heat=heat, lexical=lexical, ranking=ranking)
    archiver = Archiver(
        store=store,
        vectors=vectors,
        heat=heat,
        threshold=settings.heat_archive_threshold,
        min_age_hours=settings.archive_min_age_hours,
        lexical=lexical,
        keep_lasting_facts=not settings.archive_lasting_facts,
    )
    eraser = FormationEraser(
        tombstones=MongoTombstones(mongo, settings.mongodb_database),
        store=store,
        vectors=vectors,
        former=former,
        lexical=lexical,
    )
    servicer = FormationServicer(former=former, recall=recall, eraser=eraser)

    async def close() -> None:
        await recall.settle()  # warm-ups written after the last answers
        await lexical.close()
        await vectors.close()
        await mongo.close()
        if budget_redis is not None:
            await budget_redis.aclose()

    host = ServiceHost(
        name="formation",
        port=settings.formation_grpc_port,
        bind_host=settings.grpc_bind_host,
        service_names=[SERVICE_NAME],
        register=lambda server: formation_pb2_grpc.add_FormationServiceServicer_to_server(servicer, server),
        checks=[
            DependencyCheck("mongodb", lambda: mongo.admin.command("ping")),
            DependencyCheck("milvus", vectors.ping),
        ],
        reflection=settings.grpc_reflection,
        grace=settings.grpc_shutdown_grace_seconds,
        on_stop=[close],
        auth=auth,
        credentials=credentials,
        # Clients re-resolve formation's address when a connection ends: replicas added since get calls.
        max_connection_age=settings.formation_max_connection_age_seconds,
        max_connection_age_grace=settings.formation_max_connection_age_grace_seconds,
    )
    return Formation(
        host=host,
        former=former,
        recall=recall,
        archiver=archiver,
        store=store,
        vectors=vectors,
        eraser=eraser,
        lexical=lexical,
    )


async def serve(settings: Settings) -> None:
    formation = await build_formation(settings)
    archiving = asyncio.create_task(formation.archiver.run_forever(interval=settings.archiver_interval_seconds))
    SEARCH_CACHE_WARMING.set(1)  # before serving, so that no reader of the gauge sees 0 before it began
    warming = asyncio.create_task(_warm_search_cache(formation.vectors, formation.lexical))
    warming.add_done_callback(_freeze_warm_caches)
    try:
        await formation.host.run()
    finally:
        archiving.cancel()
        warming.cancel()


async def _warm_search_cache(vectors: VectorIndex, lexical: LexicalIndex) -> None:
    """Milvus Lite (formation the one writer): every user's vectors (VectorIndex.warm) and lexicons
    (LexicalIndex.warm) into the search caches while formation serves, the two reads side by side;
    until then a user's first search reads its own, as it always could."""

    async def warm(name: str, read: Callable[[], Awaitable[int]]) -> None:
        try:
            await read()
        except DependencyUnavailable as exc:
            log.warning("%s not warmed, users load on their first search: %s", name, exc)

    try:
        await asyncio.gather(warm("search vectors", vectors.warm), warm("lexicons", lexical.warm))
    finally:
        SEARCH_CACHE_WARMING.set(0)


def _freeze_warm_caches(warming: asyncio.Task[None]) -> None:
    # Every user's vectors and lexicons now live as long as the process (until evicted): out of the
    # collector's full walks, which they made long pauses at 100,000 chains (athena.gc_tuning).
    # Young garbage only is collected first: a full collection would stop every search in flight.
    if not warming.cancelled():
        freeze_long_lived(full_collection_first=False, reason="the search caches' warm-up")


def main() -> None:
    run_service("formation", serve)


if __name__ == "__main__":
    main()
