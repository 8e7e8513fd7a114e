"""A user's question about themselves naming a kind of personal fact also searches the words such
facts are told with (search/fact_kinds.py), at a fraction of a query word's weight
(LexicalIndex.query)."""

from __future__ import annotations

from typing import Any

from support.formation_data import SCOPE, make_segment

from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.search.fact_kinds import (
    asked_kinds,
    asks_of_the_user_alone,
    expansion_kinds,
    of_someone_else,
    the_users_own,
    told_kinds,
)
from athena_formation.search.lexicon import chain_lexicon, query_terms, terms
from athena_formation.search.ranking import Ranking
from athena_formation.server import Formation
from athena_formation.store.lexical_index import LexiconRow, UserLexicon


def _expansion(query: str) -> list[str]:
    return list(expansion_kinds(query, query_terms(query)))


def test_a_users_question_naming_a_kind_of_fact_adds_the_words_such_facts_are_told_with() -> None:
    assert {*terms("wife husband fiancée")} <= set(_expansion("Who is my spouse?"))
    assert {*terms("insulin asthma allergic")} <= set(_expansion("Do I have any medical conditions?"))
    assert {*terms("dog cat")} <= set(_expansion("What pets do I have?"))
    assert {*terms("rabbits parrot retriever")} <= set(_expansion("Do I own any animals?"))
    assert {*terms("boss supervisor")} <= set(_expansion("Who is my manager?"))


def test_the_kinds_a_users_question_asks_for_and_a_fact_tells() -> None:
    assert asked_kinds("Where do I live?", query_terms("Where do I live?")) == {"home"}
    assert asked_kinds("Where does Melanie live?", query_terms("Where does Melanie live?")) == frozenset()
    assert told_kinds("Actually I moved to Oslo last month.") == {"home"}
    assert told_kinds("I just started a new job at KPMG.") == {"work"}
    assert told_kinds("I play the guitar.") == frozenset()
    assert told_kinds("My parents live in Nairobi.") == {"parents", "family"}
    assert told_kinds("My wife and I live in Leeds.") == {"home", "partner", "family"}


def test_a_question_saying_the_person_by_the_verb_alone_asks_for_the_kind_it_names() -> None:
    asked = {
        "¿Dónde vivo?": {"home"},
        "Dove abito?": {"home"},
        "Onde moro?": {"home"},
        "¿En qué trabajo?": {"work"},
        "Was esse ich nicht?": {"diet"},
    }
    for query, kinds in asked.items():
        assert the_users_own(query) and asked_kinds(query, query_terms(query)) == kinds, query
    for query in ("What is AI?", "¿Dónde vive Jean?", "Where does Jean live?"):
        assert asked_kinds(query, query_terms(query)) == frozenset(), query


def test_a_question_in_the_first_person_plural_asks_for_the_kind_it_names() -> None:
    assert asked_kinds("Are we planning to have children?", query_terms("Are we planning to have children?")) == {
        "children"
    }
    assert asked_kinds("Where do we live?", query_terms("Where do we live?")) == {"home"}
    assert asked_kinds("Can we fix the login bug?", query_terms("Can we fix the login bug?")) == frozenset()


def test_a_french_question_with_an_elided_or_inverted_je_is_the_users_own() -> None:
    asked = {
        "Quel animal est-ce que j'ai ?": {"pets"},
        "Est-ce que j'ai des enfants ?": {"children"},
        "Quel animal ai-je ?": {"pets"},
    }
    for query, kinds in asked.items():
        assert the_users_own(query) and asked_kinds(query, query_terms(query)) == kinds, query
    assert not the_users_own("Où habite-t-elle ?")
    assert told_kinds("Nous avons une chatte, Mimi.") == {"pets"}


