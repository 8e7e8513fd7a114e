"""Topic and entity analysis of a segment: the heuristic path (no LLM) on realistic conversations, and
the LLM path through the real openai SDK against the fake OpenAI-compatible server, including every
way an answer can be unusable (malformed JSON, wrong types, slow server, server error).

Run with `-s` to see the heuristic's topics and summaries printed by
test_heuristic_examples_read_sensibly.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from support.fake_openai import FakeOpenAI, fake_openai_server

from athena.llm import LLMClient
from athena_client.memory.v1 import memory_pb2 as pb
from athena_formation.forming.analysis import ENTITY_KINDS, SMALL_TALK, Analysis, Entity, Topic, analyze

U, A = pb.ROLE_USER, pb.ROLE_AGENT
THOUGHT, ACTION, OBSERVATION = pb.EVENT_TYPE_THOUGHT, pb.EVENT_TYPE_ACTION, pb.EVENT_TYPE_OBSERVATION


def segment(*turns: tuple) -> list[pb.Event]:
    """Events from (role, text) or (role, text, event type) tuples."""
    return [pb.Event(role=t[0], type=t[2] if len(t) > 2 else pb.EVENT_TYPE_MESSAGE, content=t[1]) for t in turns]


TECH_SUPPORT = segment(
    (
        U,
        "My Docker container keeps getting killed with exit code 137. It's a Python 3.11 service that loads a big pandas dataframe.",
    ),
    (
        A,
        "Exit code 137 means the process was killed by the OOM killer: the container ran out of memory. Check `docker inspect` for OOMKilled=true and look at the memory limit set with --memory.",
    ),
    (U, "Yes, OOMKilled is true and the limit is 2 GB. How do I raise the memory limit for the container?"),
    (
        A,
        "Run it with a higher limit, for example docker run --memory=4g --memory-swap=4g my-service. In docker-compose.yml set mem_limit: 4g under the service. You can also reduce memory use by reading the CSV in chunks with pandas.read_csv(chunksize=100000).",
    ),
    (U, "Raised it to 4 GB and it works now, thanks!"),
)
TRAVEL = segment(
    (U, "I'm planning a 5-day trip to Lisbon in May with my wife. What neighborhoods should we stay in?"),
    (
        A,
        "For a first visit, Baixa and Chiado are central and walkable, Alfama is charming and quieter with fado bars, and Príncipe Real is great for restaurants. Expect around €120-180 per night for a good hotel in May.",
    ),
    (U, "We'd also like to do a day trip. Is Sintra worth it, and how do we get there?"),
    (
        A,
        "Sintra is absolutely worth it: Pena Palace and Quinta da Regaleira are the highlights. Take the train from Rossio station; it takes about 40 minutes and costs €2.30 each way. Go early on a weekday to avoid the crowds.",
    ),
    (U, "Great, we'll book the Chiado hotel and do Sintra on Tuesday."),
)
COOKING = segment(
    (U, "How do I make a creamy mushroom risotto without it getting gluey?"),
    (
        A,
        "Use Arborio or Carnaroli rice and toast it in butter for 2 minutes before adding wine. Add hot stock one ladle at a time and stir often; the whole cooking takes about 18 minutes.",
    ),
    (U, "Should I rinse the rice first?"),
    (
        A,
        "No, don't rinse it: the surface starch is what makes risotto creamy. The gluey texture usually comes from overcooking, so stop when the rice is al dente and finish with parmesan and a knob of cold butter off the heat.",
    ),
    (U, "And which mushrooms work best?"),
    (
        A,
        "A mix works best: cremini for body plus a handful of dried porcini soaked in 250 ml of warm water, and use the soaking liquid in the stock for a deeper flavor.",
    ),
)
SMALL_TALK_SEGMENT = segment(
    (U, "Hey, how are you?"),
    (A, "I'm doing well, thanks for asking! How about you?"),
    (U, "Good good, thanks"),
)
AGENT_AT_WORK = segment(
    (U, "Can you find out why the nightly backup job failed on db-prod-2?"),
    (A, "The user wants the cause of the backup failure; check the job logs first.", THOUGHT),
    (A, "run_command('journalctl -u pg-backup --since yesterday')", ACTION),
    (A, "pg_dump: error: could not write to output file: No space left on device", OBSERVATION),
    (
        A,
        "The nightly backup failed because /var/backups on db-prod-2 ran out of disk space: pg_dump could not write its output file. Old dumps from March are taking 180 GB.",
    ),
    (U, "Please delete the dumps older than 14 days and rerun the backup."),
    (A, "Done: I removed 23 old dumps (freed 171 GB) and the backup finished successfully at 03:12."),
)
LIFE_UPDATE = segment(
    (A, "Hey John, how have you been since we last talked?"),
    (
        U,
        "Thanks, Maria! I've been busy: I started volunteering at the animal shelter on weekends and I'm training our new rescue dog, Biscuit.",
    ),
    (A, "Wow, John, that's wonderful! How is Biscuit settling in?"),
    (
        U,
        "Really well. Biscuit already knows sit and stay, and we go to puppy obedience classes every Saturday morning.",
    ),
)


def names(topics: tuple[Topic, ...]) -> list[str]:
    return [t.name.lower() for t in topics]


def entity_texts(analysis: Analysis) -> dict[str, str]:
    return {e.text: e.kind for e in analysis.entities}


# --- heuristic path ---------------------------------------------------------------------------------


async def test_without_an_llm_the_heuristic_decides_and_says_so() -> None:
    analysis = await analyze(TECH_SUPPORT, llm=None)

    assert analysis.path == "heuristic"
    assert analysis.main_topic.name and 0.0 <= analysis.main_topic.confidence <= 1.0
    assert analysis.summary


async def test_tech_support_topic_is_the_docker_container_and_the_summary_opens_with_the_problem() -> None:
    analysis = await analyze(TECH_SUPPORT, llm=None)

    assert "docker" in analysis.main_topic.name.lower()
    assert analysis.summary.startswith("User: My Docker container keeps getting killed with exit code 137.")
    assert "Agent: " in analysis.summary
    assert "OOM killer" in analysis.summary  # the answer, not an aside


async def test_travel_planning_topic_names_the_destination() -> None:
    analysis = await analyze(TRAVEL, llm=None)

    assert analysis.main_topic.name == "trip to Lisbon"
    assert "sintra" in names(analysis.subtopics)
    assert analysis.summary.startswith("User: I'm planning a 5-day trip to Lisbon in May")


async def test_cooking_topic_is_the_dish_and_the_summary_has_the_method() -> None:
    analysis = await analyze(COOKING, llm=None)

    assert analysis.main_topic.name == "creamy mushroom risotto"
    assert analysis.summary.startswith("User: How do I make a creamy mushroom risotto")
    assert "Arborio" in analysis.summary or "rice" in analysis.summary


async def test_an_agent_working_with_tools_is_summarized_from_the_dialogue_not_the_tool_output() -> None:
    analysis = await analyze(AGENT_AT_WORK, llm=None)

    assert "backup" in analysis.main_topic.name.lower()
    assert analysis.summary.startswith("User: Can you find out why the nightly backup job failed on db-prod-2?")
    assert "journalctl" not in analysis.summary and "pg_dump: error" not in analysis.summary


async def test_names_said_to_the_listener_are_not_topics() -> None:
    analysis = await analyze(LIFE_UPDATE, llm=None)

    topics = [analysis.main_topic.name.lower(), *names(analysis.subtopics)]
    assert "maria" not in topics and "john" not in topics
    assert any("biscuit" in t or "shelter" in t or "obedience" in t for t in topics)
    assert entity_texts(analysis).get("Maria") == "person"


async def test_a_users_correction_of_a_fact_is_in_the_summary_beside_the_fact_it_corrects() -> None:
    # The two sentences share most of their words: without the correction rule the second was
    # skipped as a near-duplicate, and the summary kept only the colour that no longer holds.
    analysis = await analyze(
        segment(
            (U, "My favourite colour is blue."),
            (A, "Nice."),
            (U, "Thanks. Oh and my favourite colour is green now, not blue."),
            (A, "Noted."),
        ),
        llm=None,
    )

    assert analysis.summary == "User: My favourite colour is blue. Oh and my favourite colour is green now, not blue."


async def test_a_users_short_answer_to_a_question_about_them_is_in_the_summary_after_its_question() -> None:
    # "Shellfish." has one word and "Any allergies?" two: neither was a candidate sentence, and the
    # summary read as a question with no answer, or as the help-desk talk around it.
    analysis = await analyze(
        segment(
            (U, "Can you help me plan dinners for next week? I want quick recipes I can cook after work."),
            (A, "Happy to help with quick weeknight dinners. Any allergies?"),
            (U, "Shellfish."),
            (A, "Got it, no shellfish. Here is a plan with five quick dinners for the week."),
        ),
        llm=None,
    )

    assert "Agent: Any allergies? User: Shellfish." in analysis.summary
    assert analysis.summary.startswith("User: Can you help me plan dinners for next week?")


async def test_a_repeated_fact_that_says_nothing_changed_is_still_a_near_duplicate() -> None:
    analysis = await analyze(
        segment(
            (U, "My favourite colour is blue."),
            (A, "Nice."),
            (U, "Like I said, my favourite colour is blue."),
            (A, "Noted."),
        ),
        llm=None,
    )

    assert analysis.summary == "User: My favourite colour is blue."


@pytest.mark.parametrize("text", ["hi", "thanks!", "ok cool", "lol"])
async def test_small_talk_gets_the_small_talk_topic_with_zero_confidence(text: str) -> None:
    analysis = await analyze(segment((U, text), (A, "You're welcome!")), llm=None)

    assert analysis.main_topic == Topic(SMALL_TALK, 0.0)
    assert analysis.subtopics == ()
    assert analysis.entities == ()


async def test_a_greeting_exchange_is_small_talk_too() -> None:
    analysis = await analyze(SMALL_TALK_SEGMENT, llm=None)

    assert analysis.main_topic.name == SMALL_TALK


async def test_the_main_topic_is_kept_below_min_confidence_while_subtopics_are_dropped() -> None:
    analysis = await analyze(TRAVEL, llm=None, min_confidence=0.99)

    assert analysis.main_topic.confidence < 0.99
    assert analysis.main_topic.name == "trip to Lisbon"
    assert analysis.subtopics == ()


async def test_max_topics_caps_the_subtopics() -> None:
    many = await analyze(TECH_SUPPORT, llm=None, min_confidence=0.0, max_topics=3)
    one = await analyze(TECH_SUPPORT, llm=None, min_confidence=0.0, max_topics=1)
    none = await analyze(TECH_SUPPORT, llm=None, min_confidence=0.0, max_topics=0)

    assert len(many.subtopics) == 3
    assert len(one.subtopics) == 1 and one.subtopics[0] == many.subtopics[0]
    assert none.subtopics == ()
    assert all(0.0 <= t.confidence <= 1.0 for t in many.subtopics)


async def test_subtopics_do_not_repeat_the_main_topic() -> None:
    analysis = await analyze(TECH_SUPPORT, llm=None, min_confidence=0.0)

    main_words = set(analysis.main_topic.name.lower().split())
    for topic in analysis.subtopics:
        assert not set(topic.name.lower().split()) >= main_words


async def test_entities_of_every_shape_are_found_and_classified() -> None:
    events = segment(
        (
            U,
            "Our API at https://api.example.com/v2 times out after 5 ms when I call `fetch_orders` from "
            "OrderService.sync() on Python 3.11. Contact ops@example.com before March 3, 2024; the budget is $30.",
        ),
        (A, "Upgrade the client to v2.3 and raise REQUEST_TIMEOUT to 20 GB... I mean 20 s, in /etc/app/config.yaml."),
    )
    found = entity_texts(await analyze(events, llm=None))

    assert found["https://api.example.com/v2"] == "url"
    assert found["ops@example.com"] == "email"
    assert found["fetch_orders"] == "code"
    assert found["OrderService.sync()"] == "code"
    assert found["Python 3.11"] == "version"
    assert found["v2.3"] == "version"
    assert found["5 ms"] == "quantity"
    assert found["$30"] == "quantity"
    assert found["20 s"] == "quantity"
    assert found["March 3, 2024"] == "date"
    assert found["REQUEST_TIMEOUT"] == "code"
    assert found["/etc/app/config.yaml"] == "code"
    assert set(found.values()) <= ENTITY_KINDS


async def test_names_are_classified_with_the_gazetteers_and_context() -> None:
    events = segment(
        (U, "My sister Priya is flying to Tokyo next month to interview at Google and the University of Tokyo."),
        (A, "Dr. Tanaka at the University of Tokyo answers emails quickly; Priya could also visit Kyoto."),
    )
    found = entity_texts(await analyze(events, llm=None))

    assert found["Priya"] == "person"
    assert found["Tokyo"] == "place"
    assert found["Google"] == "organization"
    assert found["University of Tokyo"] == "organization"
    assert found["Tanaka"] == "person"
    assert found["Kyoto"] == "place"


async def test_capitalized_sentence_openers_are_not_entities() -> None:
    events = segment(
        (U, "Unfortunately the export keeps failing. Basically nothing works since Monday."),
        (A, "Sure. Check the export log first. Great question, by the way."),
    )
    found = entity_texts(await analyze(events, llm=None))

    assert "Unfortunately" not in found and "Basically" not in found
    assert "Sure" not in found and "Check" not in found and "Great" not in found
    assert found.get("Monday") == "date"


async def test_the_summary_stays_short_on_a_long_segment() -> None:
    long_turns = []
    for i in range(12):
        long_turns.append(
            (
                U,
                f"Question {i}: how should I tune the PostgreSQL autovacuum settings for a table with {i + 1} million updates a day?",
            )
        )
        long_turns.append(
            (
                A,
                "Lower autovacuum_vacuum_scale_factor to 0.01 for that table, raise autovacuum_max_workers, "
                "and watch n_dead_tup in pg_stat_user_tables; " * 3,
            )
        )
    analysis = await analyze(segment(*long_turns), llm=None)

    assert 0 < len(analysis.summary) <= 400
    assert analysis.summary.startswith("User: ")
    assert len(analysis.entities) <= 25


async def test_an_empty_segment_still_gets_a_topic() -> None:
    analysis = await analyze([], llm=None)

    assert analysis.main_topic == Topic(SMALL_TALK, 0.0)
    assert analysis.summary == ""
    assert analysis.path == "heuristic"


@pytest.fixture(scope="module")
def local_embedder():  # type: ignore[no-untyped-def]
    from athena.embeddings import LocalEmbedder

    return LocalEmbedder()


async def test_with_an_embedder_the_summary_is_picked_by_embedding_centrality(local_embedder) -> None:  # type: ignore[no-untyped-def]
    analysis = await analyze(COOKING, llm=None, embedder=local_embedder)

    assert analysis.path == "heuristic"
    assert analysis.summary.startswith("User: How do I make a creamy mushroom risotto")
    assert "Agent: " in analysis.summary and len(analysis.summary) <= 400


async def test_a_failing_embedder_falls_back_to_keyword_centrality() -> None:
    class Broken:
        dim = 384

        async def embed(self, texts):  # type: ignore[no-untyped-def]
            raise RuntimeError("embedding endpoint down")

    with_broken = await analyze(COOKING, llm=None, embedder=Broken())  # type: ignore[arg-type]
    without = await analyze(COOKING, llm=None)

    assert with_broken == without


async def test_heuristic_examples_read_sensibly() -> None:
    """Prints the heuristic's output for realistic segments (pytest -s to read them)."""
    for title, events in [
        ("tech support", TECH_SUPPORT),
        ("travel planning", TRAVEL),
        ("cooking", COOKING),
        ("agent with tools", AGENT_AT_WORK),
        ("life update", LIFE_UPDATE),
        ("small talk", SMALL_TALK_SEGMENT),
    ]:
        analysis = await analyze(events, llm=None)
        print(f"\n[{title}] topic: {analysis.main_topic.name} ({analysis.main_topic.confidence})")
        print("  subtopics:", ", ".join(f"{t.name} ({t.confidence})" for t in analysis.subtopics) or "-")
        print("  entities:", ", ".join(f"{e.text}/{e.kind}" for e in analysis.entities) or "-")
        print("  summary:", analysis.summary)
        assert analysis.summary and len(analysis.summary) <= 400


