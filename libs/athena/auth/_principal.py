"""Who a verified credential speaks for."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["CredentialKind", "Principal"]


class CredentialKind(str, Enum):
    API_KEY = "api_key"
    JWT = "jwt"
    INTERNAL = "internal"


@dataclass(frozen=True)
class Principal:
    kind: CredentialKind
    tenant_id: str
    """The tenant the credential acts for; empty for the internal credential (it may act for any)."""
    subject: str = ""
    """A non-secret name of the caller for logs (key hash prefix or the JWT's sub)."""
