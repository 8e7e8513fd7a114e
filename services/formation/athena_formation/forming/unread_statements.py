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
  known: a sentence of a listed language never has such a letter, so its reading is unchanged, or
- is written in Latin letters alone, has at most UNREAD_KNOWN_SHARE of its words known and none of
  three letters or more, no letter only listed languages write (_LISTED_LANGUAGE_MARK), and at least
  UNREAD_MIN_FOREIGN words, half of them or more, that are neither known nor English
  (text/english_words.py; one with a letter English never writes counts as two): Finnish, Hungarian
  or Romanian without a letter of their own ("Olen kasvissyöjä.", "Budapesten lakom a férjemmel.",
  "Am doi câini."). English of content words alone ("Pizza tonight.",
  "Crabs or lobster.") stays read: its words are English; so do a listed language's remarks ("Tåget
  är försenat igen.", "Het museum sluit om zes uur."): a letter or a word of its own; or
- is written in Cyrillic alone without a letter Russian writes in most sentences (_RUSSIAN_LETTER),
  and has at least UNREAD_MIN_FOREIGN unknown words, half its words or more (Serbian, Bulgarian:
  "Живим у Београду са женом.", "Имам две деца.").

An unread statement is a personal fact (the gate admits it) but not a lasting one: what it says is
not known.
"""

from __future__ import annotations

import regex

from athena.text import is_cjk
from athena_formation.text.english_words import is_english_word

__all__ = ["UNREAD_KNOWN_SHARE", "UNREAD_MIN_FOREIGN", "is_unread"]

UNREAD_KNOWN_SHARE = 1 / 3
"""Most share of known words in an unread sentence of a covered script: "Bydlím v Brně se svou
ženou." knows "se" alone (1 of 6), "Živim u Splitu." "u" (1 of 3, the English chat "you")."""

UNREAD_MIN_FOREIGN = 2
"""Fewest foreign words (neither known nor English; in Cyrillic, not known) in an unread sentence of
one script without a language's own letter: one such word is as often a name, a typo or a rare English
word ("Luna and Oliver!", "Two accetable proofs")."""

_COVERED_SCRIPT = regex.compile(
    r"[\p{Latin}\p{Cyrillic}\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Arabic}\p{Devanagari}\p{Hebrew}]"
)
_LETTER = regex.compile(r"\p{L}")
_LATIN = regex.compile(r"\p{Latin}")
_CYRILLIC = regex.compile(r"\p{Cyrillic}")
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
    "ђјљњћџѓќѕЂЈЉЊЋЏЃЌЅ"  # Serbian, Macedonian
    "әғқңөұүһӣӯҳҷҗӘҒҚҢӨҰҮҺӢӮҲҶҖ"  # Kazakh, Kyrgyz, Mongolian, Tajik, Tatar
    "ə"  # Azerbaijani
    "پچژگکیۀ"  # Persian, Urdu
    "ٹڈڑںےہھۓټډړږښګڼۍېڕڵۆێ"  # Urdu, Pashto, Kurdish
    "]"
    "|ъ(?![еёюяЕЁЮЯ])"  # Bulgarian ("съм"): Russian writes "ъ" only before "е", "ё", "ю", "я"
)
_LISTED_LANGUAGE_MARK = regex.compile(
    "[ąęłńśźż"  # Polish (Lithuanian's "ą", "ę" come with letters of its own, read first)
    "ığş"  # Turkish ("ə" makes Azerbaijani unlisted first)
    "ñßãœùûêèàå"  # Spanish, German, Portuguese, French ("à"), Italian ("è", "più"), Swedish
    "ơưđạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ"  # Vietnamese
    "]|ij"  # Dutch ("mijn", "zijn", "tijd")
)
"""Letters (casefolded) only listed languages write among those in Latin letters: a sentence with one
is of a listed language, which the signal reads ("Tåget är försenat igen.", "Spotkanie zostało
odwołane."). Not "ä", "ö", "ü", "é", "á", "ó", "ç", "ă", "â", "î", "õ", "ë", which Finnish, Hungarian,
Estonian, Catalan, Romanian or Albanian write too; "à" is French's and Italian's, though Catalan writes
it too ("Sóc vegetarià." is read as a listed language's)."""
_RUSSIAN_LETTER = regex.compile("[яюйьыэёщъЯЮЙЬЫЭЁЩЪ]")
"""Letters Russian writes in most sentences and Serbian never does: a Cyrillic sentence without one,
of unknown words, is not read as Russian ("Живим у Београду са женом.")."""


def is_unread(sentence: str, found: list[str], known: frozenset[str]) -> bool:
    """Whether a statement (not a question) is unread (module docstring); `found` its tokens, `known`
    every word the signal's lists hold."""
    words = [t for t in found if any(ch.isalpha() for ch in t)]
    if not words or any(is_cjk(t) for t in words):
        return False
    unknown = [t for t in words if t not in known]
    letters = _LETTER.findall(sentence)
    if any(not _COVERED_SCRIPT.match(ch) for ch in letters):
        return bool(unknown)
    if len(words) - len(unknown) > UNREAD_KNOWN_SHARE * len(words):
        return False
    if _UNLISTED_LANGUAGE_LETTER.search(sentence):
        return True
    unknown = [t for t in unknown if not any(c.isdigit() for c in t)]
    if all(_LATIN.match(ch) for ch in letters):
        if _LISTED_LANGUAGE_MARK.search(sentence.casefold()) or any(_listed_word(t, known) for t in words):
            return False
        # A word with a letter English never writes is no typo of an English word ("câini" in "Am doi
        # câini.", where "am" is known and "doi" English): it counts as two.
        foreign = sum(1 + (not t.isascii()) for t in unknown if not is_english_word(t))
    elif all(_CYRILLIC.match(ch) for ch in letters) and not _RUSSIAN_LETTER.search(sentence):
        foreign = len(unknown)
    else:
        return False
    return foreign >= max(UNREAD_MIN_FOREIGN, len(words) / 2)


def _listed_word(word: str, known: frozenset[str]) -> bool:
    """A known word of three letters or more ("het", "är", "się"): the signal reads a sentence with one."""
    return len(word) > 2 and word in known
