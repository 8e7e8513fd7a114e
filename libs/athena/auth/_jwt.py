"""JWT bearer tokens: HS256 (shared secret) and RS256 (public key); tenant from a configurable claim."""

from __future__ import annotations

import time
from dataclasses import dataclass

import jwt

from athena.auth._principal import CredentialKind, Principal
from athena.auth._verified_cache import ExpiringCache

__all__ = ["JwtPolicy", "JwtVerifier", "looks_like_jwt", "mint_hs256"]


@dataclass(frozen=True)
class JwtPolicy:
    audience: str
    tenant_claim: str = "tenant_id"
    issuer: str = ""
    leeway_seconds: float = 30.0


def looks_like_jwt(token: str) -> bool:
    """Compact JWS: three base64url parts. API keys never contain a dot."""
    return token.count(".") == 2


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
            principal = Principal(kind=CredentialKind.JWT, tenant_id=tenant, subject=f"jwt:{claims.get('sub', '')}")
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
) -> str:
    """An HS256 token for a tenant: what an identity provider would issue (local stack, tests, CLI)."""
    now = int(time.time())
    claims: dict[str, object] = {tenant_claim: tenant_id, "aud": audience, "iat": now, "exp": now + int(ttl_seconds)}
    if subject:
        claims["sub"] = subject
    if issuer:
        claims["iss"] = issuer
    return jwt.encode(claims, secret, algorithm="HS256")
