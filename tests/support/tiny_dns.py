"""A DNS server on 127.0.0.1 whose answer a test changes: the stand-in for a Kubernetes headless Service.

gRPC's resolver takes a DNS server in the target (`dns://127.0.0.1:PORT/name:port`), so a channel to
`formation.test` asks this server and nothing else. Every name answers the A records in `addresses`
(TTL 0, so nothing caches them); any other query type answers no records. UDP only: the answers are small.

    with TinyDNS(["127.0.0.1"]) as dns:
        target = dns.target("formation.test", 50052)
        dns.addresses = ["127.0.0.1", "127.0.0.2"]   # a replica became ready
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Sequence
from types import TracebackType

__all__ = ["TinyDNS"]

_A, _IN = 1, 1


class TinyDNS:
    def __init__(self, addresses: Sequence[str]) -> None:
        self.addresses = list(addresses)
        self.queries: list[tuple[str, int]] = []
        """(name, query type) of every query answered, in order."""
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = int(self._sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="tiny-dns", daemon=True)

    def target(self, name: str, port: int) -> str:
        """A gRPC target resolved by this server only."""
        return f"dns://127.0.0.1:{self.port}/{name}:{port}"

    def __enter__(self) -> TinyDNS:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                query, peer = self._sock.recvfrom(512)
            except TimeoutError:
                continue
            reply = self._answer(query)
            if reply:
                self._sock.sendto(reply, peer)

    def _answer(self, query: bytes) -> bytes | None:
        if len(query) < 12:
            return None
        (query_id,) = struct.unpack(">H", query[:2])
        labels, i = [], 12
        while i < len(query) and query[i]:
            labels.append(query[i + 1 : i + 1 + query[i]].decode("ascii", "replace"))
            i += 1 + query[i]
        if i + 5 > len(query):
            return None
        qtype, _ = struct.unpack(">HH", query[i + 1 : i + 5])
        question = query[12 : i + 5]
        self.queries.append((".".join(labels), qtype))
        records = list(self.addresses) if qtype == _A else []
        # Header: same id; response, recursion desired and available, no error; one question echoed.
        header = struct.pack(">HHHHHH", query_id, 0x8180, 1, len(records), 0, 0)
        # Each answer points back at the question's name (offset 12), TTL 0.
        answers = b"".join(struct.pack(">HHHIH", 0xC00C, _A, _IN, 0, 4) + socket.inet_aton(a) for a in records)
        return header + question + answers
