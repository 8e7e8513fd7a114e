"""`athena bench --mongodb-uri`: the stacks' services use the MongoDB given, in a database of the run's
own that is dropped afterwards; a URI that is malformed or unreachable is refused before anything starts.

The "external" server here is an nx-27017 the test starts itself, standing where a real MongoDB would.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pymongo import MongoClient
from typer.testing import CliRunner

from athena.local import MongoWireServer, free_port
from athena_cli.main import app
from athena_lab.bench._ingest import _cpu_seconds
from athena_lab.bench._stores import BENCH_DATABASE_PREFIX, BenchStores


def test_bench_on_an_external_mongodb_writes_there_and_drops_only_its_own_database(
    own_mongo_server: MongoWireServer,
) -> None:
    with MongoClient(own_mongo_server.url, serverSelectionTimeoutMS=5000) as client:
        client["keep_me"]["things"].insert_one({"_id": "sentinel"})
    assert own_mongo_server.pid is not None
    cpu_before = _cpu_seconds(own_mongo_server.pid)

    result = CliRunner().invoke(
        app, ["bench", "--quick", "--stages", "ingest", "--json", "--mongodb-uri", own_mongo_server.url]
    )

    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    assert doc["not_run"].get("ingest") is None, doc["not_run"]
    assert doc["store_events_per_s"] > 0 and doc["ingest_vs_baseline"] > 0
    assert doc["mongodb"]["server"] == "external"
    assert doc["mongodb"]["nodes"] == [f"127.0.0.1:{own_mongo_server.port}"]
    # Thousands of events went into this server (an embedded nx-27017 would have left it idle)...
    assert _cpu_seconds(own_mongo_server.pid) - cpu_before > 0.3
    # ...into a database of the run's own, gone afterwards; the server's other databases untouched.
    with MongoClient(own_mongo_server.url, serverSelectionTimeoutMS=5000) as client:
        names = client.list_database_names()
        assert not [n for n in names if n.startswith(BENCH_DATABASE_PREFIX)], names
        assert client["keep_me"]["things"].find_one({"_id": "sentinel"}) is not None


def test_bench_refuses_a_mongodb_uri_that_is_not_one() -> None:
    result = CliRunner().invoke(app, ["bench", "--quick", "--stages", "queue", "--mongodb-uri", "http://127.0.0.1:1/"])

    assert result.exit_code == 2
    assert "--mongodb-uri" in result.output and "not a MongoDB URI" in result.output


def test_bench_refuses_an_unreachable_mongodb_before_starting_any_stage() -> None:
    uri = f"mongodb://127.0.0.1:{free_port()}/"  # nothing listens there

    result = CliRunner().invoke(app, ["bench", "--quick", "--stages", "queue", "--json", "--mongodb-uri", uri])

    assert result.exit_code == 2
    assert "--mongodb-uri" in result.output and "cannot reach" in result.output
    assert "queue_vs_baseline" not in result.output


def test_a_bench_database_that_cannot_be_dropped_is_reported_not_raised(
    own_mongo_server: MongoWireServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stores = BenchStores(mongodb_uri=own_mongo_server.url)

    with (
        caplog.at_level(logging.WARNING, logger="athena.bench"),
        stores.stack(tmp_path, services=(), env={}) as stack,
    ):
        database = stack.mongodb_database
        own_mongo_server.stop()  # the server goes away before the stack's database is dropped

    assert database.startswith(BENCH_DATABASE_PREFIX)
    assert any(database in r.getMessage() and "drop it by hand" in r.getMessage() for r in caplog.records)
