"""SearchMemory's metadata filters: a filter is a value comparison, never a query-language text.

Ingest and formation run in this process with authentication on, against the session's redis-server
and nx-27017 and a fresh Milvus Lite file. Four chains are seeded through the public API and FormChain,
their events carrying metadata: two of acme/alice (the caller), one of acme/bob (same tenant, another
user) and one of globex/alice (another tenant, same user id), the last two holding secrets. Keys and
values of SQL, MongoDB, Milvus and path syntax and of any Unicode, sent as filters by acme/alice, get
INVALID_ARGUMENT naming the filter or exactly alice's chains carrying every pair: never INTERNAL, never
another scope's chain. The query document formation sends is checked for any filters: constant field
names only, the caller's strings only as plain string values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis
from security_support import Services, StartServices
from support.formation_data import COOKING, KYOTO, PYTHON_BUG
from support.hostile import check_refusal, refused_fields

from athena.events import METADATA_PAIRS
from athena.internal.v1 import formation_pb2
from athena.stm import ShortTermWindow
from athena.stores import metadata_filter_query
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2

pytestmark = pytest.mark.slow

ALICE_OPS = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="ops")
ALICE_TRAVEL = memory_pb2.Scope(tenant_id="acme", user_id="alice", agent_id="travel")
ALICE = memory_pb2.Scope(tenant_id="acme", user_id="alice")  # every agent of the user
BOB = memory_pb2.Scope(tenant_id="acme", user_id="bob", agent_id="ops")
GLOBEX_ALICE = memory_pb2.Scope(tenant_id="globex", user_id="alice", agent_id="ops")

TRICKY = {"ключ": "значение", 'q"k': "v\\w", "k\\1": "bs", "br[0]": "y", "a'b": "x", "日本": "語"}
"""Keys a path-based filter never matched on nx-27017 (Cyrillic, CJK, `"`, `\\`, `[`) or broke (`'`)."""
METADATA: dict[str, dict[str, str]] = {
    "alice_ops": {**TRICKY, "workflow_id": "wf-1"},
    "alice_travel": {"workflow_id": "wf-2", "ключ": "значение2", "\u00e9": "e\u0301"},
    "bob": {**TRICKY, "workflow_id": "wf-1", "secret": "acme-bob-secret"},
    "globex": {**TRICKY, "workflow_id": "wf-1", "secret": "globex-secret"},
}
SECRETS = ("acme-bob-secret", "globex-secret", "globex")

SQL = [
    "'",
    "a'b",
    "x')=?)OR(1=1)OR ?=0)/*",
    "' OR '1'='1",
    "k') OR 1=1 --",
    "?",
    "/*",
    "*/",
    "--",
    ")",
    "'; DROP TABLE cognitive_events; --",
]
MONGO = [
    "$where",
    "$ne",
    "$gt",
    "$exists",
    "$or",
    "a.b",
    "metadata.secret",
    "metadata",
    "metadata_pairs",
    "tenant_id",
    "_id",
    "chain_id",
    '{"$ne": null}',
]
MILVUS = ['"', "' or 1==1 or '", '" or tenant_id != "', "in [", "like", 'tenant_id like "%"', "1==1", "%", "_", "*"]
PATHS = ["..", "[0]", "a[0]", "\\", "a\\b", "$[0]", "$.metadata", "/", '["k","v"]', "[", "]", ","]
UNICODE = [
    "ключ",
    "значение",
    "日本",
    "語",
    "e\u0301",
    "\u00e9",
    "שלום",
    "\u202e",
    "ß",
    "SS",
    "🔑",
    "\u0000",
    "\x7f",
    "\ufeff",
    "\t",
]
SEEDED = sorted({s for md in METADATA.values() for pair in md.items() for s in pair})
FRAGMENTS = sorted(set(SQL + MONGO + MILVUS + PATHS + UNICODE + SEEDED))

_KEY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_VALUE_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _acceptable(key: str, value: str) -> bool:
    """The rule of docs/api.md for a metadata filter entry (what validation lets through)."""
    key_ok = (
        0 < len(key.encode()) <= 128 and not _KEY_CONTROL.search(key) and "." not in key and not key.startswith("$")
    )
    return key_ok and len(value.encode()) <= 1024 and not _VALUE_CONTROL.search(value)


@dataclass
class Seeded:
    services: Services
    alice: AsyncAthenaClient
    chains: dict[str, str]
    """Chain id by the name of its METADATA."""

    def own_matches(self, filters: Mapping[str, str]) -> set[str]:
        """Alice's chains whose events carry every pair of `filters`, exactly."""
        return {self.chains[n] for n in ("alice_ops", "alice_travel") if filters.items() <= METADATA[n].items()}

    async def search(self, filters: Mapping[str, str]) -> memory_pb2.SearchMemoryResponse:
        request = memory_pb2.SearchMemoryRequest(
            scope=ALICE, query="what did we talk about", limit=10, metadata_filters=dict(filters)
        )
        return await self.alice._stub.SearchMemory(request, timeout=30, metadata=self.alice.options.metadata)


