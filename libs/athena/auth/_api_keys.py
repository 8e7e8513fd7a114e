"""API keys: random strings handed to a tenant, stored only as their SHA-256 hex digest."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from athena.auth._principal import CredentialKind, Principal

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
    tenant_id: str
    sha256_hex: str

    def render(self) -> str:
        """The configuration line (AUTH_API_KEYS entry or AUTH_API_KEYS_FILE line)."""
        return f"{self.tenant_id}:{self.sha256_hex}"


def _parse_one(raw: str, where: str) -> ApiKeyEntry:
    tenant, sep, digest = raw.strip().rpartition(":")
    digest = digest.strip().lower()
    tenant = tenant.strip()
    if not sep or not tenant or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        # Never echo the entry: a key pasted by mistake in place of its hash must not reach the logs.
        raise ValueError(f"{where}: an entry is not `tenant:sha256hex` (64 hex digits)")
    return ApiKeyEntry(tenant_id=tenant, sha256_hex=digest)


def parse_api_key_entries(text: str, *, where: str, separator: str = ",") -> list[ApiKeyEntry]:
    """Entries of AUTH_API_KEYS (separator ",") or of an AUTH_API_KEYS_FILE (separator "\\n", # comments)."""
    entries = []
    for chunk in text.split(separator):
        line = chunk.split("#", 1)[0].strip() if separator == "\n" else chunk.strip()
        if line:
            entries.append(_parse_one(line, where))
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
                    kind=CredentialKind.API_KEY, tenant_id=entry.tenant_id, subject=f"key:{entry.sha256_hex[:8]}"
                ),
            )
        self._by_digest = by_digest

    def __len__(self) -> int:
        return len(self._entries)

    def verify(self, key: str) -> Principal | None:
        """The key's principal, or None."""
        return self._by_digest.get(hashlib.sha256(key.encode("utf-8")).digest())
