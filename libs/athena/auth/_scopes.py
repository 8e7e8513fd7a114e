"""Credential scopes of the public API: what a credential may do inside its tenant.

Three scopes: `memory:read` (read memories), `memory:write` (store events and curate chains) and
`memory:admin` (erase, export or delete). `memory:admin` implies the other two: an operator's
credential that may erase a user may also read and write that user's memory, and a credential
naming only `memory:admin` is not a surprising read-only-nothing key. A credential that names no
scope at all (API key entries and tokens from before scopes existed) has read and write.

Every method of a guarded tenant-bound service is looked up when the server is built: a method
without an entry in `METHOD_SCOPES` fails the build, so a new RPC cannot slip past the check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from google.protobuf.descriptor import ServiceDescriptor

__all__ = [
    "ADMIN",
    "ALL_SCOPES",
    "DEFAULT_SCOPES",
    "METHOD_SCOPES",
    "READ",
    "WRITE",
    "ScopeTable",
    "grants",
    "ordered",
    "parse_scope_names",
]

READ = "memory:read"
WRITE = "memory:write"
ADMIN = "memory:admin"

ALL_SCOPES: tuple[str, ...] = (READ, WRITE, ADMIN)
"""Every scope, in the order they are written (entries, tokens, messages)."""

DEFAULT_SCOPES: frozenset[str] = frozenset({READ, WRITE})
"""What a credential naming no scope may do: what every credential could do before scopes existed."""

METHOD_SCOPES: Mapping[str, Mapping[str, str]] = {
    "athena.memory.v1.MemoryService": {
        # read: what Athena holds, never changed
        "GetContext": READ,
        "SearchMemory": READ,
        "GetChain": READ,
        "ListChains": READ,
        "GetChainEvents": READ,
        "ListRejections": READ,
        "GetTaskResult": READ,
        # write: new events and curation of one's memories
        "StoreEvent": WRITE,
        "StoreEvents": WRITE,
        "FlushWindow": WRITE,
        "UpdateChain": WRITE,
        "AdmitRejection": WRITE,
        "RestoreChain": WRITE,
        # admin: erasure, deletion and the export of a whole user
        "ForgetUser": ADMIN,
        "ExportUser": ADMIN,
        "DeleteChain": ADMIN,
    },
}
"""The scope each public method needs, by full service name, then method name."""


def ordered(scopes: Iterable[str]) -> list[str]:
    """Known scopes in their written order (read, write, admin)."""
    named = set(scopes)
    return [s for s in ALL_SCOPES if s in named]


def parse_scope_names(names: Iterable[str]) -> frozenset[str]:
    """The scopes named; ValueError for an unknown name (the message names the known ones only)."""
    parsed = frozenset(n.strip() for n in names)
    if not parsed <= frozenset(ALL_SCOPES):
        raise ValueError(f"a scope is not one of {', '.join(ALL_SCOPES)}")
    return parsed


def grants(scopes: frozenset[str], needed: str) -> bool:
    """Whether a credential holding `scopes` may call a method needing `needed` (admin implies all)."""
    return needed in scopes or ADMIN in scopes


class ScopeTable:
    """Per full method name (`/pkg.Service/Method`), the scope a call needs."""

    def __init__(
        self, services: Iterable[ServiceDescriptor], table: Mapping[str, Mapping[str, str]] = METHOD_SCOPES
    ) -> None:
        self._by_method: dict[str, str] = {}
        for service in services:
            own = table.get(service.full_name, {})
            for method in service.methods:
                needed = own.get(method.name)
                if needed is None:
                    raise TypeError(f"{service.full_name}.{method.name}: no credential scope in the scope table")
                if needed not in ALL_SCOPES:
                    raise TypeError(f"{service.full_name}.{method.name}: {needed!r} is not a scope")
                self._by_method[f"/{service.full_name}/{method.name}"] = needed

    def required(self, method: str) -> str | None:
        return self._by_method.get(method)
