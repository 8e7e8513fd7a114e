"""MemoryService.ForgetUser against real servers: ingest and formation in this process, the session's
redis-server and nx-27017, a fresh Milvus Lite file. Chains are formed by calling FormChain with
segments of the stored events (what cognition would hand off); a queued task of the user is claimed
before the forget and run through the chain-check handler after it (a task in flight)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from support.in_process import in_process_settings
from typer.testing import CliRunner

from athena import keys
from athena.auth import bearer_credential_interceptors, bearer_metadata
from athena.formation_client import FormationClient
from athena.grpc_util import bad_request_violations
from athena.internal.v1 import formation_pb2, formation_pb2_grpc
from athena.local import MongoWireServer, RedisServer
from athena.queue import FairQueue, chain_check_task
from athena.stm import ShortTermWindow
from athena.tombstones import MongoTombstones, erased_at_now, write_redis_tombstone
from athena_cli.main import app
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_cognition.chain_check import ChainCheckHandler
from athena_formation.server import Formation, build_formation
from athena_ingest.server import build_ingest

KYOTO = [
    ("user", "I'm planning a trip to Kyoto in April. Which neighbourhoods are best for seeing temples?"),
    (
        "agent",
        "Higashiyama is ideal: Kiyomizu-dera, Yasaka Shrine and the Philosopher's Path are all walkable from there.",
    ),
    ("user", "How many days would you recommend for Kyoto and a day trip to Nara?"),
    (
        "agent",
        "Plan four days in Kyoto plus one for Nara; visit Fushimi Inari early to avoid the cherry blossom crowds.",
    ),
]
PYTHON_BUG = [
    (
        "user",
        "My Python script crashes with KeyError: 'user_id' when parsing the webhook payload. What should I check?",
    ),
    (
        "agent",
        "Since API v2 the id is nested: use payload['data']['user']['id'] or a pydantic model to validate the webhook payload.",
    ),
    ("user", "How do I validate the whole payload structure with pydantic?"),
    (
        "agent",
        "Define a WebhookPayload model and call WebhookPayload.model_validate(payload); a ValidationError names the missing field.",
    ),
]
SMALL_TALK = [("user", "haha ok thanks!"), ("agent", "You're welcome!")]

ALICE_A = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="travel")
ALICE_B = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="coder")
BOB = memory_pb2.Scope(tenant_id="acme", user_id="bob", agent_id="travel")
OTHER_TENANT = memory_pb2.Scope(tenant_id="globex", user_id="alice", agent_id="travel")


class Stack:
    def __init__(
        self,
        formation: Formation,
        target: str,
        formation_target: str,
        redis: Any,
        mongo: Any,
        db: str,
        credentials: StackCredentials,
    ) -> None:
        self.formation = formation
        self.target = target
        self.formation_target = formation_target
        self.redis = redis
        self.mongo = mongo
        self.db = mongo[db]
        self.credentials = credentials

    def client(self, tenant_id: str, *, timeout: float) -> AsyncAthenaClient:
        return AsyncAthenaClient(
            self.target,
            options=ClientOptions(timeout=timeout, max_attempts=1),
            bearer_token=self.credentials.token_for(tenant_id),
        )


@pytest.fixture
async def stack(
    redis_server: RedisServer, mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path, redis, mongo
) -> AsyncIterator[Stack]:
    credentials = StackCredentials()
    settings = in_process_settings(
        redis_url=redis_server.url,
        mongodb_uri=mongo_server.url,
        database=mongo_db_name,
        data_dir=tmp_path,
        credentials=credentials,
    )
    formation = await build_formation(settings)
    await formation.host.start()
    formation_target = f"127.0.0.1:{formation.host.bound_port}"
    host, _ = await build_ingest(settings)
    await host.start()
    yield Stack(formation, f"127.0.0.1:{host.bound_port}", formation_target, redis, mongo, mongo_db_name, credentials)
    await host.shutdown()
    await formation.host.shutdown()


async def _converse(client: AsyncAthenaClient, scope: memory_pb2.Scope, turns) -> None:  # type: ignore[no-untyped-def]
    await client.store_events(scope, [EventInput(role, text) for role, text in turns])


async def _form(
    stub: formation_pb2_grpc.FormationServiceStub, scope: memory_pb2.Scope, seg_id: str, events
) -> formation_pb2.FormChainResponse:  # type: ignore[no-untyped-def]
    segment = formation_pb2.Segment(id=seg_id, scope=scope, events=events, reason=formation_pb2.CUT_REASON_TOPIC_BREAK)
    return await stub.FormChain(formation_pb2.FormChainRequest(segment=segment), timeout=60)


async def _scan(redis: Any, pattern: str) -> set[bytes]:
    return {k async for k in redis.scan_iter(match=pattern, count=1000)}


async def _milvus(f: Formation) -> list[dict[str, Any]]:
    return await f.vectors._run(
        lambda c: c.query(
            f.vectors.collection, filter='chain_id != ""', output_fields=["chain_id", "tenant_id", "user_id"]
        )
    )


async def _snapshot_others(s: Stack, exclude: set[str]) -> dict[str, Any]:
    """Everything that is not acme/alice's, to compare before and after."""
    snap: dict[str, Any] = {}
    for k in await _scan(s.redis, "*"):
        name = k.decode()
        if (
            "acme:alice:" in name
            or name.startswith(keys.ERASURE_PREFIX)
            or name == keys.PERSISTENCE_REWRITE_WANTED
            or name in exclude
        ):
            continue
        if name == keys.stm_user_agents_key("acme", "alice"):
            continue
        kind = (await s.redis.type(k)).decode()
        if kind == "list":
            items = await s.redis.lrange(k, 0, -1)
            if name in (keys.DISPATCHER, keys.QUEUE_DEAD_LETTERS):
                items = [i for i in items if b"acme:alice:" not in i and b"alice" not in i]
            snap[name] = items
        elif kind == "string":
            snap[name] = await s.redis.get(k)
        elif kind == "zset":
            snap[name] = [m for m in await s.redis.zrange(k, 0, -1) if not m.startswith(b"acme:alice:")]
        elif kind == "hash":
            snap[name] = {f: v for f, v in (await s.redis.hgetall(k)).items() if not f.startswith(b"acme:alice:")}
    snap = {k: v for k, v in snap.items() if v}  # a zset or hash left empty by the erasure no longer exists
    for coll in ("cognitive_events", "cognitive_chains", "formation_outcomes"):
        for tenant, user in (("acme", "bob"), ("globex", "alice")):
            snap[f"{coll}/{tenant}/{user}"] = sorted(
                [d["_id"] async for d in s.db[coll].find({"tenant_id": tenant, "user_id": user})]
            )
    snap["milvus"] = sorted(
        r["chain_id"] for r in await _milvus(s.formation) if (r["tenant_id"], r["user_id"]) != ("acme", "alice")
    )
    return snap


