"""GetChainEvents: the events behind a chain, read from the log, paged by position in the chain."""

from __future__ import annotations

from dataclasses import dataclass

from athena.events import doc_to_event
from athena_client.memory.v1 import memory_pb2
from athena_formation.curation.owned import owned_chain
from athena_formation.page_tokens import decode_offset, encode_offset
from athena_formation.store.chain_store import ChainStore

__all__ = ["ChainEvents"]

DEFAULT_PAGE = 100
PAGE_BYTES = 3 * 1024 * 1024
"""A page stays under gRPC's 4 MiB default message limit, whatever the events hold."""


@dataclass
class ChainEvents:
    store: ChainStore

    async def page(self, request: memory_pb2.GetChainEventsRequest) -> memory_pb2.GetChainEventsResponse:
        doc = await owned_chain(self.store, request.scope, request.chain_id)
        event_ids = list(doc.get("event_ids", []))
        offset = decode_offset(request.page_token)
        wanted = event_ids[offset : offset + (request.page_size or DEFAULT_PAGE)]
        found = {d["_id"]: d for d in await self.store.event_log.docs(wanted)}
        out = memory_pb2.GetChainEventsResponse()
        size = 0
        taken = 0
        for event_id in wanted:
            doc_ = found.get(event_id)
            if doc_ is None:
                out.missing += 1
            else:
                event = doc_to_event(doc_)
                size += event.ByteSize()
                if size > PAGE_BYTES and out.events:
                    break  # the rest on the next page
                out.events.append(event)
            taken += 1
        if offset + taken < len(event_ids):
            out.next_page_token = encode_offset(offset + taken)
        return out
