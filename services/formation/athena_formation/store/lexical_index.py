"""Lexical search over each user's chains: BM25 on the chains' lexicons, held in formation's memory.

SearchMemory ranks by the cosine of the chain's one embedding *and* by the query's words found in
the chain (ranking.py). The words come from the chain documents' `lexicon` field (lexicon.py); this
module keeps, per searched user, an inverted index of them: term -> (rows, counts), rows being the
user's chains. A user's index is read from MongoDB by its first search, or with every other user's
by the warm-up as formation starts (`warm`, one writer only), and then kept current:

- by formation's own writes, applied here after MongoDB accepted them (`put`, `drop`);
- with a shared vector store (a Milvus server, several formation replicas, each writing chains), also
  by re-reading the user's chains updated since the last read, at most every `refresh_seconds`
  before a search. A chain erased or archived by another replica may linger until then; search
  hydrates every hit from MongoDB and drops what is no longer active, so it is never returned.

Score of a chain for query terms q (BM25, k1 = 1.2, b = 0.75, over the user's active chains), scaled
to [0, 1] by the most a chain could score, so it can be weighed against a cosine:

    lexical = sum_{t in q} idf(t) x tf(t) (k1 + 1) / (tf(t) + k1 (1 - b + b len / avglen))
              / sum_{t in q} idf(t) (k1 + 1),      idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

A question's expansion terms (search/fact_kinds.py) add their own terms of the numerator times
SEARCH_EXPANSION_WEIGHT, not to the denominator; the score is then capped at 1.

Memory: about 8 bytes per (chain, distinct term) pair; bounded by `max_chains` rows in all, past
which the least recently searched users are dropped and read again on their next search.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from array import array
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from athena.text import terms
from athena_formation.store.agent_filter import AgentColumn
from athena_formation.store.cache_eviction import evict_least_recent
from athena_formation.store.chain_agents import agents_key, chain_agents

__all__ = [
    "EMPTY_CORPUS",
    "Corpus",
    "LexicalIndex",
    "LexicalScores",
    "LexiconRow",
    "LexiconSource",
    "ToldFact",
    "UserLexicon",
    "chain_span",
    "fact_texts",
    "row_from_doc",
    "weighted_terms",
]

log = logging.getLogger("athena.formation.lexical")

K1 = 1.2
B = 0.75

UserKey = tuple[str, str]
"""(tenant_id, user_id)"""


@dataclass(frozen=True)
class LexiconRow:
    """One chain as the index needs it (read from its document)."""

    chain_id: str
    agent_id: str
    """The chain's agents key (chain_agents.py): its agent id when it has one agent."""
    lexicon: Mapping[str, int]
    event_count: int
    active: bool = True
    first_event_at: float | None = None
    """Epoch seconds of the chain's first event (None: not known), for the dates a query names."""
    last_event_at: float | None = None
    """Epoch seconds of its last event."""
    facts: tuple[str, ...] = ()
    """The lasting facts the user told in it (its `profile_facts`' sentences): scored one by one for
    a question about the user (search/fact_evidence.py)."""
    moments: tuple[str, ...] = ()
    """The user's other personal facts told in it (its `moment_facts`' sentences): scored by their
    embedding alone, among the user's newest facts (fact_evidence.FACTS_NEWEST)."""


@dataclass(frozen=True)
class ToldFact:
    """A fact of one of the user's chains, with its terms counted as a chain's lexicon counts them."""

    chain_id: str
    text: str
    lexicon: Mapping[str, int]
    position: int = 0
    """Its place among its chain's facts, oldest first (the order `profile_facts` keeps), its other
    personal facts after the lasting ones."""
    lasting: bool = True
    """One of the chain's lasting facts (LexiconRow.facts), else one of its `moments`: those are not
    found by their words (their chain is), so they are left out of the term index."""


@dataclass(frozen=True)
class Corpus:
    """What BM25 knew of the user's chains for one query: so that other texts (the open events,
    open_events.py) are scored against the same statistics."""

    documents: int
    """Live chains."""
    total_length: float
    """Their lexicons' terms, summed."""
    document_frequency: Mapping[str, int]
    """Per query term: how many live chains hold it."""


