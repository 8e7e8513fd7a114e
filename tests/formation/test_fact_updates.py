"""A lasting fact that says it replaces an earlier one (forming/fact_updates.py): what puts a later
correction before the fact it corrects in search, and what leaves two facts that both hold alone."""

from __future__ import annotations

import pytest

from athena_formation.forming.fact_updates import states_updated_fact
from athena_formation.forming.personal_facts import states_lasting_fact

SAYS_IT_CHANGED = [
    "I live in Denver now.",
    "I moved to Oslo in June.",
    "Actually, correction: I moved last month, I now live in Munich, not Berlin.",
    "I left Google, I'm at Stripe now.",
    "I'm no longer vegetarian.",
    "I don't eat meat anymore.",
    "I no longer drink coffee, only tea now.",
    "I switched to an iPhone.",
    "Ich wohne jetzt in Hamburg.",
    "Vivo en Sevilla ahora.",
    "Ahora vivo en Barcelona.",
    "Ya no trabajo en Google.",
    "Ora abito a Roma.",
    "Ya no como carne.",
    "我现在住在上海。",
    "En fait, je suis devenu végétalien.",
    "Na verdade, moro no Porto.",
    "Actually, my phone number changed, it's now 555-9876.",
    "I've gone fully vegan since last week.",
    "I've become a vegetarian.",
    "Ich bin seit letztem Monat Veganerin.",
    "Soy vegano desde el mes pasado.",
    "Je suis végane depuis la semaine dernière.",
]
BOTH_HOLD = [
    "I live in Leeds.",
    "I'm allergic to penicillin.",
    "I'm left-handed.",
    "I'm vegan.",
    "I can't eat dairy.",
    "My wife is called Priya.",
    "I've lived in Leeds since 2010.",
]
NOT_A_LASTING_FACT = [
    "I'll call you now.",
    "Can you open a new ticket?",
    "Now the printer works.",
]


@pytest.mark.parametrize("text", SAYS_IT_CHANGED)
def test_a_lasting_fact_with_a_word_of_change_says_it_replaces_an_earlier_one(text: str) -> None:
    assert states_updated_fact([text])


@pytest.mark.parametrize("text", BOTH_HOLD)
def test_a_lasting_fact_without_one_does_not(text: str) -> None:
    assert not states_updated_fact([text])


@pytest.mark.parametrize("text", NOT_A_LASTING_FACT)
def test_a_word_of_change_outside_a_lasting_fact_does_not(text: str) -> None:
    assert not states_updated_fact([text])


def test_one_message_of_several_that_says_so_is_enough() -> None:
    assert states_updated_fact(["Thanks for the help.", "By the way, I now work at Stripe."])


CORRECTIONS = [
    ("I live in Berlin, near Tempelhof.", "I moved last month, I now live in Munich."),
    ("I work at Google.", "I left Google, I'm at Stripe now."),
    ("I work at Google as a designer.", "I now work at Stripe."),
    ("I'm vegetarian.", "I'm vegan now."),
    ("I'm vegetarian.", "I've gone fully vegan since last week."),
    ("My favourite colour is blue.", "My favourite colour is green now."),
    ("My son is 7.", "My son just turned 8, he's 8 now."),
    ("I drive a Honda Civic.", "I switched to a Tesla, I drive a Model 3 now."),
    ("I'm a nurse.", "I'm a midwife now."),
    ("I live in Leeds.", "We moved to Manchester, I live there now."),
    ("I'm single.", "I'm engaged now."),
    ("I work from the office.", "I work from home now."),
    ("I'm allergic to cats.", "Actually, I'm allergic to dogs, not cats."),
    ("I drink coffee every morning.", "I no longer drink coffee, only tea now."),
    ("Ich wohne in Köln.", "Ich wohne jetzt in Hamburg."),
    ("I'm 43 years old.", "Sorry, I meant I'm 34, not 43."),
]
"""Written pairs of a lasting fact and its later correction (docs/formation.md, "A correction before
what it corrects")."""


@pytest.mark.parametrize(("before", "after"), CORRECTIONS)
def test_a_correction_of_a_lasting_fact_is_a_lasting_fact_that_says_it_changed(before: str, after: str) -> None:
    assert states_lasting_fact(before) and not states_updated_fact([before])
    assert states_lasting_fact(after) and states_updated_fact([after])
