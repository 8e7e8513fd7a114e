"""The stack every per-memory test starts from: formation and ingest in this process (the session's
redis-server and nx-27017, a Milvus Lite file of their own) holding alice's Kyoto chain (agent travel),
her webhook chain (agent coder) and a rejected small-talk segment (coder). Chains are formed by calling
FormChain with the stored events, as cognition would hand them off."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
from redis.asyncio import Redis

from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.local import MongoWireServer, RedisServer
from athena.stm import ShortTermWindow
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2
from support.in_process_stack import InProcessStack, running_in_process

TRAVEL = AsyncAthenaClient.scope("acme", "alice", "travel")
CODER = AsyncAthenaClient.scope("acme", "alice", "coder")
ALICE = AsyncAthenaClient.scope("acme", "alice", "")
BOB = AsyncAthenaClient.scope("acme", "bob", "")
KYOTO = [
    ("user", "I'm planning a trip to Kyoto in April. Which neighbourhoods are best for seeing temples?"),
    ("agent", "Higashiyama is ideal: Kiyomizu-dera, Yasaka Shrine and the Philosopher's Path are all walkable."),
    ("user", "How many days would you recommend for Kyoto and a day trip to Nara?"),
    ("agent", "Plan four days in Kyoto plus one for Nara; visit Fushimi Inari early to avoid the crowds."),
]
WEBHOOK = [
    ("user", "My Python script crashes with KeyError: 'user_id' when parsing the webhook payload. What to check?"),
    ("agent", "Since API v2 the id is nested: use payload['data']['user']['id'] or a pydantic model to validate it."),
    ("user", "How do I validate the whole payload structure with pydantic?"),
    ("agent", "Define a WebhookPayload model and call WebhookPayload.model_validate(payload)."),
]
SMALL_TALK = [("user", "haha ok thanks!"), ("agent", "You're welcome!")]


class Memories:
    """A stack holding alice's Kyoto chain (travel), her webhook chain (coder) and a rejected small-talk
    segment (coder)."""

    def __init__(self, stack: InProcessStack, client: AsyncAthenaClient, kyoto: str, webhook: str) -> None:
        self.stack = stack
        self.client = client
        self.kyoto = kyoto
        self.webhook = webhook

    @property
    def store(self) -> Any:
        return self.stack.formation.store

    async def vector(self, chain_id: str) -> np.ndarray | None:
        return (await self.stack.formation.vectors.vectors([chain_id])).get(chain_id)


async def _form(
    stub: formation_pb2_grpc.FormationServiceStub, scope: memory_pb2.Scope, segment_id: str, events: Any
) -> formation_pb2.FormChainResponse:
    segment = formation_pb2.Segment(id=segment_id, scope=scope, events=events, reason=formation_pb2.CUT_REASON_FLUSH)
    return await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)


@asynccontextmanager
async def running_memories(
    redis_server: RedisServer, mongo_server: MongoWireServer, database: str, redis: Redis, data_dir: Path
) -> AsyncIterator[Memories]:
    """The stack with the memories above in it."""
    async with (
        running_in_process(redis_server, mongo_server, database, redis, data_dir) as stack,
        stack.client() as client,
        stack.formation_channel() as channel,
    ):
        stub = formation_pb2_grpc.FormationServiceStub(channel)
        window = ShortTermWindow(redis)
        await client.store_events(TRAVEL, [EventInput(r, t) for r, t in KYOTO])
        await client.store_events(CODER, [EventInput(r, t) for r, t in WEBHOOK + SMALL_TALK])
        coder = await window.read(CODER)
        kyoto = await _form(stub, TRAVEL, "seg_kyoto", await window.read(TRAVEL))
        webhook = await _form(stub, CODER, "seg_webhook", coder[:4])
        small = await _form(stub, CODER, "seg_small_talk", coder[4:])
        assert kyoto.outcome == webhook.outcome == formation_pb2.FORM_OUTCOME_CREATED
        assert small.outcome == formation_pb2.FORM_OUTCOME_REJECTED, small
        yield Memories(stack, client, kyoto.chain_id, webhook.chain_id)
