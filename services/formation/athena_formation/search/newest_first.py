"""Newest first among a user's lasting facts on one subject.

A user who corrects a fact in a later conversation ("I moved, I now live in Munich") leaves two
chains about it; the older one often ranks first ("Where do I live?" meets "I live in Berlin" in its
words and its embedding), and an agent reading the first hit repeats what is no longer true. Among
the hits of one search, chains that both state a lasting fact of the user (`lasting_fact`) and whose
embeddings are closer than SAME_SUBJECT_COSINE are one subject: they keep the places they won in the
ranking, and the newest (by its last event) takes the first of them. Which hits are returned does
not change, only their order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

__all__ = ["SAME_SUBJECT_COSINE", "newest_first"]

SAME_SUBJECT_COSINE = 0.5
"""Cosine between two chains' embeddings above which they tell of one subject. Written pairs of a fact
and its later correction (home, employer, diet, name, car, phone number) measured 0.44 to 0.79 as
text, facts on different subjects of one user 0.13 at the median (docs/formation.md)."""

Hit = TypeVar("Hit")


def newest_first(
    hits: Sequence[Hit],
    doc_of: Callable[[Hit], Mapping[str, Any] | None],
    vectors: Mapping[str, np.ndarray],
) -> list[Hit]:
    """`hits` (best first) with each group of one subject reordered newest first in its own places.

    `doc_of` gives a hit's chain document (None for a hit that is not a chain); `vectors` the unit
    embeddings of the chains."""
    facts = [
        k
        for k, hit in enumerate(hits)
        if (doc := doc_of(hit)) is not None and doc.get("lasting_fact") and doc["_id"] in vectors
    ]
    group = {k: k for k in facts}

    def root(k: int) -> int:
        while group[k] != k:
            k = group[k]
        return k

    for i, a in enumerate(facts):
        for b in facts[i + 1 :]:
            if float(vectors[_id(hits[a], doc_of)] @ vectors[_id(hits[b], doc_of)]) >= SAME_SUBJECT_COSINE:
                group[root(b)] = root(a)
    out = list(hits)
    members: dict[int, list[int]] = {}
    for k in facts:
        members.setdefault(root(k), []).append(k)
    for places in members.values():
        newest = sorted(places, key=lambda k: -float(_doc(hits[k], doc_of).get("last_event_at", 0.0)))
        for place, k in zip(places, newest):
            out[place] = hits[k]
    return out


def _doc(hit: Hit, doc_of: Callable[[Hit], Mapping[str, Any] | None]) -> Mapping[str, Any]:
    doc = doc_of(hit)
    assert doc is not None
    return doc


def _id(hit: Hit, doc_of: Callable[[Hit], Mapping[str, Any] | None]) -> str:
    return str(_doc(hit, doc_of)["_id"])
