"""The words a chain is found by: its lexicon, and the terms of a query, for lexical (BM25) search.

A chain's lexicon is the count of each term over the content of its events (every role and type:
an observation's tool output may hold the fact a later question asks about). Terms are
`athena.text.terms`: casefolded words and numbers of any script (Chinese, Japanese and Korean as
character bigrams), stop words of the text's language dropped, Latin-script words lightly stemmed
so that the forms a question and a conversation use meet ("researching" and "researched" are both
`research`, "loves" and "loved" both `lov`).

Stored on the chain document (`lexicon`: {term: count}, `lexicon_terms`: the sum of the counts) by
formation when it writes or merges the chain; `lexical_index.py` searches it. Chains written before
terms were read in every script hold only their ASCII words' terms until they are formed again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from athena.text import terms

__all__ = ["MAX_LEXICON_TERMS", "chain_lexicon", "lexicon_length", "merge_lexicons", "query_terms", "terms"]

MAX_LEXICON_TERMS = 2000
"""Most distinct terms kept on one chain (its most frequent): bounds the document however long the chain."""


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
