"""One stored user message produces one trace across ingest -> queue -> cognition -> formation.

All three services run in this process (an in-memory exporter only sees its own process), each
built exactly as its server module builds it.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from athena import keys
from athena.config import load_settings
from athena.local import MongoWireServer, RedisServer, free_port
from athena.tracing import setup_tracing
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, EventInput

pytestmark = pytest.mark.slow

EXPORTER = InMemorySpanExporter()


async def test_one_user_message_yields_one_trace_through_every_service_across_the_queue(
    redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, redis, tmp_path: Path
) -> None:
    setup_tracing("test", extra_processor=SimpleSpanProcessor(EXPORTER))
    from athena_cognition.server import build_cognition
    from athena_formation.server import build_formation
    from athena_ingest.server import build_ingest

    formation_port = free_port()
    credentials = StackCredentials()
    settings = load_settings(
        redis_url=redis_server.url,
        mongodb_uri=mongo_server.url,
        mongodb_database=mongo_db_name,
        vector_index_uri=str(tmp_path / "milvus.db"),
        grpc_bind_host="127.0.0.1",
        llm_base_url="",
        ingest_grpc_port=free_port(),
        formation_grpc_port=formation_port,
        cognition_grpc_port=free_port(),
        formation_address=f"127.0.0.1:{formation_port}",
        **credentials.settings_overrides(),
    )
    formation = await build_formation(settings)
    await formation.host.start()
    ingest, _ = await build_ingest(settings)
    await ingest.start()
    built = await build_cognition(settings)
    cognition, pool = built.host, built.pool
    await cognition.start()
    assert pool is not None
    await pool.start()
    try:
        scope = AsyncAthenaClient.scope("acme", "alice", "helper")
        async with AsyncAthenaClient(
            f"127.0.0.1:{ingest.bound_port}", bearer_token=credentials.token_for(scope.tenant_id)
        ) as client:
            for role, text in [
                ("user", "How do I rotate the API keys of my Stripe account?"),
                ("agent", "In the Stripe dashboard open Developers, API keys, and roll the secret key."),
                ("user", "Will rolling the Stripe secret key break my running webhooks?"),
                (
                    "agent",
                    "Webhooks use a separate signing secret, so they keep working; update servers using the old key.",
                ),
            ]:
                await client.store_event(scope, EventInput(role, text))
            EXPORTER.clear()
            trigger = await client.store_event(
                scope, EventInput("user", "Totally different: what's a good recipe for banana bread?")
            )
        deadline = time.monotonic() + 120
        result = None
        while time.monotonic() < deadline:
            raw = await redis.get(keys.task_result_key("acme:alice:helper", trigger.task_id))
            if raw and json.loads(raw).get("status") == "done":
                result = json.loads(raw)
                break
            await asyncio.sleep(0.2)
        assert result is not None and result["decision"] == "break", result
        await asyncio.sleep(0.5)
    finally:
        await pool.stop(grace=5)
        await cognition.shutdown()
        await ingest.shutdown()
        await formation.host.shutdown()

    spans = EXPORTER.get_finished_spans()
    store = next(s for s in spans if s.kind == SpanKind.SERVER and s.name.endswith("MemoryService/StoreEvent"))
    producer = next(s for s in spans if s.name == "send memory_processing_queue")
    consumers = [s for s in spans if s.name == "process memory_processing_queue"]
    assert producer.context.trace_id == store.context.trace_id and producer.parent.span_id == store.context.span_id
    consumer = next(c for c in consumers if c.parent is not None and c.parent.span_id == producer.context.span_id)
    assert consumer.kind == SpanKind.CONSUMER and consumer.context.trace_id == store.context.trace_id
    in_consumer_trace = [s for s in spans if s.context.trace_id == consumer.context.trace_id]
    client_call = next(
        s for s in in_consumer_trace if s.kind == SpanKind.CLIENT and s.name.endswith("FormationService/FormChain")
    )
    server_call = next(
        s for s in in_consumer_trace if s.kind == SpanKind.SERVER and s.name.endswith("FormationService/FormChain")
    )
    assert server_call.parent.span_id == client_call.context.span_id
    names = {s.name for s in in_consumer_trace}
    assert any(n.startswith("chain_break.decide") for n in names)
    assert "formation.form_chain" in names
    services = {s.resource.attributes.get("service.name") for s in spans}
    assert services  # one provider in this process; service identity comes from span names here
    kinds = {s.name.split()[0] for s in in_consumer_trace if s.kind == SpanKind.CLIENT}
    assert any(k in ("EVALSHA", "HGETALL", "LRANGE", "GET", "MULTI") for k in kinds), kinds
    assert any(s.attributes.get("db.system") == "mongodb" for s in in_consumer_trace)
    assert any(s.name == "milvus.upsert" for s in in_consumer_trace)
