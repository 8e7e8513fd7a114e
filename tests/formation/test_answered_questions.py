"""A user's answer to the assistant's question about them is a fact: "What's your dog's name?" "Rex."

An answer alone ("Rex.", "Lisbon.", "Shellfish.") says nothing the personal-fact signal reads, and a
question with its answer scored far below the gate's minimum: the fact was rejected and lost. With
the question it passes the gate, is the user's profile as the question and the answer, and is found
by the user's question about it. The gate's tests run the heuristic analysis, as without an LLM; the
end-to-end test runs ingest and formation in this process against the session's servers.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.in_process_stack import InProcessStack
from test_user_profile import _form_the_window, _store, _texts

from athena.embeddings import LocalEmbedder
from athena_client import AsyncAthenaClient
from athena_client.memory.v1 import memory_pb2 as pb
from athena_formation.forming.analysis import analyze
from athena_formation.forming.profile_facts import profile_facts
from athena_formation.forming.quality_gate import QualityReport, assess_quality

U, A = pb.ROLE_USER, pb.ROLE_AGENT
ANSWERED = {
    "dog": ("What's your dog's name?", "Rex."),
    "home": ("Where are you based?", "Lisbon."),
    "name": ("What should I call you?", "Sam is fine."),
    "allergy": ("Any allergies I should know about?", "Shellfish."),  # no "you": it names no one else
    "birthday": ("When is your birthday?", "March 3rd."),
    "diet": ("Do you have any dietary restrictions?", "Vegetarian, and no nuts please."),
    # Other languages: the person in the verb or not said at all, the kind in words of their own.
    "name-es": ("¿Cómo te llamas?", "Priya."),
    "name-ja": ("お名前は？", "プリヤです。"),
    "children-zh": ("你有孩子吗？", "有，两个女儿。"),
    "work-pt": ("Qual é a sua profissão?", "Enfermeira."),
    "work-de": ("Was machst du beruflich?", "Lehrerin, an einer Grundschule."),
    "home-fr": ("Où habitez-vous ?", "À Lyon, près du parc."),
    "home-ru": ("Где вы живёте?", "В Казани."),
    # Tastes, origin and pastimes, asked with phrases whose words alone ask nothing.
    "cuisine": ("What kind of food do you like most?", "Thai food, definitely."),
    "origin": ("Where did you grow up?", "A small town near Lyon."),
    "pastime": ("What do you do for fun?", "Rock climbing, mostly."),
    # What the user has or uses, and how they take a drink: "what ... do you have", "how do you take your".
    "phone": ("What phone do you have?", "A Pixel 8."),
    "car": ("What kind of car do you drive?", "An old Volvo estate."),
    "coffee": ("How do you take your coffee?", "Black, no sugar."),
    "music": ("What kind of music do you listen to?", "Mostly indie rock."),
    "siblings": ("Do you have any siblings?", "Two older brothers."),
    "siblings-es": ("¿Tienes hermanos?", "Sí, dos hermanas."),
    # Habits of the day, asked by when or how often: "what time do you usually get up".
    "wake-up": ("What time do you usually get up?", "Usually around 6am."),
    "exercise": ("How often do you exercise?", "Three times a week."),
}
SMALL_TALK = {
    "how-are-you": ("How are you today?", "Good, thanks."),
    "anything-else": ("Anything else I can help with?", "No, that's all."),
    "did-it-help": ("Did that answer your question?", "Yes, thanks!"),
    "someone-else": ("What's Melanie's dog's name?", "Bella."),
    "question-back": ("Where are you based?", "Why do you ask?"),
    "offer": ("Would you like to know about retirement benefits for your age?", "Yes, please explain them."),
    "offer-inside": ("What would you like to know about your benefits?", "The deadlines for filing."),
    "someone-else-zh": ("他叫什么名字？", "小明。"),
    "someone-else-es": ("¿Cómo se llama él?", "Pablo."),
    "someone-elses-phone": ("What phone does Melanie have?", "An iPhone."),
    "service-question": ("What questions do you have about your benefits?", "The deadlines for filing."),
    "appointment-time": ("What time do you want to book?", "Tomorrow morning."),
}


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def _events(question: str, answer: str) -> list[pb.Event]:
    return [
        pb.Event(id="ev-q", role=A, type=pb.EVENT_TYPE_MESSAGE, content=question),
        pb.Event(id="ev-a", role=U, type=pb.EVENT_TYPE_MESSAGE, content=answer),
    ]


async def _gate(events: list[pb.Event], embedder: LocalEmbedder | None) -> QualityReport:
    vectors = np.asarray(await embedder.embed([e.content for e in events])) if embedder is not None else None
    return assess_quality(events, await analyze(events, llm=None), mode="balanced", embeddings=vectors)


@pytest.mark.parametrize("with_embeddings", [True, False], ids=["embeddings", "lexical"])
@pytest.mark.parametrize("name", sorted(ANSWERED))
async def test_an_answer_to_the_assistants_question_about_the_user_passes_the_gate(
    name: str, with_embeddings: bool, embedder: LocalEmbedder
) -> None:
    report = await _gate(_events(*ANSWERED[name]), embedder if with_embeddings else None)
    assert report.passed and report.personal_fact, report


@pytest.mark.parametrize("with_embeddings", [True, False], ids=["embeddings", "lexical"])
@pytest.mark.parametrize("name", sorted(SMALL_TALK))
async def test_small_talk_answers_and_questions_about_someone_named_are_not_facts(
    name: str, with_embeddings: bool, embedder: LocalEmbedder
) -> None:
    report = await _gate(_events(*SMALL_TALK[name]), embedder if with_embeddings else None)
    assert not report.personal_fact and not report.passed, report


def test_the_profile_tells_an_answer_with_its_question_and_an_answer_that_states_a_fact_as_itself() -> None:
    [fact] = profile_facts(_events("What's your dog's name?", "Rex."))
    assert fact["text"] == "What's your dog's name? Rex." and fact["event_id"] == "ev-a"

    [own] = profile_facts(_events("What do you do for work?", "I'm a nurse."))
    assert own["text"] == "I'm a nurse."
    assert profile_facts(_events("How are you today?", "Good, thanks.")) == []


async def test_an_answer_told_to_the_assistant_is_found_and_in_the_profile_after_the_conversation_is_formed(
    stack: InProcessStack,
) -> None:
    scope = AsyncAthenaClient.scope("acme", "erin", "onboarding")
    async with stack.client() as client:
        await _store(client, scope, [("agent", "Welcome! What's your dog's name?"), ("user", "Rex.")])
        await _form_the_window(stack, scope, "onboarding")
        hits = await client.search_memory(scope, "What is my dog called?", limit=3)
        page = await client.get_context(scope, query="Plan a walk for this weekend.")

    assert hits and hits[0].chain.summary.endswith("Rex.")
    assert _texts(page) == ["What's your dog's name? Rex."]