def test_a_question_about_a_partner_or_about_children_adds_only_that_kinds_words() -> None:
    married, children, family = (
        set(_expansion(q)) for q in ("Am I married?", "How many children do I have?", "Who is in my family?")
    )

    assert {*terms("wife husband fiancée")} <= married and not {*terms("daughter son")} & married
    assert {*terms("daughters sons grandchildren")} <= children and not {*terms("wife husband")} & children
    assert {*terms("wife daughter mother")} <= family


def test_a_question_about_one_relation_adds_that_relations_words_not_every_relatives() -> None:
    siblings, fiance, parents, wife = (
        set(_expansion(q))
        for q in ("Do I have siblings?", "Who is my fiancé?", "¿Cómo se llaman mis padres?", "What's my wife's name?")
    )

    assert {*terms("sister brother hermana")} <= siblings and not {*terms("wife son mom")} & siblings
    assert {*terms("engaged")} <= fiance and not {*terms("wife married")} & fiance
    assert {*terms("mom father madre")} <= parents and not {*terms("sister son")} & parents
    assert {*terms("husband")} <= wife and not {*terms("mom sister son")} & wife
    assert {*terms("engaged")} <= set(_expansion("Am I married?"))  # an engagement tells of a partner


def test_asking_what_i_do_for_a_living_asks_for_work_and_where_i_am_living_for_home() -> None:
    work, home = set(_expansion("What do I do for a living?")), set(_expansion("Where am I living these days?"))

    assert {*terms("job pharmacist nurse teacher")} <= work and not {*terms("home apartment")} & work
    assert {*terms("home apartment moved")} <= home and not {*terms("job pharmacist")} & home
    # "I'm based in Lisbon", or "Lisbon." after the agent's "Where are you based?"
    assert {*terms("based")} <= set(_expansion("Where do I live?"))


def test_a_question_in_spanish_french_german_italian_or_portuguese_adds_the_words_of_all_six() -> None:
    assert {*terms("perro gato dog cat")} <= set(_expansion("¿Tengo mascotas?"))
    assert {*terms("mari husband esposa")} <= set(_expansion("Qui est mon épouse ?"))
    assert {*terms("töchter daughters")} <= set(_expansion("Wie viele Kinder habe ich?"))
    assert {*terms("celiaca diabetic")} <= set(_expansion("Ho problemi di salute?"))
    assert {*terms("lehrerin enfermera teacher")} <= set(_expansion("What do I do for work?"))


def test_a_question_in_dutch_swedish_polish_turkish_indonesian_vietnamese_arabic_or_hindi_adds_them_all() -> None:
    assert {*terms("perawat lekarzem teacher enfermera")} <= set(_expansion("Apa pekerjaan saya?"))
    assert {*terms("pracuję bekerja")} <= set(_expansion("Jaki jest mój zawód?"))
    assert {*terms("zoon dotter anak")} <= set(_expansion("Hoeveel kinderen heb ik?"))
    assert {*terms("kedim kucing katt cat")} <= set(_expansion("Har jag några husdjur?"))
    assert {*terms("call nama")} <= set(_expansion("Adım ne?"))  # Turkish says "my" by a suffix
    assert {*terms("डॉक्टर नर्स nurse")} <= set(_expansion("मेरा पेशा क्या है?"))
    assert {*terms("أعيش tinggal live")} <= set(_expansion("أين أسكن؟"))


def test_a_users_question_naming_what_is_told_and_no_kind_asks_for_the_kinds_of_what_it_names() -> None:
    dog = set(_expansion("Do I have a dog?"))
    assert {*terms("cachorro perro chien hund cat")} <= dog and not {*terms("wife daughter nurse")} & dog
    assert {*terms("vegano végétarien pescatarian")} <= set(_expansion("Am I vegetarian?"))
    # "children" asks for the children kind, and "son" (told of the family kind too) adds nothing more
    children = set(_expansion("How many children and sons do I have?"))
    assert {*terms("daughters grandchildren")} <= children and not {*terms("wife mother")} & children


