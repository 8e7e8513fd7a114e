"""LLMClient, LLMArbiter and make_llm against a real OpenAI-compatible HTTP server and the real SDK:
what each kind of answer or failure turns into (a result, or None = unavailable), and what is sent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import openai
import pytest
from support.fake_openai import FakeOpenAI, Scripted, fake_embedding, fake_openai_server

from athena.config import load_settings
from athena.llm import (
    CircuitBreaker,
    LLMArbiter,
    LLMClient,
    LLMOutcome,
    SlidingWindowRateLimiter,
    make_llm,
)
from athena.local import free_port


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    yield from fake_openai_server()


@pytest.fixture
async def llm(server: FakeOpenAI) -> AsyncIterator[LLMClient]:
    async with LLMClient(base_url=server.base_url, model="test-model", timeout=2.0) as client:
        yield client


# --- arbitration -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("true", True),
        ("false", False),
        ("True", True),
        ("FALSE", False),
        ("  true\n", True),
        ("false.", False),
        ("True!", True),
        ('"false"', False),
        ("`true`", True),
        ("**false**", False),
        ("<think>Both ask about Redis.</think>\ntrue", True),
    ],
)
async def test_arbiter_reads_true_and_false_tolerantly(
    llm: LLMClient, server: FakeOpenAI, answer: str, verdict: bool
) -> None:
    server.reply(answer)

    assert await LLMArbiter(llm).same_topic("How do I tune Redis AOF?", "And fsync every second?") is verdict


@pytest.mark.parametrize("answer", ["yes", "no", "maybe", "true or false", "The answer is true", "", "truefalse"])
async def test_arbiter_answers_none_for_anything_but_true_or_false_and_counts_it_malformed(
    llm: LLMClient, server: FakeOpenAI, answer: str
) -> None:
    server.reply(answer)

    assert await LLMArbiter(llm).same_topic("a", "b") is None
    assert llm.stats.malformed["arbitration"] == 1
    assert llm.breaker.consecutive_failures == 0  # the server is fine, only the answer is not


async def test_arbiter_sends_the_topic_boundary_prompt_with_both_messages(llm: LLMClient, server: FakeOpenAI) -> None:
    server.reply("true")

    await LLMArbiter(llm).same_topic("How do I rotate Kubernetes secrets?", "By the way, what is a monad?")

    [request] = server.chat_requests
    body = request.body
    assert body is not None
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    for sentence in (
        "You are a topic boundary detector",
        "'Same topic' = same subject, task, or line of inquiry",
        "A question about a DIFFERENT technical area = topic change",
        "Respond with only true or false",
    ):
        assert sentence in system["content"]
    assert "How do I rotate Kubernetes secrets?" in user["content"]
    assert "By the way, what is a monad?" in user["content"]
    assert user["content"].index("Kubernetes") < user["content"].index("monad")
    assert body["model"] == "test-model"
    assert body["temperature"] == 0
    assert body["max_tokens"] <= 16
    assert "response_format" not in body


async def test_arbiter_clips_very_long_messages(llm: LLMClient, server: FakeOpenAI) -> None:
    server.reply("false")

    await LLMArbiter(llm, max_chars=500).same_topic("x" * 50_000, "y" * 50_000)

    body = server.chat_requests[0].body
    assert body is not None
    assert len(body["messages"][1]["content"]) < 1_200


async def test_arbiter_answers_none_when_the_llm_is_unavailable(llm: LLMClient, server: FakeOpenAI) -> None:
    server.error(500)

    assert await LLMArbiter(llm).same_topic("a", "b") is None
    assert llm.stats.malformed["arbitration"] == 0


async def test_arbiter_uses_its_own_timeout(llm: LLMClient, server: FakeOpenAI) -> None:
    server.reply("true", delay=3.0)
    started = time.monotonic()

    assert await LLMArbiter(llm, timeout=0.3).same_topic("a", "b") is None
    assert time.monotonic() - started < 1.5


# --- failures ----------------------------------------------------------------------------------------


async def test_a_server_error_answers_none_after_exactly_one_request_and_counts_a_breaker_failure(
    llm: LLMClient, server: FakeOpenAI
) -> None:
    server.error(500)

    assert await llm.complete("s", "u") is None
    assert len(server.chat_requests) == 1  # neither the SDK nor this layer retried
    assert llm.stats.errors["http_5xx"] == 1
    assert llm.breaker.consecutive_failures == 1


async def test_a_client_error_answers_none_and_counts_a_breaker_failure(llm: LLMClient, server: FakeOpenAI) -> None:
    server.error(401, message="invalid api key")

    assert await llm.complete("s", "u") is None
    assert llm.stats.errors["http_4xx"] == 1
    assert llm.breaker.consecutive_failures == 1


async def test_a_slow_server_answers_none_within_about_the_timeout(server: FakeOpenAI) -> None:
    server.reply("true", delay=5.0)
    async with LLMClient(base_url=server.base_url, model="m", timeout=0.3) as client:
        started = time.monotonic()

        assert await client.complete("s", "u") is None

        assert 0.25 <= time.monotonic() - started < 1.0
        assert client.stats.errors["timeout"] == 1
        assert client.breaker.consecutive_failures == 1


async def test_a_429_whose_retry_after_fits_the_budget_is_retried_once_after_that_delay(
    llm: LLMClient, server: FakeOpenAI
) -> None:
    server.error(429, retry_after=0.3)
    server.reply("true")

    result = await llm.complete("s", "u")

    assert result is not None and result.text == "true"
    first, second = server.chat_requests
    assert second.received_at - first.received_at >= 0.29
    assert llm.stats.retry_after_honoured == 1
    assert llm.stats.errors == {}
    assert llm.breaker.consecutive_failures == 0


async def test_a_429_whose_retry_after_exceeds_the_budget_fails_at_once_without_waiting(
    llm: LLMClient, server: FakeOpenAI
) -> None:
    server.error(429, retry_after=30)
    started = time.monotonic()

    assert await llm.complete("s", "u") is None

    assert time.monotonic() - started < 0.5
    assert len(server.chat_requests) == 1
    assert llm.stats.errors["http_429"] == 1
    assert llm.breaker.consecutive_failures == 1


async def test_a_429_without_retry_after_is_a_failure_and_is_not_retried(llm: LLMClient, server: FakeOpenAI) -> None:
    server.error(429)

    assert await llm.complete("s", "u") is None
    assert len(server.chat_requests) == 1
    assert llm.stats.errors["http_429"] == 1


async def test_a_second_429_is_not_retried_again(llm: LLMClient, server: FakeOpenAI) -> None:
    server.error(429, retry_after=0.05, times=3)

    assert await llm.complete("s", "u") is None
    assert len(server.chat_requests) == 2
    assert llm.stats.errors["http_429"] == 1


async def test_an_unreachable_server_answers_none_as_a_connection_failure() -> None:
    async with LLMClient(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", timeout=2.0) as client:
        assert await client.complete("s", "u") is None
        assert client.stats.errors["connection"] == 1


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b'{"error": {"message": "overloaded"}}', b"{}"])
async def test_a_2xx_that_is_not_a_chat_completion_answers_none_as_a_bad_response(
    llm: LLMClient, server: FakeOpenAI, body: bytes
) -> None:
    server.push(Scripted(raw=body))

    assert await llm.complete("s", "u") is None
    assert llm.stats.errors["bad_response"] == 1


async def test_cancelling_a_call_propagates_and_is_not_counted_as_a_failure(llm: LLMClient, server: FakeOpenAI) -> None:
    server.reply("late", delay=3.0)
    task = asyncio.create_task(llm.complete("s", "u"))
    await server.wait_for_requests(1)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert llm.stats.errors == {}


# --- results and counters -------------------------------------------------------------------------------


async def test_a_completion_is_returned_with_its_metadata(llm: LLMClient, server: FakeOpenAI) -> None:
    server.reply("hello there")

    result = await llm.complete("system text", "user text", max_tokens=50)

    assert result is not None
    assert result.text == "hello there"
    assert result.model == "test-model"
    assert result.finish_reason == "stop"
    assert result.latency_seconds > 0
    assert result.completion_tokens == 2
    assert llm.stats.calls == 1 and llm.stats.successes == 1


async def test_the_observer_hears_every_outcome_and_its_own_errors_are_contained(server: FakeOpenAI) -> None:
    heard: list[tuple[str, LLMOutcome]] = []

    def observer(operation: str, outcome: LLMOutcome) -> None:
        heard.append((operation, outcome))
        raise RuntimeError("metrics backend down")

    server.reply("true")
    server.error(500)
    server.reply("perhaps")
    async with LLMClient(base_url=server.base_url, model="m", observer=observer) as client:
        assert await client.complete("s", "u", operation="probe") is not None
        assert await client.complete("s", "u", operation="probe") is None
        assert await LLMArbiter(client).same_topic("a", "b") is None

    assert heard == [
        ("probe", LLMOutcome.OK),
        ("probe", LLMOutcome.HTTP_5XX),
        ("arbitration", LLMOutcome.OK),
        ("arbitration", LLMOutcome.MALFORMED),
    ]
    assert [str(outcome) for _, outcome in heard] == ["ok", "http_5xx", "ok", "malformed"]  # metric labels


# --- complete_json --------------------------------------------------------------------------------------


async def test_complete_json_returns_the_object_and_asks_for_json_mode(llm: LLMClient, server: FakeOpenAI) -> None:
    server.reply('{"main_topic": "redis persistence", "confidence": 0.9}')

    data = await llm.complete_json("Analyse the topics.", "the conversation", schema_hint={"main_topic": "str"})

    assert data == {"main_topic": "redis persistence", "confidence": 0.9}
    body = server.chat_requests[0].body
    assert body is not None
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]["content"]
    assert system.startswith("Analyse the topics.")
    assert "JSON" in system  # OpenAI's JSON mode requires the word in the prompt
    assert '"main_topic": "str"' in system


@pytest.mark.parametrize(
    "text",
    [
        'Here is the analysis:\n```json\n{"topic": "k8s", "entities": ["kubectl"]}\n```\nHope this helps!',
        'Sure! {"topic": "k8s", "entities": ["kubectl"]} Let me know.',
        '<think>hmm {not json}</think>{"topic": "k8s", "entities": ["kubectl"]}',
        'Note {this is not json} but this is: {"topic": "k8s", "entities": ["kubectl"]}',
    ],
)
async def test_complete_json_extracts_an_object_wrapped_in_text(llm: LLMClient, server: FakeOpenAI, text: str) -> None:
    server.reply(text)

    assert await llm.complete_json("s", "u") == {"topic": "k8s", "entities": ["kubectl"]}


@pytest.mark.parametrize("text", ["no idea", '["a", "b"]', '{"unterminated": ', "", "{" * 5000])
async def test_complete_json_answers_none_for_garbage_and_counts_it_malformed(
    llm: LLMClient, server: FakeOpenAI, text: str
) -> None:
    server.reply(text)

    assert await llm.complete_json("s", "u") is None
    assert llm.stats.malformed["analysis"] == 1


async def test_complete_json_falls_back_to_plain_prompts_once_when_the_server_rejects_json_mode() -> None:
    with FakeOpenAI(json_mode_supported=False) as server:
        server.reply('{"a": 1}', times=2)
        async with LLMClient(base_url=server.base_url, model="m") as client:
            assert await client.complete_json("s", "u") == {"a": 1}
            assert await client.complete_json("s", "u") == {"a": 1}

        bodies = [r.body or {} for r in server.chat_requests]
        assert ["response_format" in b for b in bodies] == [True, False, False]
        assert client.stats.json_mode_downgrades == 1
        assert client.stats.errors == {}


async def test_complete_json_is_bounded_by_the_analysis_timeout_by_default(server: FakeOpenAI) -> None:
    server.reply('{"a": 1}', delay=3.0)
    async with LLMClient(base_url=server.base_url, model="m", timeout=10.0, analysis_timeout=0.3) as client:
        started = time.monotonic()

        assert await client.complete_json("s", "u") is None
        assert time.monotonic() - started < 1.5
        assert client.stats.errors["timeout"] == 1


# --- make_llm ------------------------------------------------------------------------------------------


def test_make_llm_returns_none_when_no_llm_is_configured() -> None:
    assert make_llm(load_settings(llm_base_url="")) is None
    assert make_llm(load_settings(llm_base_url="   ")) is None


async def test_make_llm_applies_the_settings_and_sends_the_api_key(server: FakeOpenAI) -> None:
    settings = load_settings(
        llm_base_url=server.base_url,
        llm_model="qwen2.5:7b",
        llm_api_key="sk-test-123",
        llm_timeout_seconds=3.5,
        topic_analysis_llm_timeout=12.0,
        llm_rate_limit_per_minute=7,
        llm_breaker_failures=4,
        llm_breaker_reset_seconds=9.0,
    )
    client = make_llm(settings)
    assert client is not None
    async with client:
        assert (client.model, client.timeout, client.analysis_timeout) == ("qwen2.5:7b", 3.5, 12.0)
        assert isinstance(client.limiter, SlidingWindowRateLimiter) and client.limiter.limit == 7
        assert isinstance(client.breaker, CircuitBreaker)
        assert (client.breaker.failure_threshold, client.breaker.reset_seconds) == (4, 9.0)

        server.reply("true")
        await client.complete("s", "u")

    request = server.chat_requests[0]
    assert request.headers["authorization"] == "Bearer sk-test-123"
    assert request.body is not None and request.body["model"] == "qwen2.5:7b"


async def test_a_keyless_endpoint_works_without_reading_openai_api_key_from_the_environment(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unrelated-secret")
    server.reply("true")
    async with LLMClient(base_url=server.base_url, model="m") as client:
        assert await client.complete("s", "u") is not None

    assert "sk-unrelated-secret" not in server.chat_requests[0].headers["authorization"]


# --- the fake server itself --------------------------------------------------------------------------------


async def test_fake_server_embeddings_are_deterministic_and_readable_by_the_sdk(server: FakeOpenAI) -> None:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    try:
        response = await sdk.embeddings.create(model="e", input=["redis aof fsync", "redis aof fsync", "baking bread"])
        as_floats = await sdk.embeddings.create(model="e", input="redis aof fsync", encoding_format="float")
    finally:
        await sdk.close()

    same, again, other = (d.embedding for d in response.data)
    assert len(same) == 384
    assert same == again
    assert as_floats.data[0].embedding == pytest.approx(same, abs=1e-6)
    assert same == pytest.approx(fake_embedding("redis aof fsync"), abs=1e-6)
    cosine = sum(a * b for a, b in zip(same, other, strict=True))
    assert abs(cosine) < 0.3
