"""Month names of the languages Athena reads, each with its number.

The personal-fact signal counts a month as a date word (forming/personal_facts.py) and search reads
the dates a query names (search/query_period.py): both take the months from here, casefolded, in
English, Spanish, French (with and without accents), German, Portuguese, Italian and Russian (the
nominative, genitive and prepositional forms: "июнь", "3 июня", "в июне").
"""

from __future__ import annotations

__all__ = ["MONTHS", "MONTH_ABBREVIATIONS"]

_MONTH_WORDS = {
    1: "january jan enero janvier januar jänner janeiro gennaio",
    2: "february feb febrero février fevrier februar fevereiro febbraio",
    3: "march mar marzo mars märz maerz março",
    4: "april apr abril avril aprile",
    5: "may mayo mai maio maggio",
    6: "june jun junio juin juni junho giugno",
    7: "july jul julio juillet juli julho luglio",
    8: "august aug agosto août aout",
    9: "september sep sept septiembre setiembre septembre setembro settembre",
    10: "october oct octubre octobre oktober outubro ottobre",
    11: "november nov noviembre novembre novembro",
    12: "december dec diciembre décembre decembre dezember dezembro dicembre",
}
_RUSSIAN = {
    1: "январь января январе",
    2: "февраль февраля феврале",
    3: "март марта марте",
    4: "апрель апреля апреле",
    5: "май мая мае",
    6: "июнь июня июне",
    7: "июль июля июле",
    8: "август августа августе",
    9: "сентябрь сентября сентябре",
    10: "октябрь октября октябре",
    11: "ноябрь ноября ноябре",
    12: "декабрь декабря декабре",
}

MONTHS: dict[str, int] = {
    word: number for table in (_MONTH_WORDS, _RUSSIAN) for number, words in table.items() for word in words.split()
}
"""Every form of every month, casefolded, to its number (1-12)."""

MONTH_ABBREVIATIONS = frozenset("jan feb mar apr jun jul aug sep sept oct nov dec".split())
"""The English abbreviations among MONTHS: words of their own in other languages ("mar": the sea)."""
