"""Heuristic entity extraction: patterns for the things that have a shape, capitalization for names.

Patterns run in priority order over the dialogue text (fenced code blocks removed), and a span taken by
one is not reconsidered by the next:

  url       http(s)://..., www...., bare domains (example.com)
  email     name@host.tld
  code      `backticked`, --flags, /paths, snake_case, CamelCase/lowerCamel, dotted.names, calls()
  version   v2.3, 1.2.3, "Python 3.11" (a capitalized name followed by a dotted number)
  date      2023-05-08, 5/8/2023, "May 8, 2023", "8 May", "March 2024", weekdays, "in June", "in 2023",
            times of day (10:30 am, 3pm)
  quantity  number + unit ("20 GB", "5 ms", "3 nights", "2 cups", "30%"), money ("$30", "25 euros")
  names     runs of capitalized words ("Bank of America"), classified with small gazetteers:
            product, organization (known names, "... University", "... Inc"), place (known names, or
            after "in/to/from/visit"), person (known first names, "Dr. X", "my friend X"), else other.

A capitalized word that only ever opens a sentence is not taken as a name unless a gazetteer knows it
("Sure", "Unfortunately" are not names; "Docker" is). Entities are deduplicated case-insensitively,
kept in order of first mention, capped at MAX_ENTITIES, each at most MAX_ENTITY_CHARS long.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from athena_formation.forming.analysis._types import Entity
from athena_formation.text.gazetteer import (
    AMBIGUOUS,
    FIRST_NAMES,
    NOT_NAMES,
    ORG_SUFFIXES,
    ORGANIZATIONS,
    PLACES,
    PRODUCTS,
    TECH_TERMS,
)
from athena_formation.text.messages import Message
from athena_formation.text.stopwords import FUNCTION_WORDS, SMALLTALK, STOPWORDS

__all__ = ["MAX_ENTITIES", "MAX_ENTITY_CHARS", "extract_entities"]

MAX_ENTITIES = 25
MAX_ENTITY_CHARS = 80

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_FULL_MONTH = r"(?:January|February|March|April|June|July|August|September|October|November|December)"
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)s?"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNITS = (
    r"%|percent|[KMGTP]i?B|[KMGT]b|kb|bytes?|ms|µs|ns|sec(?:ond)?s?|mins?|minutes?|hrs?|hours?|days?|"
    r"weeks?|months?|years?|yrs?|nights?|km|cm|mm|m|mi|miles?|ft|feet|inch(?:es)?|kg|mg|g|lbs?|oz|ml|"
    r"[lL]|lit(?:er|re)s?|cups?|tbsp|tsp|tablespoons?|teaspoons?|°\s?[CF]|degrees?|[GMk]?Hz|kW|W|V|mAh|"
    r"rpm|fps|px|cores?|v?CPUs?|threads?|rps|qps|requests?|users?|people|persons|guests|adults|kids|"
    r"servings?|pages?|calories|kcal|k|x|s|h"
)

_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>()\[\]\"'`]+", re.IGNORECASE)
_DOMAIN = re.compile(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|dev|ai|co|edu|gov|app|uk|de|fr)\b")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_BACKTICK = re.compile(r"`([^`\n]{1,80})`")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*(?:=[^\s,;]+)?")
_PATH = re.compile(r"(?<![\w/.])(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]*[\w]")
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_CAMEL = re.compile(r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z][A-Za-z0-9]*)\b")
_DOTTED = re.compile(r"\b[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+(?:\(\))?")
_HOST = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d+[a-z0-9]*(?:-[a-z0-9]+)*\b")
_CALL = re.compile(r"\b[A-Za-z_][\w.]*\(\)")
_VERSION = re.compile(r"\bv\d+(?:\.\d+){0,3}\b|\b\d+\.\d+\.\d+(?:[-+.][\w.]+)?\b")
_NAMED_VERSION = re.compile(r"\b([A-Z][A-Za-z+#-]{1,20}|i[A-Z][a-z]+|mac[A-Z]{2})\s+(\d+(?:\.\d+){0,3})\b")
_DATES: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), 0),
    (re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b"), 0),
    (re.compile(rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"), 0),
    (re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?\b"), 0),
    (re.compile(rf"\b{_MONTH}\s+\d{{4}}\b"), 0),
    (re.compile(rf"\b(?:(?:next|last|this|every)\s+)?{_WEEKDAY}\b"), 0),
    (re.compile(rf"\b{_FULL_MONTH}\b"), 0),
    (re.compile(r"\b(?:in|by|until|since|during|early|late|mid-?|from|of|last|next|this|through)\s+(May)\b"), 1),
    (re.compile(r"\b(?:in|since|by|until|from|of)\s+((?:19|20)\d{2})\b"), 1),
    (re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)(?![A-Za-z])", re.IGNORECASE), 0),
    (re.compile(r"(?<![\d:.])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])"), 0),
]
_MONEY = [
    re.compile(r"[$€£¥]\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?(?:k|K|M|million|billion|bn)\b)?"),
    re.compile(rf"\b(?:{_NUM})\s?(?:USD|EUR|GBP|dollars|euros|pounds|bucks|cents)\b"),
]
_QUANTITY = re.compile(rf"(?<![\w.])(?:{_NUM})\s?(?:{_UNITS})(?![A-Za-z0-9])")
_NAME = re.compile(
    r"\b(?:[A-Z][\w'’&.-]*[A-Za-z0-9]|[A-Z])"
    r"(?:(?:\s+(?:of|de|da|del|do|dos|van|von|the|&)\s+|\s+)(?:[A-Z][\w'’&.-]*[A-Za-z0-9]|[A-Z]))*"
)
_SENTENCE_BREAK = re.compile(r"(?:^|[.!?:;\n]\s*|[\"(\[]\s*|^\s*[-*•]\s+)$")
_RELATION = re.compile(
    r"\b(?:my|our|his|her|their)\s+(?:friend|sister|brother|mom|mother|dad|father|wife|husband|son|"
    r"daughter|boss|manager|colleague|coworker|partner|cousin|aunt|uncle|neighbor|neighbour|kid|child|"
    r"girlfriend|boyfriend|roommate|teacher|doctor)\s+$",
    re.IGNORECASE,
)
_PLACE_CUE = re.compile(
    r"\b(?:in|from|near|around|across|visit|visiting|visited|(?:trip|flight|fly|flying|flew|travel|travelling|"
    r"traveling|move|moving|moved|drive|drove|went|going|go|get|getting) to)\s+$",
    re.IGNORECASE,
)
_HONORIFIC = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|Sir|Dame|Aunt|Uncle)\.?\s+$")
# A name run may start with a sentence's first word ("Use Arborio", "Thanks Sarah"): leading words
# that are any kind of stopword go; trailing ones only if they are function words ("Príncipe Real").
_LEADING_JUNK = STOPWORDS | SMALLTALK | NOT_NAMES
_TRAILING_JUNK = FUNCTION_WORDS | SMALLTALK | NOT_NAMES


class _Spans:
    """Character ranges already taken by a higher-priority pattern."""

    def __init__(self) -> None:
        self._taken: list[tuple[int, int]] = []

    def free(self, start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in self._taken)

    def take(self, start: int, end: int) -> None:
        self._taken.append((start, end))


_DOTTED_ABBREVIATION = re.compile(r"^(?:[A-Z]\.)+[A-Z]$")


def _clean(text: str) -> str:
    text = " ".join(text.split())
    call = text.endswith("()") and len(text) > 2 and (text[-3].isalnum() or text[-3] == "_")
    text = text.strip(" .,;:!?\"'()[]{}") + ("()" if call else "")
    if text.endswith(("'s", "’s")):
        text = text[:-2]
    if _DOTTED_ABBREVIATION.match(text):  # "U.S." lost its final dot to the strip above
        text += "."
    return text[:MAX_ENTITY_CHARS].rstrip()


class _Collector:
    def __init__(self) -> None:
        self.found: list[tuple[int, int, Entity]] = []  # (message order, offset, entity)

    def add(self, order: int, offset: int, text: str, kind: str) -> None:
        text = _clean(text)
        if len(text) >= 2 and any(ch.isalnum() for ch in text):
            self.found.append((order, offset, Entity(text, kind)))


_HONORIFIC_BEFORE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|St)\.\s*$")


def _is_sentence_start(text: str, start: int) -> bool:
    if _HONORIFIC_BEFORE.search(text[max(0, start - 8) : start]):
        return False  # "Dr. Tanaka": the dot ends an abbreviation, not a sentence
    return bool(_SENTENCE_BREAK.search(text[max(0, start - 4) : start]) or start == 0)


def _name_kind(name: str, before: str) -> str:
    low = name.lower()
    tokens = low.split()
    if low in PRODUCTS:
        return "product"
    if (
        low in ORGANIZATIONS
        or (tokens and tokens[-1] in ORG_SUFFIXES)
        or (tokens and tokens[0] in {"university", "bank"})
    ):
        return "organization"
    if low in PLACES:
        return "place"
    if _HONORIFIC.search(before) or _RELATION.search(before):
        return "person"
    if tokens and tokens[0] in FIRST_NAMES and len(tokens) <= 3:
        return "person"
    if tokens and all(t in PLACES for t in tokens):
        return "place"
    if _PLACE_CUE.search(before) and len(tokens) <= 3 and not name.isupper():
        return "place"
    if tokens and tokens[0] in PRODUCTS:
        return "product"
    return "other"


_CONNECTORS = frozenset({"of", "de", "da", "del", "do", "dos", "van", "von", "the", "&"})


def _trim_name(match_text: str, start: int) -> tuple[str, int]:
    """Drop leading/trailing words that are not part of a name ("Thanks Sarah" -> "Sarah")."""
    parts = [(m.group(0), m.start()) for m in re.finditer(r"\S+", match_text)]

    def low(word: str) -> str:
        return word.lower().strip("'’.,")

    while parts and low(parts[0][0]) in _LEADING_JUNK:
        parts.pop(0)
    while parts and (low(parts[-1][0]) in _TRAILING_JUNK or low(parts[-1][0]) in _CONNECTORS):
        parts.pop()
    if not parts:
        return "", start
    first, last = parts[0][1], parts[-1][1] + len(parts[-1][0])
    return match_text[first:last], start + first


def _names(text: str, order: int, spans: _Spans, out: _Collector, mid_sentence_caps: set[str]) -> None:
    for match in _NAME.finditer(text):
        if not spans.free(match.start(), match.end()):
            continue
        name, start = _trim_name(match.group(0), match.start())
        if not name:
            continue
        low = name.lower()
        if low in TECH_TERMS or low in NOT_NAMES:
            continue
        single = len(name.split()) == 1
        if single and len(name) < 2:
            continue
        known = low in PRODUCTS or low in ORGANIZATIONS or low in PLACES or low in FIRST_NAMES
        acronym = name.isupper() and len(name) >= 2 and name.isalpha()
        if (
            single
            and _is_sentence_start(text, start)
            and (low in AMBIGUOUS or not (known or acronym or low in mid_sentence_caps))
        ):
            continue
        before = text[max(0, start - 40) : start]
        out.add(order, start, name, _name_kind(name, before))
        spans.take(match.start(), match.end())


def _mid_sentence_capitalized(texts: Sequence[str]) -> set[str]:
    """Lowercased words seen capitalized somewhere other than at a sentence start."""
    seen: set[str] = set()
    for text in texts:
        for match in re.finditer(r"\b[A-Z][\w'’-]*", text):
            if not _is_sentence_start(text, match.start()):
                seen.add(match.group(0).lower())
    return seen


def _scan(text: str, order: int, out: _Collector, mid_caps: set[str]) -> None:
    spans = _Spans()

    def run(pattern: re.Pattern[str], kind: str, group: int = 0) -> None:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if spans.free(start, end):
                out.add(order, start, match.group(group), kind)
                spans.take(start, end)

    run(_URL, "url")
    run(_EMAIL, "email")
    run(_DOMAIN, "url")
    run(_BACKTICK, "code", 1)
    for match in _NAMED_VERSION.finditer(text):
        name = match.group(1)
        if (name.lower() in PRODUCTS or "." in match.group(2) or name[0].islower()) and spans.free(
            match.start(), match.end()
        ):
            out.add(order, match.start(), match.group(0), "version")
            spans.take(match.start(), match.end())
    run(_VERSION, "version")
    run(_FLAG, "code")
    run(_PATH, "code")
    for pattern, group in _DATES:
        run(pattern, "date", group)
    for pattern in _MONEY:
        run(pattern, "quantity")
    run(_QUANTITY, "quantity")
    run(_CALL, "code")
    for match in _DOTTED.finditer(text):
        parts = match.group(0).rstrip("()").split(".")
        if max(len(p) for p in parts) < 3 or not spans.free(match.start(), match.end()):
            continue  # "e.g", "U.S", "a.m"
        low = match.group(0).lower()
        kind = "product" if low in PRODUCTS else "code"
        out.add(order, match.start(), match.group(0), kind)
        spans.take(match.start(), match.end())
    run(_SNAKE, "code")
    run(_HOST, "code")
    for match in _CAMEL.finditer(text):
        if not spans.free(match.start(), match.end()):
            continue
        word = match.group(0)
        kind = "product" if word.lower() in PRODUCTS else ("organization" if word.lower() in ORGANIZATIONS else "code")
        out.add(order, match.start(), word, kind)
        spans.take(match.start(), match.end())
    _names(text, order, spans, out, mid_caps)


def extract_entities(messages: Sequence[Message], *, limit: int = MAX_ENTITIES) -> tuple[Entity, ...]:
    """Entities of the dialogue messages (all messages when there is no dialogue), first mention first."""
    chosen = [m for m in messages if m.is_dialogue] or list(messages)
    texts = [re.sub(r"```.*?(?:```|\Z)", " ", m.text, flags=re.DOTALL) for m in chosen]
    mid_caps = _mid_sentence_capitalized(texts)
    out = _Collector()
    for order, text in enumerate(texts):
        _scan(text, order, out, mid_caps)
    out.found.sort(key=lambda item: (item[0], item[1]))
    result: list[Entity] = []
    seen: set[str] = set()
    for _order, _offset, entity in out.found:
        key = entity.text.lower()
        if key in seen:
            continue
        seen.add(key)
        result.append(entity)
        if len(result) >= limit:
            break
    return tuple(result)
