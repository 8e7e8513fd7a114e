"""English words come from the bundled model's vocabulary, with their inflections and chat spellings."""

from __future__ import annotations

import pytest

from athena_formation.text.english_words import english_words, is_english_word


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
