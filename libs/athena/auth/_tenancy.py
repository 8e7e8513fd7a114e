"""Where each public request names its tenant, so one interceptor can check it for every RPC.

A request carries its tenant either in `scope.tenant_id` or in a top-level `tenant_id` field. Every
method of a guarded service is resolved when the server is built: an RPC whose request has neither
fails the build, so a new RPC cannot slip past the tenant check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, ServiceDescriptor
from google.protobuf.message import Message

from athena.errors import PermissionDenied

__all__ = ["TenantLocator", "bind_tenant"]


@dataclass(frozen=True)
class _Location:
    container: str | None
    """Name of the message field holding `tenant_id` (e.g. "scope"), or None for a top-level field."""


def _locate(request_type: Descriptor) -> _Location | None:
    fields = request_type.fields_by_name
    scope = fields.get("scope")
    if scope is not None and scope.message_type is not None and "tenant_id" in scope.message_type.fields_by_name:
        return _Location("scope")
    if "tenant_id" in fields:
        return _Location(None)
    return None


class TenantLocator:
    """Per full method name (`/pkg.Service/Method`), where its request carries the tenant."""

    def __init__(self, services: list[ServiceDescriptor]) -> None:
        self._by_method: dict[str, _Location] = {}
        for service in services:
            for method in service.methods:
                location = _locate(method.input_type)
                if location is None:
                    raise TypeError(
                        f"{service.full_name}.{method.name}: request names no tenant (scope.tenant_id or tenant_id)"
                    )
                self._by_method[f"/{service.full_name}/{method.name}"] = location

    def location(self, method: str) -> _Location | None:
        return self._by_method.get(method)


def bind_tenant(request: Message, location: _Location, tenant_id: str) -> None:
    """Refuses a request naming another tenant; fills an empty tenant from the credential."""
    if location.container and not request.HasField(location.container):
        return  # no scope at all: nothing to bind, and validation refuses the request for the missing scope
    holder: Any = getattr(request, location.container) if location.container else request
    named = holder.tenant_id
    if not named:
        holder.tenant_id = tenant_id
    elif named != tenant_id:
        raise PermissionDenied("the credential does not grant access to this tenant")
