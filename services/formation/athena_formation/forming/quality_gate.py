"""The quality gate (the seed's mtm_quality_validator): is a segment worth a chain?

    report = assess_quality(events, analysis, mode="balanced", min_score=0.5, embeddings=rows)
    if report.passed: ...form the chain...   else: log report.reason, keep only the durable events

Everything is computed over the segment's dialogue: its user and agent messages, in order (thoughts,
actions and observations count only for cognitive depth). ramp(x, lo, hi) = clamp((x - lo) / (hi - lo),
0, 1). related(i, j) is how related two messages are, in [0, 1]:
  - with embeddings: ramp(cosine(e_i, e_j), EMBEDDING_RAMP = 0.10 .. 0.50);
  - lexical fallback: ramp(|S_i & S_j| / sqrt(|S_i| |S_j|), LEXICAL_RAMP = 0 .. 0.15) over the sets S of
    content-word stems, raised to ADJACENCY_CREDIT (0.5) when i is a user question/request and j the
    very next message, a substantive agent answer (word overlap misses paraphrase; structure does not).
A message is *substantive* with >= 6 words and >= 2 content words; a *question or request* is a sentence
ending in "?", opening with an interrogative, or asking for something ("please", "I need", "how do I",
an imperative), carrying a content word ("How are you?" does not count).

Metrics, each in [0, 1]:
  coherence     = 0.5 * mean over consecutive pairs of related(k, k+1)
                + 0.5 * mean over messages of central(k), where central(k) is
                  ramp(cosine(e_k, mean of the other messages' embeddings), EMBEDDING_RAMP), or lexically
                  ramp(share of S_k found in the other messages, LEXICAL_SHARE_RAMP = 0 .. 0.40)
                  (messages without content words are skipped); a one-message segment scores 0.5.
  completeness  = 0.5 * answered + 0.25 * substance + 0.25 * resolution
                  prompts: the user messages with a question or request (if none: every user message
                  with a content word); a prompt is answered when a substantive agent message follows
                  before the next prompt (a "yes" to a clarifying question does not end it);
                  answered = share of prompts answered; resolution = 1 if the last prompt was answered;
                  substance = min(1, agent content words / 25). No user message but a substantive agent
                  message: answered = resolution = 0.5.
  relevance     = 0.7 * mean over agent messages a of max over earlier user messages u of related(u, a)
                + 0.3 * share of the messages with content words that mention a word of the main topic
                  (0 for the "small talk" topic).
  engagement    = 0.5 * min(1, user<->agent alternations / 3) + 0.25 * min(1, user content words / 12)
                + 0.25 * min(1, agent content words / 25)
  cognitive_depth = 0.7 * min(1, (thought + action + observation events) / all events / 0.5)
                + 0.3 * (distinct kinds among thought, action, observation) / 3
  overall       = 0.4 * coherence + 0.3 * completeness + 0.3 * relevance

A segment passes when, in this order (the first failure is the reason):
  overall >= min_score                               else "overall_below_min"
  the summary is valid                               else "invalid_summary"
  the mode's user-engagement requirement holds       else "no_user_engagement"
  exchanges (user message directly followed by an agent message) >= the mode's minimum
                                                     else "too_few_exchanges"
  coherence, completeness, relevance >= the mode's floor  else "metric_below_floor"
except that in a mode that admits personal facts, a segment that states one (`_states_fact`, the
personal-fact signal of personal_facts.py: someone says something specific about themselves or their
world, "My wife's name is Ana", "I prefer answers in bullet points") passes with a well-formed summary
(non-empty, within the cap, half letters), else "invalid_summary": a fact is worth a chain even as one
message without an exchange, which the metrics above cannot see. The metrics are computed and
reported all the same.

A summary is valid when it is non-empty, at most the mode's character cap, at least half letters
(of its non-space characters), and has the mode's number of content words once the "User:"/"Agent:"
labels are set aside: greetings, thanks, "ok", "lol" and other small talk are not content words, nor
are first names ("Thanks, Maria!"), so
"User: hi Agent: Hello! How can I help you today?" is not a valid summary in any mode.

Modes (MEMORY_OS_MTM_QUALITY_MODE):

  mode       validation  user engagement required                  summary: content words / max chars  min exchanges  metric floor  personal facts
  fast       permissive  no                                         >= 2 / 2000                          0              none          admitted
  balanced   balanced    yes: the user asked a question, made a     >= 3 / 1000                          0              none          admitted
                         request, or shared something substantial
                         (a message with >= 6 content words) that
                         the agent replied to
  thorough   strict      yes: the user asked a question or made a   >= 5 / 600                           2              0.35          the seed's rule
                         request

Balanced counts substantial sharing as engagement because conversations between people (LoCoMo) are
mostly life updates answered with interest, not questions; the seed's literal rule ("the user asked
questions") is the strict mode's. Small talk fails in every mode (overall score or summary).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.analysis import SMALL_TALK, Analysis
from athena_formation.forming.answered_questions import answered_questions
from athena_formation.forming.personal_facts import states_personal_fact
from athena_formation.text.gazetteer import FIRST_NAMES
from athena_formation.text.messages import (
    AGENT,
    USER,
    Message,
    content_words,
    conversation,
    is_question_or_request,
    split_sentences,
    stem,
    strip_markup,
    words,
)

__all__ = ["MODES", "ModeRules", "QualityReport", "assess_quality"]

_log = logging.getLogger("athena.formation.quality")

COHERENCE_WEIGHT = 0.4
COMPLETENESS_WEIGHT = 0.3
RELEVANCE_WEIGHT = 0.3

# Similarity ramps (calibrated on the shared data, see docs/formation.md): a raw similarity at or below
# `lo` scores 0, at or above `hi` scores 1, linear in between.
EMBEDDING_RAMP = (0.10, 0.50)
"""Cosine of all-MiniLM-L6-v2 embeddings: unrelated messages sit near 0.1-0.2, a question and its answer
near 0.4-0.8."""
LEXICAL_RAMP = (0.0, 0.15)
"""Cosine of two sets of content-word stems."""
LEXICAL_SHARE_RAMP = (0.0, 0.40)
"""Share of a message's content words that recur elsewhere in the segment."""
ADJACENCY_CREDIT = 0.5
"""Lexical fallback only: a user question/request answered by the very next (substantive) agent message
is related at least this much, shared words or not (word overlap misses paraphrase)."""

