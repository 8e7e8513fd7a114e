"""Group commits in the durable log: recorded before their events, closed once the Redis step succeeded."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from athena.events import to_timestamp
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_ingest.ingestor import Ingestor, new_event_id

SCOPE = AsyncAthenaClient.scope("acme", "alice", "helper")


async def _open_commits(ingest: Ingestor) -> int:
    return int(await ingest.event_log.commits.count_documents({}))


async def test_a_stored_batch_names_its_commit_and_the_commit_is_closed_just_after_the_answer(
    client: AsyncAthenaClient, ingest: Ingestor
) -> None:
    results = await client.store_events(SCOPE, [EventInput("user", "first"), EventInput("agent", "second")])

    docs = [await ingest.event_log.collection.find_one({"_id": r.event_id}) for r in results.results]
    assert docs[0]["commit_id"] and docs[0]["commit_id"] == docs[1]["commit_id"] and "window_state" not in docs[0]
    for _ in range(50):  # closing runs behind the answer
        if not await _open_commits(ingest):
            break
        await asyncio.sleep(0.05)
    assert await _open_commits(ingest) == 0


async def test_a_commit_recorded_whose_events_never_landed_is_closed_by_the_repair_loop_with_nothing_applied(
    client: AsyncAthenaClient, ingest: Ingestor
) -> None:
    # What a crash between recording the commit and inserting its events leaves behind.
    await ingest.event_log.commits.insert_one(
        {"_id": "cm_crashed", "event_ids": ["ev_never_stored"], "created_at": 0.0}
    )

    assert await ingest.repair_pending(older_than=timedelta(0)) == 0

    assert await _open_commits(ingest) == 0 and await client.get_context(SCOPE) == []


async def test_the_repair_loop_applies_an_open_commits_events_once_however_often_it_runs(
    client: AsyncAthenaClient, ingest: Ingestor
) -> None:
    # What a Redis outage during the Redis step leaves behind: events in the log, their commit open.
    event = memory_pb2.Event(
        id=new_event_id(),
        scope=SCOPE,
        role=memory_pb2.ROLE_USER,
        type=memory_pb2.EVENT_TYPE_MESSAGE,
        content="left open",
        timestamp=to_timestamp(datetime.now(UTC)),
        stored_at=to_timestamp(datetime.now(UTC)),
    )
    event.client_event_id = event.id
    await ingest.event_log.insert([event], commit_id="cm_open")

    assert await ingest.repair_pending(older_than=timedelta(0)) == 1
    assert await ingest.repair_pending(older_than=timedelta(0)) == 0

    assert [e.content for e in await client.get_context(SCOPE)] == ["left open"] and await _open_commits(ingest) == 0


async def test_an_insert_resent_after_its_reply_was_lost_counts_as_the_first_store_not_a_repeat(
    ingest: Ingestor,
) -> None:
    # A server without retryable-write support (nx-27017) sees the driver's re-sent insert as a second
    # one: its commit record and its events are already there, written by the attempt whose reply was lost.
    now = to_timestamp(datetime.now(UTC))
    events = [
        memory_pb2.Event(
            id=new_event_id(),
            scope=SCOPE,
            role=memory_pb2.ROLE_USER,
            type=memory_pb2.EVENT_TYPE_MESSAGE,
            content=text,
            timestamp=now,
            stored_at=now,
            client_event_id=f"client-{k}",
        )
        for k, text in enumerate(["first", "second"])
    ]
    await ingest.event_log.insert(events, commit_id="cm_resent")

    again = await ingest.event_log.insert(events, commit_id="cm_resent")
    single = await ingest.event_log.insert(events[:1], commit_id="cm_resent")

    assert [(o.event.id, o.duplicate, o.applied) for o in again] == [(e.id, False, False) for e in events]
    assert [(o.event.id, o.duplicate) for o in single] == [(events[0].id, False)]
    assert await ingest.event_log.count({"commit_id": "cm_resent"}) == 2 and await _open_commits(ingest) == 1


async def test_a_repeat_under_a_new_event_id_still_returns_the_original(ingest: Ingestor) -> None:
    now = to_timestamp(datetime.now(UTC))

    def event(event_id: str) -> memory_pb2.Event:
        return memory_pb2.Event(
            id=event_id,
            scope=SCOPE,
            role=memory_pb2.ROLE_USER,
            type=memory_pb2.EVENT_TYPE_MESSAGE,
            content="same",
            timestamp=now,
            stored_at=now,
            client_event_id="client-same",
        )

    original = event(new_event_id())
    await ingest.event_log.insert([original], commit_id="cm_a")
    (repeat,) = await ingest.event_log.insert([event(new_event_id())], commit_id="cm_b")

    assert repeat.duplicate and repeat.event.id == original.id
    assert repeat.applied is False  # the original's commit (cm_a) is still open: its Redis step may not have run
