"""Gray-zone topic-boundary arbitration (seed: the cognitive pipeline, chain-break detection step 3)."""

from __future__ import annotations

from athena.llm._client import LLMClient
from athena.llm._parse import parse_bool_answer
from athena.llm._prompts import TOPIC_BOUNDARY_SYSTEM, topic_boundary_user

__all__ = ["LLMArbiter"]

_OPERATION = "arbitration"


class LLMArbiter:
    """Asks the LLM whether a user message continues the previous one's topic.

    :param timeout: bound of one arbitration call (default: the client's timeout, LLM_TIMEOUT_SECONDS).
    :param max_chars: each message is clipped to this many characters (cost and context bound).
    :param max_tokens: the answer is one word; a small cap keeps a chatty model cheap.
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        timeout: float | None = None,
        max_chars: int = 2000,
        max_tokens: int = 8,
    ) -> None:
        self._client = client
        self._timeout = timeout
        self._max_chars = max_chars
        self._max_tokens = max_tokens

    async def same_topic(self, previous: str, current: str, *, tenant_id: str | None = None) -> bool | None:
        """True: the chain continues; False: topic break; None: no usable verdict (the LLM is
        unavailable or its answer was not true/false), so the caller applies its fallback.
        `tenant_id`: whose messages they are (the tenant's share of the LLM rate limit)."""
        result = await self._client.complete(
            TOPIC_BOUNDARY_SYSTEM,
            topic_boundary_user(previous, current, max_chars=self._max_chars),
            timeout=self._timeout,
            max_tokens=self._max_tokens,
            temperature=0.0,
            operation=_OPERATION,
            tenant_id=tenant_id,
        )
        if result is None:
            return None
        verdict = parse_bool_answer(result.text)
        if verdict is None:
            self._client.record_malformed(_OPERATION, result.text)
        return verdict
