"""After an erasure, have Redis rewrite its files on disk, so the erased text leaves them too.

DEL removes a key from Redis's memory, but the append-only file (AOF) keeps the commands that wrote it
(a window entry is a protobuf Event holding the content) until Redis rewrites the file, and an RDB
snapshot keeps it until the next snapshot. So after every ForgetUser the eraser calls `request()`, which
marks a rewrite as wanted in Redis (any replica and a restart see it), and a background loop in every
ingest replica runs `tick()`:

1. nothing wanted: idle. Otherwise take a short lock (SET NX PX) so one replica at a time acts;
2. read `INFO persistence` / `INFO server` and `CONFIG GET save`. Neither AOF nor RDB snapshots on:
   nothing on disk to rewrite; the flag is cleared (logged once per process);
3. a rewrite started for the latest request is running: wait; finished ok (Redis's rewrite counter
   moved past the one read before it, no child running, last status ok): clear the flag; failed, or
   lost to a Redis restart: counted, tried again later;
4. otherwise, once no other rewrite or snapshot is running and none was started in the last
   ERASURE_AOF_REWRITE_MIN_INTERVAL_SECONDS: BGREWRITEAOF when AOF is on, and BGSAVE SCHEDULE when
   `save` rules are configured (a snapshot written after the erasure replaces the old dump file).

The flag holds a fresh token per request and is deleted only when the token is unchanged, so an
erasure arriving while a rewrite runs (that rewrite may have copied its data) gets a rewrite of its own.
A managed Redis that refuses INFO, BGREWRITEAOF or BGSAVE gets a warning and a counted refusal, and is
asked again after a pause; it never stops the loop. Replicas, backups and managed snapshots are the
operator's part: docs/security.md, "Erasure and Redis persistence".
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from athena import keys
from athena.errors import DependencyUnavailable
from athena.metrics import (
    PERSISTENCE_REWRITE_FAILURES,
    PERSISTENCE_REWRITE_LAST_STARTED,
    PERSISTENCE_REWRITE_WANTED,
    PERSISTENCE_REWRITES_STARTED,
)
from athena.redis_util import redis_unavailable

__all__ = ["PersistenceRewrite", "Step"]

log = logging.getLogger("athena.ingest.persistence_rewrite")

RETRY_AFTER_FAILURE_SECONDS = 60.0
"""Least pause before asking again after a refusal or a failed rewrite (also when the interval is 0),
so a Redis that refuses is not asked, and warned about, every few seconds."""
LOCK_MS = 10_000
"""Lifetime of the lock; one tick holds it for a few round trips and one fork."""

_DELETE_IF_EQUAL = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


class Step(str, enum.Enum):
    """What one tick did."""

    IDLE = "idle"  # no rewrite wanted
    LOCKED = "locked"  # another replica holds the lock
    NOTHING_TO_REWRITE = "nothing_to_rewrite"  # neither AOF nor RDB snapshots on: flag cleared
    BUSY = "busy"  # a rewrite or snapshot we did not start for this request is running; ours follows
    RATE_LIMITED = "rate_limited"  # the last attempt is too recent
    STARTED = "started"
    RUNNING = "running"  # the rewrite started for the latest request is still running
    DONE = "done"  # it finished: flag cleared
    FAILED = "failed"  # it failed or was lost: counted, tried again later
    REFUSED = "refused"  # Redis refused a command: counted, tried again later


@dataclass(frozen=True)
class _Persistence:
    """What Redis says about its persistence right now."""

    run_id: str
    aof: bool
    rdb: bool
    """`save` rules configured (False when CONFIG GET is refused: then we cannot tell)."""
    aof_busy: bool
    rdb_busy: bool
    aof_rewrites: int
    """Rewrites forked since Redis started (-1: not reported, Redis before 7.0)."""
    rdb_saves: int
    """Snapshots forked since Redis started (-1: not reported)."""
    aof_ok: bool
    rdb_ok: bool


@dataclass(frozen=True)
class _Attempt:
    """The last attempt by any replica (keys.PERSISTENCE_REWRITE_ATTEMPT)."""

    token: str
    """The wanted-flag token it served."""
    at: float
    """When it started, failed or was refused (epoch seconds): the rate limit counts from here."""
    state: str
    """running, done, failed or refused."""
    started_at: float = 0.0
    """When the last rewrite was started (kept across later refusals, for the metric)."""
    run_id: str = ""
    aof_rewrites: int | None = None
    """Redis's aof_rewrites before our BGREWRITEAOF; None: not issued."""
    rdb_saves: int | None = None
    """Redis's rdb_saves before our BGSAVE; None: not issued."""

    @classmethod
    def parse(cls, raw: bytes | str | None) -> _Attempt | None:
        if not raw:
            return None
        try:
            return cls(**json.loads(raw))
        except (ValueError, TypeError):
            return None  # unreadable (another version's format): as if none

    def dump(self) -> str:
        return json.dumps(asdict(self))

    def progress(self, now: _Persistence) -> tuple[Step, str]:
        """RUNNING, DONE or FAILED with the reason (failed, lost)."""
        if now.run_id != self.run_id:
            return Step.FAILED, "lost"  # Redis restarted: the rewrite may never have finished
        parts = []
        if self.aof_rewrites is not None:
            parts.append(_one(now.aof_rewrites, self.aof_rewrites, now.aof_busy, now.aof_ok))
        if self.rdb_saves is not None:
            parts.append(_one(now.rdb_saves, self.rdb_saves, now.rdb_busy, now.rdb_ok))
        for outcome in ("lost", "failed", "running"):
            if outcome in parts:
                return (Step.RUNNING, "") if outcome == "running" else (Step.FAILED, outcome)
        return Step.DONE, ""


