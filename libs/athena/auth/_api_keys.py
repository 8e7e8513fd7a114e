"""API keys: random strings handed to a tenant, stored only as their SHA-256 hex digest."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from athena.auth._principal import CredentialKind, Principal
from athena.auth._scopes import ALL_SCOPES, DEFAULT_SCOPES, ordered, parse_scope_names

__all__ = ["ApiKeyEntry", "ApiKeyVerifier", "hash_api_key", "new_api_key", "parse_api_key_entries"]

KEY_PREFIX = "athk_"
"""Marks an Athena API key, so that secret scanners and readers recognise one."""


def new_api_key() -> str:
    """A fresh random key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKeyEntry:
    """One configured key: its tenant, the SHA-256 hex digest of the key, and its credential scopes."""

    tenant_id: str
    sha256_hex: str
    scopes: frozenset[str] = DEFAULT_SCOPES

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", parse_scope_names(self.scopes))
        if not self.scopes:
            raise ValueError("an API key needs at least one scope")

    def render(self) -> str:
        """The configuration line (AUTH_API_KEYS entry or AUTH_API_KEYS_FILE line); the scopes are
        written only when they are not the default (read and write)."""
        line = f"{self.tenant_id}:{self.sha256_hex}"
        if self.scopes != DEFAULT_SCOPES:
            line += ":" + SCOPE_SEPARATOR.join(ordered(self.scopes))
        return line


SCOPE_SEPARATOR = "+"
"""Joins the scopes of an entry (`acme:<hex>:memory:read+memory:admin`); `,` separates entries."""

_ENTRY_SYNTAX = "`tenant:sha256hex` (64 hex digits), optionally followed by `:scope+scope`"


def _parse_one(raw: str, where: str) -> ApiKeyEntry:
    # Never echo the entry, nor any part of it: a key pasted by mistake in place of its hash (or of a
    # scope) must not reach the logs. Tenant ids never hold ":", scope names do: split from the left.
    tenant, sep, rest = raw.strip().partition(":")
    digest, has_scopes, scope_text = rest.partition(":")
    digest = digest.strip().lower()
    tenant = tenant.strip()
    if not sep or not tenant or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"{where}: not {_ENTRY_SYNTAX}")
    if not has_scopes:
        return ApiKeyEntry(tenant_id=tenant, sha256_hex=digest)
    if not scope_text.strip():
        raise ValueError(f"{where}: no scope after the digest ({', '.join(ALL_SCOPES)}, joined by +)")
    try:
        scopes = parse_scope_names(scope_text.split(SCOPE_SEPARATOR))
    except ValueError:
        raise ValueError(f"{where}: a scope is not one of {', '.join(ALL_SCOPES)} (joined by +)") from None
    return ApiKeyEntry(tenant_id=tenant, sha256_hex=digest, scopes=scopes)


def parse_api_key_entries(text: str, *, where: str, separator: str = ",") -> list[ApiKeyEntry]:
    """Entries of AUTH_API_KEYS (separator ",") or of an AUTH_API_KEYS_FILE (separator "\\n", # comments).

    A malformed entry is a ValueError naming `where` and the entry's position (`entry 2` of the list,
    `line 2` of the file), never its text.
    """
    entries = []
    unit = "line" if separator == "\n" else "entry"
    for position, chunk in enumerate(text.split(separator), start=1):
        line = chunk.split("#", 1)[0].strip() if separator == "\n" else chunk.strip()
        if line:
            entries.append(_parse_one(line, f"{where} {unit} {position}"))
    return entries


class ApiKeyVerifier:
    """Looks a presented key up by its SHA-256 digest.

    A dict lookup is not constant time, and it need not be: what it compares is the digest of the
    presented key, never the key. Timing could at best tell an attacker how far the digest of a key
    they chose collides with a stored digest (a hash-bucket hit, then a prefix of the digest), and
    the digest of a guess says nothing about the key behind a stored digest: finding a key for a
    digest prefix is a preimage search on SHA-256, and the stored keys carry 256 random bits
    (`new_api_key`). So this is as safe as comparing every stored hash in constant time, at O(1).
    """

    def __init__(self, entries: Iterable[ApiKeyEntry]) -> None:
        self._entries: Sequence[ApiKeyEntry] = tuple(entries)
        by_digest: dict[bytes, Principal] = {}
        for entry in self._entries:
            # The first entry of a digest wins, as before (a key listed for two tenants is a configuration error).
            by_digest.setdefault(
                bytes.fromhex(entry.sha256_hex),
                Principal(
                    kind=CredentialKind.API_KEY,
                    tenant_id=entry.tenant_id,
                    subject=f"key:{entry.sha256_hex[:8]}",
                    scopes=entry.scopes,
                ),
            )
        self._by_digest = by_digest

    def __len__(self) -> int:
        return len(self._entries)

    def verify(self, key: str) -> Principal | None:
        """The key's principal, or None."""
        return self._by_digest.get(hashlib.sha256(key.encode("utf-8")).digest())
