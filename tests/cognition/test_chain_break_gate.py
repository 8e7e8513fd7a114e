"""Every path of decide() on crafted conversations, plus the real continuity scorer end to end."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from athena.config import load_settings
from athena.embeddings import LocalEmbedder
from athena_cognition.detector import (
    ContinuityScorer,
    Decision,
    OpenerModel,
    PairCosineScorer,
    Thresholds,
    Turn,
    decide,
    decision_texts,
    default_thresholds,
    make_scorer,
    replay,
    thresholds_from_settings,
)
from athena_cognition.detector._classifier import Classifier
from athena_cognition.detector._placement import OPENER_FEATURE_NAMES, opener_candidate, opener_features

TH = Thresholds(high=0.8, low=0.5)  # midpoint 0.65


class FixedScorer:
    """Returns one score; records the windows it saw."""

    name = "fixed"

    def __init__(self, value: float) -> None:
        self.value = value
        self.seen: list[list[str]] = []

    def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
        return []

    def score(self, window: Sequence[Turn], new_index: int, vectors: Mapping[int, np.ndarray]) -> float:
        self.seen.append([t.content for t in window[: new_index + 1]])
        return self.value


class CountingEmbedder:
    dim = 4

    def __init__(self) -> None:
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.tile(np.array([1.0, 0, 0, 0], dtype=np.float32), (len(texts), 1))


class FakeArbiter:
    def __init__(self, verdict: bool | None, fail: bool = False) -> None:
        self.verdict = verdict
        self.fail = fail
        self.asked: list[tuple[str, str]] = []

    async def same_topic(self, previous: str, current: str) -> bool | None:
        self.asked.append((previous, current))
        if self.fail:
            raise RuntimeError("llm down")
        return self.verdict


def user(text: str, **meta: str) -> Turn:
    return Turn(role="user", type="message", content=text, metadata=meta)


def agent(text: str, type: str = "message") -> Turn:
    return Turn(role="agent", type=type, content=text)


CONVERSATION = [
    user("How do I reset my password?"),
    agent("Use the 'Forgot password' link."),
    user("It never arrived."),
]


async def run(
    window: Sequence[Turn],
    score: float,
    *,
    arbiter: FakeArbiter | None = None,
    new_index: int | None = None,
    max_events: int = 20,
    keep: int = 0,
    session_gap: float = 0.0,
) -> Decision:
    return await decide(
        window,
        new_index=len(window) - 1 if new_index is None else new_index,
        scorer=FixedScorer(score),
        embedder=CountingEmbedder(),
        thresholds=TH,
        arbiter=arbiter,
        max_events_before_flush=max_events,
        flush_keep_events=keep,
        session_gap_seconds=session_gap,
    )


def at(turn: Turn, timestamp: float) -> Turn:
    return Turn(role=turn.role, type=turn.type, content=turn.content, metadata=turn.metadata, timestamp=timestamp)


async def test_first_message_continues() -> None:
    d = await run([agent("Hello, how can I help?"), user("Hi there")], 0.0)
    assert d == Decision(is_break=False, path="first_message", score=None, scorer="fixed")


async def test_same_workflow_is_skipped() -> None:
    window = [user("step 1", workflow_id="wf-1"), agent("done"), user("step 2", workflow_id="wf-1")]
    d = await run(window, 0.0)
    assert (d.is_break, d.path) == (False, "workflow_skip")


async def test_same_execution_is_skipped() -> None:
    window = [user("run a", execution_id="ex-9"), agent("ok"), user("run b", execution_id="ex-9")]
    d = await run(window, 0.0)
    assert (d.is_break, d.path) == (False, "workflow_skip")


async def test_different_or_empty_ids_are_scored() -> None:
    window = [user("a", workflow_id="wf-1"), user("b", workflow_id="wf-2")]
    assert (await run(window, 0.0)).path == "low"
    window = [user("a", workflow_id=""), user("b", workflow_id="")]
    assert (await run(window, 0.0)).path == "low"


async def test_high_continues() -> None:
    d = await run(CONVERSATION, 0.9)
    assert d == Decision(is_break=False, path="high", score=0.9, scorer="fixed")
    assert (await run(CONVERSATION, 0.8)).path == "high"  # the high bound is inclusive


async def test_low_breaks() -> None:
    d = await run(CONVERSATION, 0.2)
    assert d == Decision(is_break=True, path="low", score=0.2, scorer="fixed", starts_at=2)
    assert (await run(CONVERSATION, 0.5)).path != "low"  # below low breaks; low itself is gray


async def test_gray_arbiter_true_continues() -> None:
    arbiter = FakeArbiter(True)
    d = await run(CONVERSATION, 0.6, arbiter=arbiter)
    assert (d.is_break, d.path, d.score) == (False, "llm_true", 0.6)
    assert arbiter.asked == [("How do I reset my password?", "It never arrived.")]


async def test_gray_arbiter_false_breaks() -> None:
    d = await run(CONVERSATION, 0.7, arbiter=FakeArbiter(False))
    assert (d.is_break, d.path) == (True, "llm_false")


@pytest.mark.parametrize("arbiter", [None, FakeArbiter(None), FakeArbiter(True, fail=True)])
async def test_gray_without_answer_falls_back_to_midpoint(arbiter: FakeArbiter | None) -> None:
    above = await run(CONVERSATION, 0.7, arbiter=arbiter)
    below = await run(CONVERSATION, 0.6, arbiter=arbiter)
    assert (above.is_break, above.path) == (False, "llm_fallback")
    assert (below.is_break, below.path) == (True, "llm_fallback")


async def test_force_flush_breaks_whatever_the_score() -> None:
    window = [user("start"), *(agent(f"step {i}", type="action") for i in range(17)), agent("answer"), user("more")]
    assert len(window) == 20
    d = await run(window, 0.99)
    assert (d.is_break, d.path, d.score) == (True, "force_flush", None)
    assert (await run([*window[:-2], user("more")], 0.99)).path == "high"  # 19 events: no flush


async def test_a_force_flush_that_keeps_events_cuts_before_the_user_message_nearest_to_keeping_them() -> None:
    pairs = [turn for i in range(9) for turn in (user(f"question {i}"), agent(f"answer {i}"))]
    window = [agent("Hello, how can I help?"), *pairs, user("question 9")]  # user messages at 1, 3, ..., 19
    assert len(window) == 20
    kept = await run(window, 0.99, keep=9)
    assert (kept.is_break, kept.path, kept.starts_at) == (True, "force_flush", 11)  # 9 events stay in the window
    assert window[11].content == "question 5"
    assert (await run(window, 0.99, keep=10)).starts_at == 9  # 9 and 11 are as near: the earlier keeps more
    assert (await run(window, 0.99)).starts_at == 19  # keep 0: the seed's cut at the new message
    steps = [user("start"), *(agent(f"step {i}", type="action") for i in range(18)), user("more")]
    assert (await run(steps, 0.99, keep=10)).starts_at == 19  # no other user message to cut before


async def test_replay_restarts_the_window_where_a_keeping_flush_cut() -> None:
    turns = [turn for i in range(8) for turn in (user(f"q{i}"), agent(f"a{i}"))]
    kwargs = {"scorer": FixedScorer(0.99), "embedder": CountingEmbedder(), "thresholds": TH}
    result = await replay(turns, max_events_before_flush=8, flush_keep_events=4, **kwargs)  # type: ignore[arg-type]
    flushes = [(i, d.starts_at) for i, d in result.decisions if d.path == "force_flush"]
    # At 9 events the cut falls before the user message nearest to keeping 4 (window indices 4 and 6
    # are as near: the earlier), and the next window starts there.
    assert flushes == [(8, 4), (12, 4)]
    assert [i for i, s in enumerate(result.starts) if s] == [4, 8]


async def test_a_user_message_long_after_the_event_before_it_closes_the_segment_whatever_the_score() -> None:
    window = [at(CONVERSATION[0], 1000.0), at(CONVERSATION[1], 1010.0), at(CONVERSATION[2], 1010.0 + 3601)]
    d = await run(window, 0.99, session_gap=3600)
    assert d == Decision(is_break=True, path="time_gap", score=None, scorer="fixed", starts_at=2)
    window = [at(user("first of the day", workflow_id="w"), 1000.0), at(user("next", workflow_id="w"), 1000.0 + 7200)]
    assert (
        await run(window, 0.99, session_gap=3600)
    ).path == "time_gap"  # a session boundary holds inside a workflow too


async def test_a_conversation_the_agent_resumes_after_a_silence_starts_a_segment_at_the_agent_turn() -> None:
    # The agent speaks first after two days (a greeting, a reminder) and the user answers it: the
    # silence is before the agent turn, which opens the new segment with the user's answer.
    window = [
        at(CONVERSATION[0], 1000.0),
        at(CONVERSATION[1], 1010.0),
        at(agent("Good morning! How did the trip go?"), 1010.0 + 2 * 86400),
        at(user("It went well, thanks."), 1020.0 + 2 * 86400),
    ]
    d = await run(window, 0.99, session_gap=3600)
    assert d == Decision(is_break=True, path="time_gap", score=None, scorer="fixed", starts_at=2)
    # The earliest silence since the previous user message decides: what came before it is finished.
    twice = [*window[:3], at(agent("Still there?"), 1010.0 + 3 * 86400), at(user("Yes."), 1020.0 + 3 * 86400)]
    assert (await run(twice, 0.99, session_gap=3600)).starts_at == 2
    # A silence before the previous user message was that message's decision, not this one's.
    later = [*window, at(agent("Glad to hear it."), 1030.0 + 2 * 86400), at(user("Me too."), 1040.0 + 2 * 86400)]
    assert (await run(later, 0.99, session_gap=3600)).path == "high"


async def test_no_time_gap_within_the_limit_without_times_or_when_turned_off() -> None:
    window = [at(CONVERSATION[0], 1000.0), at(CONVERSATION[1], 1010.0), at(CONVERSATION[2], 1010.0 + 3600)]
    assert (await run(window, 0.99, session_gap=3600)).path == "high"
    assert (await run([*window[:2], at(CONVERSATION[2], 99999.0)], 0.99, session_gap=0)).path == "high"
    assert (await run(CONVERSATION, 0.99, session_gap=1)).path == "high"  # turns without a time


async def test_a_workflow_window_reaching_the_limit_is_flushed_and_the_next_window_continues_the_workflow() -> None:
    window = [
        user("a", workflow_id="w"),
        *(agent(f"obs {i}", type="observation") for i in range(25)),
        user("b", workflow_id="w"),
    ]
    flushed = await run(window, 0.0)
    assert flushed == Decision(is_break=True, path="force_flush", score=None, scorer="fixed", starts_at=26)

    # The next window starts at the message that was cut off, and the workflow goes on in it unscored.
    next_window = [*window[flushed.starts_at :], agent("obs 26", type="observation"), user("c", workflow_id="w")]
    assert (await run(next_window, 0.0)).path == "workflow_skip"


async def test_a_first_user_message_after_the_limit_of_agent_events_flushes_them() -> None:
    window = [*(agent(f"obs {i}", type="observation") for i in range(19)), user("what happened?")]
    d = await run(window, 0.0)
    assert (d.is_break, d.path, d.starts_at) == (True, "force_flush", 19)


async def test_the_workflow_skip_still_spares_the_similarity_check_below_the_limit() -> None:
    window = [
        user("a", workflow_id="w"),
        *(agent(f"obs {i}", type="observation") for i in range(10)),
        user("b", workflow_id="w"),
    ]
    assert (await run(window, 0.0)).path == "workflow_skip"


async def test_turns_after_new_index_are_ignored() -> None:
    scorer = FixedScorer(0.9)
    window = [*CONVERSATION, agent("later answer"), user("a later question")]
    await decide(
        window,
        new_index=2,
        scorer=scorer,
        embedder=CountingEmbedder(),
        thresholds=TH,
        arbiter=None,
        max_events_before_flush=20,
    )
    assert scorer.seen == [[t.content for t in CONVERSATION]]


async def test_only_user_messages_are_decided() -> None:
    with pytest.raises(ValueError):
        await run([user("a"), agent("b")], 0.5)


async def test_paths_that_stop_early_embed_nothing() -> None:
    embedder = CountingEmbedder()
    scorer = PairCosineScorer()
    for window in ([user("only")], [user("a", execution_id="e"), user("b", execution_id="e")]):
        await decide(
            window,
            new_index=len(window) - 1,
            scorer=scorer,
            embedder=embedder,
            thresholds=TH,
            arbiter=None,
            max_events_before_flush=20,
        )
    assert embedder.calls == 0


async def test_pair_cosine_is_the_seed_rule() -> None:
    assert default_thresholds("pair_cosine") == Thresholds(high=0.72, low=0.52)
    window = [user("first"), agent("reply"), user("second")]
    scorer = PairCosineScorer()
    assert scorer.needed_indices(window, 2) == [0, 2]
    assert decision_texts(window, 2, scorer) == ["first", "second"]
    vecs = {0: np.array([1.0, 0.0]), 2: np.array([0.6, 0.8])}
    assert scorer.score(window, 2, vecs) == pytest.approx(0.6)


def test_thresholds_from_settings() -> None:
    cont = default_thresholds("continuity")
    assert 0.0 <= cont.low < cont.high <= 1.0
    assert thresholds_from_settings(load_settings(chain_scorer="continuity")) == cont
    got = thresholds_from_settings(load_settings(chain_scorer="pair_cosine", chain_sim_high=0.9, chain_sim_low=0.3))
    assert got == Thresholds(high=0.9, low=0.3)
    with pytest.raises(ValueError):
        Thresholds(high=0.2, low=0.4)


def test_make_scorer_names() -> None:
    assert make_scorer("continuity").name == "continuity"
    assert make_scorer("pair_cosine").name == "pair_cosine"
    with pytest.raises(ValueError):
        make_scorer("nope")


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


async def test_real_continuity_scorer_separates_same_from_new_topic(embedder: LocalEmbedder) -> None:
    scorer = ContinuityScorer()
    thresholds = default_thresholds("continuity")
    base = [
        user("How do I reset the password of my email account?"),
        agent("Open Settings, choose Security and click 'Forgot password'. We will email you a reset link."),
    ]
    same = [
        *base,
        user("I clicked it but the reset link never arrived. Should I check my spam folder for the password email?"),
    ]
    new = [*base, user("What is a good recipe for a vegetarian lasagna?")]
    kwargs = dict(
        new_index=2, scorer=scorer, embedder=embedder, thresholds=thresholds, arbiter=None, max_events_before_flush=20
    )
    d_same = await decide(same, **kwargs)  # type: ignore[arg-type]
    d_new = await decide(new, **kwargs)  # type: ignore[arg-type]
    assert d_same.scorer == "continuity" and d_same.score is not None and d_new.score is not None
    assert 0.0 <= d_new.score < d_same.score <= 1.0
    assert not d_same.is_break
    assert d_new.is_break


async def test_continuity_scorer_is_causal_and_cheap(embedder: LocalEmbedder) -> None:
    scorer = ContinuityScorer()
    window = [
        user("Can I get a replacement card?"),
        agent("Yes, up to three a year."),
        user("Do I need documents?"),
        agent("A later answer"),
        user("A later, unrelated question about taxes"),
    ]
    vecs = {i: v for i, v in enumerate(await embedder.embed([t.content for t in window]))}
    short = {i: vecs[i] for i in range(3)}
    assert scorer.score(window, 2, vecs) == scorer.score(window[:3], 2, short)
    started = time.perf_counter()
    for _ in range(100):
        scorer.score(window, 2, vecs)
    assert (time.perf_counter() - started) / 100 < 0.010  # well under 10 ms per decision


# --- boundary placement: Decision.starts_at -------------------------------------------------------


def constant_opener(probability_logit: float, threshold: float = 0.5) -> OpenerModel:
    """An opener whose P(agent turn opened a topic) is sigmoid(probability_logit) for every input."""
    n = len(OPENER_FEATURE_NAMES)
    classifier = Classifier(
        feature_names=OPENER_FEATURE_NAMES,
        mean=np.zeros(n),
        scale=np.ones(n),
        coef=np.zeros(n),
        intercept=probability_logit,
    )
    return OpenerModel(classifier=classifier, threshold=threshold)


class OpenerScorer(FixedScorer):
    """A fixed score plus an opener model; reads every message's (identical) embedding."""

    def __init__(self, value: float, opener: OpenerModel | None) -> None:
        super().__init__(value)
        self.opener = opener

    def needed_indices(self, window: Sequence[Turn], new_index: int) -> list[int]:
        return [i for i in range(new_index + 1) if window[i].type == "message"]