def test_a_question_for_the_users_name_adds_how_names_are_told_and_a_pets_name_adds_the_pets_too() -> None:
    assert {*terms("call called nickname")} <= set(_expansion("What's my name?"))
    assert {*terms("call llamo")} <= set(_expansion("What name should you use for me?"))
    dog = set(_expansion("What's my dog's name?"))
    assert {*terms("called cat puppy")} <= dog and not {*terms("wife nurse")} & dog
    # Polish says a pet "wabi się" and anyone "nazywa się": "Mam psa, który wabi się Burek."
    assert {*terms("wabi nazywa")} <= set(_expansion("Jak ma na imię mój pies?"))


def test_asking_my_own_name_meets_the_agents_question_an_answered_name_is_kept_with() -> None:
    # "Priya." answering "¿Cómo te llamas?" is kept as "¿Cómo te llamas? Priya." (answered_questions.py)
    for asked, told in [
        ("¿Cómo me llamo?", "¿Cómo te llamas? Priya."),
        ("Come mi chiamo?", "Come ti chiami? Priya."),
        ("Wie heiße ich?", "Wie heißt du? Priya."),
        ("Como eu me chamo?", "Como você se chama? Priya."),
    ]:
        assert set(_expansion(asked)) & set(terms(told)), asked


def test_an_agents_query_naming_the_user_or_a_bare_topic_is_about_the_user() -> None:
    for query in ("user allergies", "the user's spouse", "dietary restrictions", "medical conditions", "pets"):
        assert the_users_own(query), query
    for query in ("Melanie pottery", "What pets does Melanie have?", "her allergies", "Where did Caroline move from"):
        assert not the_users_own(query), query
    assert not the_users_own("a query of more than five words naming no one")


def test_a_question_in_another_language_naming_no_one_is_the_users_own_and_an_english_one_is_not() -> None:
    # The person is in the verb alone: "where do I live?" in Turkish, "how many dogs do I have?" in
    # Romanian, "do I eat meat?" in Finnish, "where do I live?" in Hungarian.
    for query in ("Hangi şehirde oturuyorum?", "Câți câini am?", "Syönkö lihaa?", "Hol lakom?"):
        assert the_users_own(query), query
    # Someone else named or pointed to, or English, which says "I" of the user: not the user's.
    for query in ("¿Dónde vive Ana?", "Où habite-t-elle ?", "Где он живёт?", "What is the capital of France?"):
        assert not the_users_own(query), query


def test_an_agents_query_about_the_user_adds_the_words_of_the_kind_it_names() -> None:
    assert {*terms("insulin diabetic asthma")} <= set(_expansion("medical conditions"))
    assert {*terms("wife husband")} <= set(_expansion("user's spouse"))
    assert {*terms("moved apartment")} <= set(_expansion("user location"))
    assert {*terms("prefer favourite")} <= set(_expansion("seat preference"))
    assert _expansion("Melanie pottery") == []


def test_a_query_for_how_the_user_wants_answers_adds_the_style_words_and_a_request_to_answer_does_not() -> None:
    assert {*terms("short concise bullet")} <= set(_expansion("response style preferences"))
    assert {*terms("short brief")} <= set(_expansion("How do I like my answers formatted?"))
    assert _expansion("Can you answer my question about taxes?") == []


def test_a_question_for_where_the_user_is_online_adds_the_platforms_and_social_security_does_not() -> None:
    assert {*terms("twitter mastodon instagram")} <= set(_expansion("Which social network am I on?"))
    assert "mastodon" in _expansion("What's my Instagram handle?")
    assert _expansion("What is my Social Security number?") == []
    assert _expansion("How do I log in to my account?") == []


def test_asking_how_i_get_to_work_asks_for_the_commute_and_not_the_job() -> None:
    commute = set(_expansion("How do I get to work?"))
    assert {*terms("bus bike tram train")} <= commute and not {*terms("job employer nurse")} & commute
    job = set(_expansion("Where do I work?"))
    assert {*terms("job employer nurse")} <= job and not {*terms("bus bike tram")} & job