async def _alice_everywhere(s: Stack) -> dict[str, int]:
    """How much of acme/alice each store holds (the tombstone itself excluded)."""
    redis_keys = set()
    for pattern in ("*acme:alice:*",):
        redis_keys |= await _scan(s.redis, pattern)
    out = {
        "redis_keys_named": len(redis_keys),
        "agents_with_a_window": await s.redis.scard(keys.stm_user_agents_key("acme", "alice")),
    }
    out["dispatcher"] = sum(1 for m in await s.redis.lrange(keys.DISPATCHER, 0, -1) if m.startswith(b"acme:alice:"))
    out["dead_letters"] = sum(
        1
        for m in await s.redis.lrange(keys.QUEUE_DEAD_LETTERS, 0, -1)
        if b"acme" in m and b"alice" in m and b"globex" not in m
    )
    for z in (keys.QUEUE_LEASES, keys.QUEUE_DELAYED):
        out[z] = sum(1 for m in await s.redis.zrange(z, 0, -1) if m.startswith(b"acme:alice:"))
    out["deliveries"] = sum(1 for m in await s.redis.hkeys(keys.QUEUE_DELIVERIES) if m.startswith(b"acme:alice:"))
    for coll in ("cognitive_events", "cognitive_chains", "formation_outcomes"):
        out[coll] = len([d async for d in s.db[coll].find({"tenant_id": "acme", "user_id": "alice"})])
    out["milvus"] = sum(1 for r in await _milvus(s.formation) if (r["tenant_id"], r["user_id"]) == ("acme", "alice"))
    return out


