"""Who a verified credential speaks for, and what it may do."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from athena.auth._scopes import grants

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
    scopes: frozenset[str] = frozenset()
    """Credential scopes (athena.auth._scopes) of a tenant credential; none unless granted. The internal
    credential has none and needs none: FormationService is not scope-checked."""

    def allows(self, needed: str) -> bool:
        """Whether the credential holds `needed` (memory:admin implies every scope)."""
        return grants(self.scopes, needed)
