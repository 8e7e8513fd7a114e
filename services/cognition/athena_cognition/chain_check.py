"""Cognition's two tasks: the chain check (does the newest user message continue the topic, or start a
new one?) and the window flush (the conversation was closed: form what the window holds).

Per chain check (seed: "Chain-break detection"): read the short-term window, decide with the
detector, and on a break, a force flush or a time gap cut the completed segment out of the window and
hand it to formation. Per flush (MemoryService.FlushWindow, or the idle flush, idle_flush.py): cut
the window up to the event that was newest when it was asked for, and hand that off the same way.

Crash safety: the cut and the parking of the segment under a hand-off key happen in one Lua script,
fenced on the window's head, so a retried task never cuts twice. A task that finds its own parked
segment (formation was down, or the worker died after the cut) hands that segment off again without
deciding anew. The segment id is derived from its scope and events, and FormChain is idempotent by
segment id, so a repeated hand-off never forms two chains.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis

from athena import keys
from athena.embeddings import Embedder, cached_event_embeddings
from athena.errors import PermanentTaskError, RetryableError
from athena.events import ROLE_NAMES, TYPE_NAMES, scope_key, to_timestamp
from athena.formation_client import FormationClient
from athena.internal.v1 import formation_pb2, task_pb2
from athena.metrics import CHAIN_BREAK_DECISIONS, CHAIN_BREAK_SCORE
from athena.queue import CHAIN_CHECK, WINDOW_FLUSH
from athena.redis_util import redis_unavailable, reply_bytes
from athena.stm import ShortTermWindow, parse_event
from athena.tombstones import erases, redis_tombstone
from athena.tracing import tracer
from athena_client.memory.v1 import memory_pb2
from athena_cognition.detector import Arbiter, Decision, Path, Scorer, Thresholds, Turn, decide

__all__ = ["ChainCheckHandler", "DetectorSetup", "segment_id_for", "turn_of"]

log = logging.getLogger("athena.cognition")


@dataclass(frozen=True)
class DetectorSetup:
    scorer: Scorer
    embedder: Embedder
    thresholds: Thresholds
    arbiter: Arbiter | None
    max_events_before_flush: int
    flush_keep_events: int = 0
    """STM_FLUSH_KEEP_EVENTS: the newest events a force flush leaves in the window (0: the seed's cut at the new message)."""
    min_chain_events: int = 0
    """STM_MIN_CHAIN_EVENTS: a topic break that would cut fewer events than this is not cut (0: every break cuts)."""
    session_gap_seconds: float = 0.0
    """STM_SESSION_GAP_SECONDS (0: no time-gap cuts)."""


def turn_of(event: memory_pb2.Event) -> Turn:
    return Turn(
        role=ROLE_NAMES.get(event.role, "system"),
        type=TYPE_NAMES.get(event.type, "message"),
        content=event.content,
        metadata=dict(event.metadata),
        timestamp=event.timestamp.ToNanoseconds() / 1e9 if event.HasField("timestamp") else None,
    )


def segment_id_for(scope: str, events: list[memory_pb2.Event]) -> str:
    digest = hashlib.sha256(f"{scope}|{events[0].id}|{events[-1].id}|{len(events)}".encode()).hexdigest()
    return f"seg_{digest[:32]}"


def _decision_fields(decision: Decision) -> dict[str, Any]:
    return {
        "decision": "break" if decision.is_break else "continue",
        "path": decision.path,
        "score": decision.score,
        "scorer": decision.scorer,
    }


_ERASED = {"decision": "none", "path": "erased"}
_CUT_REASONS = {
    Path.FORCE_FLUSH: formation_pb2.CUT_REASON_FORCE_FLUSH,
    Path.TIME_GAP: formation_pb2.CUT_REASON_TIME_GAP,
}


@dataclass
class ChainCheckHandler:
    redis: Redis
    window: ShortTermWindow
    detector: DetectorSetup
    formation: FormationClient
    hand_off_embeddings: bool = True
    """EMBEDDINGS_HANDOFF: send the events' vectors cognition has with the segment."""

    async def __call__(self, task: task_pb2.Task) -> Mapping[str, Any]:
        if task.type == CHAIN_CHECK and task.HasField("chain_check"):
            run = self._check
        elif task.type == WINDOW_FLUSH and task.HasField("window_flush"):
            run = self._flush
        else:
            raise PermanentTaskError(f"unknown task type {task.type!r}")
        handoff_key = keys.stm_handoff_key(scope_key(task.scope), task.id)
        if await self._erased(task):
            return _ERASED
        with redis_unavailable():
            parked = await self.redis.hgetall(handoff_key)
        if parked:
            # An earlier attempt already cut this segment; finish its hand-off.
            segment = formation_pb2.Segment()
            segment.ParseFromString(reply_bytes(parked[b"segment"]))
            return await self._hand_off(segment, handoff_key, json.loads(parked[b"decision"]))
        with redis_unavailable():
            raws = await self.window.read_raw(task.scope)
        return await run(task, raws, [parse_event(r) for r in raws])

    async def _check(self, task: task_pb2.Task, raws: list[bytes], events: list[memory_pb2.Event]) -> Mapping[str, Any]:
        """Does the new user message continue the window's topic? On a break, cut what came before."""
        new_index = next((i for i, e in enumerate(events) if e.id == task.chain_check.event_id), None)
        if new_index is None:
            # Already cut into an earlier segment (or trimmed off the window): nothing left to decide.
            return {"decision": "none", "path": "not_in_window"}

        with tracer().start_as_current_span("chain_break.decide") as span:
            decision = await decide(
                [turn_of(e) for e in events],
                new_index=new_index,
                scorer=self.detector.scorer,
                embedder=self.detector.embedder,
                thresholds=self.detector.thresholds,
                arbiter=self.detector.arbiter,
                max_events_before_flush=self.detector.max_events_before_flush,
                flush_keep_events=self.detector.flush_keep_events,
                session_gap_seconds=self.detector.session_gap_seconds,
                tenant_id=task.scope.tenant_id,
            )
            span.set_attributes(
                {
                    "athena.decision": "break" if decision.is_break else "continue",
                    "athena.decision.path": decision.path,
                    "athena.decision.scorer": decision.scorer,
                    "athena.decision.score": decision.score if decision.score is not None else -1.0,
                    "athena.window.events": len(events),
                }
            )
        fields = _decision_fields(decision)
        CHAIN_BREAK_DECISIONS.labels(decision.scorer, decision.path).inc()
        if decision.score is not None:
            CHAIN_BREAK_SCORE.labels(decision.scorer).observe(decision.score)
        # The new segment starts at the new message, at the agent turn before it when that turn
        # opened the new topic (path "agent_opened"), or earlier for a force flush that keeps the
        # newest events (those stay in the window: their own checks already ran).
        starts_at = decision.starts_at if decision.starts_at is not None else new_index
        if not decision.is_break or starts_at == 0:
            return fields
        if decision.path not in _CUT_REASONS and starts_at < self.detector.min_chain_events:
            # A topic piece this short stays in the window and joins the next chain; the detector's
            # decision stands as recorded (its quality is measured on the decisions, not the cuts).
            return {**fields, "cut": "deferred"}
        return await self._cut(
            task, raws, events, starts_at, _CUT_REASONS.get(decision.path, formation_pb2.CUT_REASON_TOPIC_BREAK), fields
        )

    async def _flush(self, task: task_pb2.Task, raws: list[bytes], events: list[memory_pb2.Event]) -> Mapping[str, Any]:
        """Close the conversation: cut the window up to and including the event that was newest when
        the flush was asked for (later events stay for their own checks)."""
        payload = task.window_flush
        fields = {"decision": "flush", "path": "flush", "trigger": payload.trigger}
        through = next((i for i, e in enumerate(events) if e.id == payload.through_event_id), None)
        if through is None:
            # Cut already (a break or an earlier flush took it), or the window was erased.
            return {**fields, "decision": "none", "segment_events": 0}
        CHAIN_BREAK_DECISIONS.labels("none", "flush").inc()
        return await self._cut(task, raws, events, through + 1, formation_pb2.CUT_REASON_FLUSH, fields)

    async def _cut(
        self,
        task: task_pb2.Task,
        raws: list[bytes],
        events: list[memory_pb2.Event],
        n: int,
        reason: int,
        fields: Mapping[str, Any],
    ) -> Mapping[str, Any]:
        """Cut the window's first `n` events into a segment, park it and hand it to formation."""
        scope = scope_key(task.scope)
        handoff_key = keys.stm_handoff_key(scope, task.id)
        completed = events[:n]
        segment = formation_pb2.Segment(
            id=segment_id_for(scope, completed),
            scope=task.scope,
            events=completed,
            reason=reason,  # type: ignore[arg-type]
            cut_at=to_timestamp(datetime.now(UTC)),
        )
        with redis_unavailable():
            cut = await self.window.cut(
                task.scope,
                head=raws[:n],
                handoff_key=handoff_key,
                segment=segment.SerializeToString(),
                decision=json.dumps(fields),
            )
        if not cut:
            raise RetryableError("the window changed while deciding; deciding again")
        log.info("cut segment %s (%d events) of %s: %s", segment.id, len(completed), scope, fields["path"])
        if await self._erased(task):  # forgotten while deciding: the cut segment is dropped with its hand-off key
            with redis_unavailable():
                await self.window.drop_handoff(task.scope, handoff_key)
            return _ERASED
        return await self._hand_off(segment, handoff_key, fields)

    async def _erased(self, task: task_pb2.Task) -> bool:
        """ForgetUser ran after this task was queued: it must not touch the window or hand anything off.
        (Its lease was deleted by the erasure, so the worker's ack writes no result either.) A task
        queued after the tombstone may still be of an event stored before it: formation drops such
        events from any segment it is handed (athena_formation.lifecycle.erasure)."""
        with redis_unavailable():
            erased_at = await redis_tombstone(self.redis, task.scope.tenant_id, task.scope.user_id)
        if erases(erased_at, task.enqueued_at):
            log.info(
                "task %s predates the erasure of %s/%s; dropped", task.id, task.scope.tenant_id, task.scope.user_id
            )
            return True
        return False

    async def _hand_off(
        self, segment: formation_pb2.Segment, handoff_key: str, fields: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        # DependencyUnavailable from here fails the attempt: the task backs off, the segment stays parked.
        # The events' vectors cognition already encoded go along: formation need not encode them again.
        embeddings = (
            cached_event_embeddings(self.detector.embedder, segment.events) if self.hand_off_embeddings else None
        )
        response = await self.formation.form_chain(segment, embeddings=embeddings)
        with redis_unavailable():
            await self.window.drop_handoff(segment.scope, handoff_key)
        return {
            **fields,
            "segment_id": segment.id,
            "segment_events": len(segment.events),
            "formation_outcome": formation_pb2.FormOutcome.Name(response.outcome),
            "chain_id": response.chain_id,
            "formation_reason": response.reason,
        }