# --- LLM path ------------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    yield from fake_openai_server()


@pytest.fixture
async def llm(server: FakeOpenAI) -> AsyncIterator[LLMClient]:
    client = LLMClient(base_url=server.base_url, model="test-model")
    yield client
    await client.aclose()


GOOD_ANSWER = {
    "main_topic": {"name": "Docker container memory limits", "confidence": 0.92},
    "subtopics": [
        {"name": "Exit code 137", "confidence": 0.85},
        {"name": "pandas memory use", "confidence": 0.65},
        {"name": "docker-compose settings", "confidence": 0.7},
        {"name": "CSV chunking", "confidence": 0.61},
        {"name": "weather", "confidence": 0.2},
    ],
    "entities": [
        {"text": "Docker", "kind": "product"},
        {"text": "Python 3.11", "kind": "version"},
        {"text": "docker-compose.yml", "kind": "file"},
        {"text": "4 GB", "kind": "size"},
    ],
    "summary": "The user's container was OOM-killed (exit code 137) at a 2 GB limit; the agent explained the "
    "OOM killer and how to raise the limit with --memory or mem_limit, and 4 GB fixed it.",
}


async def test_a_valid_llm_answer_is_used_and_validated(server: FakeOpenAI, llm: LLMClient) -> None:
    server.reply(json.dumps(GOOD_ANSWER))

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis.path == "llm"
    assert analysis.main_topic == Topic("Docker container memory limits", 0.92)
    # Below 0.6 dropped, then the three most confident kept.
    assert [t.name for t in analysis.subtopics] == ["Exit code 137", "docker-compose settings", "pandas memory use"]
    assert analysis.entities == (
        Entity("Docker", "product"),
        Entity("Python 3.11", "version"),
        Entity("docker-compose.yml", "code"),
        Entity("4 GB", "quantity"),
    )
    assert analysis.summary == GOOD_ANSWER["summary"]


