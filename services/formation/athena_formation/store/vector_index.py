"""The chains' embeddings in Milvus: one vector per chain, keyed by chain id, with its scope for filtering.

Milvus Lite (a local file path as VECTOR_INDEX_URI) or a Milvus server (http://host:19530): same client code.
Only formation opens it (a Milvus Lite file admits one process). pymilvus is synchronous, so calls run
in a worker thread to keep the event loop free.

Search speed (docs/benchmarks.md, "Measured choices in the code"): with Milvus Lite, searches are answered from an
in-process copy of the searched user's vectors (user_vectors.py), because Milvus Lite's own search
costs time in proportion to the whole collection; its collections get a FLAT index (nothing to
build). With a Milvus server, new collections get an HNSW index. Either way `tenant_id` is the
partition key, and every `flush_every` upserts are flushed, so that rows upserted one chain at a
time do not pile up in a growing segment (searched without the index, and slowly).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from opentelemetry import trace
from pymilvus import DataType, MilvusClient

from athena.errors import DependencyUnavailable
from athena_formation.store.user_vectors import UserKey, UserVectorCache, UserVectors

__all__ = ["VectorHit", "VectorIndex"]

log = logging.getLogger("athena.formation.vectors")
# Only warm() iterates, and only on Milvus Lite, which has no server-side MVCC timestamp for iterators:
# pymilvus warns of it at every warm-up and uses the client's clock instead, which is right here.
logging.getLogger("pymilvus.client.iterator.query_iterator").setLevel(logging.ERROR)

_SAFE_VALUE = re.compile(r"[A-Za-z0-9._@-]{1,128}")
"""What a string may be to reach a Milvus expression (used with fullmatch): the id rule ingest's
validation enforces on scope ids, and chain ids (`ch_` + hex) fit it. Milvus Lite has no bound
expression parameters (`filter_params` fails to parse), and pymilvus writes primary keys into its own
`chain_id in ['...']` unescaped, so a string is checked, never escaped."""

LITE_GRPC_OPTIONS: dict[str, Any] = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": False}
"""gRPC options of the client of a Milvus Lite file. pymilvus pings every 10 s, idle or not, but Milvus
Lite's embedded server keeps gRPC's default policy (no pings without calls more often than every
5 minutes): after ~2 idle minutes it sends GOAWAY "too_many_pings" (logged as an error, then the next
call reconnects). Keepalive finds dead peers across a network; this server is a local child process,
whose death closes the socket. A Milvus server URI keeps pymilvus's defaults."""


@dataclass(frozen=True)
class VectorHit:
    chain_id: str
    similarity: float


@dataclass
class _WarmWatch:
    """What was written while VectorIndex.warm read the collection, so that nothing it read stale is installed."""

    touched: set[UserKey] = field(default_factory=set)
    """Users upserted to: left to load on their first search."""
    deleted: set[str] = field(default_factory=set)
    """Chains deleted: not installed."""
    cleared: bool = False
    """The cache was cleared (a write's outcome unknown): nothing is installed."""