EMPTY_CORPUS = Corpus(documents=0, total_length=0.0, document_frequency={})


class LexiconSource(Protocol):
    """Where users' chains are read from (ChainStore)."""

    async def lexicon_rows(
        self, *, tenant_id: str, user_id: str, updated_since: float | None = None
    ) -> list[LexiconRow]: ...

    def all_lexicon_rows(self) -> AsyncIterator[tuple[UserKey, LexiconRow]]: ...

    async def chain_count_estimate(self) -> int: ...


def weighted_terms(
    terms: Sequence[str], expansion: Sequence[str], expansion_weight: float
) -> list[tuple[str, float, bool]]:
    """(term, weight, asked) to score: the query's distinct terms at 1, then the expansion terms
    (fact_kinds.py) not among them at `expansion_weight` (none at 0). Only asked terms raise BM25's
    ceiling, so expansion terms never lower what the query's own words score."""
    asked = dict.fromkeys(terms)
    extra = [t for t in dict.fromkeys(expansion) if t not in asked] if expansion_weight > 0 else []
    return [(t, 1.0, True) for t in asked] + [(t, expansion_weight, False) for t in extra]


class LexicalScores:
    """One query's lexical scores over one user's chains."""

    def __init__(
        self,
        lexicon: UserLexicon,
        scores: np.ndarray,
        matched: dict[str, np.ndarray] | None = None,
        corpus: Corpus = EMPTY_CORPUS,
    ) -> None:
        self._lexicon = lexicon
        self.scores = scores
        self._matched = matched or {}  # query term -> the rows holding it, ascending
        self.corpus = corpus

    def of(self, chain_id: str) -> float:
        row = self._lexicon.row_of(chain_id)
        return float(self.scores[row]) if row is not None and row < len(self.scores) else 0.0

    def of_many(self, chain_ids: Sequence[str]) -> np.ndarray:
        """`of` for each of these chains."""
        row_of = self._lexicon.row_of
        rows = np.fromiter((r if (r := row_of(c)) is not None else -1 for c in chain_ids), np.int64, len(chain_ids))
        known = (rows >= 0) & (rows < len(self.scores))
        out = np.zeros(len(chain_ids), dtype=np.float64)
        out[known] = self.scores[rows[known]]
        return out

    def terms_in(self, chain_id: str) -> set[str]:
        """The query's terms the chain holds."""
        row = self._lexicon.row_of(chain_id)
        if row is None:
            return set()
        found = set()
        for term, rows in self._matched.items():
            at = int(np.searchsorted(rows, row))
            if at < len(rows) and rows[at] == row:
                found.add(term)
        return found

    def top(self, limit: int) -> list[tuple[str, float]]:
        """The `limit` best-scoring chains with a score above zero, best first."""
        positive = np.flatnonzero(self.scores > 0)
        if not len(positive) or limit <= 0:
            return []
        k = min(limit, len(positive))
        best = positive[np.argpartition(-self.scores[positive], k - 1)[:k]]
        best = best[np.argsort(-self.scores[best], kind="stable")]
        ids = self._lexicon.ids
        return [(ids[i], float(self.scores[i])) for i in best]


