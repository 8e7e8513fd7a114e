"""Erasure reaches Redis's files on disk: after ForgetUser the scheduler has Redis rewrite its append-only
file (and RDB snapshot), once across replicas per interval, and copes with a Redis that keeps no files
or refuses the commands. Real redis-server processes of the tests' own (data directories in tmp_path);
the rate-limit tests drive the schedulers' ticks with a shared fake clock, so they assert counts and
order only."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis
from support.in_process import in_process_settings

from athena import keys
from athena.local import MongoWireServer, RedisServer, free_port
from athena_cli.stack import StackCredentials
from athena_client import AsyncAthenaClient, ClientOptions, EventInput
from athena_client.memory.v1 import memory_pb2
from athena_formation.server import build_formation
from athena_ingest.persistence_rewrite import PersistenceRewrite, Step
from athena_ingest.server import build_ingest_parts

SECRET = "my bank PIN is 4417 and my mother's maiden name is Quenby-Oakhurst"


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def files_holding(data_dir: Path, text: str) -> list[str]:
    needle = text.encode()
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file() and needle in p.read_bytes())


def started(kind: str) -> float:
    return REGISTRY.get_sample_value("memos_persistence_rewrites_started_total", {"kind": kind}) or 0.0


def failures(reason: str) -> float:
    return REGISTRY.get_sample_value("memos_persistence_rewrite_failures_total", {"reason": reason}) or 0.0


async def drive(replicas: Iterable[PersistenceRewrite], until: Step, *, timeout: float = 60.0) -> list[Step]:
    """Tick the replicas in turn until one returns `until`; every step taken, in order."""
    replicas = list(replicas)
    steps: list[Step] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for replica in replicas:
            steps.append(await replica.tick())
            if steps[-1] is until:
                return steps
        assert asyncio.get_running_loop().time() < deadline, f"no {until} after {steps[-20:]}"
        await asyncio.sleep(0.02)


async def wait_for_persistence_idle(redis: Redis) -> dict:  # type: ignore[type-arg]
    for _ in range(3000):
        info = await redis.info("persistence")
        if not (info["aof_rewrite_in_progress"] or info["aof_rewrite_scheduled"] or info["rdb_bgsave_in_progress"]):
            return info
        await asyncio.sleep(0.02)
    raise AssertionError(f"Redis still busy persisting: {info}")


@pytest.fixture
async def own_redis(own_redis_server: RedisServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(own_redis_server.url)
    yield client
    await client.aclose()


async def test_forget_user_leaves_none_of_the_users_text_in_redis_files_once_the_rewrite_ran(
    own_redis_server: RedisServer, own_redis: Redis, mongo_server: MongoWireServer, mongo_db_name: str, tmp_path: Path
) -> None:
    credentials = StackCredentials()
    settings = in_process_settings(
        redis_url=own_redis_server.url,
        mongodb_uri=mongo_server.url,
        database=mongo_db_name,
        data_dir=tmp_path,
        credentials=credentials,
        erasure_aof_rewrite_min_interval_seconds=0,
    )
    formation = await build_formation(settings)
    await formation.host.start()
    ingest = await build_ingest_parts(settings)
    await ingest.host.start()
    assert ingest.persistence_rewrite is not None
    loop: asyncio.Task[None] | None = None
    client = AsyncAthenaClient(
        f"127.0.0.1:{ingest.host.bound_port}",
        options=ClientOptions(timeout=30, max_attempts=1),
        bearer_token=credentials.token_for("acme"),
    )
    try:
        scope = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="bank")
        await client.store_events(
            scope, [EventInput("user", SECRET), EventInput("agent", "Noted. I will not repeat it.")]
        )
        assert files_holding(own_redis_server.data_dir, SECRET), (
            "the user's text should be in the append-only file first"
        )

        receipt = await client.forget_user("acme", "alice")
        assert receipt.redis_keys > 0
        # The finding: the keys are gone from memory, the text is still on disk; the eraser asked for a rewrite.
        assert not [k async for k in own_redis.scan_iter(match="*acme:alice:*")]
        assert files_holding(own_redis_server.data_dir, SECRET)
        assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is not None
        rewrites_before = (await own_redis.info("persistence"))["aof_rewrites"]

        loop = asyncio.create_task(ingest.persistence_rewrite.run_forever(poll_seconds=0.05))
        for _ in range(3000):
            if await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is None:
                break
            await asyncio.sleep(0.02)
        assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is None, "the rewrite never finished"
        assert (await own_redis.info("persistence"))["aof_rewrites"] == rewrites_before + 1
        assert files_holding(own_redis_server.data_dir, SECRET) == []
        assert (own_redis_server.data_dir / "appendonlydir").is_dir()  # the files are Redis 7's multi-part AOF
    finally:
        if loop is not None:
            loop.cancel()
        await client.close()
        await ingest.host.shutdown()
        await formation.host.shutdown()


async def test_with_rdb_snapshots_configured_the_snapshot_is_rewritten_too(
    own_redis_server: RedisServer, own_redis: Redis
) -> None:
    await own_redis.config_set("save", "3600 1")
    await own_redis.config_set("rdbcompression", "no")  # so the text is findable in dump.rdb
    await own_redis.set("stm:v1:window:acme:alice:bank", SECRET)
    await own_redis.bgsave(schedule=False)
    await wait_for_persistence_idle(own_redis)
    assert set(files_holding(own_redis_server.data_dir, SECRET)) >= {"dump.rdb"}
    assert any(f.startswith("appendonlydir/") for f in files_holding(own_redis_server.data_dir, SECRET))
    await own_redis.delete("stm:v1:window:acme:alice:bank")
    aof_before, rdb_before = started("aof"), started("rdb")

    scheduler = PersistenceRewrite(own_redis, min_interval=0)
    await scheduler.request()
    steps = await drive([scheduler], Step.DONE)

    assert steps.count(Step.STARTED) == 1
    assert (started("aof") - aof_before, started("rdb") - rdb_before) == (1, 1)
    assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is None
    await wait_for_persistence_idle(own_redis)
    assert files_holding(own_redis_server.data_dir, SECRET) == []


async def test_two_replicas_start_one_rewrite_for_requests_within_the_interval_and_another_after_it(
    own_redis_server: RedisServer, own_redis: Redis
) -> None:
    clock = FakeClock()
    replica_a, replica_b = Redis.from_url(own_redis_server.url), Redis.from_url(own_redis_server.url)
    a = PersistenceRewrite(replica_a, min_interval=2.0, clock=clock)
    b = PersistenceRewrite(replica_b, min_interval=2.0, clock=clock)
    try:
        assert await a.tick() is Step.IDLE
        # two erasures, one on each replica, before either acted: one rewrite serves both
        await a.request()
        await b.request()
        steps = await drive([a, b], Step.DONE)
        assert steps.count(Step.STARTED) == 1
        assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is None
        assert (await own_redis.info("persistence"))["aof_rewrites"] == 1

        # another erasure inside the interval: wanted, but neither replica starts a rewrite yet
        clock.now += 0.5
        await b.request()
        steps = [await replica.tick() for _ in range(5) for replica in (a, b)]
        assert set(steps) == {Step.RATE_LIMITED}
        assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is not None
        assert (await own_redis.info("persistence"))["aof_rewrites"] == 1

        # once the interval has passed: exactly one more, by whichever replica ticks first
        clock.now += 2.0
        steps = await drive([b, a], Step.DONE)
        assert steps.count(Step.STARTED) == 1
        assert (await own_redis.info("persistence"))["aof_rewrites"] == 2
        assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is None
        assert await a.tick() is Step.IDLE and await b.tick() is Step.IDLE
    finally:
        await replica_a.aclose()
        await replica_b.aclose()


async def test_an_erasure_requested_after_a_rewrite_started_gets_a_rewrite_of_its_own(
    own_redis_server: RedisServer, own_redis: Redis
) -> None:
    clock = FakeClock()
    scheduler = PersistenceRewrite(own_redis, min_interval=2.0, clock=clock)
    await scheduler.request()
    assert await scheduler.tick() is Step.STARTED
    await scheduler.request()  # the running rewrite may have copied this erasure's data already

    steps = await drive([scheduler], Step.RATE_LIMITED)  # the first rewrite finished; the flag stays
    assert Step.DONE not in steps and Step.STARTED not in steps
    assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is not None

    clock.now += 2.0
    steps = await drive([scheduler], Step.DONE)
    assert steps.count(Step.STARTED) == 1
    assert (await own_redis.info("persistence"))["aof_rewrites"] == 2


async def test_without_aof_or_snapshots_the_wanted_flag_is_cleared_and_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer(port=free_port(), data_dir=tmp_path / "no-aof", persistent=False)
    server.start()
    redis = Redis.from_url(server.url)
    try:
        assert (await redis.info("persistence"))["aof_enabled"] == 0
        scheduler = PersistenceRewrite(redis, min_interval=0)
        failed_before, aof_before = failures("refused") + failures("failed"), started("aof")
        with caplog.at_level(logging.INFO, logger="athena.ingest.persistence_rewrite"):
            for _ in range(2):
                await scheduler.request()
                assert await scheduler.tick() is Step.NOTHING_TO_REWRITE
                assert await redis.get(keys.PERSISTENCE_REWRITE_WANTED) is None
        said = [r for r in caplog.records if "nothing on disk to rewrite" in r.getMessage()]
        assert len(said) == 1
        assert failures("refused") + failures("failed") == failed_before and started("aof") == aof_before
        assert (await redis.info("persistence"))["aof_rewrites"] == 0
    finally:
        await redis.aclose()
        server.stop()


async def test_a_redis_refusing_the_commands_is_counted_and_asked_again_later(
    own_redis_server: RedisServer, own_redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    # What a managed Redis does: the client may not run INFO, CONFIG, BGREWRITEAOF or BGSAVE.
    await own_redis.execute_command(
        "ACL", "SETUSER", "athena", "on", ">pw", "~*", "&*", "+@all", "-info", "-config", "-bgrewriteaof", "-bgsave"
    )
    limited = Redis.from_url(f"redis://athena:pw@127.0.0.1:{own_redis_server.port}/0")
    clock = FakeClock()
    scheduler = PersistenceRewrite(limited, min_interval=0, clock=clock)
    refused_before = failures("refused")
    try:
        await scheduler.request()
        assert await scheduler.tick() is Step.REFUSED
        assert failures("refused") == refused_before + 1
        assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is not None
        assert await scheduler.tick() is Step.RATE_LIMITED  # not asked again at once

        await own_redis.execute_command("ACL", "SETUSER", "athena", "+info")  # still no BGREWRITEAOF
        clock.now += 61
        assert await scheduler.tick() is Step.REFUSED
        assert failures("refused") == refused_before + 2

        await own_redis.execute_command("ACL", "SETUSER", "athena", "+bgrewriteaof")  # CONFIG stays refused
        clock.now += 61
        with caplog.at_level(logging.WARNING, logger="athena.ingest.persistence_rewrite"):
            steps = await drive([scheduler], Step.DONE)
        assert steps.count(Step.STARTED) == 1
        assert any("CONFIG GET save" in r.getMessage() for r in caplog.records)
        assert (await own_redis.info("persistence"))["aof_rewrites"] == 1
        assert await own_redis.get(keys.PERSISTENCE_REWRITE_WANTED) is None
    finally:
        await limited.aclose()


def test_a_started_rewrite_counts_as_done_only_once_redis_forked_it_and_reported_success() -> None:
    from athena_ingest.persistence_rewrite import _Attempt, _Persistence

    def now(**changes: object) -> _Persistence:
        base = dict(
            run_id="r1",
            aof=True,
            rdb=True,
            aof_busy=False,
            rdb_busy=False,
            aof_rewrites=4,
            rdb_saves=8,
            aof_ok=True,
            rdb_ok=True,
        )
        return _Persistence(**{**base, **changes})  # type: ignore[arg-type]

    ours = _Attempt(token="t", at=0.0, state="running", started_at=0.0, run_id="r1", aof_rewrites=3, rdb_saves=7)
    assert ours.progress(now()) == (Step.DONE, "")
    assert ours.progress(now(aof_busy=True)) == (Step.RUNNING, "")
    assert ours.progress(now(rdb_saves=7)) == (Step.RUNNING, "")  # BGSAVE SCHEDULE not yet forked
    assert ours.progress(now(aof_ok=False)) == (Step.FAILED, "failed")
    assert ours.progress(now(rdb_ok=False)) == (Step.FAILED, "failed")
    assert ours.progress(now(run_id="r2")) == (Step.FAILED, "lost")  # Redis restarted meanwhile
    assert ours.progress(now(aof_rewrites=0)) == (Step.FAILED, "lost")  # CONFIG RESETSTAT
    aof_only = _Attempt(token="t", at=0.0, state="running", run_id="r1", aof_rewrites=3)
    assert aof_only.progress(now(rdb_ok=False, rdb_saves=7)) == (Step.DONE, "")
    old_redis = _Attempt(token="t", at=0.0, state="running", run_id="r1", aof_rewrites=-1)
    assert old_redis.progress(now(aof_rewrites=-1, aof_busy=True)) == (Step.RUNNING, "")
    assert old_redis.progress(now(aof_rewrites=-1)) == (Step.DONE, "")