async def run_with_opener(window: Sequence[Turn], score: float, opener: OpenerModel | None) -> Decision:
    return await decide(
        window,
        new_index=len(window) - 1,
        scorer=OpenerScorer(score, opener),
        embedder=CountingEmbedder(),
        thresholds=TH,
        arbiter=None,
        max_events_before_flush=20,
    )


def test_starts_at_is_set_exactly_on_breaks() -> None:
    with pytest.raises(ValueError):
        Decision(is_break=True, path="low", score=0.1, scorer="x")
    with pytest.raises(ValueError):
        Decision(is_break=False, path="high", score=0.9, scorer="x", starts_at=2)


async def test_breaks_without_opener_start_at_the_new_message() -> None:
    assert (await run(CONVERSATION, 0.9)).starts_at is None
    assert (await run(CONVERSATION, 0.6)).starts_at == 2  # fallback break
    assert (await run(CONVERSATION, 0.7, arbiter=FakeArbiter(False))).starts_at == 2
    window = [user("start"), *(agent(f"step {i}", type="action") for i in range(17)), agent("answer"), user("more")]
    assert (await run(window, 0.99)).starts_at == 19  # force flush


async def test_opener_moves_the_break_to_the_agent_turn_whatever_the_score() -> None:
    d = await run_with_opener(CONVERSATION, 0.99, constant_opener(5.0))
    assert (d.is_break, d.path, d.starts_at, d.score) == (True, "agent_opened", 1, 0.99)
    d = await run_with_opener(CONVERSATION, 0.2, constant_opener(5.0))
    assert (d.path, d.starts_at) == ("agent_opened", 1)


