"""`athena auth ...`: API keys and tokens for the public API (docs/security.md)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from athena.auth import (
    ALL_SCOPES,
    DEFAULT_SCOPES,
    ApiKeyEntry,
    hash_api_key,
    hs256_secret,
    mint_hs256,
    new_api_key,
    parse_scope_names,
)
from athena.config import SettingsError, load_settings

__all__ = ["app"]

app = typer.Typer(help="API keys and tokens of the public API.", no_args_is_help=True)
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True)

TenantOption = Annotated[str, typer.Option("--tenant", help="Tenant the credential acts for.")]
ScopeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--scope",
        metavar="SCOPE",
        help=f"A scope the credential grants ({', '.join(ALL_SCOPES)}); repeat for several. "
        "Default: memory:read and memory:write. memory:admin implies the other two.",
    ),
]


@app.callback()
def _auth() -> None:
    """Credential commands."""


def _scopes(named: list[str] | None) -> frozenset[str]:
    """The scopes asked for on the command line (the default without --scope); exit 2 on an unknown name."""
    if not named:
        return DEFAULT_SCOPES
    unknown = [n for n in named if n not in ALL_SCOPES]
    if unknown:
        _err.print(f"[red]--scope {unknown[0]}: not a scope; use {', '.join(ALL_SCOPES)}[/red]")
        raise typer.Exit(2)
    return parse_scope_names(named)


@app.command("new-key")
def new_key(tenant: TenantOption, scope: ScopeOption = None) -> None:
    """Print a fresh random API key (give it to the tenant) and its AUTH_API_KEYS entry (give that to ingest)."""
    scopes = _scopes(scope)
    key = new_api_key()
    entry = ApiKeyEntry(tenant, hash_api_key(key), scopes=scopes).render()
    _out.print(f"api key (shown once, store it as a secret): {key}")
    _out.print(f"config entry (AUTH_API_KEYS / AUTH_API_KEYS_FILE): {entry}")


@app.command("hash-key")
def hash_key(tenant: TenantOption, scope: ScopeOption = None) -> None:
    """Read an existing API key from stdin (or a hidden prompt) and print its config entry."""
    scopes = _scopes(scope)
    key = sys.stdin.readline().strip() if not sys.stdin.isatty() else typer.prompt("api key", hide_input=True).strip()
    if not key:
        _err.print("[red]no key given[/red]")
        raise typer.Exit(2)
    _out.print(ApiKeyEntry(tenant, hash_api_key(key), scopes=scopes).render())


@app.command("mint-token")
def mint_token(
    tenant: TenantOption,
    ttl: Annotated[float, typer.Option("--ttl", help="Lifetime of the token, in seconds.")] = 3600.0,
    subject: Annotated[str, typer.Option("--subject", help="sub claim (who the token is for).")] = "",
    scope: ScopeOption = None,
) -> None:
    """Print an HS256 JWT for a tenant, signed with AUTH_JWT_HS256_SECRET(_FILE) and carrying
    AUTH_JWT_AUDIENCE (and AUTH_JWT_ISSUER): for operators and tests, in place of an identity provider.
    With --scope, the token's `scope` claim names them; without, it has no such claim (read and write)."""
    scopes = _scopes(scope) if scope else None
    try:
        settings = load_settings()
        secret = hs256_secret(settings)
    except SettingsError as exc:
        _err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    if not secret:
        _err.print("[red]set AUTH_JWT_HS256_SECRET or AUTH_JWT_HS256_SECRET_FILE[/red]")
        raise typer.Exit(2)
    _out.print(
        mint_hs256(
            secret,
            tenant,
            audience=settings.auth_jwt_audience,
            tenant_claim=settings.auth_jwt_tenant_claim,
            ttl_seconds=ttl,
            subject=subject,
            issuer=settings.auth_jwt_issuer,
            scopes=scopes,
        )
    )