SUBSTANTIVE_MIN_WORDS = 6
SUBSTANTIVE_MIN_CONTENT = 2
DISCLOSURE_MIN_CONTENT = 6
"""A user message with this many content words, answered by the agent, counts as user engagement in
balanced mode (the user shared something substantial: a problem, a plan, a life update)."""


@dataclass(frozen=True)
class ModeRules:
    """What one validation mode requires (see the module docstring)."""

    name: str
    user_engagement: str
    """"none": not required; "engaged": the user asked, requested or shared something substantial that
    the agent answered; "asked": the user asked a question or made a request."""
    summary_min_content_words: int
    summary_max_chars: int
    min_exchanges: int
    metric_floor: float
    """Coherence, completeness and relevance must each reach this (0: no floor)."""
    admits_personal_facts: bool = False
    """A segment that states a personal fact passes with a well-formed summary, whatever its scores
    (see `_states_fact`)."""


MODES: dict[str, ModeRules] = {
    "fast": ModeRules("permissive", "none", 2, 2000, 0, 0.0, admits_personal_facts=True),
    "balanced": ModeRules("balanced", "engaged", 3, 1000, 0, 0.0, admits_personal_facts=True),
    "thorough": ModeRules("strict", "asked", 5, 600, 2, 0.35),
}


@dataclass(frozen=True)
class QualityReport:
    coherence: float
    completeness: float
    relevance: float
    engagement: float
    cognitive_depth: float
    overall: float
    summary_valid: bool
    user_asked_questions: bool
    """The user asked a question or made a request (phatic "how are you?" does not count)."""
    passed: bool
    reason: str
    """"" when passed; else the first failed check: overall_below_min, invalid_summary,
    no_user_engagement, too_few_exchanges, metric_below_floor."""
    user_engaged: bool = False
    """user_asked_questions, or the user shared something substantial (a message with at least
    DISCLOSURE_MIN_CONTENT content words) that the agent replied to: balanced mode's requirement."""
    personal_fact: bool = False
    """The segment states a personal fact (`_states_fact`), whether or not the mode admits on it."""