async def test_opener_below_threshold_leaves_the_gate_alone() -> None:
    d = await run_with_opener(CONVERSATION, 0.2, constant_opener(-5.0))
    assert (d.is_break, d.path, d.starts_at) == (True, "low", 2)
    d = await run_with_opener(CONVERSATION, 0.99, constant_opener(-5.0))
    assert (d.is_break, d.path, d.starts_at) == (False, "high", None)


async def test_opener_only_for_an_agent_message_right_before() -> None:
    always = constant_opener(5.0)
    two_users = [user("a"), agent("b"), user("c"), user("d")]
    assert (await run_with_opener(two_users, 0.99, always)).path == "high"
    tool_step = [user("a"), agent("b"), agent("calling a tool", type="action"), user("c")]
    assert (await run_with_opener(tool_step, 0.99, always)).path == "high"
    assert not opener_candidate([agent("hello"), user("a"), agent("b")], 2)  # not a user message's window
    assert not opener_candidate([agent("hello"), user("a")], 1)


async def test_replay_places_the_boundary_at_starts_at_and_restarts_there() -> None:
    roles = ["user", "agent", "user", "agent", "user", "agent", "user"]
    turns = [Turn(role=r, type="message", content=f"t{i}") for i, r in enumerate(roles)]
    scorer = OpenerScorer(0.99, constant_opener(5.0))
    pred = await replay(
        turns,
        scorer=scorer,
        embedder=CountingEmbedder(),
        thresholds=TH,  # type: ignore[arg-type]
        max_events_before_flush=20,
    )
    # user 2 breaks at agent 1 and the window restarts there: [agent 1, user 2, agent 3, user 4], so
    # starts_at for user 4 is window index 2 (utterance 3); likewise user 6 -> utterance 5.
    assert pred.starts == (0, 1, 0, 1, 0, 1, 0)
    assert [(i, d.path, d.starts_at) for i, d in pred.decisions] == [
        (0, "first_message", None),
        (2, "agent_opened", 1),
        (4, "agent_opened", 2),
        (6, "agent_opened", 2),
    ]


