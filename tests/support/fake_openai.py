"""A real OpenAI-compatible HTTP server for tests: scriptable, recording, on 127.0.0.1 and a free port.

The real `openai` SDK talks to it over HTTP, so tests cover the SDK's request building, error mapping
and timeouts, not a mock of them.

    with FakeOpenAI() as server:
        server.reply("true")                       # next chat completion answers "true"
        server.error(429, retry_after=0.2)         # the one after: 429 with Retry-After
        server.reply("false", delay=5.0)           # ...then a slow answer (to trigger a timeout)
        client = LLMClient(base_url=server.base_url, model="m")
        ...
        assert len(server.chat_requests) == 3

Scripted responses are consumed in order by POST /v1/chat/completions; when none is left the server
answers `default` (set it with `server.default = Scripted(...)`), which is a 500 unless changed, so a
test that makes an unplanned call fails loudly. POST /v1/embeddings always answers deterministic
vectors (hashed bag of words: equal texts give equal vectors, shared words give positive cosine).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import random
import re
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FakeOpenAI", "RecordedRequest", "Scripted", "fake_embedding", "fake_openai_server"]


@dataclass(frozen=True)
class Scripted:
    """One scripted HTTP answer.

    status 200 with `content`: a chat completion whose message content is `content`.
    Any other status: an OpenAI-style error body. `raw` replaces the body entirely (bytes as given).
    `delay` seconds pass before the answer is written (the client may have given up by then).
    """

    content: str | None = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None
    message: str = "scripted error"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    received_at: float
    """time.monotonic() when the request was read."""


_TOKEN = re.compile(r"\w+")


def fake_embedding(text: str, dim: int = 384) -> list[float]:
    """Unit vector: the normalized sum of one pseudo-random vector per distinct lowercase word."""
    words = sorted(set(_TOKEN.findall(text.lower()))) or [f"\x00{text}"]
    acc = [0.0] * dim
    for word in words:
        rng = random.Random(hashlib.sha256(word.encode()).digest())
        for i in range(dim):
            acc[i] += rng.gauss(0.0, 1.0)
    norm = math.sqrt(sum(x * x for x in acc)) or 1.0
    return [x / norm for x in acc]


class FakeOpenAI:
    """Threaded stdlib HTTP server speaking enough of the OpenAI API for Athena's clients.

    :param json_mode_supported: False makes requests carrying response_format fail with 400, like
        servers that do not implement JSON mode.
    :param embedding_dim: dimension of /v1/embeddings vectors unless the request asks for `dimensions`.
    :param embedding_delay: seconds every /v1/embeddings answer waits (settable later, e.g. to keep the
        tasks of a service in flight long enough to kill it mid-task).
    """

    def __init__(
        self, *, json_mode_supported: bool = True, embedding_dim: int = 384, embedding_delay: float = 0.0
    ) -> None:
        self.json_mode_supported = json_mode_supported
        self.embedding_dim = embedding_dim
        self.embedding_delay = embedding_delay
        self.default = Scripted(status=500, message="fake_openai: no scripted response left")
        self._script: deque[Scripted | Callable[[RecordedRequest], Scripted]] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        handler = _make_handler(self)
        server = _QuietHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        # Do not join handler threads on close: a keep-alive connection may idle in one of them.
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a scripted delay
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as base_url (with /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # --- scripting ----------------------------------------------------------------------------------

    def push(self, *responses: Scripted | Callable[[RecordedRequest], Scripted]) -> None:
        """Queue answers (or callables building one from the request) for the next chat completions."""
        with self._lock:
            self._script.extend(responses)

    def reply(self, content: str, *, delay: float = 0.0, times: int = 1) -> None:
        self.push(*[Scripted(content=content, delay=delay)] * times)

    def error(
        self,
        status: int,
        *,
        retry_after: float | str | None = None,
        delay: float = 0.0,
        message: str = "scripted error",
        times: int = 1,
    ) -> None:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        self.push(*[Scripted(status=status, headers=headers, delay=delay, message=message)] * times)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    # --- records ------------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    async def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Until `count` requests have arrived (polling, so the caller's event loop keeps running)."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        return self.requests

    # --- handling (server threads) --------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_chat_answer(self, request: RecordedRequest) -> Scripted:
        body = request.body or {}
        if "response_format" in body and not self.json_mode_supported:
            return Scripted(status=400, message="response_format is not supported by this server")
        with self._lock:
            item = self._script.popleft() if self._script else self.default
        return item(request) if callable(item) else item

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


class _QuietHTTPServer(ThreadingHTTPServer):
    """A client that dies mid-connection (a killed service process) is expected here, not an error to print."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_exceeded"}
    return {"error": {"message": message, "type": kind.get(status, "server_error"), "param": None, "code": None}}


def _chat_body(request: RecordedRequest, content: str | None) -> dict[str, Any]:
    body = request.body or {}
    prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion_words = len((content or "").split())
    return {
        "id": f"chatcmpl-fake-{int(request.received_at * 1e6)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": completion_words,
            "total_tokens": prompt_words + completion_words,
        },
    }


def _embeddings_body(server: FakeOpenAI, request: RecordedRequest) -> dict[str, Any]:
    body = request.body or {}
    inputs = body.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else [str(x) for x in inputs]
    dim = int(body.get("dimensions") or server.embedding_dim)
    as_base64 = body.get("encoding_format") == "base64"  # the SDK asks for base64 by default
    data = []
    for i, text in enumerate(texts):
        vector = fake_embedding(text, dim)
        value: Any = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": i, "embedding": value})
    tokens = sum(len(t.split()) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "fake-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _make_handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
        timeout = 30  # an idle keep-alive connection frees its thread eventually
        disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            request = RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body if isinstance(body, dict) else None,
                received_at=time.monotonic(),
            )
            server._record(request)
            if self.path.rstrip("/").endswith("/chat/completions"):
                answer = server._next_chat_answer(request)
                server._sleep(answer.delay)
                if answer.raw is not None:
                    self._send(answer.status, answer.raw, answer.headers, "text/plain")
                elif answer.status == 200:
                    self._send_json(200, _chat_body(request, answer.content), answer.headers)
                else:
                    self._send_json(answer.status, _error_body(answer.status, answer.message), answer.headers)
            elif self.path.rstrip("/").endswith("/embeddings"):
                server._sleep(server.embedding_delay)
                self._send_json(200, _embeddings_body(server, request), {})
            else:
                self._send_json(404, _error_body(404, f"no route {self.path}"), {})

        def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
            self._send(status, json.dumps(payload).encode(), headers, "application/json")

        def _send(self, status: int, payload: bytes, headers: dict[str, str], content_type: str) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout) before the scripted delay ended

    return Handler


def fake_openai_server(**kwargs: Any) -> Iterator[FakeOpenAI]:
    """For a pytest fixture: `yield from fake_openai_server()` starts a server and stops it after."""
    with FakeOpenAI(**kwargs) as server:
        yield server