def _ramp(x: float, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    return min(1.0, max(0.0, (x - lo) / (hi - lo)))


def _stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(strip_markup(text))}


def _lexical(a: set[str], b: set[str]) -> float:
    """Cosine of two binary bags of content-word stems."""
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def _substantive(text: str) -> bool:
    return len(words(text)) >= SUBSTANTIVE_MIN_WORDS and len(content_words(text)) >= SUBSTANTIVE_MIN_CONTENT


def _asks(text: str) -> bool:
    return any(is_question_or_request(s) for s in split_sentences(strip_markup(text)))


class _Segment:
    """The dialogue of a segment with what every metric needs, computed once."""

    def __init__(self, events: Sequence[memory_pb2.Event], embeddings: np.ndarray | None) -> None:
        self.events = events
        self.all = conversation(events)
        self.dialogue: list[Message] = [m for m in self.all if m.is_dialogue]
        self.stems = [_stems(m.text) for m in self.dialogue]
        self.vectors: np.ndarray | None = None
        if embeddings is not None and self.dialogue:
            rows = np.asarray(embeddings, dtype=np.float32)[[m.index for m in self.dialogue]]
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            self.vectors = rows / np.where(norms > 0, norms, 1.0)

    def related(self, i: int, j: int) -> float:
        """How related messages i < j are, in [0, 1] (the ramped similarity; see the module docstring)."""
        if self.vectors is not None:
            return _ramp(float(self.vectors[i] @ self.vectors[j]), EMBEDDING_RAMP)
        score = _ramp(_lexical(self.stems[i], self.stems[j]), LEXICAL_RAMP)
        first, second = self.dialogue[i], self.dialogue[j]
        if (
            j == i + 1
            and first.role == USER
            and second.role == AGENT
            and _asks(first.text)
            and _substantive(second.text)
        ):
            score = max(score, ADJACENCY_CREDIT)
        return score

    def central(self, k: int) -> float | None:
        """How well message k fits the rest of the segment, in [0, 1]; None if it cannot be judged."""
        if self.vectors is not None:
            others = np.delete(self.vectors, k, axis=0).mean(axis=0)
            norm = float(np.linalg.norm(others))
            return _ramp(float(self.vectors[k] @ others) / norm, EMBEDDING_RAMP) if norm > 0 else 0.0
        own = self.stems[k]
        if not own:
            return None
        rest = set().union(*(s for j, s in enumerate(self.stems) if j != k))
        return _ramp(len(own & rest) / len(own), LEXICAL_SHARE_RAMP)

    def indices(self, role: str) -> list[int]:
        return [k for k, m in enumerate(self.dialogue) if m.role == role]


def _coherence(seg: _Segment) -> float:
    n = len(seg.dialogue)
    if n < 2:
        return 0.5  # one message has no flow to judge
    consecutive = sum(seg.related(k, k + 1) for k in range(n - 1)) / (n - 1)
    centrality = [c for c in (seg.central(k) for k in range(n)) if c is not None]
    central = sum(centrality) / len(centrality) if centrality else 0.0
    return 0.5 * consecutive + 0.5 * central


def _prompts(seg: _Segment) -> list[int]:
    users = seg.indices(USER)
    asked = [k for k in users if _asks(seg.dialogue[k].text)]
    return asked or [k for k in users if seg.stems[k]]


def _answered(seg: _Segment, k: int, until: int) -> bool:
    """A substantive agent message after prompt k and before index `until` (the next prompt): the
    user's short replies to clarifying questions ("yes", "no") in between do not end the prompt."""
    return any(seg.dialogue[j].role == AGENT and _substantive(seg.dialogue[j].text) for j in range(k + 1, until))


