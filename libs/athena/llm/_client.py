"""LLMClient: one OpenAI-compatible chat endpoint behind a rate limiter, a timeout and a circuit breaker.

Works with anything that speaks POST {base_url}/chat/completions: OpenAI, Azure OpenAI's v1 endpoint
(https://<resource>.openai.azure.com/openai/v1/), vLLM, Ollama (http://host:11434/v1), LiteLLM.

Every call returns a typed result or None ("unavailable") and never raises for LLM trouble. Callers
own a documented fallback (the embedding gate, heuristic keywords), and an LLM outage must degrade
Athena, not fail its tasks: a failed task is retried by the queue, which would turn an outage into a
retry storm. For the same reason this layer never retries a failure on its own.

One call, in order:
  1. breaker OPEN (or its trial taken) -> None at once: no waiting, no network
  2. rate limiter                     -> waits up to `max_wait` for a slot (the total budget and the
                                         caller's tenant's, `tenant_id`), else None
  3. breaker admission                -> may be the single half-open trial
  4. one request, bounded by `timeout` end to end; the SDK's own retries are off (max_retries=0).
     A second request is sent only for a 429 whose Retry-After fits in what is left of `timeout`,
     or once per process when the server rejects response_format (JSON is then asked for in text).
  5. the outcome goes to the breaker, the counters and the observer hook.

make_llm with a Redis client shares the rate limit (per tenant and in total) and the breaker with
every process through Redis (athena.llm._shared); without one, both are this process's own.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType
from typing import TYPE_CHECKING, Any

import openai
from openai.types.chat import ChatCompletionMessageParam
from opentelemetry import trace

from athena.llm._breaker import Breaker, BreakerState, CircuitBreaker
from athena.llm._parse import extract_json_object
from athena.llm._prompts import JSON_INSTRUCTION
from athena.llm._rate_limit import RateLimiter, SlidingWindowRateLimiter
from athena.llm._shared import SharedCircuitBreaker, SharedRateLimiter

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from athena.config import Settings

__all__ = ["LLMClient", "LLMOutcome", "LLMResult", "LLMStats", "Observer", "make_llm"]

_log = logging.getLogger("athena.llm")

# Keyless local servers (vLLM, Ollama) ignore the Authorization header, but the SDK refuses to start
# without a key, and it must not silently pick up an unrelated OPENAI_API_KEY from the environment.
_NO_KEY = "unused"


class LLMOutcome(StrEnum):
    """How one call ended; str(outcome) is a stable metrics label ("ok", "timeout", ...)."""

    OK = "ok"
    TIMEOUT = "timeout"
    HTTP_429 = "http_429"
    HTTP_5XX = "http_5xx"
    HTTP_4XX = "http_4xx"
    CONNECTION = "connection"
    BAD_RESPONSE = "bad_response"
    """The server answered 2xx with something that is not a chat completion."""
    UNEXPECTED = "unexpected"
    BREAKER_OPEN = "breaker_open"
    """Skipped: the circuit breaker is open (or its half-open trial is taken)."""
    RATE_LIMITED = "rate_limited"
    """Skipped: no slot of LLM_RATE_LIMIT_PER_MINUTE (or of the tenant's LLM_TENANT_RATE_LIMIT_PER_MINUTE)
    within the caller's max wait."""
    MALFORMED = "malformed"
    """A completion arrived but its text is not what the caller asked for (reported by the caller)."""


_SKIPS = frozenset({LLMOutcome.BREAKER_OPEN, LLMOutcome.RATE_LIMITED})

Observer = Callable[[str, LLMOutcome], None]
"""Called with (operation, outcome) after every call; the hook for Prometheus counters."""


@dataclass(frozen=True, slots=True)
class LLMResult:
    """A completion that arrived. `text` may still be unusable: the caller parses and validates it."""

    text: str
    model: str
    finish_reason: str | None
    latency_seconds: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class LLMStats:
    """Plain counters on the client (read by metrics and tests)."""

    calls: int = 0
    """Requests put on the wire (a honoured Retry-After retry counts twice)."""
    successes: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    """Failed calls by outcome (timeout, http_429, http_5xx, http_4xx, connection, ...)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Calls answered "unavailable" without a request: breaker_open, rate_limited."""
    malformed: Counter[str] = field(default_factory=Counter)
    """Unparseable answers by operation (arbitration, analysis, ...)."""
    retry_after_honoured: int = 0
    json_mode_downgrades: int = 0


def _retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Retry-After-Ms, else Retry-After as seconds or an HTTP date; None if absent or unreadable."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        return value if value >= 0 and math.isfinite(value) else None
    raw = headers.get("retry-after")
    if raw:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return None


def _classify(exc: BaseException) -> LLMOutcome:
    # APITimeoutError is an APIConnectionError, and RateLimitError an APIStatusError: order matters.
    if isinstance(exc, (openai.APITimeoutError, TimeoutError)):
        return LLMOutcome.TIMEOUT
    if isinstance(exc, openai.RateLimitError):
        return LLMOutcome.HTTP_429
    if isinstance(exc, openai.APIStatusError):
        return LLMOutcome.HTTP_5XX if exc.status_code >= 500 else LLMOutcome.HTTP_4XX
    if isinstance(exc, openai.APIConnectionError):
        return LLMOutcome.CONNECTION
    if isinstance(exc, (openai.OpenAIError, ValueError)):
        return LLMOutcome.BAD_RESPONSE
    return LLMOutcome.UNEXPECTED


def _rejects_response_format(exc: openai.BadRequestError) -> bool:
    return "response_format" in str(exc).lower()


class LLMClient:
    """Chat completions with Athena's call policy; see the module docstring.

    :param timeout: default end-to-end bound of one call (make_llm: LLM_TIMEOUT_SECONDS).
    :param analysis_timeout: default bound of `complete_json` (make_llm: TOPIC_ANALYSIS_LLM_TIMEOUT).
    :param max_wait: default longest wait for a rate-limit slot; None means `timeout`.
    :param limiter: rate limiter (default: 60 calls per minute in this process); SharedRateLimiter
        shares it through Redis, per tenant and in total.
    :param breaker: circuit breaker (default: this process's, opens after 5 failures, probes again
        after 30 s); SharedCircuitBreaker shares it through Redis.
    :param observer: optional (operation, outcome) callback for metrics; its errors are swallowed.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 10.0,
        analysis_timeout: float = 20.0,
        max_wait: float | None = None,
        limiter: RateLimiter | None = None,
        breaker: Breaker | None = None,
        observer: Observer | None = None,
    ) -> None:
        if timeout <= 0 or analysis_timeout <= 0:
            raise ValueError("timeouts must be positive")
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self.analysis_timeout = analysis_timeout
        self.max_wait = timeout if max_wait is None else max_wait
        self.limiter: RateLimiter = limiter if limiter is not None else SlidingWindowRateLimiter(60, 60.0)
        self.breaker: Breaker = breaker if breaker is not None else CircuitBreaker(5, 30.0)
        self.stats = LLMStats()
        self._observer = observer
        # Servers that reject response_format (some older vLLM/Ollama builds) get plain prompts from
        # then on; JSON is still extracted from the text.
        self._json_mode_supported = True
        self._sdk = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or _NO_KEY,
            timeout=timeout,
            max_retries=0,  # our policy (breaker, no immediate retries) governs, not the SDK's
        )

    # --- lifecycle ---------------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._sdk.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # --- observability ------------------------------------------------------------------------------

    @property
    def breaker_state(self) -> BreakerState:
        return self.breaker.state

    def snapshot(self) -> dict[str, Any]:
        """All counters in one plain dict (for logs, a debug endpoint, or a metrics collector)."""
        return {
            "calls": self.stats.calls,
            "successes": self.stats.successes,
            "errors": dict(self.stats.errors),
            "skipped": dict(self.stats.skipped),
            "malformed": dict(self.stats.malformed),
            "retry_after_honoured": self.stats.retry_after_honoured,
            "json_mode_downgrades": self.stats.json_mode_downgrades,
            "rate_limit_waits": self.limiter.waits,
            "rate_limit_rejections": self.limiter.rejections,
            "breaker_state": self.breaker.state.value,
            "breaker_opens": self.breaker.opens,
        }

    def record_malformed(self, operation: str, text: str = "") -> None:
        """A caller could not use the text of a completion; counts it (the breaker is not involved:
        the server is up, only the answer is unusable)."""
        self.stats.malformed[operation] += 1
        # Model output may quote user content: keep it out of normal logs.
        _log.debug("LLM %s: unusable answer %r", operation, text[:200])
        self._notify(operation, LLMOutcome.MALFORMED)

    def set_observer(self, observer: Observer | None) -> None:
        self._observer = observer

    on_latency: Callable[[str, float], None] | None = None
    """Optional hook (operation, seconds) called after every exchange with the server, for metrics."""

    def _notify(self, operation: str, outcome: LLMOutcome) -> None:
        if self._observer is None:
            return
        try:
            self._observer(operation, outcome)
        except Exception:  # a metrics bug must not break the call path
            _log.exception("LLM observer failed")

    def _skip(self, operation: str, outcome: LLMOutcome) -> None:
        self.stats.skipped[outcome.value] += 1
        _log.debug("LLM %s skipped: %s", operation, outcome.value)
        self._notify(operation, outcome)

    async def _fail(self, operation: str, outcome: LLMOutcome, exc: BaseException | None) -> None:
        self.stats.errors[outcome.value] += 1
        await self.breaker.arecord_failure()
        detail = f"{type(exc).__name__}: {exc}"[:300] if exc is not None else ""
        _log.warning("LLM %s failed (%s) %s", operation, outcome.value, detail)
        self._notify(operation, outcome)

    # --- calls ----------------------------------------------------------------------------------

    async def complete(
        self,
        system: str,
        user: str,
        *,
        timeout: float | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        json_mode: bool = False,
        operation: str = "complete",
        max_wait: float | None = None,
        tenant_id: str | None = None,
    ) -> LLMResult | None:
        """One chat completion, or None when the LLM is unavailable (see LLMOutcome for why).

        :param timeout: end-to-end bound of the request(s), not counting the rate-limit wait.
        :param max_wait: longest wait for a rate-limit slot (default: the client's max_wait).
        :param operation: label for counters, logs and the observer.
        :param tenant_id: whose call it is: a shared limiter charges it to the tenant's budget too.
        """
        budget = self.timeout if timeout is None else timeout
        # Checked before the rate-limit wait too, so a caller never queues for a call it cannot make.
        if not await self.breaker.acheck():
            self._skip(operation, LLMOutcome.BREAKER_OPEN)
            return None
        if not await self.limiter.acquire(self.max_wait if max_wait is None else max_wait, tenant_id=tenant_id):
            self._skip(operation, LLMOutcome.RATE_LIMITED)
            return None
        admitted = await self.breaker.aadmit()
        if admitted is None:
            self._skip(operation, LLMOutcome.BREAKER_OPEN)
            return None
        trial = admitted is BreakerState.HALF_OPEN
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        try:
            return await self._run(messages, budget, max_tokens, temperature, json_mode, operation, tenant_id)
        except BaseException:
            # Cancelled (shutdown, caller deadline): no verdict on the server, give the trial back.
            if trial:
                await self.breaker.arelease()
            raise

    async def complete_json(
        self,
        system: str,
        user: str,
        *,
        timeout: float | None = None,
        schema_hint: str | Mapping[str, Any] | None = None,
        max_tokens: int = 1024,
        operation: str = "analysis",
        max_wait: float | None = None,
        tenant_id: str | None = None,
    ) -> dict[str, Any] | None:
        """Ask for one JSON object; the parsed dict, or None (unavailable or unparseable).

        Uses response_format json_object where the server supports it and extracts the first JSON
        object from the text either way. The dict is not validated: the caller checks its fields.

        :param schema_hint: the expected shape, as text or as an example/JSON-schema mapping.
        :param timeout: default: the client's analysis_timeout (TOPIC_ANALYSIS_LLM_TIMEOUT).
        :param tenant_id: whose call it is (the tenant's rate-limit budget), as for `complete`.
        """
        parts = [system.rstrip(), JSON_INSTRUCTION]
        if schema_hint:
            if isinstance(schema_hint, str):
                hint = schema_hint
            else:
                hint = json.dumps(schema_hint, indent=2, ensure_ascii=False)
            parts.append("The object must have this shape:\n" + hint)
        result = await self.complete(
            "\n\n".join(parts),
            user,
            timeout=self.analysis_timeout if timeout is None else timeout,
            max_tokens=max_tokens,
            json_mode=True,
            operation=operation,
            max_wait=max_wait,
            tenant_id=tenant_id,
        )
        if result is None:
            return None
        obj = extract_json_object(result.text)
        if obj is None:
            self.record_malformed(operation, result.text)
        return obj

    async def _run(
        self,
        messages: list[ChatCompletionMessageParam],
        budget: float,
        max_tokens: int,
        temperature: float,
        json_mode: bool,
        operation: str,
        tenant_id: str | None,
    ) -> LLMResult | None:
        started = time.perf_counter()
        try:
            with trace.get_tracer("athena").start_as_current_span(
                f"llm.{operation}", attributes={"gen_ai.request.model": self.model}
            ):
                return await self._exchange(messages, budget, max_tokens, temperature, json_mode, operation, tenant_id)
        finally:
            if self.on_latency is not None:
                self.on_latency(operation, time.perf_counter() - started)

    async def _exchange(
        self,
        messages: list[ChatCompletionMessageParam],
        budget: float,
        max_tokens: int,
        temperature: float,
        json_mode: bool,
        operation: str,
        tenant_id: str | None,
    ) -> LLMResult | None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + budget
        # Time a second request needs to be worth sending.
        reserve = min(1.0, budget / 4)
        second_request_used = False
        while True:
            use_json = json_mode and self._json_mode_supported
            extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if use_json else {}
            self.stats.calls += 1
            try:
                # asyncio's deadline bounds the whole exchange; the SDK's (httpx) timeout only bounds
                # each phase, so a server trickling bytes could otherwise hold the call far longer.
                async with asyncio.timeout_at(deadline):
                    completion = await self._sdk.chat.completions.create(
                        model=self.model,
                        messages=messages,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        timeout=max(deadline - loop.time(), 0.001),
                        **extra,
                    )
            except openai.RateLimitError as exc:
                retry_after = _retry_after_seconds(exc.response.headers)
                remaining = deadline - loop.time()
                if second_request_used or retry_after is None or retry_after + reserve > remaining:
                    await self._fail(operation, LLMOutcome.HTTP_429, exc)
                    return None
                second_request_used = True
                self.stats.retry_after_honoured += 1
                _log.info("LLM %s: 429, retrying once after Retry-After %.2fs", operation, retry_after)
                await asyncio.sleep(retry_after)
                if not await self._second_slot(deadline - loop.time() - reserve, tenant_id):
                    await self._fail(operation, LLMOutcome.HTTP_429, exc)
                    return None
                continue
            except openai.BadRequestError as exc:
                if use_json and not second_request_used and _rejects_response_format(exc):
                    # A capability mismatch, not an outage: once per process, fall back to plain text.
                    second_request_used = True
                    self._json_mode_supported = False
                    self.stats.json_mode_downgrades += 1
                    _log.warning("LLM server rejects response_format; asking for JSON in the prompt only")
                    if await self._second_slot(deadline - loop.time() - reserve, tenant_id):
                        continue
                await self._fail(operation, _classify(exc), exc)
                return None
            except Exception as exc:
                await self._fail(operation, _classify(exc), exc)
                return None
            return await self._to_result(completion, loop.time() - started, operation)

    async def _second_slot(self, max_wait: float, tenant_id: str | None) -> bool:
        # The second request is a request like any other: it needs its own rate-limit slot.
        return max_wait >= 0 and await self.limiter.acquire(max_wait, tenant_id=tenant_id)

    async def _to_result(self, completion: object, latency: float, operation: str) -> LLMResult | None:
        # Lenient servers may answer 2xx with an error object or another shape: treat as a failure.
        choices = getattr(completion, "choices", None)
        first = choices[0] if isinstance(choices, list) and choices else None
        message = getattr(first, "message", None)
        content = getattr(message, "content", None)
        if message is None or not (content is None or isinstance(content, str)):
            await self._fail(operation, LLMOutcome.BAD_RESPONSE, None)
            return None
        usage = getattr(completion, "usage", None)
        self.stats.successes += 1
        await self.breaker.arecord_success()
        self._notify(operation, LLMOutcome.OK)
        return LLMResult(
            text=content or "",
            model=str(getattr(completion, "model", None) or self.model),
            finish_reason=getattr(first, "finish_reason", None),
            latency_seconds=latency,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
        )


def make_llm(settings: Settings, *, observer: Observer | None = None, redis: Redis | None = None) -> LLMClient | None:
    """The process's LLM client from settings, or None when LLM_BASE_URL is empty (fallbacks decide).

    With `redis` (the services pass one), the rate limit (LLM_RATE_LIMIT_PER_MINUTE in total,
    LLM_TENANT_RATE_LIMIT_PER_MINUTE per tenant) and the circuit breaker are shared with every process
    through it, and fall back to this process's own while Redis is unreachable. Without, both are
    this client's own (one budget, no tenant budget). Create one client per process and share it.
    """
    if not settings.llm_base_url.strip():
        return None
    limiter: RateLimiter
    breaker: Breaker
    if redis is not None:
        limiter = SharedRateLimiter(
            redis, settings.llm_rate_limit_per_minute, settings.llm_tenant_rate_limit_per_minute, 60.0
        )
        breaker = SharedCircuitBreaker(redis, settings.llm_breaker_failures, settings.llm_breaker_reset_seconds)
    else:
        limiter = SlidingWindowRateLimiter(settings.llm_rate_limit_per_minute, 60.0)
        breaker = CircuitBreaker(settings.llm_breaker_failures, settings.llm_breaker_reset_seconds)
    return LLMClient(
        base_url=settings.llm_base_url.strip(),
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout_seconds,
        analysis_timeout=settings.topic_analysis_llm_timeout,
        limiter=limiter,
        breaker=breaker,
        observer=observer,
    )