def test_asking_where_i_grew_up_or_come_from_asks_for_the_origin_and_not_the_home() -> None:
    for question in ("Where did I grow up?", "Where am I from?", "Wo bin ich aufgewachsen?"):
        origin = set(_expansion(question))
        assert {*terms("grew raised originally")} <= origin and not {*terms("moved apartment")} & origin
    assert not {*terms("grew raised")} & set(_expansion("Where do I live?"))


def test_asking_how_old_i_am_asks_for_the_age_and_how_i_see_for_my_health() -> None:
    for question in ("How old am I?", "What's my age?"):
        assert {*terms("turning turned")} <= set(_expansion(question))
    assert not {*terms("turning")} & set(_expansion("How old is Melanie?"))
    # an age asked of a pet or a relative asks for them too, as a name does
    cat = set(_expansion("How old is my cat?"))
    assert {*terms("turning kitten dog")} <= cat and not {*terms("daughter")} & cat
    # a birthday tells no age: a request for one keeps the needs it names
    assert not {*terms("turning")} & set(_expansion("Plan a dinner for my birthday."))
    for question in ("Do I have any problems with my vision?", "How is my eyesight?"):
        assert {*terms("colorblind glasses nearsighted")} <= set(_expansion(question))


def test_a_question_about_my_home_adds_renting_and_owning_it() -> None:
    assert {*terms("rent mortgage landlord flat")} <= set(_expansion("Do I own my home?"))


def test_a_question_for_my_diet_adds_the_named_diets() -> None:
    assert {*terms("vegan keto paleo")} <= set(_expansion("What diet am I on?"))


def test_a_question_asking_for_a_kind_of_fact_adds_that_kinds_words_and_not_a_needs() -> None:
    movies = set(_expansion("What kind of movies do I dislike?"))
    assert {*terms("hate prefer")} <= movies and not {*terms("son daughter toddler")} & movies
    assert {*terms("son daughter toddler")} <= set(_expansion("What movie can we watch together tonight?"))
    assert {*terms("wedding anniversary")} <= set(_expansion("When did I get married?"))


def test_words_that_are_common_english_words_are_not_told_words_in_any_language() -> None:
    every_kind = "Who is in my family and what pets, health issues, diet, home and job do I have?"
    assert not {*terms("chat kind cane tier file fill man barn arts guru gift pies")} & set(_expansion(every_kind))


def test_a_request_naming_a_need_adds_the_words_of_the_facts_it_bears_on() -> None:
    assert {*terms("vegan allergic gluten")} <= set(_expansion("Can you recommend a restaurant for tonight?"))
    assert {*terms("asthma knee")} <= set(_expansion("Suggest a workout routine for me."))
    assert {*terms("seasick afraid")} <= set(_expansion("Is a ferry a good way to get to the island, you think?"))
    assert {*terms("budget afford")} <= set(_expansion("Which laptop should I buy?"))
    assert _expansion("Which restaurant did Caroline recommend?") == []  # about someone else
    assert _expansion("Which laptop did Melanie buy?") == []
    assert _expansion("Around which US holiday did Maria travel?") == []  # "US" is not "us"


def test_the_users_own_questions_and_requests_are_told_from_questions_about_someone_named() -> None:
    own = ["Am I married?", "Can you recommend a restaurant?", "What do we have planned?", "¿Tengo mascotas?"]
    own += ["Где я живу?", "我住在哪里？", "ペットはいますか？", "제가 어디에 살아요?"]
    assert all(the_users_own(q) for q in own)
    assert not any(
        the_users_own(q)
        for q in [
            "What pets does Melanie have?",
            "Around which US holiday did Maria travel?",
            "Где живёт Мария?",
            "田中さんはどこに住んでいますか？",
        ]
    )


def test_a_question_about_someone_else_or_naming_no_kind_adds_nothing_nor_repeats_its_own_words() -> None:
    assert _expansion("What pets does Melanie have?") == []
    assert _expansion("Which Kyoto temples do I need to book?") == []
    family = "How are my kids and my wife?"
    assert _expansion(family) and not set(_expansion(family)) & set(query_terms(family))


