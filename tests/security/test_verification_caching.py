"""Verified JWTs are remembered only until their own expiry, and API keys are found by digest."""

from __future__ import annotations

import time

import jwt

from athena.auth import ApiKeyEntry, ApiKeyVerifier, JwtPolicy, JwtVerifier, hash_api_key, mint_hs256, new_api_key

SECRET = "s" * 40


def test_a_cached_jwt_is_refused_once_its_exp_has_passed() -> None:
    verifier = JwtVerifier(JwtPolicy(audience="athena", leeway_seconds=0), hs256_secret=SECRET)
    # exp is whole seconds (now truncated + ttl): a ttl of 2 leaves the token at least 1 s of life.
    token = mint_hs256(SECRET, "acme", audience="athena", ttl_seconds=2)
    first = verifier.verify(token)
    assert first is not None and first.tenant_id == "acme"
    assert verifier.verify(token) == first  # served again while valid
    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    time.sleep(max(0.0, exp - time.time()) + 0.2)
    assert verifier.verify(token) is None


def test_a_token_differing_from_a_cached_one_gets_the_full_check() -> None:
    verifier = JwtVerifier(JwtPolicy(audience="athena"), hs256_secret=SECRET)
    token = mint_hs256(SECRET, "acme", audience="athena")
    assert verifier.verify(token) is not None
    header, claims, signature = token.split(".")
    forged_claims = jwt.encode({"tenant_id": "other", "aud": "athena", "exp": int(time.time()) + 60}, SECRET).split(
        "."
    )[1]
    assert verifier.verify(f"{header}.{forged_claims}.{signature}") is None
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    assert verifier.verify(f"{header}.{claims}.{flipped}") is None


def test_a_token_for_another_audience_is_refused_even_after_a_valid_one_was_cached() -> None:
    verifier = JwtVerifier(JwtPolicy(audience="athena"), hs256_secret=SECRET)
    assert verifier.verify(mint_hs256(SECRET, "acme", audience="athena")) is not None
    assert verifier.verify(mint_hs256(SECRET, "acme", audience="elsewhere")) is None


def test_api_keys_resolve_to_their_own_tenant_and_unknown_keys_to_nothing() -> None:
    keys = {tenant: new_api_key() for tenant in ("acme", "globex", "initech")}
    verifier = ApiKeyVerifier(ApiKeyEntry(t, hash_api_key(k)) for t, k in keys.items())
    for tenant, key in keys.items():
        principal = verifier.verify(key)
        assert principal is not None and principal.tenant_id == tenant
    assert verifier.verify(new_api_key()) is None
    assert verifier.verify(hash_api_key(keys["acme"])) is None  # the stored hash is not a key
