"""The words a chain is found by: its lexicon, and the terms of a query, for lexical (BM25) search.

A chain's lexicon is the count of each term over the content of its events (every role and type:
an observation's tool output may hold the fact a later question asks about). A term is a lower-cased
word or number that is not a function word, lightly stemmed so that the forms a question and a
conversation use meet ("researching" and "researched" are both `research`, "loves" and "loved" both
`lov`). The stemmer is deliberately small: plurals, -ing, -ed, -ies and -ly, with a trailing "e"
dropped so that "love" meets "loving". It conflates less than Porter's, and never strips a word of
three letters or fewer.

Stored on the chain document (`lexicon`: {term: count}, `lexicon_terms`: the sum of the counts) by
formation when it writes or merges the chain; `lexical_index.py` searches it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from athena_formation.analysis import FUNCTION_WORDS

__all__ = ["MAX_LEXICON_TERMS", "chain_lexicon", "lexicon_length", "merge_lexicons", "query_terms", "stem", "terms"]

MAX_LEXICON_TERMS = 2000
"""Most distinct terms kept on one chain (its most frequent): bounds the document however long the chain."""

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)*")
_VOWEL = re.compile(r"[aeiouy]")
# Words a question is phrased with, besides the function words: they say nothing about the memory sought.
_QUESTION_WORDS = frozenset(
    "ask asked did do does doing done get got go going gone like likely kind kinds mention mentioned say said tell told thing things "
    "think thought way ways yes yeah oh ok okay".split()
)
_STOP = frozenset(w.replace("'", "") for w in FUNCTION_WORDS) | FUNCTION_WORDS | _QUESTION_WORDS


def stem(word: str) -> str:
    """A light suffix stripper (see the module docstring); numbers and short words are left alone."""
    w = word
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith("ies") or w.endswith("ied"):
        w = w[:-3] + "y"
    elif w.endswith(("sses", "xes", "ches", "shes", "zzes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and _VOWEL.search(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w[-1] == w[-2] and w[-1] not in "lsz":  # running -> run, but spell -> spell
                w = w[:-1]
            break
    if w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def terms(text: str) -> list[str]:
    """The text's terms in order: lower-cased words and numbers, function words dropped, stemmed."""
    out = []
    for token in _TOKEN.findall(text.lower().replace("\u2019", "'")):
        if token in _STOP:
            continue
        if token.endswith("'s"):
            token = token[:-2]
        token = token.replace("'", "")
        if token in _STOP or (len(token) < 2 and not token.isdigit()):
            continue
        out.append(stem(token))
    return out


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, in order of first use."""
    return list(dict.fromkeys(terms(query)))


def chain_lexicon(contents: Iterable[str]) -> dict[str, int]:
    """Term counts over a chain's event contents, at most MAX_LEXICON_TERMS distinct terms (the most frequent)."""
    counts: Counter[str] = Counter()
    for content in contents:
        counts.update(terms(content))
    return _bounded(counts)


def merge_lexicons(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """The lexicon of two parts of one chain (a merge): counts added, the most frequent kept."""
    counts = Counter(a)
    counts.update(b)
    return _bounded(counts)


def _bounded(counts: Counter[str]) -> dict[str, int]:
    return dict(counts.most_common(MAX_LEXICON_TERMS)) if len(counts) > MAX_LEXICON_TERMS else dict(counts)


def lexicon_length(lexicon: Mapping[str, int]) -> int:
    return int(sum(lexicon.values()))