async def _form(
    services: Services,
    window: ShortTermWindow,
    scope: memory_pb2.Scope,
    turns: list[tuple[str, str]],
    metadata: dict[str, str],
) -> str:
    """Store the turns through the public API (every event with `metadata`), then form the scope's
    window into a chain as cognition would hand it to formation."""
    async with services.client(scope.tenant_id) as client:
        await client.store_events(scope, [EventInput(role, text, metadata=metadata) for role, text in turns])
    events = await window.read(scope)
    async with services.formation_channel() as channel:
        segment = formation_pb2.Segment(
            id=f"seg_{scope.tenant_id}_{scope.user_id}_{scope.agent_id}",
            scope=scope,
            events=events,
            reason=formation_pb2.CUT_REASON_TOPIC_BREAK,
        )
        response = await services.formation_stub(channel).FormChain(
            formation_pb2.FormChainRequest(segment=segment), timeout=120
        )
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response
    return response.chain_id


@pytest.fixture
async def seeded(start_services: StartServices, redis: Redis) -> Any:
    services = await start_services()
    window = ShortTermWindow(redis)
    chains = {
        "alice_ops": await _form(services, window, ALICE_OPS, PYTHON_BUG, METADATA["alice_ops"]),
        "alice_travel": await _form(services, window, ALICE_TRAVEL, KYOTO, METADATA["alice_travel"]),
        "bob": await _form(services, window, BOB, PYTHON_BUG, METADATA["bob"]),
        "globex": await _form(services, window, GLOBEX_ALICE, COOKING, METADATA["globex"]),
    }
    alice = services.client("acme")
    yield Seeded(services, alice, chains)
    await alice.close()


def _assert_honest(seeded: Seeded, filters: Mapping[str, str], response: memory_pb2.SearchMemoryResponse) -> None:
    """Exactly alice's chains carrying every pair, and nothing of another scope in the answer."""
    assert {h.chain.id for h in response.hits} == seeded.own_matches(filters), filters
    text = text_format.MessageToString(response)
    others = [seeded.chains["bob"], seeded.chains["globex"], *SECRETS]
    assert not [s for s in others if s in text], f"another scope's data in the answer to {filters!r}"
    assert all((h.chain.scope.tenant_id, h.chain.scope.user_id) == ("acme", "alice") for h in response.hits)


hostile_strings = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.lists(st.sampled_from(FRAGMENTS), min_size=2, max_size=3).map("".join),
    st.text(max_size=12),
)
seeded_subsets = st.sampled_from(sorted(METADATA)).flatmap(
    lambda name: st.lists(
        st.sampled_from(sorted(METADATA[name].items())), min_size=1, max_size=3, unique_by=lambda kv: kv[0]
    ).map(dict)
)
hostile_filters = st.dictionaries(hostile_strings, st.one_of(hostile_strings, st.just("")), min_size=1, max_size=4)
filters_strategy = st.one_of(
    seeded_subsets,  # honest filters, of alice's chains and of the others' (secrets included)
    hostile_filters,
    st.tuples(seeded_subsets, hostile_filters).map(
        lambda pair: {**pair[0], **pair[1]}
    ),  # a real pair and injected ones
).filter(lambda f: len(f) <= 8)

