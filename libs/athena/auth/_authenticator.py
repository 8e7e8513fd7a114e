"""Turning the `authorization` call metadata into a Principal, or Unauthenticated."""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import Protocol

from athena.auth._api_keys import ApiKeyVerifier
from athena.auth._jwt import JwtVerifier, looks_like_jwt
from athena.auth._principal import CredentialKind, Principal
from athena.errors import Unauthenticated
from athena_client.credentials import AUTHORIZATION, bearer_metadata

__all__ = [
    "AUTHORIZATION",
    "Authenticator",
    "InternalTokenAuthenticator",
    "PublicAuthenticator",
    "bearer_metadata",
    "bearer_token",
]

# AUTHORIZATION and bearer_metadata are the client's (athena_client.credentials): what the clients send
# is what this reads, from one definition.
_MAX_CREDENTIAL_CHARS = 8192
# One message for every refusal: the caller learns nothing about which keys, algorithms or tenants exist.
_REFUSED = "missing or invalid credential"


def bearer_token(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The bearer credential of a call; Unauthenticated when absent or malformed."""
    values = [v for k, v in (metadata or ()) if k.lower() == AUTHORIZATION]
    if len(values) != 1 or not isinstance(values[0], str):
        raise Unauthenticated(_REFUSED)
    scheme, _, token = values[0].strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > _MAX_CREDENTIAL_CHARS or " " in token:
        raise Unauthenticated(_REFUSED)
    return token


class Authenticator(Protocol):
    def authenticate(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> Principal: ...


class PublicAuthenticator:
    """Callers of the public API: API keys (hashed) and JWTs (HS256 / RS256)."""

    def __init__(self, *, api_keys: ApiKeyVerifier, jwts: JwtVerifier) -> None:
        self.api_keys = api_keys
        self.jwts = jwts

    @property
    def has_credentials(self) -> bool:
        return bool(len(self.api_keys) or len(self.jwts))

    def authenticate(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> Principal:
        token = bearer_token(metadata)
        principal = self.jwts.verify(token) if looks_like_jwt(token) else self.api_keys.verify(token)
        if principal is None:
            raise Unauthenticated(_REFUSED)
        return principal


class InternalTokenAuthenticator:
    """Callers of the internal FormationService: the one shared internal token."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the internal token is empty")
        self._token = token.encode()

    def authenticate(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> Principal:
        presented = bearer_token(metadata).encode()
        if not hmac.compare_digest(presented, self._token):
            raise Unauthenticated(_REFUSED)
        return Principal(kind=CredentialKind.INTERNAL, tenant_id="", subject="internal")
