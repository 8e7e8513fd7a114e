"""Key-phrase extraction for the heuristic topics (RAKE-like, with frequency-based word scores).

1. Candidate phrases are maximal runs of words that are not stopwords, small talk, numbers (or words
   starting with a digit), units ("GB", "ms") or past-tense verbs ("killed", "failed": words ending in
   "ed"), broken at punctuation (RAKE). Runs longer than four words contribute their windows of up
   to three.
2. A word's score counts the dialogue messages it appears in, a user message weighing 1.5 and an agent
   message 1.0 (the user's words say what the segment is about), plus 0.25 per repeat inside a
   message; words of the user's first message (the opening request usually names the topic) get
   x1.5, and words that look specific (capitalized mid-sentence, containing digits or "_") x1.25.
3. A phrase scores sum(word scores) / len**0.3 * (1 + 0.15 * ln(occurrences)): longer phrases of strong
   words win over their single words, one-off strings of weak words do not.
4. Phrases are picked best-first, skipping any that shares at least half of the shorter phrase's words
   with one already picked (so "survivor benefits" does not repeat "social security survivor benefits").
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from athena_formation.analysis._stopwords import is_content_word
from athena_formation.analysis._text import USER, Message, stem, strip_markup

__all__ = ["KeyPhrase", "key_phrases", "word_scores"]

_UNITS = frozenset(
    """
    gb mb kb tb gib mib kib tib ms ns sec secs min mins hr hrs km cm mm mi ft kg mg lb lbs oz ml tbsp tsp
    ghz mhz hz kw mah rpm fps px kcal usd eur gbp
    """.split()
)
_ED_NOUNS = frozenset({"bed", "red", "shed", "hundred", "sacred", "wicked", "naked", "beloved", "embed"})
_OPENING_WEIGHT = 1.5
_USER_WEIGHT = 1.5
_AGENT_WEIGHT = 1.0
_REPEAT_WEIGHT = 0.25
_SPECIFIC_BOOST = 1.25
_MAX_PHRASE_WORDS = 4
_LONG_RUN_WINDOW = 3

# A token, or a piece of punctuation that breaks a phrase ("-" and "'" inside words do not).
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’_\-]*[A-Za-z0-9]|[A-Za-z0-9]|[^\sA-Za-z0-9]")
_BREAKS_AFTER = frozenset(".!?")


@dataclass(frozen=True)
class KeyPhrase:
    text: str
    """Display form: the most common spelling, lowercased unless it is a name, acronym or identifier."""
    stems: tuple[str, ...]
    score: float
    count: int


@dataclass
class _Token:
    word: str  # lowercase, possessive dropped
    surface: str
    sentence_start: bool


def _tokens(text: str) -> list[list[_Token]]:
    """Runs of candidate words (the phrase candidates of one text), in order."""
    runs: list[list[_Token]] = []
    current: list[_Token] = []
    sentence_start = True
    for raw in _TOKEN.findall(text):
        if not raw[0].isalnum():
            if current:
                runs.append(current)
                current = []
            if raw in _BREAKS_AFTER or raw in ":;\n":
                sentence_start = True
            continue
        surface = raw.replace("’", "'")
        if surface.lower().endswith("'s"):
            surface = surface[:-2]
        word = surface.lower()
        if _candidate_word(word):
            current.append(_Token(word, surface, sentence_start))
        elif current:
            runs.append(current)
            current = []
        sentence_start = False
    if current:
        runs.append(current)
    return runs


def _candidate_word(word: str) -> bool:
    if not is_content_word(word) or word[0].isdigit() or word in _UNITS:
        return False
    verb_like = word.endswith("ed") and len(word) > 4 and not word.endswith("eed") and word not in _ED_NOUNS
    return not verb_like


def _looks_specific(token: _Token) -> bool:
    s = token.surface
    return (
        any(ch.isdigit() for ch in s)
        or "_" in s
        or (not token.sentence_start and s[:1].isupper())
        or any(ch.isupper() for ch in s[1:])
    )


def _dialogue(messages: Sequence[Message]) -> list[Message]:
    dialogue = [m for m in messages if m.is_dialogue]
    return dialogue or list(messages)


def _runs_by_message(messages: Sequence[Message]) -> list[tuple[Message, list[list[_Token]]]]:
    return [(m, _tokens(strip_markup(m.text))) for m in _dialogue(messages)]


def _scores_from_runs(parsed: list[tuple[Message, list[list[_Token]]]]) -> dict[str, float]:
    scores: dict[str, float] = defaultdict(float)
    opening: set[str] = set()
    for message, runs in parsed:
        if message.role == USER and runs:
            opening = {stem(t.word) for run in runs for t in run}
            break
    specific: Counter[str] = Counter()
    seen_total: Counter[str] = Counter()
    for message, runs in parsed:
        weight = _USER_WEIGHT if message.role == USER else _AGENT_WEIGHT
        counts: Counter[str] = Counter()
        for run in runs:
            for token in run:
                key = stem(token.word)
                counts[key] += 1
                seen_total[key] += 1
                if _looks_specific(token):
                    specific[key] += 1
        for key, n in counts.items():
            scores[key] += weight + _REPEAT_WEIGHT * (n - 1)
    for key in scores:
        if specific[key] * 2 >= seen_total[key]:
            scores[key] *= _SPECIFIC_BOOST
        if key in opening:
            scores[key] *= _OPENING_WEIGHT
    return dict(scores)


def word_scores(messages: Sequence[Message]) -> dict[str, float]:
    """Stem -> score (step 2 of the module docstring) over the dialogue messages."""
    return _scores_from_runs(_runs_by_message(messages))


def _candidates(run: list[_Token]) -> list[list[_Token]]:
    if len(run) <= _MAX_PHRASE_WORDS:
        return [run]
    out = []
    for size in range(1, _LONG_RUN_WINDOW + 1):
        for start in range(len(run) - size + 1):
            out.append(run[start : start + size])
    return out


def _display(spellings: Counter[tuple[str, ...]]) -> str:
    """The most common spelling (ties: the first seen)."""
    best = spellings.most_common(1)[0][0]
    return " ".join(best)


def _surface(tokens: list[_Token], names: set[str]) -> tuple[str, ...]:
    """A word capitalized only because it opened a sentence is lowercased, unless it is seen
    capitalized mid-sentence elsewhere (a name)."""
    out = []
    for token in tokens:
        s = token.surface
        if token.sentence_start and s[:1].isupper() and s[1:].islower() and token.word not in names:
            s = s.lower()
        out.append(s)
    return tuple(out)


def key_phrases(messages: Sequence[Message], *, limit: int = 10) -> list[KeyPhrase]:
    """The segment's best key phrases, best first, no two sharing half their words."""
    parsed = _runs_by_message(messages)
    scores = _scores_from_runs(parsed)
    counts: Counter[tuple[str, ...]] = Counter()
    spellings: dict[tuple[str, ...], Counter[tuple[str, ...]]] = defaultdict(Counter)
    all_runs: list[tuple[str, ...]] = []
    names = {
        t.word for _m, runs in parsed for run in runs for t in run if not t.sentence_start and t.surface[:1].isupper()
    }
    for _message, runs in parsed:
        for run in runs:
            all_runs.append(tuple(stem(t.word) for t in run))
            for cand in _candidates(run):
                key = tuple(stem(t.word) for t in cand)
                spellings[key][_surface(cand, names)] += 1
    # Occurrences as a contiguous part of any run ("docker container" inside "docker container limit").
    for key in spellings:
        n = len(key)
        counts[key] = sum(
            1 for run in all_runs for i in range(len(run) - n + 1) if run[i : i + n] == key
        ) or 1
    ranked: list[KeyPhrase] = []
    for key, spelled in spellings.items():
        if len(set(key)) < len(key):  # "very very", "bla bla"
            continue
        total = sum(scores.get(w, 0.0) for w in key)
        score = total / len(key) ** 0.3 * (1.0 + 0.15 * math.log(counts[key]))
        ranked.append(KeyPhrase(_display(spelled), key, score, counts[key]))
    ranked.sort(key=lambda p: (-p.score, -p.count, len(p.stems), p.text))
    picked: list[KeyPhrase] = []
    for phrase in ranked:
        words = set(phrase.stems)
        if any(len(words & set(p.stems)) * 2 >= min(len(words), len(p.stems)) for p in picked):
            continue
        picked.append(phrase)
        if len(picked) >= limit:
            break
    return picked
