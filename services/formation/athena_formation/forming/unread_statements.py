"""Statements in a language the personal-fact signal has no words for.

The signal (personal_facts.py) reads a fact by its words: first-person words, cues, function words
and small talk, listed for English and nineteen other languages. A user who tells a fact in Greek,
Thai, Czech or Persian ("Μένω στη Θεσσαλονίκη.", "Bydlím v Brně.") says nothing it can read, and a
fact told in two messages was a segment of its own, rejected by the gate and lost once the
conversation was flushed. Keeping such a statement costs a chain of small talk at worst; losing it
costs what the user told. A statement (not a question) is *unread* when it has no CJK word (those
languages have their own cues), and either

- has a letter of a script the lists do not cover (Greek, Thai, Armenian, Georgian, Bengali, Tamil,
  ...: anything but Latin, Cyrillic, Han, Kana, Hangul, Arabic, Devanagari, Hebrew) and a word the
  lists do not know (greetings and thanks of those scripts are small talk), or
- has a letter of a language of a covered script whose words are not listed (Czech "ř", Romanian
  "ș", Hungarian "ő", Ukrainian "ї", Persian "گ", ...) and at most UNREAD_KNOWN_SHARE of its words
  known: a sentence of a listed language never has such a letter, so its reading is unchanged. Their
  letters shared with listed languages ("ä", "é", "â") do not count, so a Finnish or Hungarian
  statement without "ő" or "ű" ("Olen kasvissyöjä.") is still judged by the lists alone.

An unread statement is a personal fact (the gate admits it) but not a lasting one: what it says is
not known.
"""

from __future__ import annotations

import regex

from athena.text import is_cjk

__all__ = ["UNREAD_KNOWN_SHARE", "is_unread"]

UNREAD_KNOWN_SHARE = 1 / 3
"""Most share of known words in an unread sentence of a covered script: "Bydlím v Brně se svou
ženou." knows "se" alone (1 of 6), "Živim u Splitu." "u" (1 of 3, the English chat "you")."""

_COVERED_SCRIPT = regex.compile(
    r"[\p{Latin}\p{Cyrillic}\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Arabic}\p{Devanagari}\p{Hebrew}]"
)
_LETTER = regex.compile(r"\p{L}")
_UNLISTED_LANGUAGE_LETTER = regex.compile(
    "[ěřůňťďšžčĚŘŮŇŤĎŠŽČ"  # Czech, Slovak, Slovene, Croatian, Latvian, Lithuanian
    "șțţȘȚŢ"  # Romanian (not "ş", which Turkish writes, nor "ă", which Vietnamese does)
    "őűŐŰ"  # Hungarian
    "ľĺŕĽĹŔ"  # Slovak
    "ćĆ"  # Croatian, Serbian, Bosnian (not "đ", which Vietnamese writes)
    "āēīūķļņģėįųĀĒĪŪĶĻŅĢĖĮŲ"  # Latvian, Lithuanian
    "þðÞÐ"  # Icelandic
    "õÕ"  # Estonian
    "іїєґІЇЄҐўЎ"  # Ukrainian, Belarusian
    "پچژگکیۀ"  # Persian, Urdu
    "]"
)


def is_unread(sentence: str, found: list[str], known: frozenset[str]) -> bool:
    """Whether a statement (not a question) is unread (module docstring); `found` its tokens, `known`
    every word the signal's lists hold."""
    words = [t for t in found if any(ch.isalpha() for ch in t)]
    if not words or any(is_cjk(t) for t in words):
        return False
    unknown = sum(t not in known for t in words)
    if any(not _COVERED_SCRIPT.match(ch) for ch in _LETTER.findall(sentence)):
        return unknown > 0
    return bool(_UNLISTED_LANGUAGE_LETTER.search(sentence)) and len(words) - unknown <= UNREAD_KNOWN_SHARE * len(words)
