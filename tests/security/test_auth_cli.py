"""`athena auth`: the printed key, its config entry and minted tokens are what ingest accepts."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from athena.auth import ApiKeyVerifier, JwtPolicy, JwtVerifier, hash_api_key, parse_api_key_entries
from athena_cli.main import app

SECRET = "s" * 40


def test_new_key_prints_a_key_and_the_entry_that_verifies_it() -> None:
    out = CliRunner().invoke(app, ["auth", "new-key", "--tenant", "acme"]).output
    key = re.search(r"api key[^:]*: (\S+)", out).group(1)  # type: ignore[union-attr]
    entry = re.search(r"config entry[^:]*: (\S+)", out).group(1)  # type: ignore[union-attr]
    assert entry == f"acme:{hash_api_key(key)}"
    verifier = ApiKeyVerifier(parse_api_key_entries(entry, where="test"))
    principal = verifier.verify(key)
    assert principal is not None and principal.tenant_id == "acme"
    assert verifier.verify(key + "x") is None


def test_hash_key_reads_the_key_from_stdin() -> None:
    done = CliRunner().invoke(app, ["auth", "hash-key", "--tenant", "acme"], input="athk_existing\n")
    assert done.exit_code == 0 and done.output.strip() == f"acme:{hash_api_key('athk_existing')}"


def test_mint_token_signs_with_the_configured_secret_and_audience() -> None:
    runner = CliRunner(env={"AUTH_JWT_HS256_SECRET": SECRET, "AUTH_JWT_AUDIENCE": "memory"})
    done = runner.invoke(app, ["auth", "mint-token", "--tenant", "acme", "--ttl", "60"])
    assert done.exit_code == 0, done.output
    token = done.output.strip()
    accepted = JwtVerifier(JwtPolicy(audience="memory"), hs256_secret=SECRET).verify(token)
    assert accepted is not None and accepted.tenant_id == "acme"
    assert JwtVerifier(JwtPolicy(audience="athena"), hs256_secret=SECRET).verify(token) is None
    refused = CliRunner(env={"AUTH_JWT_HS256_SECRET": ""}).invoke(app, ["auth", "mint-token", "--tenant", "acme"])
    assert refused.exit_code == 2


def test_new_key_with_scopes_prints_a_scoped_entry_that_verifies_to_them() -> None:
    done = CliRunner().invoke(
        app, ["auth", "new-key", "--tenant", "acme", "--scope", "memory:admin", "--scope", "memory:read"]
    )
    assert done.exit_code == 0, done.output
    key = re.search(r"api key[^:]*: (\S+)", done.output).group(1)  # type: ignore[union-attr]
    entry = re.search(r"config entry[^:]*: (\S+)", done.output).group(1)  # type: ignore[union-attr]
    assert entry == f"acme:{hash_api_key(key)}:memory:read+memory:admin"
    principal = ApiKeyVerifier(parse_api_key_entries(entry, where="test")).verify(key)
    assert principal is not None and principal.scopes == {"memory:read", "memory:admin"}


def test_hash_key_with_a_scope_prints_the_scoped_entry() -> None:
    done = CliRunner().invoke(
        app, ["auth", "hash-key", "--tenant", "acme", "--scope", "memory:read"], input="athk_existing\n"
    )
    assert done.exit_code == 0 and done.output.strip() == f"acme:{hash_api_key('athk_existing')}:memory:read"


def test_mint_token_with_a_scope_grants_only_that_scope() -> None:
    runner = CliRunner(env={"AUTH_JWT_HS256_SECRET": SECRET, "AUTH_JWT_AUDIENCE": "athena"})
    done = runner.invoke(app, ["auth", "mint-token", "--tenant", "acme", "--scope", "memory:read"])
    assert done.exit_code == 0, done.output
    principal = JwtVerifier(JwtPolicy(audience="athena"), hs256_secret=SECRET).verify(done.output.strip())
    assert principal is not None and principal.scopes == {"memory:read"}


def test_an_unknown_scope_on_the_command_line_is_refused_naming_the_known_ones() -> None:
    for command in (["new-key"], ["hash-key"], ["mint-token"]):
        done = CliRunner(env={"AUTH_JWT_HS256_SECRET": SECRET}).invoke(
            app, ["auth", *command, "--tenant", "acme", "--scope", "memory:everything"], input="athk_existing\n"
        )
        assert done.exit_code == 2, command
        said = " ".join(done.output.split())  # the console wraps long lines
        assert "memory:everything" in said and "memory:read, memory:write, memory:admin" in said
        assert "athk_" not in said  # no key is printed for a refused command
