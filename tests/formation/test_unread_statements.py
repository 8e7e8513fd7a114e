"""A statement in a language the personal-fact signal has no words for is kept as a fact, not lost.

Greek, Thai, Czech, Ukrainian and Persian facts say nothing the signal's word lists can read; before
this rule a fact told in two messages in one of them was rejected by the gate. Their greetings and
thanks are small talk, and the languages the lists cover are read as before: a sentence of theirs
never has a letter of an unlisted language.
"""

from __future__ import annotations

import pytest

from athena_formation.forming.personal_facts import lasting_fact_sentences, personal_fact_sentences

UNREAD_FACTS = [
    "Bydlím v Brně se svou ženou.",  # Czech: "ř", "ě"
    "Μένω στη Θεσσαλονίκη.",  # Greek script
    "ฉันแพ้กุ้ง",  # Thai script, no spaces
    "Мій син навчається в школі.",  # Ukrainian: "і", "ї"
    "من در تهران زندگی می‌کنم.",  # Persian: "ی", "ک"
    "Živim u Splitu.",  # Croatian: one word of three known ("u")
]
SMALL_TALK = [
    "Ευχαριστώ πολύ!",
    "Γεια σας!",
    "ขอบคุณมากครับ",
    "สวัสดีครับ",
    "Děkuji, to je všechno.",
    "Дякую, до побачення!",
    "ممنون، روز خوبی داشته باشید.",
    "Mulțumesc frumos!",
]
LISTED_LANGUAGES_SMALL_TALK = [
    "Hôm nay trời đẹp quá.",  # Vietnamese writes "đ" and "ă": they are not letters of an unlisted language
    "Tudo bem, até amanhã.",
    "Schönes Wochenende!",
    "Es war ein schöner Tag.",
    "Fa caldo oggi.",
]


@pytest.mark.parametrize("sentence", UNREAD_FACTS)
def test_a_statement_in_a_language_the_lists_do_not_cover_is_a_fact_but_not_a_lasting_one(sentence: str) -> None:
    assert personal_fact_sentences(sentence) == [sentence]
    assert lasting_fact_sentences(sentence) == []


@pytest.mark.parametrize("sentence", SMALL_TALK + LISTED_LANGUAGES_SMALL_TALK)
def test_greetings_and_thanks_of_those_languages_and_small_talk_of_listed_ones_are_not_facts(sentence: str) -> None:
    assert personal_fact_sentences(sentence) == []


def test_a_question_in_such_a_language_is_not_a_fact() -> None:
    assert personal_fact_sentences("Πού μένω;") == personal_fact_sentences("Kde bydlím?") == []


def test_a_sentence_of_a_covered_script_with_many_known_words_is_read_by_the_lists_alone() -> None:
    # "Dvořák" has an unlisted language's letter, but "was" and "a" are two known words of four.
    assert personal_fact_sentences("Dvořák was a composer.") == []