PROPERTY = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI is reproducible
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(filters=filters_strategy)
@example(filters={"a'b": "x"})  # was INTERNAL (an SQL syntax error)
@example(filters={"x')=?)OR(1=1)OR ?=0)/*": "x"})  # was an oracle on every tenant's events
@example(filters={"secret": "globex-secret"})
@example(filters={"workflow_id": "wf-1", "' or 1==1 or '": "' or 1==1 or '"})
async def test_injected_metadata_filters_are_refused_by_field_or_match_only_the_callers_own_chains(
    seeded: Seeded, filters: dict[str, str]
) -> None:
    try:
        response = await seeded.search(filters)
    except grpc.aio.AioRpcError as err:
        check_refusal(err)  # never INTERNAL or UNKNOWN
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert all(f.startswith("metadata_filters[") for f in refused_fields(err)), refused_fields(err)
        assert not all(_acceptable(k, v) for k, v in filters.items()), f"acceptable filters refused: {filters!r}"
        assert not [s for s in SECRETS if s in (err.details() or "") and s not in json.dumps(filters)]
        event("refused")  # the outcome mix shows in --hypothesis-show-statistics
        return
    assert all(_acceptable(k, v) for k, v in filters.items()), f"unacceptable filters answered: {filters!r}"
    _assert_honest(seeded, filters, response)
    event(f"answered with {len(response.hits)} of alice's chains")


async def test_unicode_quote_backslash_and_bracket_keys_match_the_users_own_chains_exactly(seeded: Seeded) -> None:
    ops, travel = seeded.chains["alice_ops"], seeded.chains["alice_travel"]
    for key, value in TRICKY.items():  # each alone, then all together
        assert {h.chain.id for h in (await seeded.search({key: value})).hits} == {ops}, key
    assert {h.chain.id for h in (await seeded.search(TRICKY)).hits} == {ops}
    assert {h.chain.id for h in (await seeded.search({"ключ": "значение2", "\u00e9": "e\u0301"})).hits} == {travel}
    near_misses = [
        {"клю": "значение"},
        {"ключ": "значени"},
        {"ключ": "значение "},
        {"КЛЮЧ": "значение"},  # prefix, suffix, case
        {'q"': "v\\w"},
        {'q"k': "v\\\\w"},
        {'q"k': "v"},
        {"k\\": "bs"},
        {"k\\\\1": "bs"},  # quotes and backslashes
        {"br[0": "y"},
        {"br[0]": ""},
        {"br": "y"},
        {"a'b": "X"},
        {"a''b": "x"},
        {"ab": "x"},
        {"\u00e9": "\u00e9"},
        {"e\u0301": "e\u0301"},  # the same letter, composed the other way: not the same string
        {"ключ": "значение", "workflow_id": "wf-2"},  # each pair is someone's, not both one event's
        {"secret": "globex-secret"},
        {"secret": "acme-bob-secret"},  # other scopes' pairs
        {"ключ": "%"},
        {"ключ": "_"},
        {"%": "%"},
        {"ключ": "*"},  # wildcards of LIKE and globs match nothing
    ]
    for filters in near_misses:
        response = await seeded.search(filters)
        assert [h.chain.id for h in response.hits] == [], filters
    assert {h.chain.id for h in (await seeded.search({})).hits} == {ops, travel}  # no filter: all of alice's


_CONSTANT_FIELDS = {"tenant_id", "user_id", "chain_id", METADATA_PAIRS, "$exists", "$all"}


def _field_names(node: Any) -> Iterator[str]:
    """Every field name of a query document, however deep (operators included)."""
    if isinstance(node, dict):
        for field, value in node.items():
            yield field
            yield from _field_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from _field_names(item)


def _leaves(node: Any) -> Iterator[Any]:
    """Every value of a query document that is neither a document nor a list."""
    if isinstance(node, dict):
        for value in node.values():
            yield from _leaves(value)
    elif isinstance(node, list):
        for item in node:
            yield from _leaves(item)
    else:
        yield node


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    filters=st.dictionaries(st.one_of(hostile_strings, st.text()), st.one_of(hostile_strings, st.text()), max_size=8)
)
def test_the_mongodb_query_of_any_filters_has_constant_field_names_and_the_users_strings_only_as_string_values(
    filters: dict[str, str],
) -> None:
    query = metadata_filter_query(tenant_id="acme", user_id="alice", filters=filters)
    assert set(_field_names(query)) <= _CONSTANT_FIELDS  # no user string is ever a field name or a path
    assert all(type(v) is str or v is True for v in _leaves(query))  # plain strings: no operator document, no regex
    if filters:
        pairs = query[METADATA_PAIRS]["$all"]
        assert all(type(p) is str for p in pairs)
        assert sorted(tuple(json.loads(p)) for p in pairs) == sorted(filters.items())  # each pair whole, nothing else
    else:
        assert METADATA_PAIRS not in query
    assert (query["tenant_id"], query["user_id"], query["chain_id"]) == ("acme", "alice", {"$exists": True})
