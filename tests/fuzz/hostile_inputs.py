"""Hypothesis strategies for hostile MemoryService requests: every field near, at and past its limit,
control characters, absurd timestamps, unknown enum values, other tenants, and raw malformed bytes."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import TypeVar

from google.protobuf import timestamp_pb2
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from athena_client.memory.v1 import memory_pb2

T = TypeVar("T")

FUZZ = settings(
    max_examples=50,  # per property; the whole directory runs in about a minute, most of it starting the stack
    deadline=None,
    derandomize=True,  # the same examples on every run: CI is reproducible
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

_ID_CHARS = "ABCXYZabcxyz0189._@-"
_INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)


def _long(char: str, around: int) -> st.SearchStrategy[str]:
    """Strings of `char` just below, at and just past a byte limit."""
    return st.integers(min_value=around - 2, max_value=around + 2).map(lambda n: char * max(n, 0))


# Any Unicode except surrogates (protobuf cannot carry them), with control characters made likely.
_controls = st.sampled_from(["\x00", "\x07", "\x1b", "\x7f", "\x85", "\t", "\n", "\r", "\u2028", "\ufeff"])
_any_char = st.one_of(st.characters(), _controls)
texts = st.text(alphabet=_any_char, max_size=40)


def _mostly(good: st.SearchStrategy[T], bad: st.SearchStrategy[T]) -> st.SearchStrategy[T]:
    """About four parts valid to one part hostile, so that requests often get past one field to the next."""
    return st.integers(0, 9).flatmap(lambda i: bad if i >= 8 else good)


valid_ids = st.one_of(
    st.sampled_from(["alice", "bob.smith@example.com", "agent-1", "u_2"]),
    st.text(alphabet=_ID_CHARS, min_size=1, max_size=12),
)
ids = _mostly(
    valid_ids,
    st.one_of(st.just(""), texts, _long("a", 128), st.sampled_from(["alice\n", "a:b", "../x", "ünï", "a b", "$where"])),
)

_printable = st.characters(exclude_categories=("Cc", "Cs"))
contents = _mostly(
    st.text(alphabet=_printable, min_size=1, max_size=200).filter(str.strip),
    st.one_of(
        st.text(alphabet=_any_char, min_size=0, max_size=200),
        _long("x", 32768),
        _long("é", 16384),  # two bytes each: the limit is in bytes, not characters
    ),
)

metadata_keys = _mostly(
    st.one_of(
        st.sampled_from(["workflow_id", "execution_id"]),
        st.text(alphabet=_ID_CHARS.replace(".", ""), min_size=1, max_size=20),
    ),
    st.one_of(texts, st.sampled_from(["a.b", "$set", ""]), _long("k", 128)),
)
metadata_values = _mostly(st.text(alphabet=_printable, max_size=40), st.one_of(texts, _long("v", 1024)))
metadata = _mostly(
    st.dictionaries(metadata_keys, metadata_values, max_size=4),
    st.integers(30, 34).map(lambda n: {f"k{i}": "v" for i in range(n)}),
)

_EARLIEST, _PAST = 946684800, 1_750_000_000  # 2000-01-01 and 2025-06-15, in epoch seconds (fixed: reproducible)
timestamps = _mostly(
    st.one_of(
        st.none(),
        st.builds(timestamp_pb2.Timestamp, seconds=st.integers(_EARLIEST, _PAST), nanos=st.integers(0, 999_999_999)),
    ),
    st.builds(
        timestamp_pb2.Timestamp,
        seconds=st.one_of(st.integers(_EARLIEST - 5, _EARLIEST), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        nanos=_INT32,
    ),
)

roles = _mostly(
    st.sampled_from([memory_pb2.ROLE_USER, memory_pb2.ROLE_AGENT, memory_pb2.ROLE_SYSTEM]), st.integers(-2, 6)
)
types = _mostly(st.sampled_from([memory_pb2.EVENT_TYPE_MESSAGE, memory_pb2.EVENT_TYPE_THOUGHT]), st.integers(-2, 6))


@st.composite
def new_events(draw: st.DrawFn) -> memory_pb2.NewEvent:
    event = memory_pb2.NewEvent(
        role=draw(roles),
        type=draw(types),
        content=draw(contents),
        metadata=draw(metadata),
        event_id=draw(st.one_of(st.just(""), ids)),
    )
    ts = draw(timestamps)
    if ts is not None:
        event.timestamp.CopyFrom(ts)
    return event


def scopes(tenant: str, *, agent: bool = True) -> st.SearchStrategy[memory_pb2.Scope]:
    """Mostly the credential's tenant; sometimes none (the credential's is filled in) or another one."""
    return st.builds(
        memory_pb2.Scope,
        tenant_id=_mostly(st.just(tenant), st.one_of(st.just(""), ids)),
        user_id=ids,
        agent_id=ids if agent else st.one_of(st.just(""), ids),
    )


def store_event_requests(tenant: str) -> st.SearchStrategy[memory_pb2.StoreEventRequest]:
    return st.builds(memory_pb2.StoreEventRequest, scope=scopes(tenant), event=new_events())


valid_new_events = st.builds(
    memory_pb2.NewEvent,
    role=st.sampled_from([memory_pb2.ROLE_USER, memory_pb2.ROLE_AGENT]),
    type=st.just(memory_pb2.EVENT_TYPE_MESSAGE),
    content=st.text(alphabet=_printable, min_size=1, max_size=80).filter(str.strip),
    event_id=st.one_of(st.just(""), valid_ids),
)


@st.composite
def _one_bad_among_good(draw: st.DrawFn) -> list[memory_pb2.NewEvent]:
    """Valid events with one generated (likely bad) event somewhere among them."""
    good = draw(st.lists(valid_new_events, min_size=1, max_size=5))
    good.insert(draw(st.integers(0, len(good))), draw(new_events()))
    return good


def store_events_requests(tenant: str) -> st.SearchStrategy[memory_pb2.StoreEventsRequest]:
    tiny = memory_pb2.NewEvent(role=memory_pb2.ROLE_USER, type=memory_pb2.EVENT_TYPE_MESSAGE, content="x")
    batches = st.one_of(
        st.lists(valid_new_events, min_size=1, max_size=6),
        _one_bad_among_good(),
        st.lists(new_events(), max_size=6),
        # One past STORE_EVENTS_MAX_BATCH; a full batch of 1000 that succeeds would only slow the run down.
        st.just([tiny] * 1001),
    )
    return st.builds(memory_pb2.StoreEventsRequest, scope=scopes(tenant), events=batches)


queries = _mostly(
    st.one_of(
        st.sampled_from(["Kyoto temples in April", "python KeyError"]),
        st.text(alphabet=_printable, min_size=1, max_size=60).filter(str.strip),
    ),
    st.one_of(texts, st.just(""), _long("q", 4096), st.just("  ")),
)


def get_context_requests(tenant: str) -> st.SearchStrategy[memory_pb2.GetContextRequest]:
    return st.builds(
        memory_pb2.GetContextRequest,
        scope=scopes(tenant),
        limit=st.one_of(st.integers(-1, 3), st.integers(1999, 2001), _INT32),
        query=st.one_of(st.just(""), queries),
        chain_limit=st.one_of(st.integers(-1, 3), st.integers(99, 101), _INT32),
        profile_limit=st.one_of(st.integers(-1, 3), st.integers(99, 101), _INT32),
        page_token=context_page_tokens,
    )


@st.composite
def search_requests(draw: st.DrawFn, tenant: str) -> memory_pb2.SearchMemoryRequest:
    request = memory_pb2.SearchMemoryRequest(
        scope=draw(scopes(tenant, agent=False)),
        query=draw(queries),
        limit=draw(st.one_of(st.integers(-1, 5), st.integers(99, 101), _INT32)),
        metadata_filters=draw(st.dictionaries(metadata_keys, metadata_values, max_size=10)),
    )
    threshold = draw(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.floats(-1.0, 1.0)))
    if threshold is not None:
        request.similarity_threshold = threshold
    return request


def get_chain_requests(tenant: str) -> st.SearchStrategy[memory_pb2.GetChainRequest]:
    return st.builds(
        memory_pb2.GetChainRequest, scope=scopes(tenant, agent=False), chain_id=st.one_of(st.just(""), ids)
    )


def forged_token(offset: object) -> str:
    """A page token of the form formation issues, with any offset."""
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


page_tokens = st.one_of(
    st.just(""),
    texts,
    _long("A", 512),
    # Well-formed tokens with forged offsets: negative, past int64, not a number.
    st.one_of(
        st.integers(-3, 3), st.integers(2**31 - 2, 2**31 + 1), st.integers(min_value=2**63), st.text(max_size=5)
    ).map(forged_token),
)


def forged_context_token(body: object) -> str:
    """A GetContext page token of the form ingest issues (URL-safe base64 of JSON), holding `body`."""
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode()


_counts = st.one_of(
    st.integers(-2, 3),
    st.integers(1999, 2001),
    st.integers(2**31 - 1, 2**31),
    st.integers(min_value=2**63),
    st.text(max_size=3),
    st.none(),
)
context_page_tokens = _mostly(
    st.just(""),
    st.one_of(
        page_tokens,  # garbage, oversized, and ListChains' tokens
        # GetContext's form with forged fields: anchors of any text, absurd indexes and counts.
        st.fixed_dictionaries(
            {"e": st.one_of(valid_ids, texts, _long("e", 128)), "i": _counts}, optional={"r": _counts}
        ).map(forged_context_token),
    ),
)


def list_chains_requests(tenant: str) -> st.SearchStrategy[memory_pb2.ListChainsRequest]:
    return st.builds(
        memory_pb2.ListChainsRequest,
        scope=scopes(tenant, agent=False),
        status=st.integers(-1, 4),
        page_size=st.one_of(st.integers(-1, 3), st.integers(199, 201), _INT32),
        page_token=page_tokens,
    )


Credential = Callable[[tuple[tuple[str, str], ...]], tuple[tuple[str, str], ...]]


def _as_given(valid: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return valid


def _no_credential(valid: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return ()


def _unknown_key(valid: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return (("authorization", "Bearer not-a-key"),)


def _wrong_scheme(valid: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return (("authorization", "Basic dXNlcjpwYXNz"),)


credentials: st.SearchStrategy[Credential] = _mostly(
    st.just(_as_given), st.sampled_from([_no_credential, _unknown_key, _wrong_scheme])
)
"""Mostly the valid credential; sometimes none, a wrong one or a wrong scheme."""


# --- raw bytes --------------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field, encoded by hand so that its bytes need not be valid UTF-8."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


RAW_SCOPE = memory_pb2.Scope(user_id="raw-user", agent_id="raw-agent")
"""The scope (with the caller's tenant) of the raw requests built here."""

_EVENT_HEAD = b"\x08\x01\x10\x01"
"""role = ROLE_USER, type = EVENT_TYPE_MESSAGE, as NewEvent wire bytes."""


def _scope_bytes(tenant: str) -> bytes:
    return memory_pb2.Scope(
        tenant_id=tenant, user_id=RAW_SCOPE.user_id, agent_id=RAW_SCOPE.agent_id
    ).SerializeToString()


@st.composite
def _invalid_utf8(draw: st.DrawFn) -> bytes:
    head = draw(st.binary(max_size=8))
    bad = draw(st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf", b"\xe2\x82"]))
    return head + bad + draw(st.binary(max_size=8))


def with_bad_string(method: str, tenant: str, bad: bytes) -> bytes:
    """A request of `method` that is valid except that one string field (content or query) holds `bad`."""
    scope = _scope_bytes(tenant)
    valid_event = memory_pb2.NewEvent(role=1, type=1, content="hello").SerializeToString()
    return {
        # content (NewEvent field 3) inside event (StoreEventRequest field 2, StoreEventsRequest field 2)
        "StoreEvent": lambda: _field(1, scope) + _field(2, _EVENT_HEAD + _field(3, bad)),
        "StoreEvents": lambda: _field(1, scope) + _field(2, valid_event) + _field(2, _EVENT_HEAD + _field(3, bad)),
        "GetContext": lambda: _field(1, scope) + _field(3, bad),  # query
        "SearchMemory": lambda: _field(1, scope) + _field(2, bad),  # query
    }[method]()


def raw_payloads(method: str, tenant: str) -> st.SearchStrategy[bytes]:
    """Serialized requests of `method`: garbage, valid-but-mutated, or valid except for a string field
    holding invalid UTF-8."""
    valid = with_bad_string(method, tenant, b"kyoto")

    @st.composite
    def mutated(draw: st.DrawFn) -> bytes:
        data = bytearray(valid)
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(data)))
            action = draw(st.sampled_from(["flip", "insert", "truncate"]))
            if action == "flip" and at < len(data):
                data[at] ^= draw(st.integers(1, 255))
            elif action == "insert":
                data[at:at] = draw(st.binary(min_size=1, max_size=4))
            else:
                del data[at:]
        return bytes(data)

    return st.one_of(
        st.binary(max_size=64), mutated(), _invalid_utf8().map(lambda bad: with_bad_string(method, tenant, bad))
    )
