"""Extractive summary: the user's question first, then the most central sentences, under MAX_CHARS.

1. Candidates are the dialogue's prose sentences (code blocks and list markers removed) with at least
   three words and one content word.
2. Centrality: the cosine of a sentence's embedding to the mean of all candidates' embeddings when an
   embedder is given; otherwise keyword overlap, the sum of the segment's word scores of the sentence's
   distinct content words over sqrt(max(8, its word count)), scaled so the best sentence is 1.
   Sentences of fewer than five words weigh x0.7, of more than 45 words x0.8.
3. The lead is, among the user's opening sentence and the user's questions and requests, the one with
   the best centrality / (1 + 0.3 * its rank among the user's sentences): the opening or the earliest
   question usually states the topic (a support request often opens with the problem, not a
   question). Without user sentences, no lead.
4. Then the user's latest correction of a lasting fact, if any (a sentence stating a lasting fact
   that says it changed, fact_updates.py: "Oh and my favourite colour is green now, not blue"), which
   is never a near-duplicate of the fact it corrects; then the user's latest answer to the agent's
   question about them with that question ("What's your dog's name?" "Rex.", answered_questions.py:
   both are candidates whatever their length, and the answer is never the lead); then the most
   central agent sentence after the lead (the answer), then the best remaining sentence, at most
   three in all, skipping near-duplicates (same speaker and cosine > 0.85 or a content-word Jaccard
   >= 0.6) and anything that would pass MAX_CHARS. Without step 4's correction, a chain where a user corrects a fact would be summarised
   by the fact it no longer holds.
5. Rendered in conversation order, except that the lead moves to the front if an agent sentence came
   before it (the summary opens with what the user wanted); each run of one speaker is prefixed with
   "User:" or "Agent:". A sentence longer than MAX_SENTENCE_CHARS is cut at a word boundary with "…".

With no candidate at all ("hi", "ok cool") the summary is the first two messages, clipped: it reads
for what it is, and the quality gate rejects it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from athena_formation.forming.answered_questions import answered_questions
from athena_formation.forming.fact_updates import states_updated_fact
from athena_formation.text.messages import (
    AGENT,
    USER,
    Message,
    Sentence,
    content_words,
    is_question_or_request,
    role_label,
    sentences_of,
    stem,
    words,
)

__all__ = [
    "MAX_CHARS",
    "MAX_SENTENCE_CHARS",
    "answered_pairs",
    "candidate_sentences",
    "clip_text",
    "embedding_centrality",
    "fallback_summary",
    "keyword_centrality",
    "render",
    "select",
]

MAX_CHARS = 400
MAX_SENTENCE_CHARS = 220
_MAX_SENTENCES = 3
_DUPLICATE_COSINE = 0.85
_DUPLICATE_JACCARD = 0.6


def clip_text(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1].rsplit(" ", 1)[0].rstrip(" ,;:-")
    return cut + "…"


def candidate_sentences(messages: Sequence[Message]) -> list[Sentence]:
    """Step 1 of the module docstring, with the user's answers to the agent's questions about them
    and those questions, whatever their length ("Any allergies?" "Shellfish.")."""
    dialogue = _dialogue(messages)
    kept = {p for k in _answer_positions(dialogue) for p in (k - 1, k)}
    return [
        s for s in sentences_of(dialogue) if (len(words(s.text)) >= 3 and content_words(s.text)) or s.message in kept
    ]


def answered_pairs(messages: Sequence[Message], sentences: Sequence[Sentence]) -> list[tuple[int, int]]:
    """(question, answer) indices in `sentences` of each user answer to the agent's question about
    them (answered_questions.py): the question is its message's last sentence, the answer its
    message's first."""
    pairs = []
    for k in sorted(_answer_positions(_dialogue(messages))):
        question = [i for i, s in enumerate(sentences) if s.message == k - 1]
        answer = [i for i, s in enumerate(sentences) if s.message == k]
        if question and answer:
            pairs.append((question[-1], answer[0]))
    return pairs


def _dialogue(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.is_dialogue] or list(messages)


def _answer_positions(dialogue: Sequence[Message]) -> set[int]:
    """Positions in `dialogue` of the user's answers to the agent's questions about them."""
    answers = answered_questions(dialogue)
    return {k for k, m in enumerate(dialogue) if m.index in answers}


