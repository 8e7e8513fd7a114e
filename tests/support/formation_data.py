"""Conversations, segments and helpers shared by the formation tests (imported by name, not through conftest)."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from athena.events import to_timestamp
from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.server import Formation

SCOPE = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="helper")
_ids = itertools.count()
INTERNAL_TOKEN = secrets.token_urlsafe(32)
"""The internal credential the in-process formation requires (fresh each run)."""

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
KYOTO_AGAIN = [
    ("user", "Back to my Kyoto trip: which temples in Kyoto need booking in advance in April?"),
    (
        "agent",
        "Book Saiho-ji, the moss temple, weeks ahead; the Katsura Imperial Villa in Kyoto also needs a reservation.",
    ),
    ("user", "And when should I visit Kiyomizu-dera in Kyoto to avoid the crowds?"),
    ("agent", "Arrive at opening at 6 am or in the last hour before closing; weekday mornings in Kyoto are quietest."),
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
COOKING = [
    ("user", "What's a good vegetarian dinner I can cook in 30 minutes with chickpeas and spinach?"),
    (
        "agent",
        "Try a chickpea and spinach curry: fry onion, garlic and ginger, add curry powder and tomatoes, then the chickpeas.",
    ),
    ("user", "Could I make the curry with coconut milk instead of tomatoes?"),
    ("agent", "Yes, coconut milk makes the curry creamier and milder; add a squeeze of lime at the end."),
]
SMALL_TALK = [("user", "haha ok thanks!"), ("agent", "You're welcome!")]


def make_segment(
    turns: Sequence[tuple[str, str]], *, start: datetime | None = None, scope: memory_pb2.Scope = SCOPE
) -> formation_pb2.Segment:
    t0 = start or datetime.now(UTC) - timedelta(minutes=10)
    events = []
    for i, (role, text) in enumerate(turns):
        n = next(_ids)
        events.append(
            memory_pb2.Event(
                id=f"ev_test{n:06d}",
                scope=scope,
                role=memory_pb2.ROLE_USER if role == "user" else memory_pb2.ROLE_AGENT,
                type=memory_pb2.EVENT_TYPE_MESSAGE,
                content=text,
                timestamp=to_timestamp(t0 + timedelta(seconds=30 * i)),
                stored_at=to_timestamp(t0 + timedelta(seconds=30 * i)),
                client_event_id=f"c{n}",
            )
        )
    return formation_pb2.Segment(
        id=f"seg_test{next(_ids):06d}", scope=scope, events=events, reason=formation_pb2.CUT_REASON_TOPIC_BREAK
    )


async def milvus_ids(f: Formation) -> set[str]:
    rows = await f.vectors._run(
        lambda c: c.query(f.vectors.collection, filter='chain_id != ""', output_fields=["chain_id"])
    )
    return {r["chain_id"] for r in rows}
