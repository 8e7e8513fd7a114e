"""English words come from the bundled model's vocabulary, with their inflections and chat spellings; an
English text is one of nearly all English words."""

from __future__ import annotations

import pytest

from athena_formation.text.english_words import english_words, is_english_text, is_english_word


def test_the_vocabulary_gives_thousands_of_whole_words_and_no_word_pieces() -> None:
    words = english_words()
    assert len(words) > 15_000
    assert {"dog", "allergic", "vegetarian"} <= words
    assert not any(w.startswith("##") or not w.isalpha() for w in words)


@pytest.mark.parametrize("word", ["dog", "proofs", "mins", "loose-fitting", "don't", "oops", "typo"])
def test_english_words_inflected_hyphenated_or_of_chat_are_english(word: str) -> None:
    assert is_english_word(word)


@pytest.mark.parametrize("word", ["kasvissyöjä", "câini", "férjemmel", "tampereella", "lakom"])
def test_words_of_other_languages_are_not(word: str) -> None:
    assert not is_english_word(word)


def test_a_text_is_english_when_nearly_all_its_words_are_and_its_stop_words_say_so() -> None:
    for english in ("Which language am I studying?", "Do I have a dog?", "Who is my manager?"):
        assert is_english_text(english), english
    for other in (
        "¿Tengo alguna enfermedad?",  # no English word
        "Est-ce que je mange de la viande ?",  # French by its stop words, though "que", "je", "de" are listed
        "Bin ich verheiratet?",  # two words of three in the vocabulary
        "¿En qué ciudad vivo?",  # three of four: not more than three quarters
        "Wat is mijn beroep?",
        "",
    ):
        assert not is_english_text(other), other
