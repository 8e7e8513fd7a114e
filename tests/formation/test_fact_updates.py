"""A lasting fact that says it replaces an earlier one (forming/fact_updates.py): what puts a later
correction before the fact it corrects in search, and what leaves two facts that both hold alone."""

from __future__ import annotations

import pytest

from athena_formation.forming.fact_updates import states_updated_fact

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
    "Ya no como carne.",
    "我现在住在上海。",
]
BOTH_HOLD = [
    "I live in Leeds.",
    "I'm allergic to penicillin.",
    "I'm left-handed.",
    "I'm vegan.",
    "I can't eat dairy.",
    "My wife is called Priya.",
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
