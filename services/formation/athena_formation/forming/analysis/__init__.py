"""Topic and entity analysis of a segment: what chain formation writes on the chain.

    analysis = await analyze(events, llm=llm, embedder=embedder)
    analysis.main_topic, analysis.subtopics, analysis.entities, analysis.summary, analysis.path

LLM first: one JSON completion (main topic, up to `max_topics` subtopics with confidences, entities, a
summary), bounded by `llm_timeout` end to end (TOPIC_ANALYSIS_LLM_TIMEOUT, rate-limit wait included),
and validated field by field (see `_llm`). The heuristic (see `_heuristic`, `_keywords`, `_entities`,
`_summary`) runs when no LLM is configured, when it is unavailable (breaker, rate limit, timeout,
error), when its answer is not a JSON object, and when the answer's main topic or summary is
unusable; `path` then says "heuristic". With a usable LLM answer, `path` is "llm"; only its entity
list falls back on its own, when the answer has none at all.

Topics: subtopics below `min_confidence` are dropped, and at most `max_topics` are kept; the main topic
is always kept, even when its confidence is below `min_confidence`, so every chain has a topic (a
segment with nothing to name gets "small talk" with confidence 0.0).

Text considered: the user and agent messages (system messages and the agent's thoughts, actions and
observations are left out of the heuristic, because tool output is not what the conversation is about;
they are used only when a segment has no dialogue at all). The LLM sees every event, labelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from athena.embeddings import Embedder
from athena.llm import LLMClient
from athena_client.memory.v1 import memory_pb2
from athena_formation.forming.analysis._entities import extract_entities
from athena_formation.forming.analysis._heuristic import SMALL_TALK, heuristic_analysis
from athena_formation.forming.analysis._llm import SCHEMA_HINT, analysis_system, parse_analysis, transcript
from athena_formation.forming.analysis._types import ENTITY_KINDS, Analysis, Entity, Topic
from athena_formation.text.messages import Message, conversation

__all__ = ["ENTITY_KINDS", "SMALL_TALK", "Analysis", "Entity", "Topic", "analyze"]

_log = logging.getLogger("athena.formation.analysis")

_OPERATION = "analysis"
# The client's own request deadline sits just inside ours, so an LLM that is too slow is recorded as
# a timeout (and counts towards the circuit breaker) instead of being cut off unseen.
_INNER_MARGIN = 0.05


async def _llm_analysis(
    messages: Sequence[Message],
    llm: LLMClient,
    *,
    max_topics: int,
    min_confidence: float,
    llm_timeout: float,
    tenant_id: str | None,
) -> Analysis | None:
    try:
        async with asyncio.timeout(llm_timeout):
            obj = await llm.complete_json(
                analysis_system(max_topics),
                "Conversation segment:\n<<<\n" + transcript(messages) + "\n>>>",
                timeout=max(0.01, llm_timeout - _INNER_MARGIN),
                max_wait=llm_timeout / 4,
                schema_hint=SCHEMA_HINT,
                operation=_OPERATION,
                tenant_id=tenant_id,
            )
    except TimeoutError:
        _log.warning("topic analysis: LLM exceeded %.1fs, using the heuristic", llm_timeout)
        return None
    except Exception:  # the client promises not to raise; a bug there must not cost the chain
        _log.exception("topic analysis: LLM call failed, using the heuristic")
        return None
    if obj is None:
        return None
    parts = parse_analysis(obj, messages=messages, max_topics=max_topics, min_confidence=min_confidence)
    if parts.problems:
        _log.info("topic analysis: LLM answer had unusable fields: %s", ", ".join(sorted(set(parts.problems))))
    if parts.main_topic is None or parts.summary is None:
        llm.record_malformed(_OPERATION, str(obj)[:500])
        return None
    entities = parts.entities if parts.entities is not None else extract_entities(messages)
    return Analysis(parts.main_topic, parts.subtopics, entities, parts.summary, "llm")


async def analyze(
    events: Sequence[memory_pb2.Event],
    *,
    llm: LLMClient | None,
    max_topics: int = 3,
    min_confidence: float = 0.6,
    llm_timeout: float = 20.0,
    embedder: Embedder | None = None,
    tenant_id: str | None = None,
) -> Analysis:
    """Main topic, subtopics, entities and summary of a segment (see the module docstring).

    :param llm: None when no LLM is configured: the heuristic decides.
    :param max_topics: most subtopics kept (TOPIC_ANALYSIS_MAX_TOPICS).
    :param min_confidence: subtopics below it are dropped (TOPIC_ANALYSIS_MIN_CONFIDENCE).
    :param llm_timeout: bound of the whole LLM step, in seconds (TOPIC_ANALYSIS_LLM_TIMEOUT).
    :param embedder: optional; the heuristic summary then picks sentences by embedding centrality.
    :param tenant_id: whose segment it is: the LLM call is charged to the tenant's rate-limit budget.
    """
    messages = conversation(events)
    if llm is not None and messages:
        result = await _llm_analysis(
            messages,
            llm,
            max_topics=max_topics,
            min_confidence=min_confidence,
            llm_timeout=llm_timeout,
            tenant_id=tenant_id,
        )
        if result is not None:
            return result
    return await heuristic_analysis(messages, max_topics=max_topics, min_confidence=min_confidence, embedder=embedder)