async def test_the_llm_gets_the_transcript_and_is_asked_for_json(server: FakeOpenAI, llm: LLMClient) -> None:
    server.reply(json.dumps(GOOD_ANSWER))

    await analyze(AGENT_AT_WORK, llm=llm, max_topics=2)

    body = server.chat_requests[0].body
    assert body is not None
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert "up to 2 further" in system and '"main_topic"' in system
    assert "[user] Can you find out why the nightly backup job failed on db-prod-2?" in user
    assert "[agent action] run_command(" in user
    assert "[agent observation] pg_dump: error" in user


async def test_confidences_are_clamped_and_numeric_strings_accepted(server: FakeOpenAI, llm: LLMClient) -> None:
    answer = dict(GOOD_ANSWER)
    answer["main_topic"] = {"name": "Docker memory", "confidence": 1.7}
    answer["subtopics"] = [
        {"name": "exit codes", "confidence": "0.8"},
        {"name": "compose files", "confidence": "75%"},
        {"name": "negative", "confidence": -3},
        {"name": "a bool is no number", "confidence": True},
        {"name": "no confidence at all"},
        "a bare string",
    ]
    server.reply(json.dumps(answer))

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis.main_topic == Topic("Docker memory", 1.0)
    assert analysis.subtopics == (Topic("exit codes", 0.8), Topic("compose files", 0.75))