async def test_forget_user_erases_every_store_and_nothing_else(stack: Stack) -> None:
    s = stack
    client = s.client("acme", timeout=30)
    other_tenant = s.client(OTHER_TENANT.tenant_id, timeout=30)
    channel = grpc.aio.insecure_channel(
        s.formation_target, interceptors=bearer_credential_interceptors(s.credentials.internal_token)
    )
    stub = formation_pb2_grpc.FormationServiceStub(channel)
    queue = FairQueue(s.redis)
    window = ShortTermWindow(s.redis)
    try:
        # alice/travel first, so it heads the dispatcher and a worker claims it below
        await _converse(client, ALICE_A, KYOTO)
        await _converse(client, ALICE_B, PYTHON_BUG + SMALL_TALK)
        await _converse(client, BOB, KYOTO)
        await _converse(other_tenant, OTHER_TENANT, PYTHON_BUG)

        # chains, as cognition would form them from the windows: alice x2, bob, globex/alice; one rejection of alice
        a_events = await window.read(ALICE_A)
        b_events = await window.read(ALICE_B)
        assert (await _form(stub, ALICE_A, "seg_alice_a", a_events)).outcome == formation_pb2.FORM_OUTCOME_CREATED
        assert (await _form(stub, ALICE_B, "seg_alice_b", b_events[:4])).outcome == formation_pb2.FORM_OUTCOME_CREATED
        rejected = await _form(stub, ALICE_B, "seg_alice_small", b_events[4:])
        assert rejected.outcome == formation_pb2.FORM_OUTCOME_REJECTED, rejected
        assert (await _form(stub, BOB, "seg_bob", await window.read(BOB))).outcome == formation_pb2.FORM_OUTCOME_CREATED
        assert (
            await _form(stub, OTHER_TENANT, "seg_globex", await window.read(OTHER_TENANT))
        ).outcome == formation_pb2.FORM_OUTCOME_CREATED

        # a task of alice in flight (claimed, leased), a dead letter and a task result of alice and of bob
        lease = await queue.claim("erasure-test-worker", timeout=1)
        assert lease is not None and lease.scope == "acme:alice:travel"
        for scope in (ALICE_B, BOB):
            dead = chain_check_task(scope=scope, event_id=f"ev_dead_{scope.user_id}")
            await s.redis.rpush(keys.QUEUE_DEAD_LETTERS, dead.SerializeToString())
            await s.redis.set(keys.task_dedup_key(dead.id), "1")
            sid = keys.scope_id(scope.tenant_id, scope.user_id, scope.agent_id)
            await s.redis.set(keys.task_result_key(sid, "chk-ev_done"), json.dumps({"status": "done"}))

        # what exists of alice, counted independently of the eraser
        alice_event_ids = [
            d["_id"] async for d in s.db.cognitive_events.find({"tenant_id": "acme", "user_id": "alice"})
        ]
        dedup = [keys.task_dedup_key(f"chk-{e}") for e in alice_event_ids] + [keys.task_dedup_key("chk-ev_dead_alice")]
        expected_redis_keys = sum([await s.redis.exists(k) for k in dedup])
        for kind in ("applied", "handoff", "lease"):
            expected_redis_keys += len(await _scan(s.redis, keys.user_key_patterns("acme", "alice")[kind]))
        in_windows = sum(
            [await s.redis.llen(k) for k in await _scan(s.redis, keys.user_key_patterns("acme", "alice")["window"])]
        )
        queued = sum(
            [await s.redis.llen(k) for k in await _scan(s.redis, keys.user_key_patterns("acme", "alice")["queue"])]
        )
        before = await _alice_everywhere(s)
        assert (
            before["cognitive_events"] == 10 and before["cognitive_chains"] == 2 and before["formation_outcomes"] == 3
        )
        assert (
            before["milvus"] == 2 and before[keys.QUEUE_LEASES] == 1 and queued == 5
        )  # user messages of KYOTO, PYTHON_BUG, SMALL_TALK
        others_before = await _snapshot_others(s, set(dedup))

        receipt = await client.forget_user("acme", "alice")
        assert (
            receipt.redis_keys,
            receipt.queued_tasks,
            receipt.dead_letters,
            receipt.task_results,
            receipt.events,
            receipt.chains,
            receipt.formation_records,
            receipt.embeddings,
        ) == (expected_redis_keys, queued, 1, 1, 10, 2, 3, 2)
        assert (receipt.window_events, receipt.chains_rebuilt) == (in_windows, 0) and in_windows == 10
        assert receipt.erased_at.seconds > 0

        after = await _alice_everywhere(s)
        assert all(v == 0 for v in after.values()), after
        assert await s.redis.get(keys.erasure_key("acme", "alice")) is not None  # the tombstone stays (7 days)
        assert await s.redis.ttl(keys.erasure_key("acme", "alice")) > 6 * 24 * 3600
        assert not [k for k in dedup if await s.redis.exists(k)]
        assert await _snapshot_others(s, set(dedup)) == others_before
        assert await client.search_memory(ALICE_A, "Kyoto temples") == []

        # the task that was in flight finishes after the forget: nothing reaches formation, nothing is written
        handler = ChainCheckHandler(
            redis=s.redis,
            window=window,
            detector=None,
            formation=FormationClient(s.formation_target, metadata=bearer_metadata(s.credentials.internal_token)),
        )  # type: ignore[arg-type]
        outcome = await handler(lease.task)
        assert outcome["path"] == "erased"
        assert await queue.ack(lease, outcome) is False  # the erasure took its lease: no task result reappears
        # a segment cut before the forget and handed off after it: rejected as erased, no chain reappears
        late = await _form(stub, ALICE_A, "seg_alice_late", a_events)
        assert (late.outcome, late.reason) == (formation_pb2.FORM_OUTCOME_REJECTED, "erased")
        assert all(v == 0 for v in (await _alice_everywhere(s)).values())

        # idempotent
        again = await client.forget_user("acme", "alice")
        assert (
            again.redis_keys,
            again.queued_tasks,
            again.dead_letters,
            again.task_results,
            again.events,
            again.chains,
            again.formation_records,
            again.embeddings,
        ) == (0,) * 8

        # a new life after the forget is remembered again
        await _converse(client, ALICE_A, KYOTO[:2])
        fresh = await window.read(ALICE_A)
        assert len(fresh) == 2
        created = await _form(stub, ALICE_A, "seg_alice_new_life", fresh)
        assert created.outcome in (formation_pb2.FORM_OUTCOME_CREATED, formation_pb2.FORM_OUTCOME_REJECTED)
        assert created.reason != "erased"
    finally:
        await client.close()
        await other_tenant.close()
        await channel.close()


