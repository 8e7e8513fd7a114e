"""How a call carries its credential: `authorization: Bearer <credential>` (an API key or a JWT).

The server's authenticator (athena.auth) reads the same key and scheme from these definitions.
"""

from __future__ import annotations

__all__ = ["AUTHORIZATION", "bearer_metadata"]

AUTHORIZATION = "authorization"
"""The call metadata key of the credential (gRPC metadata keys are lower case)."""


def bearer_metadata(credential: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying a credential (API key, JWT or the internal token)."""
    return ((AUTHORIZATION, f"Bearer {credential}"),)
