"""What a user's question about themselves asks for, in the words such facts are told with: "Who is my
spouse?" is answered by "My wife is called Priya", "Do I have any medical conditions?" by "I take
insulin twice a day".

The local embedding model puts such a question and its answer far apart (cosines of 0.06 to 0.48
measured on written pairs, docs/formation.md), and the question shares no word with the answer. A
question in the first person naming a kind of personal fact (family, pets, health, diet, home,
work) adds the words such facts are told with to its lexical side, at SEARCH_EXPANSION_WEIGHT of a
query word's weight (LexicalIndex.query). Questions about someone else ("What pets does Melanie
have?") are left alone: on LoCoMo's, which all are, the same words lowered recall. Events in no
chain yet are scored with them too (open_events.lexical_scores). English only; words are terms of
athena.text, as the lexicons hold them.
"""

from __future__ import annotations

from collections.abc import Iterable

from athena.text import terms, tokens

__all__ = ["FACT_KINDS", "expansion_terms"]

_ABOUT_THE_USER = frozenset("i i'm im i've me my mine myself".split())
"""First-person words of a question a user asks about themselves ("Who is my spouse?", "Am I
married?")."""

FACT_KINDS: dict[str, tuple[str, str]] = {
    "family": (
        "spouse married partner family kids children child relatives siblings parents",
        "wife husband partner married fiancé fiancée boyfriend girlfriend son daughter sons daughters kids "
        "children mom mum mother dad father brother sister parents",
    ),
    "pets": ("pet pets animal animals", "dog dogs cat cats puppy kitten"),
    "health": (
        "health medical condition conditions illness allergies medication medications medicine",
        "allergic allergy diabetic diabetes asthma insulin adhd migraines celiac epilepsy arthritis pregnant "
        "medication deaf blind",
    ),
    "diet": (
        "diet dietary food foods eat meal meals",
        "vegetarian vegan pescatarian allergic gluten lactose dairy kosher halal intolerant",
    ),
    "home": ("live living based city town home address", "live moved home apartment house"),
    "work": ("job work career profession occupation employer living", "work job employer company office"),
}
"""Kind: (the words a question asks for it with, the words a fact of it is told with)."""

_ASKED: dict[str, frozenset[str]] = {kind: frozenset(terms(asked)) for kind, (asked, _) in FACT_KINDS.items()}
_TOLD: dict[str, list[str]] = {kind: list(dict.fromkeys(terms(told))) for kind, (_, told) in FACT_KINDS.items()}


def expansion_terms(query: str, query_terms: Iterable[str]) -> list[str]:
    """The telling words of every kind the query's terms ask for, minus the query's own terms, when the
    query is in the first person; else none."""
    if _ABOUT_THE_USER.isdisjoint(tokens(query)):
        return []
    held = set(query_terms)
    out: dict[str, None] = {}
    for kind, words in _ASKED.items():
        if held & words:
            out.update(dict.fromkeys(t for t in _TOLD[kind] if t not in held))
    return list(out)
