"""The MongoDB-wire server stopped: StoreEvent is UNAVAILABLE and writes nothing; afterwards all is intact."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from pymongo import MongoClient
from redis import Redis
from support.pipeline_ledger import (
    StackFactory,
    conversation,
    drive,
    metric_total,
    patient_options,
    read_ledger,
    wait_decided,
)

from athena import keys
from athena_client import AsyncAthenaClient, ClientOptions, EventInput

pytestmark = pytest.mark.slow

TENANT = "faults-mongo"
PROBE = "prober"
USERS = 3


def _redis_state(redis: Redis, scope: str) -> dict[str, object]:
    """Everything ingest's Redis step could touch for one scope."""
    return {
        "window": redis.lrange(keys.stm_window_key(scope), 0, -1),
        "queue": redis.lrange(keys.scope_queue_key(scope), 0, -1),
        "applied": sorted(redis.scan_iter(match=keys.stm_applied_key(scope, "*"))),
        "dedup": len(list(redis.scan_iter(match=keys.task_dedup_key("*")))),
        "dispatcher": scope.encode() in redis.lrange(keys.DISPATCHER, 0, -1),
    }


async def test_mongo_down_store_event_is_unavailable_and_partial_nothing_then_processing_resumes(
    fault_stack: StackFactory,
) -> None:
    with fault_stack() as stack:
        assert stack.mongo is not None
        redis = Redis.from_url(f"redis://127.0.0.1:{stack.ports.redis}/0")
        mongo: MongoClient = MongoClient(stack.mongodb_uri, serverSelectionTimeoutMS=10000)
        try:
            talks = {f"user{i}": conversation(user_index=i, topics=4) for i in range(USERS)}
            talks[PROBE] = conversation(user_index=USERS, topics=2)
            first = {u: t[: len(t) // 2] for u, t in talks.items()}
            acked, errors = await drive(
                stack, tenant_id=TENANT, conversations=first, pace=0.02, options=patient_options()
            )
            await wait_decided(f"redis://127.0.0.1:{stack.ports.redis}/0", acked, timeout=60)
            before = await read_ledger(stack, tenant_id=TENANT, acked=acked)
            chains_before = {c["_id"]: c.get("version") for c in before.chains}

            # Load continues for the other users while MongoDB is down (their clients keep retrying).
            rest = {u: t[len(t) // 2 :] for u, t in talks.items() if u != PROBE}
            probe_scope = keys.scope_id(TENANT, PROBE, "agent")
            state_before = _redis_state(redis, probe_scope)
            await asyncio.to_thread(stack.mongo.stop)
            sending = asyncio.create_task(
                drive(stack, tenant_id=TENANT, conversations=rest, pace=0.1, options=patient_options())
            )
            probe = EventInput(
                role="user", content="probe message stored while the log is down", event_id="probe-during-outage"
            )
            async with stack.client(tenant_id=TENANT, options=ClientOptions(max_attempts=1, timeout=15)) as client:
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await client.store_event(AsyncAthenaClient.scope(TENANT, PROBE, "agent"), probe)
            state_during = _redis_state(redis, probe_scope)
            await asyncio.sleep(2.0)
            await asyncio.to_thread(stack.mongo.start)

            a, e = await sending
            acked += a
            errors += e
            await wait_decided(f"redis://127.0.0.1:{stack.ports.redis}/0", acked, timeout=120)
            after = await read_ledger(stack, tenant_id=TENANT, acked=acked)
            probe_docs = mongo["athena"]["cognitive_events"].count_documents({"client_event_id": "probe-during-outage"})
            unavailable = metric_total(
                stack, "ingest", "memos_grpc_server_handled_total", grpc_method="StoreEvent", grpc_code="UNAVAILABLE"
            )
        finally:
            redis.close()
            mongo.close()

    print(
        f"\ninjected: MongoDB-wire server stopped while {USERS} users sent {sum(len(t) for t in rest.values())} events; "
        f"a probe StoreEvent got {refused.value.code().name}"
    )
    print(
        f"counted: {unavailable:.0f} StoreEvent attempts answered UNAVAILABLE while it was down (the load's clients retried them)"
    )
    print("counted before:", before.summary())
    print("counted after: ", after.summary())
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert state_during == state_before, "the refused event touched the window or the queue"
    assert probe_docs == 0, "the refused event is in the log"
    assert not errors, (
        f"{errors}\ningest's log, last lines:\n{(stack.data_dir / 'ingest.log').read_text(errors='replace')[-4000:]}"
    )
    # Everything acknowledged before the outage is intact, and what the outage held up was processed.
    assert before.logged <= after.logged and {o["_id"] for o in before.outcomes} <= {o["_id"] for o in after.outcomes}
    assert set(chains_before) <= {c["_id"] for c in after.chains}
    assert before.problems() == [] and after.problems() == []
    assert len(after.outcomes) > len(before.outcomes), "no segment was formed after the outage"
