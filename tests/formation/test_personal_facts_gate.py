"""Facts and preferences pass the quality gate, small talk does not (the personal-fact signal).

A segment in which someone states something specific about themselves or their world is admitted in
fast and balanced mode even as one message without a question; thorough mode keeps the seed's rule.
The labelled set (data/gate_labelled.jsonl, see data/README.md) is re-measured on every run, and the
precision and recall of "admit" must stay above floors a little below the rates measured when the
signal was added (docs/formation.md, "The personal-fact signal").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from athena_client.memory.v1 import memory_pb2 as pb
from athena_formation.forming.analysis import Analysis, analyze
from athena_formation.forming.personal_facts import (
    lasting_fact_sentences,
    personal_fact_sentences,
    states_lasting_fact,
    states_personal_fact,
)
from athena_formation.forming.quality_gate import QualityReport, assess_quality

U, A = pb.ROLE_USER, pb.ROLE_AGENT
LABELLED = Path(__file__).resolve().parent / "data" / "gate_labelled.jsonl"
ROLES = {"user": U, "agent": A}


def segment(*turns: tuple[pb.Role.ValueType, str]) -> list[pb.Event]:
    return [pb.Event(role=role, type=pb.EVENT_TYPE_MESSAGE, content=text) for role, text in turns]


async def gate(events: list[pb.Event], mode: str) -> QualityReport:
    return assess_quality(events, await analyze(events, llm=None), mode=mode)


ISSUE_EXAMPLES = {
    "wife-and-anniversary": "My wife's name is Ana and our anniversary is June 12",
    "bullet-points": "I prefer answers in bullet points",
    "call-me-sam": "Call me Sam, not Samuel",
}
ACKNOWLEDGEMENTS = ["", "Got it!", "Okay, I'll remember that.", "That's lovely!"]


@pytest.mark.parametrize("mode", ["fast", "balanced"])
@pytest.mark.parametrize("ack", ACKNOWLEDGEMENTS, ids=["alone", "got-it", "remember", "lovely"])
@pytest.mark.parametrize("name", sorted(ISSUE_EXAMPLES))
async def test_the_issue_examples_pass_in_fast_and_balanced_mode_alone_or_acknowledged(
    name: str, ack: str, mode: str
) -> None:
    events = segment((U, ISSUE_EXAMPLES[name]), *([(A, ack)] if ack else []))

    report = await gate(events, mode)

    assert report.personal_fact
    assert report.passed, report


SMALL_TALK = {
    "hi": segment((U, "hi"), (A, "Hello! How can I help you today?")),
    "thanks": segment((U, "thanks!"), (A, "You're welcome!")),
    "lol": segment((U, "lol")),
    "how-are-you": segment(
        (U, "How are you?"), (A, "I'm doing well, thanks for asking! How about you?"), (U, "Good, thanks")
    ),
    "goodbye": segment((U, "Sorry, I have to go now. Bye!"), (A, "No problem, talk soon!")),
    "appreciation": segment((U, "I really appreciate it!"), (A, "Anytime!")),
    "happy-for-you": segment((U, "I'm so happy for you!")),
    "love-it": segment((U, "I love it! Thanks!")),
    "named-thanks": segment((U, "Thank you, Maria! You're the best!"), (A, "Anytime, John!")),
    "pleasantries": segment((U, "Thanks, Maria! Your support means a lot."), (A, "No problem, John! Keep it up!")),
    "see-you": segment((U, "See you tomorrow!")),
    "greeting-assistant": segment((U, "hey"), (A, "Hi! I'm Ava, Acme Bank's virtual assistant.")),
}


@pytest.mark.parametrize("mode", ["fast", "balanced", "thorough"])
@pytest.mark.parametrize("name", sorted(SMALL_TALK))
async def test_small_talk_is_rejected_and_states_no_personal_fact(name: str, mode: str) -> None:
    report = await gate(SMALL_TALK[name], mode)

    assert not report.personal_fact
    assert not report.passed, report


async def test_thorough_mode_keeps_the_seed_rule_and_does_not_admit_on_a_fact() -> None:
    report = await gate(segment((U, "I prefer answers in bullet points")), "thorough")

    assert report.personal_fact
    assert not report.passed and report.reason == "overall_below_min"


@pytest.mark.parametrize("summary", ["", "12 / 06 / 2024 !!!"], ids=["empty", "no-letters"])
async def test_a_personal_fact_still_needs_a_well_formed_summary(summary: str) -> None:
    events = segment((U, "My wife's name is Ana and our anniversary is June 12"))
    analysis = await analyze(events, llm=None)
    broken = Analysis(analysis.main_topic, analysis.subtopics, analysis.entities, summary, analysis.path)

    report = assess_quality(events, broken, mode="balanced")

    assert report.personal_fact and not report.passed and report.reason == "invalid_summary"


async def test_a_first_name_summary_is_enough_for_a_personal_fact_but_not_otherwise() -> None:
    # "Call me Sam, not Samuel": the summary's only content words are first names, which the seed's
    # summary rule discounts; the personal fact is admitted on a well-formed summary.
    events = segment((U, "Call me Sam, not Samuel"), (A, "Okay, Sam it is!"))

    report = await gate(events, "balanced")

    assert not report.summary_valid
    assert report.passed


async def test_the_agents_statements_count_only_when_the_user_said_something() -> None:
    news = (A, "Last Friday I finally took my kids to a pottery workshop and we all made our own pots.")
    answered = await gate(segment((U, "Hey, what's new since last week?"), news), "balanced")
    monologue = await gate(segment(news), "balanced")

    assert answered.personal_fact and answered.passed
    assert not monologue.personal_fact and not monologue.passed


@pytest.mark.parametrize(
    "text",
    [
        "Can you check the status of my order 1234?",
        "Thanks, Maria! Your kind words mean a lot.",
        "Hey Gina, I'm doing great!",
        "I'm glad to hear that.",
        "Pushing boundaries is how we grow and find out what we're capable of.",
        "I'm fine, not great.",
        "I'm a bit tired, not gonna lie.",
        "I said thanks!",
        "I'm a big fan!",
        "I'm so tired today.",
        "I'm running late.",
        "I'm off to bake some cakes.",
        "No worries, Mel!",
        "Actually, never mind.",
        "Don't forget to stretch after running.",
        "I'm always here for you, Mel!",
        "I hope to visit it in the future.",
        "I'm sooo tired lol.",
        "Je suis désolée.",
        "Ich bin so müde.",
        "I appreciate your help.",
    ],
    ids=[
        "question",
        "form-of-address",
        "greeting-name",
        "phatic",
        "generic-we",
        "not-phatic",
        "a-bit",
        "said-thanks",
        "a-big-fan",
        "passing-state",
        "activity",
        "off-to",
        "no-worries-name",
        "never-mind",
        "advice",
        "always-here",
        "in-the-future",
        "elongated",
        "state-fr",
        "state-de",
        "thanks-verb",
    ],
)
def test_questions_forms_of_address_and_phatic_statements_are_not_facts(text: str) -> None:
    assert personal_fact_sentences(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "I'm allergic to peanuts.",
        "I like my coffee black, no sugar.",
        "We got married in Lisbon in 2018.",
        "Next week I'm starting a new job at Shopify.",
        "Hey Gina, I had to shut down my bank account.",
        "Me llamo Lucía y soy alérgica a los frutos secos.",
        "J'habite à Lyon avec mon mari.",
        "Mein Sohn heißt Jonas und ist 7 Jahre alt.",
        "我对花生过敏。",
        "私の誕生日は5月3日です。",
        "No, I said tea, not coffee.",
        "I use vim, not emacs.",
        "I'd like window seats instead of aisle seats.",
        "I am an engineer.",
        "Ik woon in Utrecht.",
        "أنا أعمل مدرسًا في القاهرة.",
        "저는 서울에 살고 있어요.",
        "저는 카페인에 민감해서 커피를 못 마셔요.",  # "can't drink"
        "コーヒーは飲めません。",
        "我不能喝牛奶。",
        "My mother-in-law lives with us.",
        "I'm left-handed.",
        "I'm a night owl.",
        "I'm pretty introverted.",
        "Soy zurdo.",
        "我是左撇子。",
        "I can't eat peanuts.",
        "I work night shifts at the hospital.",
        "I go to the gym every morning.",
        "I always take the stairs.",
        "I'm afraid of flying.",
        "No, I meant the blue one.",
        "Correction: it's Anna with two n's.",
        "Actually, the meeting moved to Thursday.",
        "Keep in mind that I'm on a tight budget.",
        "From now on, answer in Spanish.",
        "No como carne.",
        "Je suis médecin.",
        "Ich bin Lehrerin.",
        "I commute by bike.",
        "I'm a recovering perfectionist.",
    ],
    ids=[
        "allergy",
        "liking",
        "date-place",
        "plan",
        "life-event",
        "es",
        "fr",
        "de",
        "zh",
        "ja",
        "correction",
        "choice",
        "instead-of",
        "identity",
        "nl",
        "ar",
        "ko",
        "ko-cannot-drink",
        "ja-cannot-drink",
        "zh-cannot-drink",
        "in-law",
        "trait",
        "trait-with-article",
        "trait-with-degree",
        "trait-es",
        "trait-zh",
        "cannot-eat",
        "works-at",
        "every-morning",
        "always-does",
        "fear",
        "meant",
        "correction-name",
        "correction-date",
        "keep-in-mind",
        "standing-instruction",
        "es-negated-diet",
        "trait-fr",
        "trait-de",
        "does",
        "ing-after-article",
    ],
)
def test_facts_preferences_and_plans_are_recognised_in_several_languages(text: str) -> None:
    assert states_personal_fact(text)


# --- the labelled set ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Labelled:
    label: str
    events: list[pb.Event]
    analysis: Analysis


@pytest.fixture(scope="module")
async def labelled() -> list[Labelled]:
    records = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for r in records:
        events = [pb.Event(role=ROLES[t["role"]], type=pb.EVENT_TYPE_MESSAGE, content=t["text"]) for t in r["turns"]]
        out.append(Labelled(r["label"], events, await analyze(events, llm=None)))
    return out


@pytest.fixture(scope="module")
async def labelled_embeddings(labelled: list[Labelled]) -> list[np.ndarray]:
    from athena.embeddings import LocalEmbedder

    texts = [e.content for item in labelled for e in item.events]
    rows = np.asarray(await LocalEmbedder().embed(texts), dtype=np.float32)
    out, start = [], 0
    for item in labelled:
        out.append(rows[start : start + len(item.events)])
        start += len(item.events)
    return out


def rates(items: list[Labelled], passed: list[bool]) -> tuple[float, float, int]:
    """Precision and recall of "admit", and how many rejected segments were admitted."""
    tp = sum(p and i.label == "admit" for i, p in zip(items, passed))
    fp = sum(p and i.label == "reject" for i, p in zip(items, passed))
    admits = sum(i.label == "admit" for i in items)
    return (tp / (tp + fp) if tp + fp else 1.0), tp / admits, fp


# Floors a little below the rates measured when the signal was added (docs/formation.md).
LEXICAL_FLOORS = {"fast": (0.93, 0.88), "balanced": (0.97, 0.84)}
EMBEDDING_FLOORS = {"fast": (0.89, 0.93), "balanced": (0.97, 0.86)}


def test_the_labelled_set_has_facts_small_talk_and_every_source(labelled: list[Labelled]) -> None:
    records = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]

    assert len(records) >= 200
    assert {r["source"] for r in records} == {"locomo-evidence", "locomo-small-talk", "written"}
    assert {r["label"] for r in records} == {"admit", "reject"}
    assert {r["lang"] for r in records} >= {"en", "es", "fr", "de", "zh", "ja"}


@pytest.mark.parametrize("mode", sorted(LEXICAL_FLOORS))
def test_the_labelled_set_is_sorted_above_the_floors_lexically(labelled: list[Labelled], mode: str) -> None:
    passed = [assess_quality(i.events, i.analysis, mode=mode).passed for i in labelled]

    precision, recall, _ = rates(labelled, passed)
    print(f"\nlabelled set, {mode}, lexical: precision {precision:.3f}, recall {recall:.3f}")
    assert precision >= LEXICAL_FLOORS[mode][0] and recall >= LEXICAL_FLOORS[mode][1]


@pytest.mark.parametrize("mode", sorted(EMBEDDING_FLOORS))
def test_the_labelled_set_is_sorted_above_the_floors_with_embeddings(
    labelled: list[Labelled], labelled_embeddings: list[np.ndarray], mode: str
) -> None:
    passed = [
        assess_quality(i.events, i.analysis, mode=mode, embeddings=e).passed
        for i, e in zip(labelled, labelled_embeddings)
    ]

    precision, recall, _ = rates(labelled, passed)
    print(f"\nlabelled set, {mode}, embeddings: precision {precision:.3f}, recall {recall:.3f}")
    assert precision >= EMBEDDING_FLOORS[mode][0] and recall >= EMBEDDING_FLOORS[mode][1]


def test_thorough_mode_admits_no_small_talk_from_the_labelled_set(labelled: list[Labelled]) -> None:
    passed = [assess_quality(i.events, i.analysis, mode="thorough").passed for i in labelled]

    assert rates(labelled, passed)[2] == 0


# --- statements told in passing ------------------------------------------------------------------------

TOLD_IN_PASSING = LABELLED.with_name("told_in_passing.json")
# Floors a little below the rates measured now (docs/formation.md): every fact of the first five sets
# and 34 of 36 of held_out_5 (30 after the round it was written before, whose misses have been read
# since); no small-talk line but one of held_out_5's ("I grew tired of waiting.", read as what the
# speaker did).
IN_PASSING_FLOORS = {
    "written": 0.95,
    "held_out": 0.95,
    "held_out_2": 0.93,
    "held_out_3": 0.95,
    "held_out_4": 0.95,
    "held_out_5": 0.9,
}
SMALL_TALK_ADMITTED = {"held_out_5": 1}


@pytest.mark.parametrize("part", sorted(IN_PASSING_FLOORS))
def test_short_statements_told_in_passing_are_facts_and_small_talk_is_not(part: str) -> None:
    lines = json.loads(TOLD_IN_PASSING.read_text(encoding="utf-8"))[part]
    recall = sum(states_personal_fact(t) for t in lines["facts"]) / len(lines["facts"])
    admitted = [t for t in lines["small_talk"] if states_personal_fact(t)]
    print(f"\ntold in passing, {part}: {recall:.3f} of {len(lines['facts'])} facts, small talk admitted {admitted}")
    assert recall >= IN_PASSING_FLOORS[part]
    assert len(admitted) <= SMALL_TALK_ADMITTED.get(part, 0), admitted


# --- lasting facts (kept by the archiver) --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I'm allergic to peanuts.",
        "Call me Sam, not Samuel.",
        "My wife's name is Ana.",
        "I prefer answers in bullet points.",
        "I'm left-handed.",
        "I work night shifts at the hospital.",
        "I go to the gym every morning.",
        "Correction: it's Anna with two n's.",
        "From now on, answer in Spanish.",
        "Me llamo Lucía.",
        "我对花生过敏。",
        "我不吃猪肉。",
        "Always reply in German.",
        "Please stop using emojis.",
        "Use Celsius, not Fahrenheit.",
        "I have ADHD.",
        "Trabajo desde casa.",
        "I run every Sunday.",
        "I now work at Stripe.",
        "I left Google, I'm at Stripe now.",
        "I snore.",
        "I have a bad knee.",
        "I'm into rock climbing.",
        "I'm on blood thinners.",
        "Odio il coriandolo.",
        "Adoro el café solo.",
        "I no longer drink coffee.",
        "I stopped eating meat.",
        "I switched to an iPhone.",
        "I teach maths at a secondary school.",
        "We've got two rabbits.",
        "I've got three grandchildren.",
        "I have high blood pressure.",
        "Ich habe zwei Töchter.",
        "Tengo dos gatos, Nube y Sol.",
        "I'm on a tight budget.",
        "I bike everywhere.",
        "У меня две кошки.",
        "Я медсестра.",
        "Не ем мясо.",
        "猫を二匹飼っています。",
        "東京に住んでいます。",
        "私は看護師です。",
        "我养了两只猫。",
        "강아지를 키워요.",
        "I run a small bakery.",
        "I grew up on a farm.",
        "I cycle to work.",
        "I mostly eat plant-based.",
        "I'm hard of hearing in my right ear.",
        "Use metric units, please.",
        "私は左利きです。",
        "Я левша.",
        "毎朝ジョギングをしています。",
        "我每天早上跑步。",
        "매일 아침 커피를 마셔요.",
        "Я каждый вечер читаю перед сном.",
        "Je fais du vélo chaque matin.",
        "Ich jogge jeden Abend im Park.",
        "My phone number is 555-1234.",
        "My email address is sam@example.com.",
        "I can't have caffeine after noon.",
        "I avoid dairy.",
        "I don't drink alcohol.",
        "I'm writing a novel.",
        "I'm working on my PhD thesis.",
        "Min dotter heter Elsa.",
        "Nado todas las mañanas.",
        "Juego al fútbol todos los domingos.",
        "Nuoto ogni mattina.",
        "Corro todas as manhãs.",
        "I go to the gym at Fitness First three times a week.",
        "I see my therapist every other week.",
        "I only drink green tea now.",
        "Je ne bois plus de café.",
        "Ich trinke keinen Kaffee mehr.",
        "Ya no tomo café, ahora solo bebo té verde.",
        "Sofia and I broke up, I'm seeing Marta now.",
        "I'm dating Alex.",
        "I broke up with Tom last month.",
        "We got divorced last year.",
        "I sold my bike, I take the bus to work now.",
        "I'm eating meat again since last month.",
        "I grew up in a small town near Lyon.",
        "I was raised in Ohio by my grandmother.",
        "I'm originally from Porto.",
        "I've been doing keto since January.",
        "We have a toddler and a newborn at home.",
        "I'm applying for a data analyst role after six years as a bookkeeper.",
        "I've been a nurse for twelve years.",
        "Sorry, I meant I'm 34, not 43.",
    ],
)
def test_who_the_user_is_what_they_prefer_and_what_they_correct_are_lasting_facts(text: str) -> None:
    assert states_lasting_fact(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm planning a trip to Kyoto in April.",
        "My Python script crashes with KeyError: 'user_id' when parsing the webhook payload.",
        "I had to shut down my bank account.",
        "I went to a support group yesterday and it was so powerful.",
        "I would like more information about driver licenses.",
        "I ran my first half marathon today, finished in one hour fifty-eight!",
        "I bought a new home.",
        "I left Anna a message about the meeting on Friday.",
        "What am I allergic to?",
        "I'm training for a marathon.",
        "I'm saving up for a house.",
        "I'm learning to play the cello.",
        "I only have 20 minutes.",
        "I'm seeing an error on the checkout page.",
        "I'm seeing Dr Patel on Tuesday.",
        "I'm drinking coffee again today.",
        "I've been to Rome twice.",
    ],
)
def test_plans_events_and_situations_are_facts_of_a_moment_not_lasting(text: str) -> None:
    assert states_personal_fact(text) or text.endswith("?")
    assert not states_lasting_fact(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm into it.",
        "I'm into you.",
        "El odio es malo.",
        "I'm so into this song!",
        "It no longer works.",
        "I stopped by the store.",
        "Teach me Python.",
        "I teach you how to do it.",
        "I'm under a lot of pressure at work.",
        "I have high hopes for this project.",
        "I looked everywhere for my keys.",
        "The budget is tight this year.",
        "私は大丈夫です。",
        "田中さんは猫を飼っています。",
        "那只狗很可爱。",
        "My order number is 1234.",
        "My address was wrong on the form.",
        "I avoid that.",
        "I can't have it.",
        "I'm writing an email.",
        "I'm trying to fix the printer.",
        "It is a 10 min walk.",
        "Cerrado los domingos.",
        "Abierto todos los días.",
        "Centro abierto todos los días.",
        "Esto pasa todos los días.",
        "No tomo nota de eso.",
        "The cable and I broke up.",
        "It took me two years as a result.",
        "I waited two months as the form said.",
        "I grew up in a small way.",
    ],
)
def test_into_with_no_content_word_hatred_as_a_noun_and_changes_of_things_are_not_lasting_facts(text: str) -> None:
    assert not states_lasting_fact(text)


@pytest.mark.parametrize(
    "text",
    [
        "毎日本当に暑いですね。",
        "毎日本当に暑いです。",
        "매일 비가 와요.",
        "매주 회의가 있어요.",
        "我每天都很忙。",
        "毎晩ありがとうございます。",
        "Ich danke Ihnen jeden Tag.",
        "Я каждый день благодарю вас.",
        "Каждый день приходят письма.",
    ],
)
def test_weather_states_and_thanks_with_a_frequency_are_not_habits(text: str) -> None:
    assert not states_personal_fact(text)


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("I'm allergic to bee stings, what should be in my first-aid kit?", ["I'm allergic to bee stings"]),
        (
            "My daughter Zoe just started piano lessons, which pieces suit a beginner?",
            ["My daughter Zoe just started piano lessons"],
        ),
        ("Soy celíaco, ¿qué puedo comer?", ["Soy celíaco"]),
        ("Help me plan an easy walk, I had surgery on my left knee in May.", ["I had surgery on my left knee in May."]),
        ("What should I feed my cat Pepper?", ["my cat Pepper"]),
        ("Can you help me plan a party for our son Leo?", ["our son Leo"]),
        ("what snacks should i bring on the hike im allergic to nuts", ["im allergic to nuts"]),
        ("moving to austin next month, any tips on neighborhoods?", ["moving to austin next month"]),
    ],
    ids=[
        "clause-before-a-question",
        "event-before-a-question",
        "spanish",
        "after-a-request",
        "named-pet",
        "named-son",
        "chat-without-commas",
        "chat-without-i",
    ],
)
def test_a_fact_told_inside_a_request_is_the_clause_that_tells_it(text: str, told: list[str]) -> None:
    assert personal_fact_sentences(text) == told


@pytest.mark.parametrize(
    ("text", "told"),
    [
        (
            "Can you suggest a gift for my daughter? She turns 10 next week and loves horses.",
            ["Can you suggest a gift for my daughter? She turns 10 next week and loves horses."],
        ),
        ("My daughter is Mia. She is allergic to nuts.", ["My daughter is Mia. She is allergic to nuts."]),
        ("I talked to the manager. She was nice.", []),
        ("She turns 10 next week.", []),
    ],
)
def test_a_sentence_about_someone_the_sentence_before_names_as_the_users_is_told_with_it(
    text: str, told: list[str]
) -> None:
    assert lasting_fact_sentences(text) == told


@pytest.mark.parametrize(
    "text",
    [
        "If I'm vegan, can I eat honey?",
        "Sorry, what did you say?",
        "Is my dog OK?",
        "My card was stolen, what should I do?",
        "I see, but how does that work?",
        "can you check if im eligible for a refund",
        "Leaving now, bye!",
    ],
    ids=["supposing", "apology", "no-name", "few-content-words", "no-specific", "if-im", "leaving-now"],
)
def test_a_question_that_supposes_or_names_no_one_of_the_users_tells_no_fact(text: str) -> None:
    assert personal_fact_sentences(text) == []


@pytest.mark.parametrize("mode", ["fast", "balanced"])
async def test_a_request_that_tells_a_fact_and_is_only_acknowledged_is_admitted(mode: str) -> None:
    events = segment((U, "I'm allergic to bee stings, what should be in my hiking first-aid kit?"), (A, "Noted."))

    assert (await gate(events, mode)).passed
