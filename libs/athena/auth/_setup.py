"""Building each service's authentication from the settings; a service refuses to start half-configured."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from google.protobuf.descriptor import ServiceDescriptor

from athena.auth._api_keys import ApiKeyEntry, ApiKeyVerifier, parse_api_key_entries
from athena.auth._authenticator import InternalTokenAuthenticator, PublicAuthenticator, bearer_metadata
from athena.auth._interceptor import AuthInterceptor
from athena.auth._jwt import JwtPolicy, JwtVerifier
from athena.auth._secrets import read_file_setting, secret_value
from athena.config import Settings, SettingsError

__all__ = [
    "hs256_secret",
    "internal_auth_interceptor",
    "internal_call_metadata",
    "internal_token",
    "public_auth_interceptor",
    "public_authenticator",
]

log = logging.getLogger("athena.auth")

PUBLIC_CREDENTIAL_VARIABLES = (
    "AUTH_API_KEYS",
    "AUTH_API_KEYS_FILE",
    "AUTH_JWT_HS256_SECRET",
    "AUTH_JWT_HS256_SECRET_FILE",
    "AUTH_JWT_RS256_PUBLIC_KEY_FILE",
)


def _api_key_entries(settings: Settings) -> list[ApiKeyEntry]:
    entries = parse_api_key_entries(settings.auth_api_keys, where="AUTH_API_KEYS")
    if settings.auth_api_keys_file:
        text = read_file_setting(settings.auth_api_keys_file, "AUTH_API_KEYS_FILE").decode("utf-8")
        entries += parse_api_key_entries(text, where="AUTH_API_KEYS_FILE", separator="\n")
    return entries


MIN_HS256_SECRET_BYTES = 32
"""RFC 7518 3.2: an HS256 key at least as long as the hash output."""


def hs256_secret(settings: Settings) -> str:
    secret = secret_value(settings.auth_jwt_hs256_secret, settings.auth_jwt_hs256_secret_file, "AUTH_JWT_HS256_SECRET")
    if secret and len(secret.encode()) < MIN_HS256_SECRET_BYTES:
        raise SettingsError(f"AUTH_JWT_HS256_SECRET: must be at least {MIN_HS256_SECRET_BYTES} bytes long")
    return secret


def public_authenticator(settings: Settings) -> PublicAuthenticator:
    try:
        api_keys = ApiKeyVerifier(_api_key_entries(settings))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    rs256 = b""
    if settings.auth_jwt_rs256_public_key_file:
        rs256 = read_file_setting(settings.auth_jwt_rs256_public_key_file, "AUTH_JWT_RS256_PUBLIC_KEY_FILE")
    policy = JwtPolicy(
        audience=settings.auth_jwt_audience,
        tenant_claim=settings.auth_jwt_tenant_claim,
        issuer=settings.auth_jwt_issuer,
        leeway_seconds=settings.auth_jwt_leeway_seconds,
    )
    try:
        jwts = JwtVerifier(
            policy,
            hs256_secret=hs256_secret(settings),
            rs256_public_key_pem=rs256,
        )
    except ValueError as exc:
        raise SettingsError(f"AUTH_JWT_RS256_PUBLIC_KEY_FILE: not a PEM public key ({exc})") from None
    return PublicAuthenticator(api_keys=api_keys, jwts=jwts)


def _warn_open(service: str, what: str) -> None:
    log.warning(
        "AUTH_DISABLED=true: %s %s WITHOUT AUTHENTICATION. Local development only; never expose it.", service, what
    )


def public_auth_interceptor(settings: Settings, services: Iterable[ServiceDescriptor]) -> AuthInterceptor | None:
    """The public API's guard; None (with a loud warning) only under AUTH_DISABLED=true."""
    if settings.auth_disabled:
        _warn_open("ingest", "serves the public API")
        return None
    authenticator = public_authenticator(settings)
    if not authenticator.has_credentials:
        raise SettingsError(
            "no credential source for the public API: set "
            + ", ".join(PUBLIC_CREDENTIAL_VARIABLES)
            + " (or AUTH_DISABLED=true for local development)"
        )
    return AuthInterceptor(authenticator, services, tenant_bound=True)


def internal_token(settings: Settings) -> str:
    return secret_value(settings.internal_auth_token, settings.internal_auth_token_file, "INTERNAL_AUTH_TOKEN")


def internal_call_metadata(settings: Settings) -> tuple[tuple[str, str], ...]:
    """Metadata ingest and cognition send with every FormationService call."""
    token = internal_token(settings)
    return bearer_metadata(token) if token else ()


def internal_auth_interceptor(settings: Settings, services: Iterable[ServiceDescriptor]) -> AuthInterceptor | None:
    """FormationService's guard: the internal token. Without one, formation starts only under AUTH_DISABLED."""
    token = internal_token(settings)
    if not token:
        if not settings.auth_disabled:
            raise SettingsError(
                "INTERNAL_AUTH_TOKEN (or INTERNAL_AUTH_TOKEN_FILE) is required (or AUTH_DISABLED=true for local development)"
            )
        _warn_open("formation", "serves FormationService")
        return None
    return AuthInterceptor(InternalTokenAuthenticator(token), services, tenant_bound=False)