async def test_replay_decides_each_user_message_against_the_open_segment_only() -> None:
    turns = [user("a"), agent("b"), agent("c", type="action"), user("d"), agent("e"), user("f")]
    scorer = FixedScorer(0.1)  # low: every scored user message breaks
    pred = await replay(turns, scorer=scorer, embedder=CountingEmbedder(), thresholds=TH, max_events_before_flush=20)  # type: ignore[arg-type]
    assert pred.starts == (0, 0, 0, 1, 0, 1)
    assert [(i, d.path, d.starts_at) for i, d in pred.decisions] == [
        (0, "first_message", None),
        (3, "low", 3),
        (5, "low", 2),
    ]
    assert scorer.seen == [
        ["a", "b", "c", "d"],
        ["d", "e", "f"],
    ]  # the window restarts at the break, nothing after the new message


async def test_replay_passes_the_session_gap_and_the_flush_size_to_decide() -> None:
    turns = [
        at(user("a"), 0.0),
        at(agent("b"), 1.0),
        at(user("c"), 5000.0),
        at(agent("d"), 5001.0),
        at(user("e"), 5002.0),
    ]
    kwargs = {"scorer": FixedScorer(0.99), "embedder": CountingEmbedder(), "thresholds": TH}
    gap = await replay(turns, max_events_before_flush=20, session_gap_seconds=3600, **kwargs)  # type: ignore[arg-type]
    assert [d.path for _, d in gap.decisions] == ["first_message", "time_gap", "high"] and gap.starts == (0, 0, 1, 0, 0)
    # The agent resumes the conversation: the next segment starts at its turn, not at the user's answer.
    resumed = [turns[0], turns[1], at(agent("c"), 5000.0), at(user("d"), 5001.0), turns[4]]
    gap = await replay(resumed, max_events_before_flush=20, session_gap_seconds=3600, **kwargs)  # type: ignore[arg-type]
    assert [d.path for _, d in gap.decisions] == ["first_message", "time_gap", "high"] and gap.starts == (0, 0, 1, 0, 0)
    flush = await replay(turns, max_events_before_flush=3, **kwargs)  # type: ignore[arg-type]
    assert [d.path for _, d in flush.decisions] == ["first_message", "force_flush", "force_flush"] and flush.starts == (
        0,
        0,
        1,
        0,
        1,
    )


