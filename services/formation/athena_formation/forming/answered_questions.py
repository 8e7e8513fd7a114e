"""A user's answer to the assistant's question about them: "What's your dog's name?" "Rex."

Agents ask users about themselves (onboarding, a form, a follow-up) and users answer in a word:
"Lisbon.", "Shellfish.", "March 3rd.", "Sam is fine.". The answer alone says nothing the
personal-fact signal can read (no first person, no cue), and a question with its answer scored far
below the gate's minimum: the fact was rejected and lost. With the question it is a fact of the
user's, and the question says its kind.

An agent message *asks about the user* when its last sentence is a question with a second-person word
("you", "your"; "tu", "vous", "du", "você", "ты", "你", "あなた", ...), or naming no one else ("Any
allergies I should know about?", "¿Tienes hijos?", "お名前は？": most languages say the person by the
verb or not at all), and a word of a kind of personal fact (the signal's cue words, "name",
"allergy", "dog", "birthday", "名前", with the words questions use: "based", "allergies", "dietary",
"call", "llamas", "prénom", "beruflich", "profissão", ...), and is not an offer ("Would you like to
know ...?", "Do you need ...?"). French inversions count by their parts ("habitez-vous"). The user
message right after it *answers* it when it is not a question and has a content word: not "Yes,
thanks!" nor "No, that's all.". Its fact is the question and the answer, as one text ("What's your
dog's name? Rex."), told when the answer was.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from athena.text import pieces, tokens
from athena_formation.forming.personal_facts import is_question, names_fact_kind
from athena_formation.text.messages import AGENT, USER, Message, content_words, split_sentences, strip_markup

__all__ = ["answered_questions", "names_no_one", "with_hyphen_parts"]

_YOU = frozenset(
    """
    you your yours you're yourself u ur
    tu tú te ti tus usted ustedes vous votre vos ton ta tes toi du dich dir dein deine deinen deinem deiner
    você vocês teu tua teus tuas tuo tuoi tue voi vostro vostra jij jou jouw uw dig din ditt dina
    ty cię ciebie tobie twój twoja twoje pan pani sen senin siz sizin kamu anda kau bạn
    ты тебя тебе тобой твой твоя твоё твое твои вы вас вам ваш ваша ваше ваши
    आप आपका आपकी आपके तुम तुम्हारा तुम्हारी أنت انت
    """.split()
)
"""Second-person words of a question to the user (casefolded tokens), of the languages the signal
reads; not "su", "seu", "sua", "Sie" or "je", which are also "his", "her", "she" or "I" elsewhere
(such questions are read as naming no one else)."""
_YOU_CJK = ("你", "您", "あなた", "당신")
"""Second-person words of Chinese, Japanese and Korean, found in the text (its tokens are pairs of characters)."""
_ASKING_CJK = (
    "仕事",
    "工作",
    "职业",
    "ペット",
    "宠物",
    "반려동물",
    "住んで",
    "住在",
    "어디 살",
    "家族",
    "家人",
    "가족",
)
"""_ASKING's words in Chinese, Japanese and Korean, found in the text: work, pets, where one lives, family."""
_OTHERS = frozenset(
    """
    he she they him her his hers them their theirs él ella ellos ellas elle ils elles lui ele ela eles elas
    hij zij hem haar он она они его её ее их
    """.split()
)
"""Third-person words: a question with one asks about someone else ("What's his name?"); not French
"il" or Portuguese "o", which are also articles, nor Indonesian "dia", Portuguese "day"."""
_OTHERS_CJK = ("他", "她", "彼")
"""Third-person words of Chinese and Japanese ("他叫什么名字？"), found in the text."""
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
    hobby hobbies married preferences work sibling siblings
    llamas vives dedicas trabajas profesión mascotas alergias pareja dieta niños hermanos hermanas
    prénom habites habitez travailles travaillez métier animaux régime frères sœurs
    heisst wohnst beruflich beruf arbeitest haustier haustiere allergien ernährung geschwister
    chiami abiti lavori professione animali bambini fratelli sorelle
    chama moras mora trabalhas profissão animais crianças irmãos irmãs
    woon woont beroep huisdieren broers zussen
    живёшь живешь живёте живете работаешь работаете профессия питомцы животные братья сестры
    """.split()
)
"""Words a question about the user asks with that the signal's cues lack ("Where are you based?",
"Any dietary restrictions?", "What should I call you?"; "¿Cómo te llamas?", "Quel est ton prénom ?",
"Was machst du beruflich?", "Qual é a sua profissão?", "Где вы живёте?")."""
_ASKING_PHRASE = re.compile(
    r"(?<!would )(?<!'d )\byou\s+(?:really\s+|most\s+)?(?:like|love|enjoy|prefer)\b"
    r"|\b(?:grow|grew)\s+up\b|\bwere\s+you\s+raised\b|\bfor\s+fun\b|\b(?:free|spare)\s+time\b"
    r"|^\W*(?:what|which)\s+(?!(?:questions?|concerns?|issues?|problems?|else|info|information|options?)\b)"
    r"(?:[a-z]+\s+){1,3}do\s+you\s+(?:have|own|drive|use|drink|eat|play|speak|wear|listen\s+to|read|watch)"
    r"\b"
    r"|^\W*how\s+do\s+you\s+(?:take|like|have|drink)\s+your\b"
    r"|^\W*(?:what\s+time|when|how\s+often)\s+do\s+you\s+(?:usually\s+|normally\s+|typically\s+)?"
    r"(?:get\s+up|wake\s+up|go\s+to\s+(?:bed|sleep|work)|start\s+work|finish\s+work|eat|exercise|work\s+out)\b",
    re.IGNORECASE,
)
"""Phrases a question about the user's tastes, origin, pastimes, belongings or day asks with ("What
kind of food do you like most?", "Where did you grow up?", "What do you do for fun?", "What phone do
you have?", "What kind of music do you listen to?", "How do you take your coffee?", "What time do you
usually get up?"), whose words alone ask nothing: not "would you like", an offer, nor "What
questions do you have?" or "What time do you want to book?", service questions ("born" is a cue of
its own: names_fact_kind)."""


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
    found = with_hyphen_parts(tokens(question))
    asks = (
        not _ASKING.isdisjoint(found)
        or any(word in question for word in _ASKING_CJK)
        or bool(_ASKING_PHRASE.search(question))
    )
    if _OFFER.match(question) or not (names_fact_kind(found, question) or asks):
        return None
    you = not _YOU.isdisjoint(found) or any(word in question for word in _YOU_CJK)
    return question if you or names_no_one(question, found) else None


def with_hyphen_parts(found: list[str]) -> list[str]:
    """The tokens and the parts of the hyphenated ones: a French inversion's pronoun ("habite-t-elle")
    and its verb are words of their own."""
    return found + [part for t in found if "-" in t for part in t.split("-") if part]


def names_no_one(question: str, found: list[str]) -> bool:
    """No third person and no capitalised name after the first word ("Any allergies I should know
    about?"; "¿Tienes hijos?": the opening mark is not a word): in a talk with one user, a question
    that names no one else is about them."""
    words = [w for w in pieces(question) if any(ch.isalpha() for ch in w)]
    others = not _OTHERS.isdisjoint(found) or any(word in question for word in _OTHERS_CJK)
    return not others and not any(w[:1].isupper() for w in words[1:] if w != "I")


def _answers(text: str) -> bool:
    sentences = split_sentences(strip_markup(text))
    return bool(sentences) and not any(is_question(s) for s in sentences) and bool(content_words(text))
