"""Which stores the bench's stacks run on: the embedded ones, or an external MongoDB (`--mongodb-uri`).

nx-27017 caps what ingest can show on these machines (docs/benchmarks.md, "What limits each stage");
pointing the bench at a real MongoDB measures the same code against the store production uses. Each
stack then gets a database of its own, `athena_bench_<random>`, dropped when the stack stops, so a
run neither reads nor leaves anything in the server's other databases. Redis and Milvus Lite stay
local: the bench flushes its Redis between stages, which an external one must never see.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pymongo import MongoClient

    from athena_cli.stack import LocalStack

__all__ = ["BENCH_DATABASE_PREFIX", "BenchStores", "BenchStoresError"]

log = logging.getLogger("athena.bench")

BENCH_DATABASE_PREFIX = "athena_bench_"
_CONNECT_TIMEOUT_MS = 5000


class BenchStoresError(RuntimeError):
    """The external MongoDB given to the bench is unusable (bad URI, unreachable)."""


@dataclass(frozen=True)
class BenchStores:
    mongodb_uri: str | None = None
    """A running MongoDB for the stacks' services instead of nx-27017 (None: start nx-27017)."""

    def check(self) -> dict[str, Any]:
        """Reach the external MongoDB once (raises BenchStoresError); describe what the run uses."""
        if self.mongodb_uri is None:
            return {"server": "nx-27017 (embedded)"}
        from pymongo.errors import ConfigurationError, InvalidURI, PyMongoError
        from pymongo.uri_parser import parse_uri

        try:
            nodes = [f"{host}:{port}" for host, port in parse_uri(self.mongodb_uri)["nodelist"]]
        except (InvalidURI, ConfigurationError, ValueError) as exc:
            raise BenchStoresError(f"not a MongoDB URI: {exc}") from exc
        client = self._client()
        try:
            version = client.server_info().get("version")
        except PyMongoError as exc:
            # PyMongo's message goes on to describe the whole topology: its first clause says why.
            reason = str(exc).split(" (configured timeouts", 1)[0].split(", Timeout:", 1)[0]
            raise BenchStoresError(
                f"cannot reach {', '.join(nodes)} within {_CONNECT_TIMEOUT_MS // 1000} s: {reason}"
            ) from exc
        finally:
            client.close()
        # Nodes only: the URI may carry credentials, and the report is meant to be shared.
        return {"server": "external", "nodes": nodes, "version": version}

    @contextmanager
    def stack(self, data_dir: str | Path, *, services: tuple[str, ...], env: Mapping[str, str]) -> Iterator[LocalStack]:
        """A LocalStack (not started) on free ports over these stores; on exit it is stopped and, on an
        external MongoDB, its database dropped. Everything else of the stack stays the caller's."""
        from athena_cli.stack import LocalStack, StackPorts

        env = dict(env)
        if self.mongodb_uri is not None:
            env["MONGODB_DATABASE"] = f"{BENCH_DATABASE_PREFIX}{secrets.token_hex(6)}"
        stack = LocalStack(
            data_dir=Path(data_dir),
            ports=StackPorts.free(),
            services=services,
            env=env,
            external_mongodb_uri=self.mongodb_uri,
        )
        try:
            yield stack
        finally:
            stack.stop()
            if self.mongodb_uri is not None:
                self._drop(stack.mongodb_database)

    def _client(self) -> MongoClient[dict[str, Any]]:
        from pymongo import MongoClient

        return MongoClient(self.mongodb_uri, serverSelectionTimeoutMS=_CONNECT_TIMEOUT_MS)

    def _drop(self, database: str) -> None:
        """Drop a stack's database; a failure (no dropDatabase right, the server gone) is said, not
        raised, so that the figures already measured are still reported."""
        from pymongo.errors import PyMongoError

        client = self._client()
        try:
            client.drop_database(database)
        except PyMongoError as exc:
            log.warning("could not drop the bench database %s (%s): drop it by hand", database, exc)
        finally:
            client.close()
