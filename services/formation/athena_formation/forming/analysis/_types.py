"""The analysis result types (re-exported by the package)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ENTITY_KINDS", "Analysis", "Entity", "Topic"]

ENTITY_KINDS: frozenset[str] = frozenset(
    {"person", "organization", "product", "code", "url", "email", "quantity", "version", "date", "place", "other"}
)


@dataclass(frozen=True)
class Topic:
    """A topic as a short noun phrase, with a confidence in [0, 1]."""

    name: str
    confidence: float


@dataclass(frozen=True)
class Entity:
    """Something the segment mentions. `kind` is one of ENTITY_KINDS."""

    text: str
    kind: str


@dataclass(frozen=True)
class Analysis:
    """What chain formation knows about a segment.

    `main_topic` is always present (a chain always has a topic), even when its confidence is below the
    minimum; `subtopics` hold only topics at or above it. `path` says what produced the topics and the
    summary: "llm" or "heuristic".
    """

    main_topic: Topic
    subtopics: tuple[Topic, ...]
    entities: tuple[Entity, ...]
    summary: str
    path: str
