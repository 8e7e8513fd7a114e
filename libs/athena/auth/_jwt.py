"""JWT bearer tokens: HS256 (shared secret) and RS256 (public key); tenant from a configurable claim,
credential scopes from the standard `scope` claim (or `scp`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jwt

from athena.auth._principal import CredentialKind, Principal
from athena.auth._scopes import ALL_SCOPES, DEFAULT_SCOPES, ordered, parse_scope_names
from athena.auth._verified_cache import ExpiringCache

__all__ = ["JwtPolicy", "JwtVerifier", "claimed_scopes", "looks_like_jwt", "mint_hs256"]


@dataclass(frozen=True)
class JwtPolicy:
    audience: str
    tenant_claim: str = "tenant_id"
    issuer: str = ""
    leeway_seconds: float = 30.0


def looks_like_jwt(token: str) -> bool:
    """Compact JWS: three base64url parts. API keys never contain a dot."""
    return token.count(".") == 2


def claimed_scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """The Athena scopes a token grants.

    `scope` (RFC 8693 / OAuth 2.0: one string, names separated by spaces) is read first, else `scp`
    (a list of strings, as some identity providers write it; a space-separated string is read too).
    Neither claim: read and write, as before scopes existed. Names that are not Athena's (`openid`,
    another API's scopes) are ignored, so a token whose claim names none of Athena's scopes, or a
    claim of another type, grants nothing and every call is PERMISSION_DENIED.
    """
    if "scope" in claims:
        raw = claims["scope"]
    elif "scp" in claims:
        raw = claims["scp"]
    else:
        return DEFAULT_SCOPES
    if isinstance(raw, str):
        names: list[Any] = raw.split()
    elif isinstance(raw, list):
        names = raw
    else:
        return frozenset()
    return frozenset(n for n in names if isinstance(n, str) and n in ALL_SCOPES)


_CACHED_TOKENS = 1024
"""Verified tokens kept (by their exact string) so a client's repeated calls skip the signature check."""


class JwtVerifier:
    """Verifies a token against every configured key; algorithms are pinned per key (no `alg` confusion).

    A token that passed is remembered until its own `exp` (no leeway: from that second it is never
    served from memory, and the full check with its leeway decides again), so the signature and claims
    of a token are checked once per verifier rather than once per call. The key is the whole token
    string, so any change to header, claims or signature is a miss and gets the full check.
    """

    def __init__(self, policy: JwtPolicy, *, hs256_secret: str = "", rs256_public_key_pem: bytes = b"") -> None:
        self.policy = policy
        self._verified: ExpiringCache[Principal] = ExpiringCache(max_entries=_CACHED_TOKENS)
        self._keys: list[tuple[str, object]] = []
        if hs256_secret:
            self._keys.append(("HS256", hs256_secret))
        if rs256_public_key_pem:
            from cryptography.hazmat.primitives.serialization import load_pem_public_key

            self._keys.append(("RS256", load_pem_public_key(rs256_public_key_pem)))

    def __len__(self) -> int:
        return len(self._keys)

    def verify(self, token: str) -> Principal | None:
        cached = self._verified.get(token)
        if cached is not None:
            return cached
        try:
            alg = jwt.get_unverified_header(token).get("alg")
        except jwt.InvalidTokenError:
            return None
        for key_alg, key in self._keys:
            if alg != key_alg:
                continue
            try:
                claims = jwt.decode(
                    token,
                    key,  # type: ignore[arg-type]
                    algorithms=[key_alg],
                    audience=self.policy.audience,
                    issuer=self.policy.issuer or None,
                    leeway=self.policy.leeway_seconds,
                    options={"require": ["exp", "aud"]},
                )
            except jwt.InvalidTokenError:
                return None
            tenant = claims.get(self.policy.tenant_claim)
            if not isinstance(tenant, str) or not tenant:
                return None
            principal = Principal(
                kind=CredentialKind.JWT,
                tenant_id=tenant,
                subject=f"jwt:{claims.get('sub', '')}",
                scopes=claimed_scopes(claims),
            )
            exp = claims["exp"]  # required above, and PyJWT refuses a non-numeric one
            self._verified.put(token, principal, expires_at=float(exp))
            return principal
        return None


def mint_hs256(
    secret: str,
    tenant_id: str,
    *,
    audience: str,
    tenant_claim: str = "tenant_id",
    ttl_seconds: float = 3600.0,
    subject: str = "",
    issuer: str = "",
    scopes: Iterable[str] | None = None,
) -> str:
    """An HS256 token for a tenant: what an identity provider would issue (local stack, tests, CLI).

    `scopes`: written as the `scope` claim (ValueError for a name that is not a scope); None writes
    no claim, which grants the default scopes (read and write).
    """
    named = None if scopes is None else parse_scope_names(scopes)
    now = int(time.time())
    claims: dict[str, object] = {tenant_claim: tenant_id, "aud": audience, "iat": now, "exp": now + int(ttl_seconds)}
    if subject:
        claims["sub"] = subject
    if issuer:
        claims["iss"] = issuer
    if named is not None:
        claims["scope"] = " ".join(ordered(named))
    return jwt.encode(claims, secret, algorithm="HS256")