async def test_forget_user_validates_tenant_and_user(stack: Stack) -> None:
    async with stack.client("ac:me", timeout=10) as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.forget_user("", "al:ice")  # the tenant comes from the credential
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert {f for f, _ in bad_request_violations(err.value)} == {"tenant_id", "user_id"}
    async with stack.client("acme", timeout=10) as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await client.forget_user("acme", "")
        assert [f for f, _ in bad_request_violations(err.value)] == ["user_id"]


async def test_athena_forget_command(stack: Stack) -> None:
    async with stack.client("acme", timeout=30) as client:
        await _converse(client, BOB, SMALL_TALK)
    runner = CliRunner(env={"COLUMNS": "200", "ATHENA_TOKEN": stack.credentials.token_for("acme")})
    done = await asyncio.to_thread(
        runner.invoke, app, ["forget", "--tenant", "acme", "--user", "bob", "--target", stack.target]
    )
    assert done.exit_code == 0, done.output
    assert "events" in done.output and "2" in done.output and "tombstone" in done.output
    assert await stack.db.cognitive_events.count_documents({"user_id": "bob"}) == 0
    bad = await asyncio.to_thread(
        runner.invoke, app, ["forget", "--tenant", "acme", "--user", "b:ob", "--target", stack.target]
    )
    assert bad.exit_code == 1 and "user_id" in bad.output


KYOTO_LATER = [
    ("user", "Back to my Kyoto trip in April: should I take the train or the bus for the Nara day trip from Kyoto?"),
    (
        "agent",
        "Take the JR Nara line from Kyoto station: about 45 minutes, and the Kyoto to Nara train is covered by the JR pass.",
    ),
    ("user", "And for the Kyoto temples in April, which ones open earliest for the cherry blossoms?"),
    ("agent", "Fushimi Inari never closes and Kyoto's Kiyomizu opens at 6: go early in April for the blossoms."),
]
ERASED_ONLY_WORDS = {"higashiyama", "philosopher", "yasaka"}
"""Words of KYOTO that KYOTO_LATER never uses: once KYOTO is erased, no chain may hold them."""


async def _begin_forget(s: Stack, tenant_id: str, user_id: str) -> float:
    """Step 1 of ForgetUser (the tombstone in both stores), then a clock tick: what is stored next is after it."""
    erased_at = erased_at_now()
    await MongoTombstones(s.mongo, s.db.name).begin(tenant_id, user_id, erased_at)
    await write_redis_tombstone(s.redis, tenant_id, user_id, erased_at)
    await asyncio.sleep(0.01)
    return erased_at


async def _chain_words(chain: dict[str, Any]) -> set[str]:
    text = " ".join([chain.get("summary", ""), chain.get("topic", ""), *(e["text"] for e in chain.get("entities", []))])
    return set(chain.get("lexicon", {})) | {w.strip(".,:;!?'").lower() for w in text.split()}