async def test_real_opener_agent_introduces_the_new_topic(embedder: LocalEmbedder) -> None:
    window = [
        user("I just got back from a hiking trip in the mountains."),
        agent("That sounds amazing! How long were you out there?"),
        user("Three days, we camped by a lake every night."),
        agent("Nice. Do you like cooking? I have been trying new pasta recipes lately."),
        user("Yes, I love cooking pasta! Carbonara is my favorite."),
    ]
    d = await decide(
        window,
        new_index=4,
        scorer=make_scorer("continuity"),
        embedder=embedder,
        thresholds=default_thresholds("continuity"),
        arbiter=None,
        max_events_before_flush=20,
    )
    assert (d.is_break, d.path, d.starts_at) == (True, "agent_opened", 3)
    # Without placement the user's reply continues the agent turn: the break is missed.
    d_old = await decide(
        window,
        new_index=4,
        scorer=make_scorer("continuity", placement=False),
        embedder=embedder,
        thresholds=default_thresholds("continuity"),
        arbiter=None,
        max_events_before_flush=20,
    )
    assert d_old.starts_at is None and not d_old.is_break


async def test_real_opener_agent_answers_the_previous_question(embedder: LocalEmbedder) -> None:
    window = [
        user("Hello, I need help applying for student loan forgiveness."),
        agent("Sure. Do you work full-time for a government or non-profit organization?"),
        user("Yes, I do. How many payments do I need to make before the loan is forgiven?"),
        agent("You need 120 qualifying monthly payments under a qualifying repayment plan."),
        user("Can I also get a deferment on my car insurance payments?"),
    ]
    d = await decide(
        window,
        new_index=4,
        scorer=make_scorer("continuity"),
        embedder=embedder,
        thresholds=default_thresholds("continuity"),
        arbiter=None,
        max_events_before_flush=20,
    )
    assert d.is_break and d.starts_at == 4 and d.path != "agent_opened"


