"""A statement in a language the personal-fact signal has no words for is kept as a fact, not lost.

Greek, Thai, Czech, Ukrainian, Persian, Finnish or Hungarian facts say nothing the signal's word lists
can read; before this rule a fact told in two messages in one of them was rejected by the gate. Their
greetings and thanks are small talk, and the languages the lists cover are read as before: a sentence
of theirs never has a letter of an unlisted language, and one of content words alone has everyday
words of its language or English words.
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
UNREAD_LATIN_FACTS = [  # no letter of their own: their words are neither listed nor English
    "Olen kasvissyöjä.",  # Finnish
    "Asun Helsingissä vaimoni kanssa.",  # Finnish
    "Budapesten lakom a férjemmel.",  # Hungarian
    "Laktózérzékeny vagyok.",  # Hungarian
    "Mul on kaks koera.",  # Estonian
    "Tinc dos gats.",  # Catalan
    "Irakaslea naiz.",  # Basque
    "Nina paka wawili.",  # Swahili
    "Tá beirt pháistí agam.",  # Irish
]
UNREAD_CYRILLIC_FACTS = [
    "Живим у Београду са женом.",  # Serbian: no letter Russian writes in most sentences
    "Имам две деца.",  # Bulgarian, the same
    "Аз съм вегетарианец.",  # Bulgarian: "ъ" before a consonant
    "Живеам во Скопје.",  # Macedonian: "ј"
    "Мен Алматыда тұрамын.",  # Kazakh: "ұ"
]
ENGLISH_OF_CONTENT_WORDS = [
    "Pizza tonight.",
    "Crabs or lobster.",
    "Oops, typo.",
    "Two acceptable proofs exist.",
    "Luna and Oliver!",
    "Registration fee and plate fee.",
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
    "Хвала пуно!",
    "Благодаря много!",
    "Asante sana!",
    "Moltes gràcies!",
]
LISTED_LANGUAGES_SMALL_TALK = [
    "Hôm nay trời đẹp quá.",  # Vietnamese writes "đ" and "ă": they are not letters of an unlisted language
    "Tudo bem, até amanhã.",
    "Schönes Wochenende!",
    "Es war ein schöner Tag.",
    "Fa caldo oggi.",
    # Of content words alone, read as listed languages by their everyday words (text/stopwords.py)
    "Tolles Spiel gestern.",
    "Mooi weer vandaag.",
    "Ładna pogoda dzisiaj.",
    "Güzel bir gün.",
    "Excelente servicio.",
    "Va bene, grazie mille.",
]
LISTED_LANGUAGES_REMARKS = [  # content words a listed language shows by a letter or a word of its own
    "Tåget är försenat igen.",  # Swedish "å"
    "Spotkanie zostało odwołane.",  # Polish "ł"
    "Toplantı iptal edildi.",  # Turkish "ı"
    "Le musée ferme à six heures.",  # French "à"
    "Het museum sluit om zes uur.",  # Dutch "het"
    "Mötet blev inställt.",  # Swedish "blev"
    "Il negozio è aperto ogni giorno.",  # Italian "è", "ogni"
    "O trem atrasa todos os dias.",  # Portuguese
    "A reunião foi cancelada.",  # Portuguese "foi"
]


@pytest.mark.parametrize("sentence", UNREAD_FACTS)
def test_a_statement_in_a_language_the_lists_do_not_cover_is_a_fact_but_not_a_lasting_one(sentence: str) -> None:
    assert personal_fact_sentences(sentence) == [sentence]
    assert lasting_fact_sentences(sentence) == []


@pytest.mark.parametrize("sentence", UNREAD_LATIN_FACTS)
def test_a_latin_statement_whose_words_are_neither_listed_nor_english_is_a_fact(sentence: str) -> None:
    assert personal_fact_sentences(sentence) == [sentence]
    assert lasting_fact_sentences(sentence) == []


@pytest.mark.parametrize("sentence", UNREAD_CYRILLIC_FACTS)
def test_a_cyrillic_statement_that_is_not_russian_is_a_fact(sentence: str) -> None:
    assert personal_fact_sentences(sentence) == [sentence]


def test_a_russian_remark_of_content_words_is_read_as_russian() -> None:
    # "я" is a letter Serbian, Macedonian and Bulgarian-without-"ъ" never write in such a remark.
    assert personal_fact_sentences("Отличная погода сегодня.") == []
    assert personal_fact_sentences("Подъезд закрыт.") == []  # "ъ" before "е": Russian


@pytest.mark.parametrize("sentence", ENGLISH_OF_CONTENT_WORDS)
def test_english_of_content_words_alone_is_read_as_english_not_as_an_unread_language(sentence: str) -> None:
    assert personal_fact_sentences(sentence) == []


def test_one_word_neither_listed_nor_english_is_not_enough() -> None:
    # A name or a typo looks the same ("Two accetable proofs exist.", "Luna and Oliver!").
    assert personal_fact_sentences("Two accetable proofs.") == personal_fact_sentences("Pizza with Oliver.") == []


def test_one_foreign_word_with_a_letter_english_never_writes_counts_as_two() -> None:
    # Romanian "two dogs": "am" is known, "doi" English, "câini" no typo of an English word.
    assert personal_fact_sentences("Am doi câini.") == ["Am doi câini."]


@pytest.mark.parametrize("sentence", SMALL_TALK + LISTED_LANGUAGES_SMALL_TALK + LISTED_LANGUAGES_REMARKS)
def test_greetings_and_thanks_of_those_languages_and_remarks_of_listed_ones_are_not_facts(sentence: str) -> None:
    assert personal_fact_sentences(sentence) == []


def test_a_question_in_such_a_language_is_not_a_fact() -> None:
    assert personal_fact_sentences("Πού μένω;") == personal_fact_sentences("Kde bydlím?") == []


def test_a_sentence_of_a_covered_script_with_many_known_words_is_read_by_the_lists_alone() -> None:
    # "Dvořák" has an unlisted language's letter, but "was" and "a" are two known words of four.
    assert personal_fact_sentences("Dvořák was a composer.") == []