async def test_a_chain_that_took_later_events_is_re_formed_from_them_alone(stack: Stack) -> None:
    s = stack
    channel = grpc.aio.insecure_channel(
        s.formation_target, interceptors=bearer_credential_interceptors(s.credentials.internal_token)
    )
    stub = formation_pb2_grpc.FormationServiceStub(channel)
    window = ShortTermWindow(s.redis)
    try:
        async with s.client("acme", timeout=30) as client:
            await _converse(client, ALICE_A, KYOTO)
            before = await window.read(ALICE_A)
            first = await _form(stub, ALICE_A, "seg_before", before)
            assert first.outcome == formation_pb2.FORM_OUTCOME_CREATED
            # The forget has begun (its tombstone is written) and the user goes on talking: a later
            # segment merges into the chain before formation's part of the forget runs.
            await _begin_forget(s, "acme", "alice")
            await _converse(client, ALICE_A, KYOTO_LATER)
        later = (await window.read(ALICE_A))[len(before) :]
        merged = await _form(stub, ALICE_A, "seg_later", later)
        assert (merged.outcome, merged.chain_id) == (formation_pb2.FORM_OUTCOME_MERGED, first.chain_id)

        part = await stub.ForgetUser(memory_pb2.ForgetUserRequest(tenant_id="acme", user_id="alice"), timeout=60)

        assert (part.chains, part.chains_rebuilt, part.formation_records, part.embeddings) == (0, 1, 1, 0)
        chain = await s.db.cognitive_chains.find_one({"_id": first.chain_id})
        assert chain is not None
        assert (chain["event_ids"], chain["segment_ids"], chain["event_count"]) == (
            [e.id for e in later],
            ["seg_later"],
            len(later),
        )
        assert chain["embedding_state"] == "indexed" and first.chain_id in {
            r["chain_id"] for r in await _milvus(s.formation)
        }
        assert not ERASED_ONLY_WORDS & await _chain_words(chain)
        assert sorted([d["_id"] async for d in s.db.formation_outcomes.find({"user_id": "alice"})]) == ["seg_later"]
        async with s.client("acme", timeout=30) as client:
            hits = await client.search_memory(ALICE_A, "Nara train JR pass")
        assert [h.chain.id for h in hits] == [first.chain_id]
        assert not ERASED_ONLY_WORDS & {t.lower() for h in hits for t in h.matched_terms}
    finally:
        await channel.close()


async def test_a_merge_racing_the_forget_takes_back_only_the_erased_segment(stack: Stack) -> None:
    s = stack
    channel = grpc.aio.insecure_channel(
        s.formation_target, interceptors=bearer_credential_interceptors(s.credentials.internal_token)
    )
    stub = formation_pb2_grpc.FormationServiceStub(channel)
    window = ShortTermWindow(s.redis)
    plans: dict[str, dict[str, Any]] = {}
    later_chain: list[str] = []
    try:
        async with s.client("acme", timeout=30) as client:
            await _converse(client, ALICE_A, KYOTO)
            before = await window.read(ALICE_A)

            async def forget_and_talk_while_it_plans(step: str) -> None:
                """While the earlier segment is being formed: the forget begins, later events form a chain."""
                if step == "plan_recorded":
                    plans.update({d["_id"]: d async for d in s.db.formation_outcomes.find({"user_id": "alice"})})
                if step != "planning" or later_chain:
                    return
                later_chain.append("")
                await _begin_forget(s, "acme", "alice")
                await _converse(client, ALICE_A, KYOTO_LATER)
                later = (await window.read(ALICE_A))[len(before) :]
                segment = formation_pb2.Segment(
                    id="seg_later", scope=ALICE_A, events=later, reason=formation_pb2.CUT_REASON_TOPIC_BREAK
                )
                later_chain[0] = (await s.formation.former.form(segment)).chain_id

            s.formation.former.step_hook = forget_and_talk_while_it_plans
            try:
                racing = await _form(stub, ALICE_A, "seg_racing", before)
            finally:
                s.formation.former.step_hook = None

        assert (racing.outcome, racing.reason) == (formation_pb2.FORM_OUTCOME_REJECTED, "erased")
        assert (plans["seg_racing"]["outcome"], plans["seg_racing"]["chain_id"]) == ("merged", later_chain[0])
        chain = await s.db.cognitive_chains.find_one({"_id": later_chain[0]})
        assert chain is not None, "the undo deleted the chain the racing segment had merged into"
        later_ids = [e.id for e in (await window.read(ALICE_A))[len(before) :]]
        assert (chain["event_ids"], chain["segment_ids"]) == (later_ids, ["seg_later"])
        assert chain["embedding_state"] == "indexed" and later_chain[0] in {
            r["chain_id"] for r in await _milvus(s.formation)
        }
        assert not ERASED_ONLY_WORDS & await _chain_words(chain)
        assert sorted([d["_id"] async for d in s.db.formation_outcomes.find({"user_id": "alice"})]) == ["seg_later"]
    finally:
        await channel.close()
