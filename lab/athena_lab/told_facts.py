"""`athena eval told-facts`: facts a user tells in passing among other topics, asked back in other words.

Each user of the run tells the facts of `told_facts.json` one by one, each after two help-desk
dialogues of a SuperDialseg file (eight turns each, the noise a real memory holds) and each
acknowledged with "Noted."; the user then leaves (FlushWindow) and, once every check is processed,
asks each fact's question ("Who is my spouse?" for "My wife is called Priya."). A fact is found at k
when a top-k hit holds its event. Users take different dialogues, so their figures differ. A fact
given as an answer ("Priya.") is told after the agent's question it answers ("What's your name?"); a
correction ("I left Google, I now work at Spotify.") after the fact it corrects and the noise before it.
With `at_once`, each question is asked right after its fact is told (the user still there): what
is found while the fact is in the short-term window or being formed.

Each question is also sent as GetContext's query with the defaults an agent gets (3 relevant chains,
a profile of 20): whether the fact's event is in `relevant_chains`, in `profile`, or in either.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from athena import keys
from athena_cli.demo import wait_until_processed
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2

__all__ = ["PAIRS", "PARTS", "Told", "ToldFactsReport", "load_noise", "load_pairs", "noise_needed", "run_told_facts"]

PAIRS = Path(__file__).with_name("told_facts.json")
TENANT = "told-facts"
AGENT = "assistant"
NOISE_TURNS = 8
"""Turns taken from each noise dialogue."""
NOISE_PER_FACT = 2
"""Noise dialogues told before each fact."""


class Told(NamedTuple):
    """One entry of told_facts.json."""

    fact: str
    """What the user says."""
    question: str
    """What the user asks later, in other words."""
    asked: str | None = None
    """The agent's question the fact answers, told just before it (None: the fact is said unasked)."""
    corrects: str | None = None
    """An earlier fact this one corrects, told before the noise dialogues that come before it (None: it
    corrects nothing). The question asks for what holds now: the correction is the one to find."""


@dataclass
class ToldFactsReport:
    k: int
    part: str
    at_once: bool = False
    """Each fact asked right after it was told, not after the user left (FlushWindow) and the pipeline processed it."""
    ranks: list[list[int | None]] = field(default_factory=list)
    """Per user, per fact: the rank of the first hit holding the fact (1 is first), None past k."""
    in_context: list[list[tuple[bool, bool]]] = field(default_factory=list)
    """Per user, per fact: (in GetContext's relevant_chains or its page of events, in its profile),
    with the question as query."""

    def as_dict(self) -> dict[str, Any]:
        flat = [r for user in self.ranks for r in user]
        asked = max(1, len(flat))
        return {
            "k": self.k,
            "part": self.part,
            "at_once": self.at_once,
            "users": len(self.ranks),
            "questions": len(flat),
            "found_at_k": round(sum(r is not None for r in flat) / asked, 4),
            "found_first": round(sum(r == 1 for r in flat) / asked, 4),
            "mean_reciprocal_rank": round(sum(1 / r for r in flat if r is not None) / asked, 4),
            "context_relevant_chains": self._share(lambda chains, _: chains),
            "context_profile": self._share(lambda _, profile: profile),
            "context_either": self._share(lambda chains, profile: chains or profile),
            "ranks": self.ranks,
        }

    def _share(self, counts: Callable[[bool, bool], bool]) -> float:
        flat = [pair for user in self.in_context for pair in user]
        return round(sum(counts(*pair) for pair in flat) / max(1, len(flat)), 4)


PARTS = (
    "seen",
    "held_out",
    "held_out_2",
    "languages",
    "languages_2",
    "needs",
    "needs_2",
    "languages_3",
    "preferences",
    "agent_queries",
    "agent_queries_2",
    "languages_4",
    "languages_5",
    "languages_6",
    "languages_7",
    "answers",
    "answers_2",
    "everyday",
    "requests",
    "chat",
    "mixed",
    "corrections",
    "corrections_2",
    "held_out_3",
    "held_out_4",
    "held_out_5",
    "held_out_6",
    "held_out_7",
    "held_out_8",
    "held_out_9",
    "held_out_10",
    "held_out_11",
)
"""The parts of told_facts.json, in the order they were written (its "_about")."""


