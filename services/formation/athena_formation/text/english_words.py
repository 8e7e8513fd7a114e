"""English words: the whole words of the bundled embedding model's vocabulary.

The personal-fact signal reads a fact by the words its lists hold; a Latin-script sentence that has
few of them is either English with only content words ("Pizza tonight.") or a language the lists do
not cover ("Olen kasvissyöjä."). The model's WordPiece vocabulary (uncased English, ~21,000 whole
words after its sub-word pieces and symbols are left out) tells the two apart without a list of our
own: Finnish, Hungarian or Romanian words are split into pieces there, English ones mostly are not.
"""

from __future__ import annotations

from functools import lru_cache

from athena.embeddings import bundled_model_path
from athena.text import latin_language, tokens

__all__ = ["ENGLISH_TEXT_SHARE", "english_words", "is_english_text", "is_english_word"]

ENGLISH_TEXT_SHARE = 0.75
"""Least share of a text's words that are English for the text to be English: the vocabulary holds
many short words of other languages ("que", "je", "de", "bin"), so "Bin ich verheiratet?" has two of
three and "¿En qué ciudad vivo?" three of four."""


_CHAT = """
oops typo typos lmao omg btw tbh idk imo imho brb ttyl yay yikes ugh meh cuz sorta dunno lemme gimme
yall xd lol lols mhm aww awww woohoo yummy yum ikr smh fyi asap pls plz thx tysm np nvm rn irl ftw
wtf lmk hbu wbu gg haha hahaha hehe lolz bday ty kk sry soo sooo yess yesss nooo ahh ahhh ooh
"""
"""Chat English the vocabulary (books and encyclopaedia text) has no whole word for."""


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The vocabulary's whole words of two or more letters, lowercase, and _CHAT (read once per
    process)."""
    text = (bundled_model_path() / "vocab.txt").read_text(encoding="utf-8")
    vocabulary = (w for w in text.split() if len(w) > 1 and w.isalpha() and w.isascii())
    return frozenset(vocabulary) | frozenset(_CHAT.split())


_SUFFIXES = (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("ing", ""), ("ing", "e"), ("ly", ""))
"""English inflections the vocabulary often lacks a whole word for ("proofs", "mins"): a word is English
when what is left without one is."""


def is_english_word(word: str) -> bool:
    """Whether each alphabetic part of a casefolded word ("loose-fitting", "don't") is an English word
    or one inflected; a letter with a diacritic is never English here ("câini")."""
    parts = [p for p in word.replace("'", "-").split("-") if p]
    return bool(parts) and all(_is_english_part(p) for p in parts)


def _is_english_part(part: str) -> bool:
    words = english_words()
    if part in words or (len(part) == 1 and part.isascii()):
        return True
    return any(
        part.endswith(suffix) and len(part) - len(suffix) > 2 and part[: -len(suffix)] + end in words
        for suffix, end in _SUFFIXES
    )


def is_english_text(text: str) -> bool:
    """Whether a text is English: its Latin-script language by stop words (athena.text) and more than
    ENGLISH_TEXT_SHARE of its words English. What the bundled model, which learned English, reads by
    meaning; in another language its cosines follow the language more than what is said."""
    found = [t for t in tokens(text) if any(ch.isalpha() for ch in t)]
    if not found or latin_language(found) != "en":
        return False
    return sum(is_english_word(t) for t in found) > ENGLISH_TEXT_SHARE * len(found)
