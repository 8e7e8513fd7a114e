"""Key-phrase extraction for the heuristic topics (RAKE-like, with frequency-based word scores).

1. Candidate phrases are maximal runs of words that are not stopwords, small talk, numbers (or words
   starting with a digit), units ("GB", "ms") or past-tense verbs ("killed", "failed": words ending in
   "ed"), broken at punctuation (RAKE). Runs longer than four words contribute their windows of up
   to three. Two runs joined by exactly one of "of", "to", "for", "in" also give a bridged candidate of
   at most three content words ("trip to Lisbon", "Bank of America", "cost of living"). First names
   said to the listener ("Thanks, Maria!") are vocatives, not topics, and are skipped.
2. A word's score counts the dialogue messages it appears in, a user message weighing 1.5 and an agent
   message 1.0 (the user's words say what the segment is about), plus 0.25 per repeat inside a
   message; words of the user's first message (the opening request usually names the topic) get
   x2, and words that look specific (capitalized mid-sentence, containing digits or "_") x1.25.
3. A phrase scores sum(word scores) / len**0.3 * (1 + 0.15 * ln(occurrences)), len counting content
   words: longer phrases of strong words win over their single words, one-off strings of weak words
   do not.
4. Phrases are picked best-first, skipping any that shares at least half of the shorter phrase's words
   with one already picked (so "survivor benefits" does not repeat "social security survivor benefits").
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from athena.text import pieces, stop_words, tokens
from athena_formation.text.gazetteer import FIRST_NAMES
from athena_formation.text.messages import USER, Message, stem, strip_markup
from athena_formation.text.stopwords import SMALLTALK, is_content_word

__all__ = ["KeyPhrase", "key_phrases", "word_scores"]

_UNITS = frozenset(
    """
    gb mb kb tb gib mib kib tib ms ns sec secs min mins hr hrs km cm mm mi ft kg mg lb lbs oz ml tbsp tsp
    ghz mhz hz kw mah rpm fps px kcal usd eur gbp
    """.split()
)
_ED_NOUNS = frozenset({"bed", "red", "shed", "hundred", "sacred", "wicked", "naked", "beloved", "embed"})
_OPENING_WEIGHT = 2.0
_BRIDGES = frozenset({"of", "to", "for", "in"})
_BRIDGE_MARK = "~"
_USER_WEIGHT = 1.5
_AGENT_WEIGHT = 1.0
_REPEAT_WEIGHT = 0.25
_SPECIFIC_BOOST = 1.25
_MAX_PHRASE_WORDS = 4
_LONG_RUN_WINDOW = 3

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
    word: str  # casefolded, possessive dropped
    surface: str
    sentence_start: bool


def _tokens(text: str) -> tuple[list[list[_Token]], list[list[_Token]]]:
    """Runs of candidate words of one text, in order, and the bridged candidates between them
    (up to two words of the left run, the bridge word, the first word of the right run)."""
    runs: list[list[_Token]] = []
    bridged: list[list[_Token]] = []
    current: list[_Token] = []
    pending: list[_Token] | None = None  # left words + bridge word, awaiting the right-hand run
    sentence_start = True
    # Words as written and each punctuation mark, which breaks a phrase ("-" and "'" inside words do not).
    raws = pieces(text)
    stops = stop_words(tokens(text))
    for index, raw in enumerate(raws):
        if raw[0].isalnum() and _vocative(raws, index):
            raw = ","  # "Thanks, Maria!" addresses someone; it is not what the segment is about
        if not raw[0].isalnum():  # punctuation ends a run and any bridge
            if current:
                runs.append(current)
                current = []
            pending = None
            if raw in _BREAKS_AFTER or raw in ":;\n":
                sentence_start = True
            continue
        surface = raw.replace("’", "'")
        if surface.lower().endswith("'s"):
            surface = surface[:-2]
        word = surface.casefold()
        token = _Token(word, surface, sentence_start)
        sentence_start = False
        if word not in stops and _candidate_word(word):
            if not current and pending is not None:
                bridged.append([*pending, token])
            pending = None
            current.append(token)
            continue
        pending = [*current[-2:], token] if current and word in _BRIDGES else None
        if current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs, bridged


def _vocative(raws: list[str], index: int) -> bool:
    """A first name said to the listener: "Wow, John, ...", "Thanks Maria!", "Of course, John."."""
    raw = raws[index]
    if not raw[:1].isupper() or raw.lower() not in FIRST_NAMES:
        return False
    before = raws[index - 1] if index > 0 else "."
    after = raws[index + 1] if index + 1 < len(raws) else "."
    return after in {",", "!", "?", "."} and (before in {",", ".", "!", "?"} or before.lower() in SMALLTALK)


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


def _runs_by_message(messages: Sequence[Message]) -> list[tuple[Message, list[list[_Token]], list[list[_Token]]]]:
    return [(m, *_tokens(strip_markup(m.text))) for m in _dialogue(messages)]


def _scores_from_runs(parsed: list[tuple[Message, list[list[_Token]], list[list[_Token]]]]) -> dict[str, float]:
    scores: dict[str, float] = defaultdict(float)
    opening: set[str] = set()
    for message, runs, _bridged in parsed:
        if message.role == USER and runs:
            opening = {stem(t.word) for run in runs for t in run}
            break
    specific: Counter[str] = Counter()
    seen_total: Counter[str] = Counter()
    for message, runs, _bridged in parsed:
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


def _key(tokens: list[_Token]) -> tuple[str, ...]:
    return tuple(_BRIDGE_MARK + t.word if t.word in _BRIDGES else stem(t.word) for t in tokens)


def _content(key: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(w for w in key if not w.startswith(_BRIDGE_MARK))


def key_phrases(messages: Sequence[Message], *, limit: int = 10) -> list[KeyPhrase]:
    """The segment's best key phrases, best first, no two sharing half their words."""
    parsed = _runs_by_message(messages)
    scores = _scores_from_runs(parsed)
    counts: Counter[tuple[str, ...]] = Counter()
    spellings: dict[tuple[str, ...], Counter[tuple[str, ...]]] = defaultdict(Counter)
    all_runs: list[tuple[str, ...]] = []
    names = {
        t.word
        for _m, runs, _b in parsed
        for run in runs
        for t in run
        if not t.sentence_start and t.surface[:1].isupper()
    }
    for _message, runs, bridged in parsed:
        for run in runs:
            all_runs.append(_key(run))
            for cand in _candidates(run):
                spellings[_key(cand)][_surface(cand, names)] += 1
        for cand in bridged:
            key = _key(cand)
            spellings[key][_surface(cand, names)] += 1
            counts[key] += 1
    # Occurrences as a contiguous part of any run ("docker container" inside "docker container limit").
    ngrams: Counter[tuple[str, ...]] = Counter(
        run[i : i + n] for run in all_runs for n in range(1, _MAX_PHRASE_WORDS + 1) for i in range(len(run) - n + 1)
    )
    for key in spellings:
        if key not in counts:
            counts[key] = ngrams[key] or 1
    ranked: list[KeyPhrase] = []
    for key, spelled in spellings.items():
        content = _content(key)
        if len(set(content)) < len(content):  # "very very", "bla bla"
            continue
        total = sum(scores.get(w, 0.0) for w in content)
        score = total / len(content) ** 0.3 * (1.0 + 0.15 * math.log(counts[key]))
        ranked.append(KeyPhrase(_display(spelled), content, score, counts[key]))
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
