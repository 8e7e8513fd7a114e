"""`athena load`: traffic from several tenants, one noisy, against a local stack, then the loss check.

The command run starts its own local stack (about 30 s to load the embedding model on 2 cores) and
sends for 5 s per phase at low rates, well under a minute and a half in all. Figures are checked for
presence and sign only, never against a speed. The verification is also driven directly against
real Redis and nx-27017 with an event missing from the log and a user message never decided, to
prove that such losses are counted: an event missing from the log, and a user message dead-lettered,
never settled, or trimmed off the window before its check ran.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from redis.asyncio import Redis
from typer.testing import CliRunner

from athena import keys
from athena.events import event_to_doc, to_timestamp
from athena.stores import EventLog
from athena_cli.main import app
from athena_client.memory.v1 import memory_pb2
from athena_lab.load._driver import Ack, PhaseTraffic
from athena_lab.load._report import PhaseOutcome, build_report
from athena_lab.load._verify import events_in_log, wait_decided

FIGURES = (
    "throughput_events_per_s",
    "quiet_queue_wait_p50_ms",
    "quiet_queue_wait_p95_ms",
    "quiet_queue_wait_p50_ms_without_noisy",
    "quiet_queue_wait_p95_ms_without_noisy",
    "noisy_queue_wait_p95_ms",
    "store_event_p95_ms",
)


def _positive(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


@pytest.mark.slow
def test_load_against_a_local_stack_loses_nothing_and_reports_every_figure() -> None:
    result = CliRunner().invoke(
        app,
        [
            "load",
            "--tenants",
            "3",
            "--users-per-tenant",
            "2",
            "--rate",
            "0.6",
            "--noisy-factor",
            "10",
            "--duration",
            "5",
            "--drain-timeout",
            "120",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout[result.stdout.index("{") :])
    print({k: report[k] for k in ("acknowledged", "in_log", "user_messages", "decided", "lost", *FIGURES)})

    assert report["lost"] == 0
    assert report["acknowledged"] > 0 and report["acknowledged"] == report["in_log"]
    assert report["user_messages"] > 0 and report["decided"] == report["user_messages"]
    assert report["dead_lettered"] == 0 and report["undecided"] == 0 and report["trimmed_before_check"] == 0
    for key in FIGURES:
        assert _positive(report[key]), (key, report[key])
    baseline, noisy = report["phases"]["baseline"], report["phases"]["noisy"]
    assert baseline["noisy_queue_wait_p95_ms"] is None, "the baseline phase must not carry noisy traffic"
    assert noisy["acknowledged"] > baseline["acknowledged"], "the noisy tenant adds traffic in the second phase"
    assert report["config"]["tenants"] == 3 and report["config"]["noisy_users"] == 2


def _event(tenant: str, user: str, event_id: str, role: int) -> memory_pb2.Event:
    now = to_timestamp(datetime.now(UTC))
    return memory_pb2.Event(
        id=event_id,
        scope=memory_pb2.Scope(tenant_id=tenant, user_id=user, agent_id="assistant"),
        role=role,
        type=memory_pb2.EVENT_TYPE_MESSAGE,
        content="hello",
        timestamp=now,
        stored_at=now,
        client_event_id=event_id,
    )


async def test_an_event_missing_from_the_log_and_every_undecided_message_count_as_lost(
    redis: Redis,
    mongo: AsyncMongoClient,
    mongo_db_name: str,  # type: ignore[type-arg]
) -> None:
    scope = keys.scope_id("t0", "u0", "assistant")
    acks = [
        Ack("t0", "u0", "assistant", "ev-decided", "chk-ev-decided", False, 1.0),
        Ack("t0", "u0", "assistant", "ev-agent", "", False, 1.0),
        Ack("t0", "u0", "assistant", "ev-not-logged", "", False, 1.0),
        Ack("t0", "u0", "assistant", "ev-undecided", "chk-ev-undecided", False, 1.0),
        Ack("t0", "u0", "assistant", "ev-dead", "chk-ev-dead", False, 1.0),
        Ack("t0", "u0", "assistant", "ev-trimmed", "chk-ev-trimmed", False, 1.0),
    ]
    logged = [_event("t0", "u0", a.event_id, memory_pb2.ROLE_USER) for a in acks if a.event_id != "ev-not-logged"]
    await EventLog(mongo, mongo_db_name).collection.insert_many([event_to_doc(e) for e in logged])
    await redis.set(
        keys.task_result_key(scope, "chk-ev-decided"),
        json.dumps({"status": "done", "decision": "continue", "queue_wait_ms": 3.5}),
    )
    await redis.set(
        keys.task_result_key(scope, "chk-ev-dead"), json.dumps({"status": "dead_lettered", "error": "boom"})
    )
    await redis.set(keys.task_result_key(scope, "chk-ev-undecided"), json.dumps({"status": "retry_scheduled"}))
    await redis.set(
        keys.task_result_key(scope, "chk-ev-trimmed"),
        json.dumps({"status": "done", "decision": "none", "path": "not_in_window"}),
    )

    decisions = await wait_decided(redis, acks, timeout=0.5, poll=0.1)
    in_log = await events_in_log(mongo, mongo_db_name, [a.event_id for a in acks])

    assert in_log == {"ev-decided", "ev-agent", "ev-undecided", "ev-dead", "ev-trimmed"}
    assert set(decisions.results) == {"chk-ev-decided", "chk-ev-dead", "chk-ev-trimmed"}
    phase = PhaseOutcome(PhaseTraffic(name="baseline", seconds=1.0, offered=len(acks), acks=acks), decisions)
    empty = PhaseOutcome(PhaseTraffic(name="noisy", seconds=1.0), decisions)
    report = build_report(phase, empty, in_log, config={})
    assert (report["acknowledged"], report["in_log"], report["user_messages"], report["decided"]) == (6, 5, 4, 1)
    assert report["dead_lettered"] == 1 and report["undecided"] == 1 and report["trimmed_before_check"] == 1
    assert report["lost"] == 4, "an event not in the log; a dead-lettered, an undecided and a trimmed message"
    assert report["quiet_queue_wait_p50_ms_without_noisy"] == 3.5
