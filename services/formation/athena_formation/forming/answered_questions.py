"""A user's answer to the assistant's question about them: "What's your dog's name?" "Rex."

Agents ask users about themselves (onboarding, a form, a follow-up) and users answer in a word:
"Lisbon.", "Shellfish.", "March 3rd.", "Sam is fine.". The answer alone says nothing the
personal-fact signal can read (no first person, no cue), and a question with its answer scored far
below the gate's minimum: the fact was rejected and lost. With the question it is a fact of the
user's, and the question says its kind.

An agent message *asks about the user* when its last sentence is a question with a second-person word
("you", "your"; "tu", "vous", "du", "você", ...), or naming no one else ("Any allergies I should
know about?"), and a word of a kind of personal fact (the signal's cue words, "name", "allergy",
"dog", "birthday", with the words questions use: "based", "allergies", "dietary", "call", ...), and
is not an offer ("Would you like to know ...?", "Do you need ...?"). The user message right after
it *answers* it when it is not a question and has a content word: not "Yes, thanks!" nor "No, that's
all.". Its fact is the question and the answer, as one text ("What's your dog's name? Rex."), told
when the answer was.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from athena.text import pieces, tokens
from athena_formation.forming.personal_facts import is_question, names_fact_kind
from athena_formation.text.messages import AGENT, USER, Message, content_words, split_sentences, strip_markup

__all__ = ["answered_questions"]

_YOU = frozenset(
    "you your yours you're yourself u ur tu tú vous votre vos ton ta tes du dein deine você teu tua tuo".split()
)
"""Second-person words of a question to the user (casefolded tokens)."""
_OTHERS = frozenset("he she they him her his hers them their theirs".split())
_OFFER = re.compile(
    r"^\W*(?:would\s+you\s+like|do\s+you\s+(?:want|need|wish)|are\s+you\s+(?:looking|interested|asking)"
    r"|did\s+you\s+know|can\s+i|may\s+i|shall\s+i|should\s+i|is\s+there\s+anything)\b",
    re.IGNORECASE,
)
"""An offer or a service question, not one about the user ("Would you like to know about retirement
benefits according to your age?", "Do you need to find out more about your estimated benefit?")."""
_ASKING = frozenset(
    """
    based dietary restrictions intolerances call nickname pronouns age hometown occupation profession
    hobby hobbies married preferences work
    """.split()
)
"""Words a question about the user asks with that the signal's cues lack ("Where are you based?",
"Any dietary restrictions?", "What should I call you?")."""


def answered_questions(dialogue: Sequence[Message]) -> dict[int, str]:
    """Per user message (by its event's index) that answers the agent's question about the user just
    before it, the fact: the question and the answer (module docstring)."""
    out: dict[int, str] = {}
    for asked, answer in itertools.pairwise(dialogue):
        if asked.role != AGENT or answer.role != USER:
            continue
        question = _question_about_the_user(asked.text)
        if question is not None and _answers(answer.text):
            out[answer.index] = f"{question} {' '.join(answer.text.split())}"
    return out


def _question_about_the_user(text: str) -> str | None:
    sentences = split_sentences(strip_markup(text))
    if not sentences or not is_question(sentences[-1]):
        return None
    question = sentences[-1]
    found = tokens(question)
    if _OFFER.match(question) or not (names_fact_kind(found) or not _ASKING.isdisjoint(found)):
        return None
    return question if not _YOU.isdisjoint(found) or _names_no_one(question, found) else None


def _names_no_one(question: str, found: list[str]) -> bool:
    """No third person and no capitalised name after the first word ("Any allergies I should know
    about?"): in a talk with one user, a question that names no one else is about them."""
    return _OTHERS.isdisjoint(found) and not any(w[:1].isupper() for w in pieces(question)[1:] if w != "I")


def _answers(text: str) -> bool:
    sentences = split_sentences(strip_markup(text))
    return bool(sentences) and not any(is_question(s) for s in sentences) and bool(content_words(text))
