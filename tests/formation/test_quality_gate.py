"""The quality gate (mtm_quality_validator): which segments become chains.

Calibrated on a labelled set of small realistic segments (below: which must pass in balanced mode and
which must be rejected in every mode), checked on public conversations from /work/shared/data (help-desk
dialogues and LoCoMo chit-chat), and pinned down mode by mode. Analyses come from the heuristic path, as
they would without an LLM.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from athena.config import QualityMode
from athena_client.memory.v1 import memory_pb2 as pb
from athena_formation.forming.analysis import Analysis, Topic, analyze
from athena_formation.forming.quality_gate import MODES, QualityReport, assess_quality

U, A = pb.ROLE_USER, pb.ROLE_AGENT
THOUGHT, ACTION, OBSERVATION = pb.EVENT_TYPE_THOUGHT, pb.EVENT_TYPE_ACTION, pb.EVENT_TYPE_OBSERVATION
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def segment(*turns: tuple) -> list[pb.Event]:
    """Events from (role, text) or (role, text, event type) tuples."""
    return [pb.Event(role=t[0], type=t[2] if len(t) > 2 else pb.EVENT_TYPE_MESSAGE, content=t[1]) for t in turns]


async def gate(events: list[pb.Event], mode: str = "balanced", **kwargs: object) -> QualityReport:
    analysis = await analyze(events, llm=None)
    return assess_quality(events, analysis, mode=mode, **kwargs)  # type: ignore[arg-type]


# --- the labelled set ----------------------------------------------------------------------------

SHOULD_PASS = {
    "docker-oom": segment(
        (U, "My Docker container keeps getting killed with exit code 137. It's a Python 3.11 service."),
        (
            A,
            "Exit code 137 means the OOM killer stopped it: the container ran out of memory. Check docker inspect for OOMKilled=true.",
        ),
        (U, "Yes, OOMKilled is true and the limit is 2 GB. How do I raise the memory limit?"),
        (
            A,
            "Run it with a higher limit, for example docker run --memory=4g, or set mem_limit: 4g in docker-compose.yml.",
        ),
        (U, "Raised it to 4 GB and it works now, thanks!"),
    ),
    "lisbon-trip": segment(
        (U, "I'm planning a 5-day trip to Lisbon in May with my wife. What neighborhoods should we stay in?"),
        (
            A,
            "For a first visit, Baixa and Chiado are central and walkable, and Alfama is charming and quieter with fado bars.",
        ),
        (U, "Is Sintra worth a day trip, and how do we get there?"),
        (
            A,
            "Sintra is worth it: take the train from Rossio station, about 40 minutes and €2.30 each way, and go early on a weekday.",
        ),
    ),
    "risotto": segment(
        (U, "How do I make a creamy mushroom risotto without it getting gluey?"),
        (
            A,
            "Toast Arborio rice in butter for 2 minutes, add hot stock one ladle at a time and stir often; it takes about 18 minutes.",
        ),
        (U, "Should I rinse the rice first?"),
        (
            A,
            "No, the surface starch is what makes risotto creamy. Gluey risotto comes from overcooking, so stop when the rice is al dente.",
        ),
    ),
    "password-reset": segment(
        (U, "How do I reset my password on the billing portal?"),
        (
            A,
            "Go to billing.example.com, click 'Forgot password' and enter your account email. The reset link is valid for 30 minutes.",
        ),
    ),
    "roth-ira": segment(
        (U, "What's the difference between a Roth IRA and a traditional IRA?"),
        (
            A,
            "With a traditional IRA you contribute pre-tax money and pay income tax on withdrawals; with a Roth IRA you contribute after-tax money and qualified withdrawals are tax-free.",
        ),
        (U, "Which one makes more sense if I expect a higher income later?"),
        (
            A,
            "If you expect a higher tax bracket in retirement, the Roth IRA usually wins, because you pay the tax now at the lower rate.",
        ),
    ),
    "half-marathon": segment(
        (
            U,
            "I started training for a half marathon in October. Any tips for building up mileage without getting injured?",
        ),
        (
            A,
            "Increase your weekly mileage by no more than about 10%, keep most runs at an easy pace, and rest the day after your long run.",
        ),
        (U, "Good to know, I've been running 25 km a week so far."),
    ),
    "sql-request": segment(
        (U, "Please write a SQL query that counts orders per customer in 2023."),
        (
            A,
            "SELECT customer_id, COUNT(*) AS orders FROM orders WHERE order_date >= '2023-01-01' AND order_date < '2024-01-01' GROUP BY customer_id;",
        ),
    ),
    "backup-agent": segment(
        (U, "Can you find out why the nightly backup job failed on db-prod-2?"),
        (A, "Check the job logs first.", THOUGHT),
        (A, "run_command('journalctl -u pg-backup --since yesterday')", ACTION),
        (A, "pg_dump: error: could not write to output file: No space left on device", OBSERVATION),
        (
            A,
            "The nightly backup failed because /var/backups on db-prod-2 ran out of disk space; old dumps take 180 GB.",
        ),
        (U, "Please delete the dumps older than 14 days and rerun the backup."),
        (A, "Done: I removed 23 old dumps (freed 171 GB) and the backup finished successfully."),
    ),
}

SHOULD_REJECT = {
    "hi": segment((U, "hi"), (A, "Hello! How can I help you today?")),
    "thanks": segment((U, "thanks!"), (A, "You're welcome!")),
    "ok-cool": segment((U, "ok cool")),
    "lol": segment((U, "lol"), (A, "😄")),
    "how-are-you": segment(
        (U, "Hey, how are you?"), (A, "I'm doing well, thanks for asking! How about you?"), (U, "Good good, thanks")
    ),
    "keyboard-noise": segment((U, "asdf jkl;"), (A, "Sorry, I didn't understand that. Could you rephrase?")),
    "goodbye": segment((U, "ok"), (A, "Great, let me know if you need anything else."), (U, "will do, bye")),
    "unanswered": segment((U, "Can you check the status of my order 1234?")),
    "pleasantries": segment(
        (U, "Thanks, Maria! Your support means a lot."),
        (A, "No problem, John! Keep it up!"),
        (U, "Will do. Talk to you soon!"),
    ),
}


@pytest.mark.parametrize("name", sorted(SHOULD_PASS))
async def test_a_substantive_exchange_passes_in_balanced_mode(name: str) -> None:
    report = await gate(SHOULD_PASS[name])

    assert report.passed, report
    assert report.reason == ""
    assert report.overall >= 0.5 and report.summary_valid and report.user_asked_questions


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", sorted(SHOULD_REJECT))
async def test_small_talk_acknowledgments_and_noise_are_rejected_in_every_mode(name: str, mode: str) -> None:
    report = await gate(SHOULD_REJECT[name], mode=mode)

    assert not report.passed, report
    assert report.reason in {"overall_below_min", "invalid_summary", "no_user_engagement"}


@pytest.fixture(scope="module")
def local_embedder():  # type: ignore[no-untyped-def]
    from athena.embeddings import LocalEmbedder

    return LocalEmbedder()


OFF_TOPIC = segment(
    (U, "How do I change a flat tire on my bike?"),
    (A, "Here is a banana bread recipe: mix flour, sugar and ripe bananas, then bake at 180°C for 50 minutes."),
)


async def test_with_embeddings_the_labelled_set_sorts_the_same_and_an_off_topic_answer_is_caught(
    local_embedder,  # type: ignore[no-untyped-def]
) -> None:
    async def with_embeddings(events: list[pb.Event], mode: str = "balanced") -> QualityReport:
        rows = await local_embedder.embed([e.content for e in events])
        return await gate(events, mode=mode, embeddings=rows)

    for name, events in SHOULD_PASS.items():
        assert (await with_embeddings(events, "fast")).passed, name
        assert (await with_embeddings(events, "balanced")).passed, name
    for name, events in SHOULD_REJECT.items():
        for mode in MODES:
            assert not (await with_embeddings(events, mode)).passed, (name, mode)
    off_topic = await with_embeddings(OFF_TOPIC)
    assert not off_topic.passed and off_topic.reason == "overall_below_min"
    assert off_topic.coherence < 0.3 and off_topic.relevance < 0.4


# --- the metrics ----------------------------------------------------------------------------------


async def test_overall_is_the_weighted_sum_of_coherence_completeness_and_relevance() -> None:
    for events in [*SHOULD_PASS.values(), *SHOULD_REJECT.values()]:
        r = await gate(events)
        assert r.overall == pytest.approx(0.4 * r.coherence + 0.3 * r.completeness + 0.3 * r.relevance, abs=2e-4)
        for value in (r.coherence, r.completeness, r.relevance, r.engagement, r.cognitive_depth, r.overall):
            assert 0.0 <= value <= 1.0


async def test_tool_use_raises_cognitive_depth_and_plain_chat_has_none() -> None:
    with_tools = await gate(SHOULD_PASS["backup-agent"])
    chat = await gate(SHOULD_PASS["roth-ira"])

    assert with_tools.cognitive_depth > 0.6
    assert chat.cognitive_depth == 0.0


any_event = st.builds(
    lambda role, kind, text: pb.Event(role=role, type=kind, content=text),
    st.integers(0, 3),
    st.integers(0, 4),
    st.text(max_size=200) | st.sampled_from(["hi", "How do I fix it?", "Use --force. It works now.", "thanks!", ""]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(any_event, max_size=8))
def test_any_segment_gets_bounded_scores_in_every_mode(events: list[pb.Event]) -> None:
    analysis = asyncio.run(analyze(events, llm=None))
    for mode in MODES:
        r = assess_quality(events, analysis, mode=mode)
        for value in (r.coherence, r.completeness, r.relevance, r.engagement, r.cognitive_depth, r.overall):
            assert 0.0 <= value <= 1.0
        assert r.passed == (r.reason == "")


async def test_a_longer_back_and_forth_engages_more_than_one_question() -> None:
    long = await gate(SHOULD_PASS["roth-ira"])
    short = await gate(SHOULD_PASS["password-reset"])

    assert long.engagement > short.engagement


async def test_an_unanswered_final_question_lowers_completeness() -> None:
    answered = SHOULD_PASS["roth-ira"]
    cut_short = answered[:3]  # the follow-up question has no answer

    assert (await gate(cut_short)).completeness < (await gate(answered)).completeness


async def test_a_clarifying_question_does_not_count_as_the_answer_but_the_answer_after_it_does() -> None:
    events = segment(
        (U, "How do I apply only for Medicare?"),
        (A, "Are you 65?"),
        (U, "yes"),
        (
            A,
            "You can use our online retirement application to sign up just for Medicare and apply for retirement benefits later.",
        ),
    )
    report = await gate(events)

    assert report.completeness > 0.8
    assert report.passed


async def test_embeddings_must_have_one_row_per_event() -> None:
    events = SHOULD_PASS["password-reset"]
    analysis = await analyze(events, llm=None)

    with pytest.raises(ValueError, match="one per event"):
        assess_quality(events, analysis, embeddings=np.zeros((3, 384), dtype=np.float32))


async def test_non_finite_embeddings_fall_back_to_the_lexical_measures() -> None:
    events = SHOULD_PASS["password-reset"]
    analysis = await analyze(events, llm=None)
    broken = np.full((len(events), 384), np.nan, dtype=np.float32)

    assert assess_quality(events, analysis, embeddings=broken) == assess_quality(events, analysis)


# --- the pass rule --------------------------------------------------------------------------------


async def test_min_score_is_the_overall_threshold() -> None:
    # Risotto, not the Lisbon trip: the trip states a personal fact (a plan, a place, a month, a wife),
    # which fast and balanced mode admit whatever the overall score (test_personal_facts_gate.py).
    events = SHOULD_PASS["risotto"]

    strict = await gate(events, min_score=0.99)
    lenient = await gate(events, min_score=0.0)

    assert not strict.personal_fact
    assert not strict.passed and strict.reason == "overall_below_min"
    assert lenient.passed


@pytest.mark.parametrize(
    "summary",
    ["", "   ", "User: hi Agent: Hello! How can I help you today?", "!!! ??? 1234 5678", "docker " * 300],
    ids=["empty", "blank", "greeting-only", "no-letters", "too-long"],
)
async def test_an_invalid_summary_rejects_an_otherwise_good_segment(summary: str) -> None:
    events = SHOULD_PASS["roth-ira"]
    analysis = await analyze(events, llm=None)
    bad = Analysis(analysis.main_topic, analysis.subtopics, analysis.entities, summary, analysis.path)

    report = assess_quality(events, bad)

    assert not report.passed and report.reason == "invalid_summary"
    assert not report.summary_valid


async def test_an_llm_style_third_person_summary_is_valid() -> None:
    events = SHOULD_PASS["roth-ira"]
    analysis = Analysis(
        Topic("Roth vs traditional IRA", 0.9),
        (),
        (),
        "The user asked how a Roth IRA differs from a traditional IRA; the agent explained the tax timing.",
        "llm",
    )

    assert assess_quality(events, analysis).passed


async def test_phatic_questions_are_not_user_questions() -> None:
    report = await gate(SHOULD_REJECT["how-are-you"])

    assert not report.user_asked_questions and not report.user_engaged


# --- the modes --------------------------------------------------------------------------------------

LIFE_UPDATE = segment(
    (A, "Hey John, how have you been since we last talked?"),
    (
        U,
        "I've been busy: I started volunteering at the animal shelter on weekends and I'm training our new rescue dog, Biscuit.",
    ),
    (A, "That's wonderful! How is Biscuit settling in?"),
    (
        U,
        "Really well. Biscuit already knows sit and stay, and we go to puppy obedience classes every Saturday morning.",
    ),
    (A, "Puppy classes are such a good idea, and volunteering at the shelter must be rewarding."),
)
AGENT_MONOLOGUE = segment(
    (A, "Nightly report: the backup job on db-prod-2 finished in 42 minutes and wrote 38 GB to /var/backups."),
    (A, "Disk usage on /var/backups is at 71%; old dumps are pruned after 14 days."),
)


def test_modes_are_fast_balanced_and_thorough() -> None:
    assert set(MODES) == {"fast", "balanced", "thorough"}
    assert {m.value for m in QualityMode} == set(MODES)


async def test_a_quality_mode_enum_is_accepted_and_an_unknown_mode_refused() -> None:
    events = SHOULD_PASS["roth-ira"]

    assert (await gate(events, mode=QualityMode.THOROUGH)).passed  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown quality mode"):
        await gate(events, mode="paranoid")


async def test_a_life_update_without_questions_passes_balanced_but_not_thorough() -> None:
    balanced = await gate(LIFE_UPDATE, mode="balanced")
    thorough = await gate(LIFE_UPDATE, mode="thorough")

    assert not balanced.user_asked_questions and balanced.user_engaged
    assert balanced.passed
    assert not thorough.passed and thorough.reason == "no_user_engagement"


async def test_an_agent_only_segment_passes_fast_but_not_balanced() -> None:
    fast = await gate(AGENT_MONOLOGUE, mode="fast")
    balanced = await gate(AGENT_MONOLOGUE, mode="balanced")

    assert fast.passed
    assert not balanced.passed and balanced.reason == "no_user_engagement"


async def test_thorough_requires_two_exchanges() -> None:
    one_exchange = SHOULD_PASS["password-reset"]

    assert (await gate(one_exchange, mode="balanced")).passed
    report = await gate(one_exchange, mode="thorough")
    assert not report.passed and report.reason == "too_few_exchanges"
    assert (await gate(SHOULD_PASS["roth-ira"], mode="thorough")).passed


async def test_thorough_has_a_per_metric_floor() -> None:
    # Two exchanges and a question, but the answers ignore it: with no overall minimum at all, the
    # per-metric floor still refuses it.
    events = segment(
        (U, "How do I change a flat tire on my bike?"),
        (A, "Here is a banana bread recipe: mix flour, sugar and ripe bananas, then bake for 50 minutes."),
        (U, "That is not what I asked, my bike tire is still flat."),
        (A, "Banana bread keeps for three days in an airtight tin."),
    )

    balanced = await gate(events, mode="balanced", min_score=0.0)
    thorough = await gate(events, mode="thorough", min_score=0.0)

    assert balanced.passed
    assert not thorough.passed and thorough.reason == "metric_below_floor"
    assert min(thorough.coherence, thorough.completeness, thorough.relevance) < MODES["thorough"].metric_floor


async def test_fast_mode_accepts_a_shorter_summary_than_balanced() -> None:
    events = SHOULD_PASS["password-reset"]
    analysis = await analyze(events, llm=None)
    terse = Analysis(analysis.main_topic, (), (), "Password reset.", "llm")

    assert assess_quality(events, terse, mode="fast").passed
    balanced = assess_quality(events, terse, mode="balanced")
    assert not balanced.passed and balanced.reason == "invalid_summary"


# --- real conversations ---------------------------------------------------------------------------


def superseg_segments(limit_dialogues: int) -> list[list[pb.Event]]:
    path = DATA / "segmentation" / "superseg_validation.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not available")
    segments: list[list[pb.Event]] = []
    with path.open() as f:
        for line_no, line in enumerate(f):
            if line_no >= limit_dialogues:
                break
            current: list[pb.Event] = []
            for turn in json.loads(line)["dialogue"].split("[NEWLINE]"):
                if turn.strip() == "[BOUNDARY]":
                    if current:
                        segments.append(current)
                    current = []
                    continue
                role, _, text = turn.partition(": ")
                current.append(pb.Event(role=U if role == "user" else A, type=pb.EVENT_TYPE_MESSAGE, content=text))
            if current:
                segments.append(current)
    return segments


def locomo_windows(size: int) -> list[list[pb.Event]]:
    windows = []
    files = sorted((DATA / "locomo").glob("*.json"))
    if not files:
        pytest.skip("LoCoMo data not available")
    for path in files:
        conv = json.loads(path.read_text())
        conv = conv.get("conversation", conv)
        n = 1
        while f"session_{n}" in conv:
            turns = conv[f"session_{n}"]
            for i in range(0, len(turns), size):
                chunk = turns[i : i + size]
                if len(chunk) >= 2:
                    windows.append(
                        [
                            pb.Event(
                                role=U if t["speaker"] == conv["speaker_a"] else A,
                                type=pb.EVENT_TYPE_MESSAGE,
                                content=t["text"],
                            )
                            for t in chunk
                        ]
                    )
            n += 1
    return windows


def has_exchange(events: list[pb.Event]) -> bool:
    return any(a.role == U and b.role == A for a, b in itertools.pairwise(events))


async def test_most_help_desk_segments_with_an_exchange_pass_in_balanced_mode() -> None:
    segments = [s for s in superseg_segments(limit_dialogues=300) if has_exchange(s)]
    passed = [(await gate(s)).passed for s in segments]

    rate = sum(passed) / len(passed)
    print(
        f"\nSuperDialseg validation, first 300 dialogues, {len(passed)} segments with an exchange, lexical: {rate:.3f}"
    )
    assert rate >= 0.65


async def test_most_substantive_locomo_exchanges_pass_in_balanced_mode() -> None:
    windows = locomo_windows(size=8)
    random.Random(0).shuffle(windows)
    reports = [await gate(w) for w in windows[:120]]

    rate = sum(r.passed for r in reports) / len(reports)
    print(f"\nLoCoMo 8-turn windows (120 of {len(windows)}), lexical: {rate:.3f}")
    assert rate >= 0.55
    # What fails is mostly pleasantries, not missing questions.
    assert sum(r.reason == "no_user_engagement" for r in reports) < 0.15 * len(reports)