def _completeness(seg: _Segment) -> float:
    agent_words = sum(len(seg.stems[k]) for k in seg.indices(AGENT))
    substance = min(1.0, agent_words / 25)
    prompts = _prompts(seg)
    if prompts:
        ends = [*prompts[1:], len(seg.dialogue)]
        answered = [_answered(seg, k, end) for k, end in zip(prompts, ends)]
        share = sum(answered) / len(answered)
        resolution = 1.0 if answered[-1] else 0.0
    elif not seg.indices(USER) and any(_substantive(seg.dialogue[k].text) for k in seg.indices(AGENT)):
        share, resolution = 0.5, 0.5  # an agent-only segment: nothing was asked, something was said
    else:
        share, resolution = 0.0, 0.0
    return 0.5 * share + 0.25 * substance + 0.25 * resolution


def _relevance(seg: _Segment, analysis: Analysis) -> float:
    users, agents = seg.indices(USER), seg.indices(AGENT)
    pair_scores = []
    for a in agents:
        before = [u for u in users if u < a]
        if before:
            pair_scores.append(max(seg.related(u, a) for u in before))
        elif users:  # the agent spoke first: judge it against what the user said after
            pair_scores.append(max(seg.related(a, u) for u in users))
    pair = sum(pair_scores) / len(pair_scores) if pair_scores else 0.0
    topic = set() if analysis.main_topic.name == SMALL_TALK else _stems(analysis.main_topic.name)
    with_content = [k for k in range(len(seg.dialogue)) if seg.stems[k]]
    topic_align = (
        sum(1 for k in with_content if seg.stems[k] & topic) / len(with_content) if topic and with_content else 0.0
    )
    return 0.7 * pair + 0.3 * topic_align


def _disclosed(seg: _Segment) -> bool:
    """A substantial user message (DISCLOSURE_MIN_CONTENT content words) that the agent replied to."""
    agents = seg.indices(AGENT)
    return any(
        len(content_words(seg.dialogue[k].text)) >= DISCLOSURE_MIN_CONTENT and any(a > k for a in agents)
        for k in seg.indices(USER)
    )


def _alternations(seg: _Segment) -> int:
    roles = [m.role for m in seg.dialogue if m.role in (USER, AGENT)]
    return sum(1 for a, b in itertools.pairwise(roles) if a != b)


def _exchanges(seg: _Segment) -> int:
    roles = [m.role for m in seg.dialogue]
    return sum(1 for a, b in itertools.pairwise(roles) if a == USER and b == AGENT)


def _engagement(seg: _Segment) -> float:
    user_words = sum(len(seg.stems[k]) for k in seg.indices(USER))
    agent_words = sum(len(seg.stems[k]) for k in seg.indices(AGENT))
    return 0.5 * min(1.0, _alternations(seg) / 3) + 0.25 * min(1.0, user_words / 12) + 0.25 * min(1.0, agent_words / 25)


def _cognitive_depth(seg: _Segment) -> float:
    steps = [m for m in seg.all if m.kind in ("thought", "action", "observation")]
    if not seg.all:
        return 0.0
    density = len(steps) / len(seg.all)
    kinds = len({m.kind for m in steps})
    return 0.7 * min(1.0, density / 0.5) + 0.3 * kinds / 3


_ROLE_LABEL = ("user:", "agent:", "system:")


def summary_is_well_formed(summary: str, rules: ModeRules) -> bool:
    """Non-empty, within the mode's length cap and mostly letters: what any stored summary must be."""
    text = summary.strip()
    if not text or len(text) > rules.summary_max_chars:
        return False
    visible = [ch for ch in text if not ch.isspace()]
    return sum(ch.isalpha() for ch in visible) >= 0.5 * len(visible)


def summary_is_valid(summary: str, rules: ModeRules) -> bool:
    """Well-formed, and with enough content words (greetings, thanks and other small talk do not count,
    nor do first names or the "User:"/"Agent:" labels)."""
    if not summary_is_well_formed(summary, rules):
        return False
    text = summary.strip()
    body = " ".join(w for w in text.split() if w.lower() not in _ROLE_LABEL)
    # First names count for nothing: "Thanks, Maria! ... No problem, John!" says nothing worth keeping.
    substance = [w for w in content_words(body) if w not in FIRST_NAMES]
    return len(substance) >= rules.summary_min_content_words


