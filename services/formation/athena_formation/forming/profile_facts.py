"""What a chain keeps of the user's lasting facts: each sentence of their messages that states one
(personal_facts.lasting_fact_sentences), with the event that told it and when.

These are the chain document's `profile_facts`, from which GetContext's profile is read
(search/user_profile.py), and they decide its `lasting_fact` (any such sentence) and `updates_fact`
(one that says it changed, fact_updates.py). A merge adds the segment's facts to the chain's; a chain
formed again after an erasure has them read again from the events left.

Its `moment_facts` are the user's other personal facts (personal_facts.personal_fact_sentences that
are not lasting: a plan, an event, what they are in the middle of, a statement the signal cannot
read: "My flight to Denver leaves on March 14.", "I'm learning Japanese."). They stay out of the
profile, which keeps what stays true, but are scored as texts of their own like the lasting ones
(search/fact_evidence.py): a fact told in passing is found by itself, whatever topic's chain it
landed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from athena.events import is_user_message, timestamp_of
from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.answered_questions import answered_questions
from athena_formation.forming.fact_updates import updates_fact
from athena_formation.forming.personal_facts import lasting_fact_sentences, personal_fact_sentences
from athena_formation.text.messages import conversation

__all__ = ["fact_fields", "merged_facts", "moment_facts", "profile_facts"]


def profile_facts(events: Iterable[memory_pb2.Event]) -> list[dict[str, Any]]:
    """The lasting-fact sentences of the user's messages among `events`, in order: `text`, `event_id`
    and `told_at` (the event's timestamp, epoch seconds, as chain documents keep times). An answer to
    the agent's question about the user that states none is told as the question and the answer
    ("What's your dog's name? Rex.", answered_questions.py)."""
    events = list(events)
    answers = answered_questions([m for m in conversation(events) if m.is_dialogue])
    return [
        {"text": sentence, "event_id": e.id, "told_at": timestamp_of(e.timestamp).timestamp()}
        for k, e in enumerate(events)
        if is_user_message(e)
        for sentence in lasting_fact_sentences(e.content) or ([answers[k]] if k in answers else [])
    ]


def moment_facts(events: Iterable[memory_pb2.Event]) -> list[dict[str, Any]]:
    """The user's personal-fact sentences among `events` that are not lasting ones, in order, as
    `profile_facts` keeps its own (module docstring)."""
    return [
        {"text": sentence, "event_id": e.id, "told_at": timestamp_of(e.timestamp).timestamp()}
        for e in events
        if is_user_message(e)
        for sentence in personal_fact_sentences(e.content)
        if not lasting_fact_sentences(sentence)
    ]


def fact_fields(events: Sequence[memory_pb2.Event]) -> dict[str, Any]:
    """`lasting_fact`, `updates_fact`, `profile_facts` and `moment_facts` of a formation record or
    chain document."""
    facts = profile_facts(events)
    return {
        "lasting_fact": bool(facts),
        "updates_fact": any(updates_fact(f["text"]) for f in facts),
        "profile_facts": facts,
        "moment_facts": moment_facts(events),
    }


def merged_facts(*fact_lists: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The facts of a chain and of a segment merged into it, each sentence of an event once (a
    retried merge must not repeat them)."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for facts in fact_lists:
        for f in facts:
            seen.setdefault((str(f["event_id"]), str(f["text"])), dict(f))
    return list(seen.values())
