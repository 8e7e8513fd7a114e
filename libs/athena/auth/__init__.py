"""Authentication and tenant isolation of Athena's gRPC services (docs/security.md).

The public API accepts API keys (stored as SHA-256 hashes) and JWTs (HS256, RS256); the credential
decides the tenant, and a request naming another tenant is refused. Its scopes (memory:read,
memory:write, memory:admin) decide which methods it may call. FormationService accepts only the
internal token. TLS (and mTLS on the internal hop) comes from certificate paths in the settings.
"""

from athena.auth._api_keys import ApiKeyEntry, ApiKeyVerifier, hash_api_key, new_api_key, parse_api_key_entries
from athena.auth._authenticator import (
    AUTHORIZATION,
    Authenticator,
    InternalTokenAuthenticator,
    PublicAuthenticator,
    bearer_metadata,
    bearer_token,
)
from athena.auth._client import (
    BearerCredentialInterceptor,
    BearerCredentialStreamInterceptor,
    bearer_credential_interceptors,
)
from athena.auth._interceptor import AuthInterceptor
from athena.auth._jwt import JwtPolicy, JwtVerifier, mint_hs256
from athena.auth._principal import CredentialKind, Principal
from athena.auth._scopes import (
    ADMIN,
    ALL_SCOPES,
    DEFAULT_SCOPES,
    METHOD_SCOPES,
    READ,
    WRITE,
    ScopeTable,
    parse_scope_names,
)
from athena.auth._setup import (
    hs256_secret,
    internal_auth_interceptor,
    internal_call_metadata,
    internal_token,
    public_auth_interceptor,
    public_authenticator,
)
from athena.auth._tenancy import TenantLocator
from athena.auth._tls import internal_channel_credentials, server_credentials

__all__ = [
    "ADMIN",
    "ALL_SCOPES",
    "AUTHORIZATION",
    "DEFAULT_SCOPES",
    "METHOD_SCOPES",
    "READ",
    "WRITE",
    "ApiKeyEntry",
    "ApiKeyVerifier",
    "AuthInterceptor",
    "Authenticator",
    "BearerCredentialInterceptor",
    "BearerCredentialStreamInterceptor",
    "CredentialKind",
    "InternalTokenAuthenticator",
    "JwtPolicy",
    "JwtVerifier",
    "Principal",
    "PublicAuthenticator",
    "ScopeTable",
    "TenantLocator",
    "bearer_credential_interceptors",
    "bearer_metadata",
    "bearer_token",
    "hash_api_key",
    "hs256_secret",
    "internal_auth_interceptor",
    "internal_call_metadata",
    "internal_channel_credentials",
    "internal_token",
    "mint_hs256",
    "new_api_key",
    "parse_api_key_entries",
    "parse_scope_names",
    "public_auth_interceptor",
    "public_authenticator",
    "server_credentials",
]