def _states_fact(seg: _Segment) -> bool:
    """The personal-fact signal: a message of the dialogue states something specific about its speaker
    or their world (personal_facts.py: a first-person statement with a name, a date, a number, a cue
    of family, diet, health, preference, home or work, or enough content words). The agent's
    statements count only when the user said something with a content word too: in a conversation
    between people (LoCoMo) the other side is a person whose news is a memory, and an assistant's
    "I booked your table at Nopa for 8" is a fact of the user's world; an agent talking to itself or
    answering "hi" is not a conversation worth a chain. A user's answer to the agent's question about
    them is a fact too ("What's your dog's name?" "Rex.", answered_questions.py)."""
    users = seg.indices(USER)
    if states_personal_fact(seg.dialogue[k].text for k in users) or answered_questions(seg.dialogue):
        return True
    user_spoke = any(seg.stems[k] for k in users)
    return user_spoke and states_personal_fact(seg.dialogue[k].text for k in seg.indices(AGENT))


def assess_quality(
    events: Sequence[memory_pb2.Event],
    analysis: Analysis,
    *,
    mode: str = "balanced",
    min_score: float = 0.5,
    embeddings: np.ndarray | None = None,
) -> QualityReport:
    """Score a segment and decide whether it becomes a chain (see the module docstring).

    :param mode: fast | balanced | thorough (MEMORY_OS_MTM_QUALITY_MODE); a QualityMode enum works too.
    :param min_score: MTM_QUALITY_MIN_SCORE.
    :param embeddings: optional L2-normalized rows, one per event in order; lexical measures otherwise.
    :raises ValueError: unknown mode, or embeddings whose row count is not the number of events.
    """
    key = getattr(mode, "value", mode)
    if key not in MODES:
        raise ValueError(f"unknown quality mode {mode!r}: expected one of {', '.join(MODES)}")
    rules = MODES[key]
    if embeddings is not None:
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if embeddings.ndim != 2 or embeddings.shape[0] != len(events):
            raise ValueError(f"embeddings: expected {len(events)} rows (one per event), got shape {embeddings.shape}")
        if not np.isfinite(embeddings).all():
            _log.warning("quality gate: embeddings hold NaN/inf; using the lexical measures")
            embeddings = None
    seg = _Segment(events, embeddings)

    coherence = _coherence(seg)
    completeness = _completeness(seg)
    relevance = _relevance(seg, analysis)
    engagement = _engagement(seg)
    depth = _cognitive_depth(seg)
    overall = COHERENCE_WEIGHT * coherence + COMPLETENESS_WEIGHT * completeness + RELEVANCE_WEIGHT * relevance
    summary_valid = summary_is_valid(analysis.summary, rules)
    asked = any(_asks(seg.dialogue[k].text) for k in seg.indices(USER))
    engaged = asked or _disclosed(seg)
    engagement_ok = {"none": True, "engaged": engaged, "asked": asked}[rules.user_engagement]
    fact = _states_fact(seg)

    reason = ""
    if fact and rules.admits_personal_facts:
        if not summary_is_well_formed(analysis.summary, rules):
            reason = "invalid_summary"
    elif overall < min_score:
        reason = "overall_below_min"
    elif not summary_valid:
        reason = "invalid_summary"
    elif not engagement_ok:
        reason = "no_user_engagement"
    elif _exchanges(seg) < rules.min_exchanges:
        reason = "too_few_exchanges"
    elif min(coherence, completeness, relevance) < rules.metric_floor:
        reason = "metric_below_floor"

    def r(x: float) -> float:
        return round(float(x), 4)

    return QualityReport(
        coherence=r(coherence),
        completeness=r(completeness),
        relevance=r(relevance),
        engagement=r(engagement),
        cognitive_depth=r(depth),
        overall=r(overall),
        summary_valid=summary_valid,
        user_asked_questions=asked,
        passed=not reason,
        reason=reason,
        user_engaged=engaged,
        personal_fact=fact,
    )
