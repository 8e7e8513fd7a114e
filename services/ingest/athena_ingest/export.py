"""MemoryService.ExportUser: everything Athena holds about a user, streamed (the right of access).

Ingest owns the event log and Redis, formation the chains, embeddings and formation records: the
events are streamed from the log here (oldest first), then formation's part is relayed
(FormationService.ExportUser), then one summary whose counts name the same records ForgetUser's
receipt counts (events, chains, formation_records, embeddings, window_events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc

from athena.errors import DependencyUnavailable
from athena.formation_client import FormationClient
from athena.grpc_util import error_from_rpc
from athena.redis_util import redis_unavailable
from athena.stm import ShortTermWindow
from athena.stores import EventLog
from athena_client.memory.v1 import memory_pb2

__all__ = ["UserExporter"]


@dataclass
class UserExporter:
    event_log: EventLog
    window: ShortTermWindow
    formation: FormationClient

    async def stream(self, request: memory_pb2.ExportUserRequest) -> AsyncIterator[memory_pb2.ExportUserResponse]:
        summary = memory_pb2.ExportSummary()
        summary.exported_at.GetCurrentTime()
        with redis_unavailable():
            summary.window_events = await self.window.user_event_count(request.tenant_id, request.user_id)
        async for event in self.event_log.user_events(request.tenant_id, request.user_id):
            summary.events += 1
            yield memory_pb2.ExportUserResponse(event=event)
        async for item in self._formation_part(request):
            if item.HasField("summary"):
                for name in ("chains", "formation_records", "embeddings"):
                    setattr(summary, name, getattr(item.summary, name))
            else:
                yield item
        yield memory_pb2.ExportUserResponse(summary=summary)

    async def _formation_part(
        self, request: memory_pb2.ExportUserRequest
    ) -> AsyncIterator[memory_pb2.ExportUserResponse]:
        client = self.formation
        call = client.stub.ExportUser(request, timeout=client.timeout * 10, metadata=client.metadata)
        try:
            async for item in call:
                yield item
        except grpc.aio.AioRpcError as exc:
            mapped = error_from_rpc(exc)
            if mapped is not None:
                raise mapped from exc
            raise DependencyUnavailable("formation", f"{exc.code().name}: {exc.details()}") from exc