def keyword_centrality(sentences: Sequence[Sentence], scores: dict[str, float]) -> list[float]:
    raw = []
    for s in sentences:
        distinct = {stem(w) for w in content_words(s.text)}
        raw.append(sum(scores.get(w, 0.0) for w in distinct) / math.sqrt(max(8, len(words(s.text)))))
    top = max(raw, default=0.0)
    return [r / top if top > 0 else 0.0 for r in raw]


def embedding_centrality(vectors: np.ndarray) -> list[float]:
    centroid = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    if norm == 0:
        return [0.0] * len(vectors)
    return [float(x) for x in vectors @ (centroid / norm)]


def _length_weight(sentence: Sentence) -> float:
    n = len(words(sentence.text))
    return 0.7 if n < 5 else (0.8 if n > 45 else 1.0)


def _duplicate(a: int, b: int, sentences: Sequence[Sentence], vectors: np.ndarray | None) -> bool:
    """Two sentences of the same speaker that say the same thing (an answer may echo its question)."""
    if sentences[a].role != sentences[b].role:
        return False
    if vectors is not None and float(vectors[a] @ vectors[b]) > _DUPLICATE_COSINE:
        return True
    wa = {stem(w) for w in content_words(sentences[a].text)}
    wb = {stem(w) for w in content_words(sentences[b].text)}
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= _DUPLICATE_JACCARD


def select(
    sentences: Sequence[Sentence],
    centrality: Sequence[float],
    vectors: np.ndarray | None = None,
    *,
    answered: Sequence[tuple[int, int]] = (),
) -> list[Sentence]:
    """Steps 3-4 of the module docstring: the chosen sentences, lead first, then in order.
    `answered`: (question, answer) indices of the user's answers to the agent's questions about them
    (answered_pairs)."""
    weighted = [c * _length_weight(s) for s, c in zip(sentences, centrality)]
    answers = {a for _, a in answered}
    user = [i for i, s in enumerate(sentences) if s.role == USER and i not in answers]
    pool = [i for r, i in enumerate(user) if r == 0 or is_question_or_request(sentences[i].text)]
    lead: int | None = None
    if pool:
        rank = {i: r for r, i in enumerate(user)}
        lead = max(pool, key=lambda i: (weighted[i] / (1 + 0.3 * rank[i]), -i))
    chosen: list[int] = [lead] if lead is not None else []

    def fits(*new: int, duplicate_allowed: bool = False) -> bool:
        total = sum(min(len(sentences[j].text), MAX_SENTENCE_CHARS) + 8 for j in [*chosen, *new])
        return total <= MAX_CHARS and (
            duplicate_allowed or not any(_duplicate(i, j, sentences, vectors) for i in new for j in chosen)
        )

    correction = next((i for i in reversed(user) if states_updated_fact([sentences[i].text])), None)
    if correction is not None and correction not in chosen and fits(correction, duplicate_allowed=True):
        chosen.append(correction)
    for pair in answered[-1:]:
        new = [i for i in pair if i not in chosen]
        if new and fits(*new, duplicate_allowed=True):
            chosen.extend(new)
    order = sorted(range(len(sentences)), key=lambda i: (-weighted[i], i))
    if lead is not None:
        answer = next((i for i in order if sentences[i].role == AGENT and i > lead and fits(i)), None)
        if answer is not None:
            chosen.append(answer)
    for i in order:
        if len(chosen) >= _MAX_SENTENCES:
            break
        if i not in chosen and fits(i):
            chosen.append(i)
    ordered = sorted(chosen)
    if lead is not None and any(sentences[i].role != USER for i in ordered if i < lead):
        ordered = [lead] + [i for i in ordered if i != lead]
    return [sentences[i] for i in ordered]


def render(chosen: Sequence[Sentence]) -> str:
    parts: list[str] = []
    previous_role = ""
    for s in chosen:
        text = clip_text(s.text, MAX_SENTENCE_CHARS)
        if s.role != previous_role:
            parts.append(f"{role_label(s.role)}: {text}")
        else:
            parts.append(text)
        previous_role = s.role
    return clip_text(" ".join(parts), MAX_CHARS)


def fallback_summary(messages: Sequence[Message]) -> str:
    """For segments with no candidate sentence: the first two messages as they are."""
    dialogue = _dialogue(messages)
    parts = [f"{role_label(m.role)}: {clip_text(m.text, 150)}" for m in dialogue[:2]]
    return clip_text(" ".join(parts), MAX_CHARS)
