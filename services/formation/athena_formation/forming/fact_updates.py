"""Does a lasting fact say it changed? "I now live in Munich", "I moved to Oslo", "I'm no longer
vegan", "I switched to an iPhone", "Actually, I work at Stripe".

Search puts the newest of a user's facts on one subject first (search/newest_first.py) only when the
newer one says it replaces something: two facts on one subject told without such a word mostly both
hold ("I'm allergic to shellfish", later "I'm allergic to penicillin"; "I'm vegan", later "I can't
eat dairy"), and the older one keeps the place the ranking gave it. Only lasting-fact sentences
(personal_facts.py) count, so "I'll call you now" or "new ticket" in a help-desk exchange do not.

Language: English words and phrases, with the commonest words of the same sense in Spanish, French,
German, Portuguese, Italian, Dutch and Russian, and a few Chinese, Japanese and Korean ones, matched
inside the sentence (athena.text does not split CJK into words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from athena.text import tokens
from athena_formation.forming.personal_facts import lasting_fact_sentences

__all__ = ["CHANGE_WORDS", "states_updated_fact", "updates_fact"]

CHANGE_WORDS = frozenset(
    """
    now nowadays currently anymore moved relocated changed switched new newly actually correction
    instead became become turned gone started stopped joined quit left
    ahora actualmente mudé mudado nuevo nueva ya
    maintenant désormais actuellement déménagé déménagée nouveau nouvelle nouvel devenu devenue
    jetzt nun mittlerweile inzwischen umgezogen neue neuen neuer neues
    agora atualmente mudei novo nova
    ora adesso attualmente trasferito trasferita nuovo nuova
    nu verhuisd nieuwe
    теперь сейчас переехал переехала новый новая новое
    """.split()
)
"""Words that tell a fact replaces an earlier one, casefolded: the time ("now", "jetzt"), the move or
the switch ("moved", "umgezogen"), the turn ("I've gone vegan", "I've become a vegetarian"), "new",
a correction ("actually"). "left" counts as its own token only ("I left Google"), not inside
"left-handed"."""
_CHANGE_PHRASES = re.compile(
    r"\bno\s+longer\b|\bany\s+more\b|\bthese\s+days\b|\bnot\s+any\s+longer\b|\bi\s+meant\b"
    r"|\bnicht\s+mehr\b|\bne\s+\w+\s+plus\b|\bn'\w+\s+plus\b|\bnon\s+più\b|\bjá\s+não\b|\bniet\s+meer\b"
    r"|\bбольше\s+не\b|\ben\s+fait\b|\bde\s+hecho\b|\bna\s+verdade\b|\bin\s+realtà\b"
    r"|\bsince\s+(?:last|this)\s+\w+|\bseit\s+letzte[mnr]?\s+\w+|\bdesde\s+(?:el|la)\s+\w+\s+pasad[oa]\b"
    r"|\bdepuis\s+(?:le|la)\s+\w+\s+derni[eè]re?\b|\bdepuis\s+l'an(?:née)?\s+derni[eè]re?\b",
    re.IGNORECASE,
)
"""Phrases of the same sense whose words alone say nothing: "no longer", "nicht mehr", "je ne mange
plus", "non più", "niet meer", "больше не"; a correction ("I meant I'm 34"); "actually" in French,
Spanish, Portuguese and Italian ("en fait", "de hecho", "na verdade", "in realtà"); and a start lately ("since last week", "seit
letztem Monat", "desde el mes pasado", "depuis la semaine dernière"): a fact that began a week ago
replaces what held before it, where "since 2010" tells only how long it has held."""
_CJK_CHANGE = ("现在", "搬到", "搬家", "不再", "新的", "今は", "引っ越", "新しい", "もう", "이제", "지금", "이사")


def updates_fact(sentence: str) -> bool:
    """Whether a sentence holds a word or phrase of change (module docstring); any sentence."""
    return (
        any(t in CHANGE_WORDS for t in tokens(sentence))
        or bool(_CHANGE_PHRASES.search(sentence))
        or any(cue in sentence for cue in _CJK_CHANGE)
    )


def states_updated_fact(texts: Iterable[str]) -> bool:
    """Whether any of the texts states a lasting fact that says it changed."""
    return any(updates_fact(s) for t in texts for s in lasting_fact_sentences(t))