def _index() -> UserLexicon:
    index = UserLexicon()
    for chain_id, text in [
        ("wife", "My wife is called Priya."),
        ("spouse", "What benefits does a spouse get after retirement?"),
        ("kyoto", "Which temples in Kyoto need a reservation?"),
    ]:
        index.put(LexiconRow(chain_id=chain_id, agent_id="helper", lexicon=chain_lexicon([text]), event_count=2))
    return index


def test_an_expansion_word_counts_its_weight_and_leaves_the_query_words_scores_as_they_were() -> None:
    index = _index()
    query = query_terms("Who is my spouse?")
    plain = index.query(query)
    expanded = index.query(query, expansion=_expansion("Who is my spouse?"), expansion_weight=0.5)
    off = index.query(query, expansion=_expansion("Who is my spouse?"), expansion_weight=0.0)

    assert plain.of("wife") == 0.0 and 0.0 < expanded.of("wife") <= 0.5
    assert expanded.of("spouse") == plain.of("spouse") > expanded.of("wife")
    assert expanded.of("kyoto") == 0.0
    assert off.scores.tolist() == plain.scores.tolist()


# --- through formation (MongoDB-wire server, Milvus Lite) --------------------------------------------


async def _form(stub: Any, turns: list[tuple[str, str]]) -> str:
    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(turns)), timeout=60)
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response.reason
    return response.chain_id


SON_HAS_ASTHMA = [("user", "My son has asthma."), ("agent", "Thanks for telling me.")]
FAMILY_TRIP = [
    ("user", "We're planning a family trip to Lisbon in May, any tips?"),
    ("agent", "Lisbon is great for a family trip: the tram 28, the Oceanarium and day trips to Sintra."),
    ("user", "Is the Oceanarium worth it for the whole family?"),
    ("agent", "Yes, it is one of the best in Europe; book tickets online to skip the queue."),
]


async def test_a_users_question_about_a_kind_of_fact_finds_a_fact_told_in_other_words(
    formation: Formation, stub: Any
) -> None:
    """ "Does anyone in my family have a medical condition?" shares only "family" with a chat about
    family benefits and no word with "My son has asthma": the kind's words find the fact first."""
    asthma = await _form(stub, SON_HAS_ASTHMA)
    trip = await _form(stub, FAMILY_TRIP)
    request = formation_pb2.SearchRequest(
        request=memory_pb2.SearchMemoryRequest(
            scope=SCOPE, query="Does anyone in my family have a medical condition?", limit=2
        )
    )

    expanded = await stub.SearchMemory(request, timeout=30)
    formation.recall.ranking = Ranking(expansion_weight=0.0)
    plain = await stub.SearchMemory(request, timeout=30)

    assert [h.chain.id for h in plain.hits] == [trip, asthma]
    assert [h.chain.id for h in expanded.hits] == [asthma, trip]
    assert expanded.hits[0].lexical_score > 0 == plain.hits[1].lexical_score


def test_a_fact_told_of_a_relative_alone_is_someone_elses_and_a_question_naming_none_asks_of_the_user() -> None:
    for fact in ("My husband Tom is a firefighter.", "Meine Frau ist Lehrerin in München.", "Mi hijo es alérgico."):
        assert of_someone_else(fact), fact
    for fact in (
        "My wife and I live in Leeds.",
        "My mom lives with us.",
        "I'm allergic to cats.",
        "Moro em Lisboa com a minha namorada.",
    ):
        assert not of_someone_else(fact), fact
    for question in ("What is my profession?", "Do I have any allergies?", "Who is my employer?"):
        assert asks_of_the_user_alone(question, query_terms(question)), question
    for question in ("Does my son have allergies?", "Who is in my family?", "Who lives with me?", "Am I married?"):
        assert not asks_of_the_user_alone(question, query_terms(question)), question