def _one(count: int, before: int, busy: bool, ok: bool) -> str:
    if count < 0 or before < 0:  # no counter (Redis before 7.0): a scheduled BGSAVE is not visible then
        return "running" if busy else ("done" if ok else "failed")
    if count < before:
        return "lost"  # CONFIG RESETSTAT: we cannot tell
    if count == before or busy:
        return "running"  # scheduled and not yet forked, or forked and not yet done
    return "done" if ok else "failed"


@dataclass
class PersistenceRewrite:
    """Schedules Redis rewrites after erasures, rate-limited across all ingest replicas."""

    redis: Redis
    min_interval: float = 300.0
    """ERASURE_AOF_REWRITE_MIN_INTERVAL_SECONDS."""
    clock: Callable[[], float] = time.time
    """Epoch seconds; ingest replicas' clocks agree (docs/architecture.md, "Erasure")."""

    def __post_init__(self) -> None:
        self._wake = asyncio.Event()
        self._said: set[str] = set()
        self._delete_if_equal = self.redis.register_script(_DELETE_IF_EQUAL)

    async def request(self) -> None:
        """Mark a rewrite as wanted (the eraser calls this once an erasure is done)."""
        with redis_unavailable():
            await self.redis.set(keys.PERSISTENCE_REWRITE_WANTED, f"{self.clock():.6f}:{uuid.uuid4().hex}")
        PERSISTENCE_REWRITE_WANTED.set(1)
        self._wake.set()

    async def run_forever(self, *, poll_seconds: float = 5.0) -> None:
        """Tick every `poll_seconds`, and right after a request of this process; never stops on an error."""
        while True:
            try:
                await self.tick()
            except DependencyUnavailable as exc:
                log.warning("persistence rewrite check skipped: %s", exc)
            except Exception:
                log.exception("persistence rewrite check failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=poll_seconds)
            self._wake.clear()

    async def tick(self) -> Step:
        """One look at the flag and, when a rewrite is wanted, one step towards it (see the module)."""
        with redis_unavailable():
            wanted, attempt = await self._read()
            if wanted is None:
                return Step.IDLE
            lock = uuid.uuid4().hex
            if not await self.redis.set(keys.PERSISTENCE_REWRITE_LOCK, lock, nx=True, px=LOCK_MS):
                return Step.LOCKED
            try:
                wanted, attempt = await self._read()  # another replica may have acted meanwhile
                return Step.IDLE if wanted is None else await self._step(wanted, attempt)
            finally:
                await self._delete_if_equal(keys=[keys.PERSISTENCE_REWRITE_LOCK], args=[lock])

    async def _read(self) -> tuple[str | None, _Attempt | None]:
        raw_wanted, raw_attempt = await self.redis.mget(
            keys.PERSISTENCE_REWRITE_WANTED, keys.PERSISTENCE_REWRITE_ATTEMPT
        )
        wanted = raw_wanted.decode() if isinstance(raw_wanted, bytes) else raw_wanted
        attempt = _Attempt.parse(raw_attempt)
        PERSISTENCE_REWRITE_WANTED.set(0 if wanted is None else 1)
        if attempt is not None and attempt.started_at:
            PERSISTENCE_REWRITE_LAST_STARTED.set(attempt.started_at)
        return wanted, attempt

    async def _step(self, wanted: str, attempt: _Attempt | None) -> Step:
        now = self.clock()
        ours_running = attempt is not None and attempt.token == wanted and attempt.state == "running"
        if attempt is not None and not ours_running and now - attempt.at < self._gap(attempt):
            return Step.RATE_LIMITED
        try:
            state = await self._persistence()
        except ResponseError as exc:
            return await self._refused("INFO", exc, wanted, attempt, now)
        if not state.aof and not state.rdb:
            self._once(
                "off",
                logging.INFO,
                "Redis keeps neither an append-only file nor RDB snapshots: nothing on disk to rewrite after erasures",
            )
            await self._clear(wanted)
            return Step.NOTHING_TO_REWRITE

        if ours_running:
            assert attempt is not None
            step, reason = attempt.progress(state)
            if step is Step.DONE:
                await self._clear(wanted)
                await self._record(replace(attempt, state="done"))
                log.info("Redis rewrote its persistence after the latest erasure; the erased data is off its disk")
            elif step is Step.FAILED:
                PERSISTENCE_REWRITE_FAILURES.labels(reason).inc()
                log.warning(
                    "Redis persistence rewrite after an erasure %s; trying again later",
                    "failed" if reason == "failed" else "was lost",
                )
                await self._record(replace(attempt, state="failed", at=now))
            return step

        if state.aof_busy or state.rdb_busy:
            return Step.BUSY  # it may have copied the data before the erasure: ours runs after it

        kinds = [kind for kind, on in (("aof", state.aof), ("rdb", state.rdb)) if on]
        for kind in kinds:
            try:
                if kind == "aof":
                    await self.redis.bgrewriteaof()
                else:
                    await self.redis.bgsave(schedule=True)  # scheduled after the AOF rewrite when one runs
            except ResponseError as exc:
                return await self._refused("BGREWRITEAOF" if kind == "aof" else "BGSAVE", exc, wanted, attempt, now)
            PERSISTENCE_REWRITES_STARTED.labels(kind).inc()
        await self._record(
            _Attempt(
                token=wanted,
                at=now,
                state="running",
                started_at=now,
                run_id=state.run_id,
                aof_rewrites=state.aof_rewrites if state.aof else None,
                rdb_saves=state.rdb_saves if state.rdb else None,
            )
        )
        PERSISTENCE_REWRITE_LAST_STARTED.set(now)
        log.info("asked Redis to rewrite its persistence (%s) after an erasure", ", ".join(kinds))
        return Step.STARTED

    def _gap(self, attempt: _Attempt) -> float:
        """Least time from `attempt` to the next one: the interval after a start, longer after a refusal or failure."""
        return (
            self.min_interval
            if attempt.state in ("running", "done")
            else max(self.min_interval, RETRY_AFTER_FAILURE_SECONDS)
        )

    async def _persistence(self) -> _Persistence:
        info: dict[str, Any] = await self.redis.info("persistence")
        server: dict[str, Any] = await self.redis.info("server")
        return _Persistence(
            run_id=str(server.get("run_id", "")),
            aof=int(info.get("aof_enabled", 0)) == 1,
            rdb=await self._rdb_configured(),
            aof_busy=bool(int(info.get("aof_rewrite_in_progress", 0)) or int(info.get("aof_rewrite_scheduled", 0))),
            rdb_busy=bool(int(info.get("rdb_bgsave_in_progress", 0))),
            aof_rewrites=int(info.get("aof_rewrites", -1)),
            rdb_saves=int(info.get("rdb_saves", -1)),
            aof_ok=str(info.get("aof_last_bgrewrite_status", "ok")) == "ok",
            rdb_ok=str(info.get("rdb_last_bgsave_status", "ok")) == "ok",
        )

    async def _rdb_configured(self) -> bool:
        try:
            rules = (await self.redis.config_get("save")).get("save", "")
        except ResponseError as exc:
            self._once(
                "config",
                logging.WARNING,
                "Redis refused CONFIG GET save (%s): whether it writes RDB snapshots is unknown, none is requested after erasures (docs/security.md)",
                exc,
            )
            return False
        return bool((rules.decode() if isinstance(rules, bytes) else str(rules)).strip())

    async def _refused(
        self, command: str, exc: ResponseError, wanted: str, attempt: _Attempt | None, now: float
    ) -> Step:
        PERSISTENCE_REWRITE_FAILURES.labels("refused").inc()
        refused = _Attempt(
            token=wanted, at=now, state="refused", started_at=attempt.started_at if attempt is not None else 0.0
        )
        log.warning("Redis refused %s after an erasure (%s); asking again in %.0fs", command, exc, self._gap(refused))
        await self._record(refused)
        return Step.REFUSED

    async def _clear(self, wanted: str) -> None:
        """Delete the flag unless a newer request replaced its token."""
        if await self._delete_if_equal(keys=[keys.PERSISTENCE_REWRITE_WANTED], args=[wanted]):
            PERSISTENCE_REWRITE_WANTED.set(0)

    async def _record(self, attempt: _Attempt) -> None:
        await self.redis.set(keys.PERSISTENCE_REWRITE_ATTEMPT, attempt.dump())

    def _once(self, what: str, level: int, message: str, *args: object) -> None:
        if what not in self._said:
            self._said.add(what)
            log.log(level, message, *args)