def test_committed_opener_artifact_loads() -> None:
    scorer = make_scorer("continuity")
    assert isinstance(scorer, ContinuityScorer) and isinstance(scorer.opener, OpenerModel)
    assert 0.0 < scorer.opener.threshold < 1.0
    assert ContinuityScorer().opener is None  # explicit construction: no placement unless given


def test_the_continuity_opener_reads_the_agent_turns_embedding_and_the_agnostic_one_does_not() -> None:
    continuity, agnostic = make_scorer("continuity"), make_scorer("continuity_agnostic")
    assert isinstance(continuity, ContinuityScorer) and isinstance(agnostic, ContinuityScorer)
    assert continuity.opener is not None and continuity.opener.agent_embedding
    assert len(continuity.opener.classifier.feature_names) == len(OPENER_FEATURE_NAMES) + 384
    assert agnostic.opener is not None and not agnostic.opener.agent_embedding
    assert agnostic.opener.classifier.feature_names == OPENER_FEATURE_NAMES


def test_the_agent_turns_embedding_follows_the_hand_features() -> None:
    window = [
        user("hi"),
        agent("hello, how can I help?"),
        user("my order is late"),
        agent("what do you cook?"),
        user("pasta"),
    ]
    vectors = {i: np.eye(384)[i] for i in range(len(window))}
    hand = opener_features(window, 4, vectors)
    row = opener_features(window, 4, vectors, agent_embedding=True)
    assert hand.shape == (len(OPENER_FEATURE_NAMES),) and row.shape == (len(OPENER_FEATURE_NAMES) + 384,)
    np.testing.assert_array_equal(row[: len(hand)], hand)
    np.testing.assert_array_equal(row[len(hand) :], vectors[3])  # the agent turn at new_index - 1


def test_an_opener_with_a_foreign_feature_list_is_refused() -> None:
    names = (*OPENER_FEATURE_NAMES, "agent_emb_0", "agent_emb_2")  # a gap: not opener_feature_names(n)
    n = len(names)
    classifier = Classifier(names, np.zeros(n), np.ones(n), np.zeros(n), 0.0)
    with pytest.raises(ValueError, match="different feature list"):
        OpenerModel(classifier=classifier, threshold=0.5)


@pytest.mark.parametrize("artifact", ["continuity_v1", "opener_v1", "opener_v2"])
def test_committed_artifacts_match_their_training_records(artifact: str) -> None:
    import hashlib
    import json
    from importlib import resources

    folder = resources.files("athena_cognition.detector")
    record = json.loads((folder / f"{artifact}.record.json").read_text(encoding="utf-8"))
    digest = hashlib.sha256((folder / f"{artifact}.npz").read_bytes()).hexdigest()
    assert record["artifact_sha256"] == digest  # the record describes the very bytes that are committed
    assert record["command"].startswith("athena train ")
