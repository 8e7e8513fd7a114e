"""Messages the embedding model cannot read: decide() does not trust the model's score on them.

all-MiniLM-L6-v2 learned English; on Chinese, Cyrillic, Hangul or Arabic text its cosines are as high
between two topics as within one, so the continuity model scored every new fact "same topic" and a
conversation in those scripts became one chain until the force flush. Such decisions now go to the
arbiter, or without one to the lexical-overlap rule, which needs no embedding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from athena_cognition.detector import AgnosticContinuityScorer, ContinuityScorer, Decision, Turn, decide, replay
from athena_cognition.detector._scorers import LexicalOverlapScorer, default_thresholds

THRESHOLDS = default_thresholds("continuity")


class CountingEmbedder:
    """Counts the texts the detector embeds (any vector: these tests are about what is not embedded)."""

    dim = 384

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        rows = np.ones((len(texts), self.dim), dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class Arbiter:
    def __init__(self, verdict: bool | None) -> None:
        self.verdict = verdict
        self.asked: list[tuple[str, str]] = []

    async def same_topic(self, previous: str, current: str) -> bool | None:
        self.asked.append((previous, current))
        return self.verdict


def user(text: str) -> Turn:
    return Turn(role="user", type="message", content=text)


def agent(text: str) -> Turn:
    return Turn(role="agent", type="message", content=text)


CHINESE_FACTS = [
    user("我的生日是十月三日。"),
    agent("好的，我记住了。"),
    user("我的狗叫旺财，它三岁了。"),
    agent("旺财是个好名字。"),
    user("明天我要去北京出差。"),
    agent("祝你出差顺利。"),
]


async def _decide(window: Sequence[Turn], embedder: CountingEmbedder, arbiter: Arbiter | None = None) -> Decision:
    return await decide(
        window,
        new_index=len(window) - 1,
        scorer=ContinuityScorer(),
        embedder=embedder,
        thresholds=THRESHOLDS,
        arbiter=arbiter,
        max_events_before_flush=20,
    )


async def test_each_new_chinese_fact_opens_a_segment_without_the_embedding_model() -> None:
    embedder = CountingEmbedder()

    result = await replay(
        CHINESE_FACTS, scorer=ContinuityScorer(), embedder=embedder, thresholds=THRESHOLDS, max_events_before_flush=20
    )

    assert result.starts == (0, 0, 1, 0, 1, 0)
    assert [(i, d.path, d.is_break) for i, d in result.decisions] == [
        (0, "first_message", False),
        (2, "unreadable", True),
        (4, "unreadable", True),
    ]
    assert embedder.texts == []  # the model's vectors of these texts would say nothing


async def test_a_message_that_repeats_the_words_of_the_exchange_before_it_continues() -> None:
    window = [*CHINESE_FACTS[:2], user("生日是十月三日，记住了吗？")]

    decision = await _decide(window, CountingEmbedder())

    assert decision.path == "unreadable" and not decision.is_break
    assert decision.score is not None and decision.score >= 0.6


async def test_an_answer_without_words_continues_after_a_message_the_model_cannot_read() -> None:
    decision = await _decide([*CHINESE_FACTS[:2], user("👍")], CountingEmbedder())

    assert (decision.path, decision.is_break, decision.score) == ("unreadable", False, 1.0)


async def test_an_answer_to_the_agents_question_continues_its_topic_whatever_its_words() -> None:
    """ "プリヤです。" shares no word with "お名前は？": cut there, the question stayed in the segment
    before and the answer, alone, was no fact the gate could read."""
    asked = [*CHINESE_FACTS[:2], agent("お名前は？"), user("プリヤです。")]
    told = [*CHINESE_FACTS[:2], agent("お名前を教えてください。"), user("プリヤです。")]

    answer = await _decide(asked, CountingEmbedder())
    after_a_statement = await _decide(told, CountingEmbedder())

    assert (answer.path, answer.is_break, answer.score) == ("unreadable", False, 1.0)
    assert after_a_statement.path == "unreadable" and after_a_statement.is_break


async def test_with_an_arbiter_the_arbiter_decides_and_without_an_answer_the_lexical_rule_does() -> None:
    window = CHINESE_FACTS[:3]
    same, silent = Arbiter(True), Arbiter(None)

    kept = await _decide(window, CountingEmbedder(), same)
    fallback = await _decide(window, CountingEmbedder(), silent)

    assert (kept.path, kept.is_break) == ("llm_true", False)
    assert same.asked == [(window[0].content, window[2].content)]
    assert (fallback.path, fallback.is_break) == ("unreadable", True) and silent.asked == same.asked


async def test_english_messages_are_scored_by_the_model_as_before() -> None:
    embedder = CountingEmbedder()
    window = [user("How do I reset my password?"), agent("Use the 'Forgot password' link."), user("It never arrived.")]

    decision = await _decide(window, embedder)

    assert decision.path != "unreadable" and decision.score is not None
    assert embedder.texts == [t.content for t in window]


def test_the_continuity_scorer_reads_latin_script_and_the_agnostic_one_every_script() -> None:
    continuity, agnostic = ContinuityScorer(), AgnosticContinuityScorer()

    assert continuity.reads("Je suis végétarien depuis cinq ans.") and continuity.reads("12:30 👍")
    assert not continuity.reads("Мой любимый писатель — Достоевский.") and not continuity.reads("저는 서울에 살아요.")
    assert all(agnostic.reads(t) for t in ("我的生日是十月三日。", "أنا أعمل مدرسًا في القاهرة."))


def test_the_lexical_overlap_score_is_the_share_of_the_new_words_in_the_two_messages_before_it() -> None:
    window = [
        user("My sister lives in Valencia."),
        agent("Valencia is lovely."),
        user("Her flat in Valencia overlooks the sea."),
    ]
    scorer = LexicalOverlapScorer()

    # terms of the new message: flat, valencia, overlook, sea; of the two before it: valencia
    assert scorer.score(window, 2, {}) == 0.25
    assert scorer.score([*window[:2], user("Yes, it is.")], 2, {}) == 1.0  # no term: an answer continues