class UserLexicon:
    """One user's chains as an inverted index. A chain rewritten (merged) gets a new row; its old
    row is marked dead, and dead rows are compacted away once they outnumber the live ones."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._agents = AgentColumn()
        self._row: dict[str, int] = {}
        self._lengths = array("f")
        self._sizes = array("i")
        self._spans = array("d")  # first and last event time of each row, NaN when not known
        self._alive = bytearray()
        self._postings: dict[str, tuple[array[int], array[float]]] = {}
        self._facts: dict[int, tuple[ToldFact, ...]] = {}  # by row; only the rows that hold any
        self._fact_rows: dict[str, set[int]] = {}  # term -> the rows with a fact that holds it
        self._live = 0
        self._total_length = 0.0

    def __len__(self) -> int:
        return self._live

    def row_of(self, chain_id: str) -> int | None:
        return self._row.get(chain_id)

    def event_count(self, chain_id: str) -> int | None:
        row = self._row.get(chain_id)
        return int(self._sizes[row]) if row is not None else None

    def event_counts(self, chain_ids: Sequence[str], *, default: int = 1) -> np.ndarray:
        """`event_count` for each of these chains, `default` for those it does not hold."""
        row_of, sizes = self._row.get, self._sizes
        return np.fromiter(
            (sizes[r] if (r := row_of(c)) is not None else default for c in chain_ids), np.int64, len(chain_ids)
        )

    def spans(self, chain_ids: Sequence[str]) -> np.ndarray:
        """Each chain's (first, last) event time in epoch seconds, one row per id; NaN for a chain this
        index does not hold or whose times it does not know."""
        spans = np.frombuffer(self._spans, dtype=np.float64).reshape(-1, 2) if self._spans else np.zeros((0, 2))
        rows = np.fromiter(
            (r if (r := self._row.get(c)) is not None else -1 for c in chain_ids), np.int64, len(chain_ids)
        )
        out = np.full((len(chain_ids), 2), np.nan)
        known = rows >= 0
        out[known] = spans[rows[known]]
        return out

    def latest_where(
        self, told: Callable[[np.ndarray], np.ndarray], *, most: int, agent_id: str | None = None
    ) -> list[str]:
        """The live chains (of `agent_id`'s, when given) whose (first, last) event times `told` accepts
        (it maps an (n, 2) array of spans to n booleans), the `most` latest first: the chains told in
        the period a query names, whatever its words (search_memory.py)."""
        if not self._live or most <= 0:
            return []
        spans = np.frombuffer(self._spans, dtype=np.float64).reshape(-1, 2)
        keep = np.frombuffer(self._alive, dtype=np.uint8).astype(bool) & ~np.isnan(spans).any(axis=1)
        if agent_id and not self._agents.every(agent_id):
            keep &= self._agents.mask(agent_id)
        rows = np.flatnonzero(keep)
        rows = rows[np.asarray(told(spans[rows]), dtype=bool)]
        latest = rows[np.argsort(-spans[rows, 1], kind="stable")[:most]]
        return [self.ids[i] for i in latest]

    def told_facts(self, *, agent_id: str | None = None, terms: Iterable[str] | None = None) -> list[ToldFact]:
        """The facts of the live chains (of `agent_id`'s, when given), oldest row first; with `terms`,
        only those of the chains with a lasting fact holding one of them (the others would score 0)."""
        if not self._facts:
            return []
        if terms is None:
            rows = sorted(self._facts)
        else:
            rows = sorted(set().union(*(self._fact_rows.get(t, ()) for t in terms)))
        if agent_id and not self._agents.every(agent_id):
            mask = self._agents.mask(agent_id)
            rows = [r for r in rows if mask[r]]
        return [fact for r in rows for fact in self._facts[r]]

    def put(self, row: LexiconRow) -> None:
        self._kill(row.chain_id)
        if not row.active:
            return
        index = len(self.ids)
        self.ids.append(row.chain_id)
        self._agents.append(row.agent_id)
        self._row[row.chain_id] = index
        length = float(sum(row.lexicon.values()))
        self._lengths.append(length)
        self._sizes.append(max(1, int(row.event_count)))
        nan = float("nan")
        first = row.first_event_at if row.first_event_at is not None else nan
        self._spans.extend((first, row.last_event_at if row.last_event_at is not None else first))
        self._alive.append(1)
        if row.facts or row.moments:
            told = [(text, True) for text in row.facts] + [(text, False) for text in row.moments]
            self._facts[index] = tuple(
                ToldFact(row.chain_id, text, Counter(terms(text)), position=k, lasting=lasting)
                for k, (text, lasting) in enumerate(told)
            )
            self._index_facts(index)
        self._live += 1
        self._total_length += length
        for term, count in row.lexicon.items():
            posting = self._postings.get(term)
            if posting is None:
                posting = self._postings[term] = (array("i"), array("f"))
            posting[0].append(index)
            posting[1].append(float(count))

    def drop(self, chain_ids: Iterable[str]) -> None:
        for chain_id in chain_ids:
            self._kill(chain_id)

    def _index_facts(self, row: int) -> None:
        for fact in self._facts[row]:
            for term in fact.lexicon if fact.lasting else ():
                self._fact_rows.setdefault(term, set()).add(row)

    def _kill(self, chain_id: str) -> None:
        index = self._row.pop(chain_id, None)
        if index is None:
            return
        self._alive[index] = 0
        for fact in self._facts.pop(index, ()):
            for term in fact.lexicon:
                rows = self._fact_rows.get(term)
                if rows is not None:
                    rows.discard(index)
                    if not rows:
                        del self._fact_rows[term]
        self._live -= 1
        self._total_length -= self._lengths[index]
        if len(self.ids) - self._live > max(256, self._live):
            self._compact()

    def _compact(self) -> None:
        keep = [i for i, alive in enumerate(self._alive) if alive]
        new_of = {old: new for new, old in enumerate(keep)}
        self.ids = [self.ids[i] for i in keep]
        self._agents.keep(keep)
        self._row = {chain_id: i for i, chain_id in enumerate(self.ids)}
        self._lengths = array("f", (self._lengths[i] for i in keep))
        self._sizes = array("i", (self._sizes[i] for i in keep))
        self._spans = array("d", (self._spans[2 * i + j] for i in keep for j in (0, 1)))
        self._alive = bytearray(b"\x01" * len(keep))
        self._facts = {new_of[r]: facts for r, facts in self._facts.items() if r in new_of}
        self._fact_rows = {}
        for row in self._facts:
            self._index_facts(row)
        postings: dict[str, tuple[array[int], array[float]]] = {}
        for term, (rows, counts) in self._postings.items():
            kept = [(new_of[r], c) for r, c in zip(rows, counts) if r in new_of]
            if kept:
                postings[term] = (array("i", (r for r, _ in kept)), array("f", (c for _, c in kept)))
        self._postings = postings

    def query(
        self,
        terms: Sequence[str],
        *,
        agent_id: str | None = None,
        expansion: Sequence[str] = (),
        expansion_weight: float = 0.0,
    ) -> LexicalScores:
        """BM25 of every row for the query terms, scaled to [0, 1] (module docstring); dead rows
        and, with `agent_id`, other agents' chains score 0. `expansion` terms (fact_kinds.py) count
        `expansion_weight` of a query term and do not raise the ceiling: a chain holding only them
        scores at most that fraction of one holding the query's words; the sum is capped at 1."""
        n = len(self.ids)
        scores: np.ndarray = np.zeros(n, dtype=np.float64)
        if not terms or not self._live:
            return LexicalScores(self, scores, corpus=Corpus(self._live, self._total_length, {}))
        alive = np.frombuffer(self._alive, dtype=np.uint8).astype(bool)
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        avg_length = max(1e-9, self._total_length / self._live)
        ceiling = 0.0
        matched: dict[str, np.ndarray] = {}
        frequency: dict[str, int] = {}
        weights: list[np.ndarray] = []
        weighted = weighted_terms(terms, expansion, expansion_weight)
        for term, weight, asked in weighted:
            posting = self._postings.get(term)
            rows = np.frombuffer(posting[0], dtype=np.int32) if posting else np.zeros(0, dtype=np.int32)
            live = alive[rows]
            df = frequency[term] = int(live.sum())
            idf = math.log(1.0 + (self._live - df + 0.5) / (df + 0.5))
            if asked:
                ceiling += idf * (K1 + 1.0)
            if not df:
                continue
            rows = rows[live]
            matched[term] = rows  # rows are appended in order and compaction keeps it: ascending
            tf = np.frombuffer(posting[1], dtype=np.float32)[live].astype(np.float64)  # type: ignore[index]
            norm = K1 * (1.0 - B + B * lengths[rows] / avg_length)
            weights.append(weight * idf * tf * (K1 + 1.0) / (tf + norm))
        if matched:
            # One bincount over every term's postings, not one full-length array per term added up:
            # bincount sums each row's weights in input order (term by term), so the floats are the same.
            scores = np.bincount(np.concatenate(list(matched.values())), weights=np.concatenate(weights), minlength=n)
        if ceiling > 0:
            scores /= ceiling
            if any(not asked for _, _, asked in weighted):
                np.minimum(scores, 1.0, out=scores)
        if agent_id and not self._agents.every(agent_id):  # a user of one agent has no rows to zero
            scores[~self._agents.mask(agent_id)] = 0.0
        return LexicalScores(self, scores, matched, Corpus(self._live, self._total_length, frequency))


class LexicalIndex:
    """The searched users' lexicons (see the module docstring)."""

    def __init__(
        self, source: LexiconSource, *, shared: bool, refresh_seconds: float = 2.0, max_chains: int = 200_000
    ) -> None:
        self.source = source
        self.shared = shared
        """True when other processes also write chains (a Milvus server: several formation replicas)."""
        self.refresh_seconds = refresh_seconds
        self.max_chains = max_chains
        self._users: OrderedDict[UserKey, UserLexicon] = OrderedDict()
        self._read_at: dict[UserKey, float] = {}
        self._loading: dict[UserKey, asyncio.Task[UserLexicon]] = {}
        # Writes that landed while the user's read was in flight: the read may not have seen them,
        # so they are applied after its rows (again if it did: every change is idempotent).
        self._pending: dict[UserKey, list[Callable[[UserLexicon], None]]] = {}
        self._warm_touched: set[UserKey] | None = None  # while warm() reads: the users written to meanwhile
        self._listeners: list[Callable[[UserKey], None]] = []

    @property
    def cached_chains(self) -> int:
        return sum(len(u) for u in self._users.values())

    async def user(self, tenant_id: str, user_id: str) -> UserLexicon:
        """The user's index: read on first use (once, however many searches ask at the same time),
        refreshed when shared and older than `refresh_seconds`."""
        key = (tenant_id, user_id)
        lexicon = self._users.get(key)
        if lexicon is None or (self.shared and time.time() - self._read_at.get(key, 0.0) >= self.refresh_seconds):
            lexicon = await self._read(key)
        self._users.move_to_end(key)
        return lexicon

    async def _read(self, key: UserKey) -> UserLexicon:
        task = self._loading.get(key)
        if task is None:
            task = asyncio.create_task(self._read_rows(key), name=f"read lexicon of {key[0]}/{key[1]}")
            self._loading[key] = task
            self._pending[key] = []
            task.add_done_callback(functools.partial(self._read_finished, key))
        # Shielded: a search that gives up does not cancel a read that the next search can use.
        return await asyncio.shield(task)

    def _read_finished(self, key: UserKey, task: asyncio.Task[UserLexicon]) -> None:
        self._loading.pop(key, None)
        self._pending.pop(key, None)
        if not task.cancelled():
            task.exception()  # retrieved here: every caller may have given up

    async def _read_rows(self, key: UserKey) -> UserLexicon:
        existing = self._users.get(key)
        # Re-read a little before the last read: a write committed just before it may carry an
        # updated_at a moment older than the read's start (and clocks of replicas differ slightly).
        since = self._read_at[key] - 5.0 if existing is not None and key in self._read_at else None
        started = time.time()
        rows = await self.source.lexicon_rows(tenant_id=key[0], user_id=key[1], updated_since=since)
        lexicon = existing if existing is not None and since is not None else UserLexicon()
        for row in rows:
            lexicon.put(row)
        for change in self._pending.get(key, []):
            change(lexicon)
        self._users[key] = lexicon
        self._read_at[key] = started
        self._evict(keep=key)
        return lexicon

    def _evict(self, *, keep: UserKey) -> None:
        for key, _ in evict_least_recent(self._users, size=len, limit=self.max_chains, keep=keep):
            self._read_at.pop(key, None)

    async def warm(self, *, yield_every: int = 500) -> int:
        """One writer of chains (not shared): read every active chain's lexicon once and install each
        user whole, so that no user's first search after formation starts reads its own (on the
        MongoDB-wire server such a read scans the whole collection, docs/benchmarks.md "Measured
        choices in the code"). Skipped when the collection holds more documents than the
        bound (`max_chains`). Users written to while it reads, and users loaded meanwhile by their own
        first search, are left as they are. Yields to the event loop every `yield_every` rows, so
        that searches go on. Returns the chains installed."""
        if self.shared or self._warm_touched is not None:
            return 0
        t0 = time.perf_counter()
        started = time.time()
        touched = self._warm_touched = set()  # from before the first read: every write after it is seen
        gathered: dict[UserKey, UserLexicon] = {}
        try:
            documents = await self.source.chain_count_estimate()
            if documents > self.max_chains:
                log.info("lexicons not warmed: %d chain documents exceed the bound of %d", documents, self.max_chains)
                return 0
            read = 0
            async for key, row in self.source.all_lexicon_rows():
                lexicon = gathered.get(key)
                if lexicon is None:
                    lexicon = gathered[key] = UserLexicon()
                lexicon.put(row)
                read += 1
                if read % yield_every == 0:
                    await asyncio.sleep(0)
        finally:
            self._warm_touched = None
        # No await from here on: a write after this finds its user installed (or not) and acts on it.
        installed = 0
        for key, lexicon in gathered.items():
            if key in touched or key in self._users or key in self._loading:
                continue
            self._users[key] = lexicon
            self._users.move_to_end(key, last=False)  # behind the users searched so far: first to go past the bound
            self._read_at[key] = started
            installed += len(lexicon)
        if self._users:
            self._evict(keep=next(reversed(self._users)))
        log.info("lexicons warmed: %d chains of %d users in %.1f s", installed, len(gathered), time.perf_counter() - t0)
        return installed

    def on_change(self, listener: Callable[[UserKey], None]) -> None:
        """Call `listener((tenant_id, user_id))` on every write this index is told of (`put`, `drop`,
        `forget_user`): formation's writes of chains, after MongoDB accepted them."""
        self._listeners.append(listener)

    def _touch(self, key: UserKey) -> None:
        if self._warm_touched is not None:
            self._warm_touched.add(key)
        for listener in self._listeners:
            listener(key)

    def _apply(self, key: UserKey, change: Callable[[UserLexicon], None]) -> None:
        self._touch(key)
        lexicon = self._users.get(key)
        if lexicon is not None:
            change(lexicon)
        if key in self._pending:
            self._pending[key].append(change)

    def put(self, tenant_id: str, user_id: str, row: LexiconRow) -> None:
        """A chain MongoDB accepted: applied to a loaded user (others read it on their first search)."""
        self._apply((tenant_id, user_id), lambda lexicon: lexicon.put(row))

    def drop(self, tenant_id: str, user_id: str, chain_ids: Iterable[str]) -> None:
        ids = list(chain_ids)
        self._apply((tenant_id, user_id), lambda lexicon: lexicon.drop(ids))

    def forget_user(self, tenant_id: str, user_id: str) -> None:
        """The user was erased: nothing of theirs stays (a read in flight is emptied when it lands)."""
        key = (tenant_id, user_id)
        self._touch(key)
        self._users.pop(key, None)
        self._read_at.pop(key, None)
        if key in self._pending:
            self._pending[key].append(lambda lexicon: lexicon.drop(list(lexicon.ids)))

    async def close(self) -> None:
        for task in list(self._loading.values()):
            task.cancel()


def row_from_doc(doc: Mapping[str, Any]) -> LexiconRow:
    """A chain document (or its projection) as an index row; chains written before lexicons existed
    have none and are found by their embedding alone."""
    first, last = chain_span(doc)
    return LexiconRow(
        chain_id=doc["_id"],
        agent_id=agents_key(chain_agents(doc)),
        lexicon=doc.get("lexicon") or {},
        event_count=int(doc.get("event_count", 1)),
        active=doc.get("status", "active") == "active",
        first_event_at=first,
        last_event_at=last,
        facts=fact_texts(doc.get("profile_facts") or ()),
        moments=fact_texts(doc.get("moment_facts") or ()),
    )


def fact_texts(profile_facts: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The distinct sentences of a chain's `profile_facts` or `moment_facts` (forming/profile_facts.py),
    in order."""
    return tuple(dict.fromkeys(str(f["text"]) for f in profile_facts if f.get("text")))


def chain_span(doc: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """A chain document's first and last event time (epoch seconds; None where it has none)."""
    first, last = doc.get("first_event_at"), doc.get("last_event_at")
    return (
        float(first) if isinstance(first, int | float) else None,
        float(last) if isinstance(last, int | float) else None,
    )