class VectorIndex:
    def __init__(
        self,
        uri: str,
        *,
        collection: str = "cognitive_chains",
        dim: int = 384,
        index_type: str | None = None,
        flush_every: int = 256,
        cache_max_chains: int = 200_000,
    ) -> None:
        self.uri = uri
        self.collection = collection
        self.dim = dim
        self._lite = "://" not in uri
        """A Milvus Lite file (formation its one writer and reader), not a Milvus server."""
        self.index_type = index_type or ("FLAT" if self._lite else "HNSW")
        """Index of a collection this class creates (an existing collection keeps its own)."""
        self.flush_every = flush_every
        self._client: MilvusClient | None = None
        self._lock = asyncio.Lock()
        self._unflushed = 0
        # Milvus Lite only (a local file, so formation is its one writer): see user_vectors.py.
        self._users: UserVectorCache | None = UserVectorCache(dim, max_chains=cache_max_chains) if self._lite else None
        self._loading: dict[tuple[str, str], asyncio.Task[UserVectors]] = {}
        self._warm_watch: _WarmWatch | None = None

    @property
    def shared(self) -> bool:
        """True with a Milvus server: other formation replicas write to it too."""
        return self._users is None

    def _connect(self) -> MilvusClient:
        if self._client is None:
            if self._lite:
                Path(self.uri).parent.mkdir(parents=True, exist_ok=True)
            client = MilvusClient(self.uri, grpc_options=LITE_GRPC_OPTIONS) if self._lite else MilvusClient(self.uri)
            if not client.has_collection(self.collection):
                schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
                schema.add_field("chain_id", DataType.VARCHAR, is_primary=True, max_length=64)
                # Partition key: a tenant's rows share partitions, so its filtered searches scan fewer rows.
                schema.add_field("tenant_id", DataType.VARCHAR, max_length=128, is_partition_key=True)
                schema.add_field("user_id", DataType.VARCHAR, max_length=128)
                schema.add_field("agent_id", DataType.VARCHAR, max_length=128)
                schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=self.dim)
                client.create_collection(self.collection, schema=schema)
            if not client.list_indexes(self.collection):  # new, or a start that died before its index
                index = client.prepare_index_params()
                index.add_index(
                    "embedding",
                    metric_type="COSINE",
                    index_type=self.index_type,
                    params=_INDEX_PARAMS.get(self.index_type, {}),
                )
                # Milvus Lite builds an index within CreateIndex itself (its index state is always
                # Finished), so nothing is waited for there: pymilvus's wait (sync=True, the default)
                # starts with AllocTimestamp, which Milvus Lite's in-process gRPC server does not
                # implement, and grpc logs that at ERROR with a traceback (pymilvus then ignores it).
                client.create_index(self.collection, index, sync=not self._lite)
            # Search needs the collection loaded.
            client.load_collection(self.collection)
            self._client = client
        return self._client

    async def _run(self, fn: Any, *args: Any, op: str = "call", **kwargs: Any) -> Any:
        async with self._lock:
            try:
                # No official instrumentation exists for pymilvus: one client span per call.
                with trace.get_tracer("athena").start_as_current_span(
                    f"milvus.{op}",
                    kind=trace.SpanKind.CLIENT,
                    attributes={"db.system": "milvus", "db.collection.name": self.collection},
                ):
                    return await asyncio.to_thread(self._call, fn, *args, **kwargs)
            except DependencyUnavailable:
                raise
            except Exception as exc:
                self._client = None  # reconnect on the next call
                raise DependencyUnavailable("milvus", f"{type(exc).__name__}: {exc}") from exc

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self._connect(), *args, **kwargs)

    async def open(self) -> None:
        await self._run(lambda c: None, op="open")

    async def ping(self) -> bool:
        await self._run(lambda c: c.has_collection(self.collection), op="ping")
        return True

    async def upsert(
        self, *, chain_id: str, tenant_id: str, user_id: str, agent_id: str, embedding: np.ndarray
    ) -> None:
        row = {
            "chain_id": chain_id,
            "tenant_id": tenant_id,
            "user_id": user_id,
            "agent_id": agent_id,
            "embedding": np.asarray(embedding, dtype=np.float32).tolist(),
        }
        if self._warm_watch is not None:
            self._warm_watch.touched.add((tenant_id, user_id))
        try:
            await self._run(lambda c: c.upsert(self.collection, [row]), op="upsert")
        except DependencyUnavailable:
            self._forget_cached()  # the upsert may or may not have landed
            raise
        if self._users is not None:
            self._users.put((tenant_id, user_id), chain_id, agent_id, embedding)
        self._unflushed += 1
        if self._unflushed >= self.flush_every:
            await self.flush()

    async def flush(self) -> None:
        """Seal what was upserted since the last flush, so searches use the index for it."""
        self._unflushed = 0
        await self._run(lambda c: c.flush(self.collection), op="flush")

    async def delete(self, chain_ids: Sequence[str]) -> None:
        if chain_ids:
            ids = _milvus_ids(chain_ids)
            if self._warm_watch is not None:
                self._warm_watch.deleted.update(ids)
            try:
                await self._run(lambda c: c.delete(self.collection, ids=ids), op="delete")
            except DependencyUnavailable:
                self._forget_cached()
                raise
            if self._users is not None:
                self._users.drop(ids)

    def _forget_cached(self) -> None:
        if self._users is not None:
            self._users.clear()
        if self._warm_watch is not None:
            self._warm_watch.cleared = True

    async def warm(self, *, page_rows: int = 2000, on_page: Callable[[int], Awaitable[None]] | None = None) -> int:
        """Milvus Lite: read every chain's vector once, page by page, and install each user whole, so
        that no user's first search after formation starts has to read from Milvus (a filtered read
        whose cost grows with the whole collection, docs/benchmarks.md).
        Skipped when the collection holds more chains than the cache's bound (which users to keep is
        then the searches' to say). Users upserted to while it reads are left to load on their first
        search, chains deleted meanwhile are not installed, and a cache cleared meanwhile ends it with
        nothing installed. `on_page` is awaited after each page with the rows read so far. Returns the
        chains installed."""
        if self._users is None or self._warm_watch is not None:
            return 0
        t0 = time.perf_counter()
        watch = self._warm_watch = _WarmWatch()  # from the first read on: every write after it is watched
        rows: dict[UserKey, list[tuple[str, str, np.ndarray]]] = {}
        try:
            counted = await self._run(
                lambda c: c.query(self.collection, filter="", output_fields=["count(*)"]), op="count"
            )
            total = int(counted[0]["count(*)"]) if counted else 0
            if total == 0 or total > self._users.max_chains:
                if total:
                    log.info(
                        "search cache not warmed: %d chains exceed VECTOR_INDEX_CACHE_MAX_CHAINS (%d)",
                        total,
                        self._users.max_chains,
                    )
                return 0
            fields = ["chain_id", "tenant_id", "user_id", "agent_id", "embedding"]
            pages = await self._run(
                lambda c: c.query_iterator(self.collection, batch_size=page_rows, output_fields=fields),
                op="query_iterator",
            )
            try:
                read = 0
                while not watch.cleared and (page := await self._run(lambda c: pages.next(), op="query_iterator")):
                    for r in page:
                        rows.setdefault((r["tenant_id"], r["user_id"]), []).append(
                            (r["chain_id"], r["agent_id"], np.asarray(r["embedding"], dtype=np.float32))
                        )
                    read += len(page)
                    if on_page is not None:
                        await on_page(read)
            finally:
                try:
                    await asyncio.to_thread(pages.close)
                except Exception as exc:  # the client may be gone with the error that ended the read
                    log.debug("closing the warm-up's iterator: %s", exc)
        finally:
            self._warm_watch = None
        if watch.cleared:
            return 0
        # No await from here on: a write after this sees its user installed (or not) and acts on the cache.
        installed = 0
        for user, user_rows in rows.items():
            if user in watch.touched or self._users.has(user):
                continue
            kept = [r for r in user_rows if r[0] not in watch.deleted]
            if kept:
                self._users.load(user, kept)
                installed += len(kept)
        log.info("search cache warmed: %d chains of %d users in %.1f s", installed, len(rows), time.perf_counter() - t0)
        return installed

    async def existing(self, chain_ids: Sequence[str]) -> set[str]:
        if not chain_ids:
            return set()
        ids = _milvus_ids(chain_ids)
        rows = await self._run(lambda c: c.get(self.collection, ids=ids, output_fields=["chain_id"]), op="get")
        return {r["chain_id"] for r in rows}

    async def ids_of_user(self, *, tenant_id: str, user_id: str) -> set[str]:
        """Every chain id with an embedding of this tenant's user (for erasure)."""
        expr = _scope_filter(tenant_id, user_id, None)
        rows = await self._run(lambda c: c.query(self.collection, filter=expr, output_fields=["chain_id"]), op="query")
        return {r["chain_id"] for r in rows}

    async def vectors(self, chain_ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not chain_ids:
            return {}
        ids = _milvus_ids(chain_ids)
        rows = await self._run(
            lambda c: c.get(self.collection, ids=ids, output_fields=["chain_id", "embedding"]), op="get"
        )
        return {r["chain_id"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}

    async def search(
        self,
        embedding: np.ndarray,
        *,
        tenant_id: str,
        user_id: str,
        agent_id: str | None = None,
        limit: int = 10,
    ) -> list[VectorHit]:
        expr = _scope_filter(tenant_id, user_id, agent_id)
        if self._users is not None:
            user = self._users.get((tenant_id, user_id)) or await self._loaded_user(tenant_id, user_id)
            return [VectorHit(chain_id=c, similarity=s) for c, s in user.top(embedding, agent_id=agent_id, limit=limit)]
        vector = np.asarray(embedding, dtype=np.float32).tolist()
        # No output fields: the primary key (the chain id) comes with every hit.
        params: dict[str, Any] = {"metric_type": "COSINE", "params": _search_params(self.index_type, limit)}
        result = await self._run(
            lambda c: c.search(self.collection, data=[vector], limit=limit, filter=expr, search_params=params),
            op="search",
        )
        return [
            VectorHit(chain_id=h["id"] if "id" in h else h["chain_id"], similarity=float(h["distance"]))
            for h in result[0]
        ]

    async def similarities(
        self, embedding: np.ndarray, chain_ids: Sequence[str], *, tenant_id: str, user_id: str
    ) -> dict[str, float]:
        """Cosine of the query to each of these chains of the user that has an embedding (candidates
        found by their words, not by the vector search)."""
        if not chain_ids:
            return {}
        if self._users is not None:
            user = self._users.get((tenant_id, user_id)) or await self._loaded_user(tenant_id, user_id)
            return user.similarities(embedding, chain_ids)
        query = np.asarray(embedding, dtype=np.float32)
        query = query / (float(np.linalg.norm(query)) or 1.0)
        return {c: float(np.dot(v, query)) for c, v in (await self._stored_unit_vectors(chain_ids)).items()}

    async def unit_vectors(self, chain_ids: Sequence[str], *, tenant_id: str, user_id: str) -> dict[str, np.ndarray]:
        """The unit embeddings of these chains of the user (from the user's cached vectors when formation
        keeps them)."""
        if not chain_ids:
            return {}
        if self._users is not None:
            user = self._users.get((tenant_id, user_id)) or await self._loaded_user(tenant_id, user_id)
            return user.unit_vectors(chain_ids)
        return await self._stored_unit_vectors(chain_ids)

    async def _stored_unit_vectors(self, chain_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The embeddings of these chains read from Milvus, scaled to unit length."""
        return {c: v / (float(np.linalg.norm(v)) or 1.0) for c, v in (await self.vectors(chain_ids)).items()}

    async def _loaded_user(self, tenant_id: str, user_id: str) -> UserVectors:
        """The user's vectors, loading them once however many searches ask at the same time.

        The load runs as its own task and callers await it shielded: a search that gives up (its
        deadline passed) does not cancel it, so a user too large to load within one call's deadline is
        loaded by then for the next call, instead of every retry starting the load over.
        """
        key = (tenant_id, user_id)
        task = self._loading.get(key)
        if task is None:
            task = asyncio.create_task(
                self._load_user(tenant_id, user_id), name=f"load vectors of {tenant_id}/{user_id}"
            )
            self._loading[key] = task
            task.add_done_callback(functools.partial(self._load_finished, key))
        return await asyncio.shield(task)

    def _load_finished(self, key: tuple[str, str], task: asyncio.Task[UserVectors]) -> None:
        self._loading.pop(key, None)
        if not task.cancelled():
            task.exception()  # retrieved here: every caller may have given up; the next search loads again

    async def _load_user(self, tenant_id: str, user_id: str) -> UserVectors:
        """Read one user's vectors from Milvus into the cache (once per user and process)."""
        assert self._users is not None
        expr = _scope_filter(tenant_id, user_id, None)
        fields = ["chain_id", "agent_id", "embedding"]
        rows = await self._run(lambda c: c.query(self.collection, filter=expr, output_fields=fields), op="query")
        # No await between the read and the install: an upsert that ran after the read sees the user loaded.
        return self._users.load(
            (tenant_id, user_id), ((r["chain_id"], r["agent_id"], np.asarray(r["embedding"])) for r in rows)
        )

    async def close(self) -> None:
        for task in list(self._loading.values()):
            task.cancel()
        if self._client is not None:
            client = self._client
            self._client = None
            await asyncio.to_thread(client.close)


_INDEX_PARAMS: dict[str, dict[str, Any]] = {"HNSW": {"M": 16, "efConstruction": 100}, "IVF_FLAT": {"nlist": 256}}


def _search_params(index_type: str, limit: int) -> dict[str, Any]:
    if index_type == "HNSW":
        return {"ef": max(64, limit)}  # the candidate list: at least `limit`, wide enough for recall
    if index_type == "IVF_FLAT":
        return {"nprobe": 16}
    return {}


def _milvus_string(value: str) -> str:
    """`value` checked to be safe inside a Milvus expression (`_SAFE_VALUE`); anything else is refused
    (a bug upstream: validation lets only such ids through)."""
    if not _SAFE_VALUE.fullmatch(value):
        raise ValueError("only validated ids may reach a Milvus expression")
    return value


def _milvus_ids(chain_ids: Sequence[str]) -> list[str]:
    """Primary keys for pymilvus's get and delete, each checked by `_milvus_string`: pymilvus quotes
    them into `chain_id in ['...']` without escaping."""
    return [_milvus_string(c) for c in chain_ids]


def _scope_filter(tenant_id: str, user_id: str, agent_id: str | None) -> str:
    """A Milvus boolean filter for a scope; every id passes `_milvus_string`, so nothing can be injected."""
    expr = f'tenant_id == "{_milvus_string(tenant_id)}" and user_id == "{_milvus_string(user_id)}"'
    if agent_id:
        # A chain of several agents holds "|a|b|" (chain_agents.py). LIKE's `_` also matches any one
        # character, so this may let through a chain of another agent: search checks the document.
        agent = _milvus_string(agent_id)
        expr += f' and (agent_id == "{agent}" or agent_id like "%|{agent}|%")'
    return expr
