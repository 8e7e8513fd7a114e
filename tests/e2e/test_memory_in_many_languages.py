"""What a user says is found at once and kept after the conversation stops, in nine languages, a
correction of what they said before, and short statements told in passing.

The whole local stack as real processes, with the idle flush at 3 s (STM_IDLE_FLUSH_SECONDS): each
user greets, states a fact, gets it acknowledged and leaves. The fact is found by SearchMemory right
after it was stored (the open window), is in a chain once the window was quiet long enough (nobody
calls FlushWindow), and is in the top 3 of the user's whole memory at the end. A user who only
greets and leaves forms no chain.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

import pytest

from athena_cli.stack import LocalStack, StackPorts
from athena_client import AsyncAthenaClient, EventInput
from athena_client.memory.v1 import memory_pb2

pytestmark = pytest.mark.slow

TENANT = "polyglot"

CONVERSATIONS = {
    "en": (
        [("user", "Hi! How are you today?"), ("agent", "Hello! I'm good, thanks. How can I help?")],
        [
            ("user", "Please remember that I'm allergic to peanuts."),
            ("agent", "Noted: no peanuts in anything I suggest."),
        ],
        "What am I allergic to?",
    ),
    "es": (
        [("user", "¡Hola! ¿Qué tal?"), ("agent", "¡Hola! Muy bien, gracias. ¿En qué te ayudo?")],
        [("user", "Recuerda que soy alérgico a los cacahuetes."), ("agent", "Entendido, nada de cacahuetes.")],
        "¿A qué soy alérgico?",
    ),
    "de": (
        [("user", "Hallo, wie geht's?"), ("agent", "Gut, danke! Wie kann ich helfen?")],
        [("user", "Merk dir bitte: Ich bin allergisch gegen Erdnüsse."), ("agent", "Verstanden, keine Erdnüsse.")],
        "Wogegen bin ich allergisch?",
    ),
    "fr": (
        [("user", "Bonjour, ça va ?"), ("agent", "Bonjour ! Très bien, merci. Comment puis-je vous aider ?")],
        [("user", "Retiens que je suis allergique aux arachides."), ("agent", "Compris, pas d'arachides.")],
        "À quoi suis-je allergique ?",
    ),
    "ru": (
        [("user", "Привет! Как дела?"), ("agent", "Привет! Всё хорошо, спасибо. Чем помочь?")],
        [("user", "Запомни, пожалуйста: у меня аллергия на арахис."), ("agent", "Понял, никакого арахиса.")],
        "На что у меня аллергия?",
    ),
    "zh": (
        [("user", "你好！最近怎么样？"), ("agent", "你好！我很好，谢谢。有什么可以帮你？")],
        [("user", "请记住，我对花生过敏。"), ("agent", "好的，我记住了，不放花生。")],
        "我对什么过敏？",
    ),
    # Scripts the local embedding model cannot read: the detector cuts them by their words, and the
    # gate admits the fact by its first person ("أنا", "저는", "मुझे").
    "ar": (
        [("user", "مرحبا! كيف حالك؟"), ("agent", "أهلاً! بخير، شكرًا. كيف أساعدك؟")],
        [("user", "أنا أعمل مدرسًا في القاهرة."), ("agent", "رائع، سأتذكر ذلك.")],
        "أين أعمل؟",
    ),
    "ko": (
        [("user", "안녕하세요! 잘 지내세요?"), ("agent", "안녕하세요! 무엇을 도와드릴까요?")],
        [("user", "저는 땅콩 알레르기가 있어요."), ("agent", "알겠습니다, 땅콩은 빼겠습니다.")],
        "저는 무슨 알레르기가 있어요?",
    ),
    "hi": (
        [("user", "नमस्ते! आप कैसे हैं?"), ("agent", "नमस्ते! मैं ठीक हूँ। मैं आपकी कैसे मदद करूँ?")],
        [("user", "मुझे मूंगफली से एलर्जी है।"), ("agent", "ठीक है, मूंगफली नहीं।")],
        "मुझे किस चीज़ से एलर्जी है?",
    ),
}
SMALL_TALK_ONLY = [
    ("user", "Hi there!"),
    ("agent", "Hello! How can I help?"),
    ("user", "Just saying hi, thanks! Bye!"),
    ("agent", "Bye, have a nice day!"),
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    s = LocalStack(
        data_dir=tmp_path_factory.mktemp("polyglot"),
        ports=StackPorts.free(),
        env={
            "STM_IDLE_FLUSH_SECONDS": "3",
            "QUEUE_BACKOFF_BASE_SECONDS": "0.2",
            "QUEUE_BACKOFF_MAX_SECONDS": "2",
            "LLM_BASE_URL": "",
        },
    )
    with s:
        yield s


T = TypeVar("T")


def _holds(hit: memory_pb2.SearchHit, event_id: str) -> bool:
    return event_id in hit.event_ids


async def _polled(read: Callable[[], Awaitable[T]], done: Callable[[T], bool], *, timeout: float) -> T:
    """`read()` every half second until `done` holds of what it gave or `timeout` seconds pass: the last read."""
    deadline = time.monotonic() + timeout
    while not done(value := await read()) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    return value


async def _chained(client: AsyncAthenaClient, scope: memory_pb2.Scope, event_id: str, *, timeout: float = 90.0) -> bool:
    listed = await _polled(
        lambda: client.list_chains(scope), lambda chains: any(event_id in c.event_ids for c in chains), timeout=timeout
    )
    return any(event_id in c.event_ids for c in listed)


@pytest.mark.parametrize("language", sorted(CONVERSATIONS))
async def test_a_stated_fact_is_found_at_once_formed_when_the_user_leaves_and_ranked_in_the_top_3(
    stack: LocalStack, language: str
) -> None:
    greeting, fact, question = CONVERSATIONS[language]
    scope = AsyncAthenaClient.scope(TENANT, f"user-{language}", "assistant")
    async with stack.client(tenant_id=TENANT) as client:
        for role, text in greeting:
            await client.store_event(scope, EventInput(role, text))
        stated = await client.store_event(scope, EventInput(*fact[0]))
        at_once = await client.search_memory(scope, question, limit=3)
        await client.store_event(scope, EventInput(*fact[1]))

        formed = await _chained(client, scope, stated.event_id)  # nobody flushes: the idle flush does
        # A chain is listed once its document is written, searchable once its vector is too; until
        # then the event is found in its parked hand-off (a WINDOW hit).
        whole_user = AsyncAthenaClient.scope(TENANT, f"user-{language}", "")

        def in_chain(hits: Sequence[memory_pb2.SearchHit]) -> list[memory_pb2.SearchHit]:
            return [h for h in hits if _holds(h, stated.event_id) and h.source == memory_pb2.HIT_SOURCE_CHAIN]

        at_the_end = await _polled(
            lambda: client.search_memory(whole_user, question, limit=3), lambda hits: bool(in_chain(hits)), timeout=30.0
        )

    print(
        f"{language}: at once {[memory_pb2.HitSource.Name(h.source) for h in at_once if _holds(h, stated.event_id)]}, "
        f"formed {formed}, at the end rank {[i for i, h in enumerate(at_the_end, 1) if _holds(h, stated.event_id)]}"
    )
    assert any(_holds(h, stated.event_id) for h in at_once), "the fact was not found right after it was stored"
    assert formed, "the quiet window was never formed into a chain"
    assert in_chain(at_the_end), "the fact's chain was not among the top 3 hits"


async def test_a_user_who_only_greets_forms_no_chain(stack: LocalStack) -> None:
    scope = AsyncAthenaClient.scope(TENANT, "just-hello", "assistant")
    async with stack.client(tenant_id=TENANT) as client:
        for role, text in SMALL_TALK_ONLY:
            await client.store_event(scope, EventInput(role, text))
        deadline = time.monotonic() + 60
        while await client.get_context(scope) and time.monotonic() < deadline:  # the idle flush empties the window
            await asyncio.sleep(0.5)
        assert await client.get_context(scope) == []
        assert await client.list_chains(scope) == []


async def test_a_correction_is_found_at_once_and_kept_when_the_user_leaves(stack: LocalStack) -> None:
    scope = AsyncAthenaClient.scope(TENANT, "correcting", "assistant")
    question = "Where do I live now?"
    async with stack.client(tenant_id=TENANT) as client:
        for role, text in [
            ("user", "I live in Berlin, near Tempelhof."),
            ("agent", "Got it, Berlin."),
            ("user", "My favourite colour is blue."),
            ("agent", "Blue it is."),
        ]:
            await client.store_event(scope, EventInput(role, text))
        corrected = await client.store_event(
            scope, EventInput("user", "Actually, correction: I moved last month, I now live in Munich, not Berlin.")
        )
        at_once = await client.search_memory(scope, question, limit=3)
        await client.store_event(scope, EventInput("agent", "Thanks, updated: you live in Munich."))

        formed = await _chained(client, scope, corrected.event_id)
        at_the_end = await client.search_memory(scope, question, limit=3)

    assert any(_holds(h, corrected.event_id) for h in at_once)
    assert formed, "the correction was never formed into a chain"
    assert any(_holds(h, corrected.event_id) and h.source == memory_pb2.HIT_SOURCE_CHAIN for h in at_the_end)


SHORT_STATEMENTS = [
    ("I'm left-handed.", "Good to know.", "left-handed"),
    ("From now on, keep your answers short.", "Will do.", "answers short"),
    ("I go to the gym every morning.", "Nice routine!", "gym"),
    ("Correction: it's Anna with two n's.", "Sorry about that, Anna.", "Anna"),
    ("Always reply in German.", "Alles klar.", "reply in German"),
    ("我不吃猪肉。", "好的，记住了。", "猪肉"),
]


async def test_a_trait_a_habit_instructions_a_spelling_and_a_diet_each_told_in_passing_are_kept(
    stack: LocalStack,
) -> None:
    """Short statements with one content word and a bare acknowledgement: no exchange for the gate's
    metrics to reward, each its own topic. Every one is in a chain once the user leaves."""
    scope = AsyncAthenaClient.scope(TENANT, "in-passing", "assistant")
    stated = {}
    async with stack.client(tenant_id=TENANT) as client:
        for role, text in [("user", "Hi!"), ("agent", "Hello! How can I help?")]:
            await client.store_event(scope, EventInput(role, text))
        for said, ack, words in SHORT_STATEMENTS:
            stated[words] = (await client.store_event(scope, EventInput("user", said))).event_id
            await client.store_event(scope, EventInput("agent", ack))
        formed = {words: await _chained(client, scope, event_id, timeout=60) for words, event_id in stated.items()}
        found = {
            words: any(
                _holds(h, event_id) and h.source == memory_pb2.HIT_SOURCE_CHAIN
                for h in await client.search_memory(scope, words, limit=3)
            )
            for words, event_id in stated.items()
        }

    assert formed == dict.fromkeys(stated, True)
    assert found == dict.fromkeys(stated, True)