async def test_invented_and_junk_entities_are_dropped(server: FakeOpenAI, llm: LLMClient) -> None:
    answer = dict(GOOD_ANSWER)
    answer["entities"] = [
        {"text": "Kubernetes", "kind": "product"},  # never mentioned: invented
        {"text": "docker", "kind": "software"},  # mentioned (any case): kept, kind mapped
        {"text": "DOCKER", "kind": "product"},  # duplicate
        {"text": 42, "kind": "number"},
        {"text": "OOMKilled", "kind": "spaceship"},  # unknown kind: other
        "pandas",  # a bare string: kind other
        {"text": "x" * 200, "kind": "other"},
        None,
    ]
    server.reply(json.dumps(answer))

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis.path == "llm"
    assert analysis.entities == (Entity("docker", "product"), Entity("OOMKilled", "other"), Entity("pandas", "other"))


async def test_an_answer_without_an_entity_list_takes_the_heuristic_entities(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    answer = {k: v for k, v in GOOD_ANSWER.items() if k != "entities"}
    server.reply(json.dumps(answer))

    analysis = await analyze(TECH_SUPPORT, llm=llm)
    heuristic = await analyze(TECH_SUPPORT, llm=None)

    assert analysis.path == "llm"
    assert analysis.entities == heuristic.entities


async def test_an_answer_in_prose_with_a_json_block_is_still_read(server: FakeOpenAI, llm: LLMClient) -> None:
    server.reply("Sure! Here is the analysis:\n```json\n" + json.dumps(GOOD_ANSWER) + "\n```")

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis.path == "llm"


async def test_malformed_json_falls_back_to_the_heuristic(server: FakeOpenAI, llm: LLMClient) -> None:
    server.reply('{"main_topic": {"name": "Docker", "confidence": 0.9}, "summary": "unterminated')

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis == await analyze(TECH_SUPPORT, llm=None)
    assert llm.stats.malformed["analysis"] == 1


@pytest.mark.parametrize(
    "answer",
    [
        {**GOOD_ANSWER, "main_topic": 42},
        {**GOOD_ANSWER, "main_topic": {"name": ["Docker"], "confidence": 0.9}},
        {**GOOD_ANSWER, "main_topic": {"name": "unknown", "confidence": 0.9}},
        {
            **GOOD_ANSWER,
            "main_topic": {
                "name": "a very long sentence that is clearly not a short topic name at all",
                "confidence": 0.9,
            },
        },
        {**GOOD_ANSWER, "summary": ["The user asked about Docker."]},
        {**GOOD_ANSWER, "summary": "ok"},
        {k: v for k, v in GOOD_ANSWER.items() if k != "summary"},
        {"answer": "Docker"},
    ],
    ids=[
        "topic-number",
        "topic-name-list",
        "topic-placeholder",
        "topic-sentence",
        "summary-list",
        "summary-too-short",
        "summary-missing",
        "wrong-object",
    ],
)
async def test_an_unusable_main_topic_or_summary_means_the_whole_analysis_is_heuristic(
    server: FakeOpenAI, llm: LLMClient, answer: dict
) -> None:
    server.reply(json.dumps(answer))

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis.path == "heuristic"
    assert analysis == await analyze(TECH_SUPPORT, llm=None)
    assert llm.stats.malformed["analysis"] == 1


async def test_a_bare_string_main_topic_is_accepted_with_an_unknown_confidence(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    server.reply(json.dumps({**GOOD_ANSWER, "main_topic": "Docker memory limits"}))

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis.path == "llm"
    assert analysis.main_topic == Topic("Docker memory limits", 0.5)


async def test_an_overlong_summary_is_cut_at_a_sentence_end(server: FakeOpenAI, llm: LLMClient) -> None:
    long_summary = "The user asked about container memory limits. " * 20
    server.reply(json.dumps({**GOOD_ANSWER, "summary": long_summary}))

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert len(analysis.summary) <= 500
    assert analysis.summary.endswith("limits.")


async def test_a_slow_llm_is_cut_off_at_the_timeout_and_the_heuristic_answers(
    server: FakeOpenAI, llm: LLMClient
) -> None:
    server.reply(json.dumps(GOOD_ANSWER), delay=3.0)

    started = time.monotonic()
    analysis = await analyze(TECH_SUPPORT, llm=llm, llm_timeout=0.3)
    elapsed = time.monotonic() - started

    assert analysis.path == "heuristic"
    assert elapsed < 1.5
    assert llm.stats.errors["timeout"] == 1


async def test_a_server_error_falls_back_to_the_heuristic(server: FakeOpenAI, llm: LLMClient) -> None:
    server.error(500)

    analysis = await analyze(TECH_SUPPORT, llm=llm)

    assert analysis.path == "heuristic"
    assert llm.stats.errors["http_5xx"] == 1


async def test_an_empty_segment_does_not_call_the_llm(server: FakeOpenAI, llm: LLMClient) -> None:
    analysis = await analyze([], llm=llm)

    assert analysis.path == "heuristic"
    assert server.chat_requests == []