def load_pairs(part: str, path: Path = PAIRS) -> list[Told]:
    """The entries of one part of the file (PARTS), or of every part ("all"): [fact, question] or
    [fact, question, the agent's question the fact answers]."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    parts = list(PARTS) if part == "all" else [part]
    return [Told(*entry) for name in parts for entry in doc[name]]


def load_noise(path: Path) -> list[list[tuple[str, str]]]:
    """The dialogues of a SuperDialseg (Def-DTS) jsonl file as (role, text) turns, boundaries dropped."""
    dialogues = []
    for line in path.read_text(encoding="utf-8").splitlines():
        turns = [t for t in json.loads(line)["dialogue"].split("[NEWLINE]") if t and t != "[BOUNDARY]"]
        dialogues.append([(role, text) for role, _, text in (t.partition(": ") for t in turns) if text])
    return dialogues


def noise_needed(pairs: int, users: int) -> int:
    """How many noise dialogues `users` users telling `pairs` facts take (each user its own)."""
    return users * (NOISE_PER_FACT * pairs + 1)


async def run_told_facts(
    connect: Callable[..., AsyncAthenaClient],
    redis_url: str,
    pairs: Sequence[Told],
    noise: Sequence[Sequence[tuple[str, str]]],
    *,
    part: str,
    users: int,
    k: int,
    timeout: float,
    at_once: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> ToldFactsReport:
    """Tell, leave, wait, ask; or with `at_once` ask each fact right after telling it (module docstring).
    `connect(tenant_id=...)` as LocalStack.client."""
    report = ToldFactsReport(k=k, part=part, at_once=at_once)
    stride = noise_needed(len(pairs), 1)
    if len(noise) < noise_needed(len(pairs), users):
        raise ValueError(
            f"{users} users need {noise_needed(len(pairs), users)} noise dialogues, the file has {len(noise)}"
        )
    async with connect(tenant_id=TENANT) as client:
        for u in range(users):
            user = f"user-{u}"
            scope = client.scope(TENANT, user, AGENT)
            fact_events: list[str] = []
            found: list[tuple[int | None, tuple[bool, bool]]] = []
            task_ids: list[str] = []
            for i, told in enumerate(pairs):
                first = u * stride + i * NOISE_PER_FACT
                turns = [("user", told.corrects), ("agent", "Noted.")] if told.corrects else []
                turns += [t for d in noise[first : first + NOISE_PER_FACT] for t in d[:NOISE_TURNS]]
                turns += [("agent", told.asked)] if told.asked else []
                turns += [("user", told.fact), ("agent", "Noted.")]
                stored = await client.store_events(scope, [EventInput(role, text) for role, text in turns])
                fact_events.append(stored.results[-2].event_id)
                task_ids += [r.task_id for r in stored.results if r.task_id]
                if at_once:
                    found.append(await _ask(client, scope, told.question, fact_events[-1], k=k))
                if progress:
                    progress(f"user {u + 1} of {users} tells", i + 1, len(pairs))
            flush = await client.flush_window(scope)
            task_ids += [flush.task_id] if flush.task_id else []
            await wait_until_processed(redis_url, keys.scope_id(TENANT, user, AGENT), task_ids, timeout=timeout)
            if not at_once:
                found = [
                    await _ask(client, scope, told.question, event_id, k=k)
                    for told, event_id in zip(pairs, fact_events)
                ]
            report.ranks.append([rank for rank, _ in found])
            report.in_context.append([context for _, context in found])
    return report


async def _ask(
    client: AsyncAthenaClient, scope: memory_pb2.Scope, question: str, event_id: str, *, k: int
) -> tuple[int | None, tuple[bool, bool]]:
    """The question through SearchMemory (the rank of the first hit holding the fact's event, None
    past k) and GetContext (whether the event is in its relevant chains or, while the fact is in the
    window, among the page's own events, which the relevant chains leave out; and in its profile)."""
    hits = await client.search_memory(scope, question, limit=k)
    rank = next((n + 1 for n, h in enumerate(hits) if event_id in h.event_ids), None)
    page = await client.get_context(scope, query=question)
    return rank, (
        any(event_id in h.event_ids for h in page.relevant_chains) or any(e.id == event_id for e in page.events),
        any(f.event_id == event_id for f in page.profile),
    )
