"""Words of any language, read one way by every part of Athena that looks at words.

Lexical search, the chains' lexicons, the topic words a merge compares, the heuristic analysis, the
quality gate and the chain-break detector all split text into words here, so that a word a question
uses and the same word in a conversation always meet, in any script.

- A *word* is a run of letters, digits and combining marks of any script (`regex`'s Unicode classes:
  the standard library's `\\w` has no combining marks, so it would cut "हिन्दी" apart), joined inside
  by an apostrophe, a hyphen or an underscore ("don't", "follow-up", "user_id").
- A *token* is a word casefolded (`str.casefold`: "Straße" and "STRASSE" meet) in Unicode NFC (a
  "café" typed as "e" + a combining accent meets the precomposed one). Accents are kept: "café"
  stays "café", never "cafe" (in many languages an accent tells words apart: "año" and "ano"). A
  possessive "'s" is dropped ("Caroline's" is "caroline") and so is a French elided article or
  pronoun ("l'homme" is "homme", "qu'il" is "il").
- Chinese, Japanese and Korean are not written with spaces between words, so a run of Han, Hiragana,
  Katakana or Hangul becomes its overlapping character bigrams ("北京烤鸭" is 北京 京烤 烤鸭), and a
  single such character stays one token: a two-character word, the commonest length, is then always
  one token, and a longer one is matched by its bigrams. (Korean does space its words, but particles
  are glued to them: "서울에서" and "서울은" share the bigram 서울.)
- Thai, Lao, Khmer and Myanmar are not spaced between words either: a run of them becomes the
  overlapping bigrams of its grapheme clusters (a consonant with its vowel and tone marks is one
  cluster: "อยู่" is อ + ยู่), so "ฉันอาศัยอยู่ที่เชียงใหม่" and "ฉันอาศัยอยู่ที่ไหน" share the bigrams
  of ฉันอาศัยอยู่ที่ instead of being two unrelated words. Whole runs are what `words` returns.
- A *term* is what the lexical index stores and queries: a token cut at hyphens and underscores,
  apostrophes removed, not a stop word, not a single letter, and stemmed.

Stop words: one small list per language (`STOP_WORDS`), the commonest function words. Cyrillic and
CJK tokens are checked against the Russian and the Chinese/Japanese lists; a Latin-script token
against the list of the text's language, read from the text itself (`stop_words`): words that are
function words in one language are content in another ("son", "car", "die", "war"), so a single
merged list would throw away English words.

Stemming (`stem`): one light English suffix stripper (plurals, -ing, -ed, -ies, -ly, a final "e"),
applied to Latin-script words only, whatever their language: a word's stem depends on the word alone,
so a query and a conversation stem it the same way. Words of other scripts are not stemmed.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache

import regex

__all__ = [
    "STOP_WORDS",
    "ends_in_question",
    "found_words",
    "is_cjk",
    "is_unspaced",
    "latin_language",
    "latin_share",
    "pieces",
    "stem",
    "stop_words",
    "terms",
    "tokens",
    "words",
]

# --- stop words -----------------------------------------------------------------------------------

_EN = """
a about above across after afterwards again against all almost alone along already also although always am
among amongst an and another any anyhow anyone anything anyway anywhere are aren't around as at be became
because become becomes becoming been before beforehand behind being below beside besides between beyond
both but by can can't cannot could couldn't did didn't do does doesn't doing don't done down during each
either else elsewhere enough etc even ever every everyone everything everywhere except few for former
formerly from further had hadn't has hasn't have haven't having he he'd he'll he's hence her here here's
hereafter hereby herein hers herself him himself his how how's however i i'd i'll i'm i've ie if in inc
indeed into is isn't it it's its itself just least less let's many may maybe me meanwhile might mine more
moreover most mostly much must mustn't my myself namely neither never nevertheless next no nobody none
noone nor not nothing now nowhere of off often on once one ones only onto or other others otherwise our ours
ourselves out over own per perhaps rather same several shall shan't she she'd she'll she's should shouldn't
since so some somehow someone something sometime sometimes somewhat somewhere still such than that that's
the their theirs them themselves then thence there there's thereafter thereby therefore therein thereupon
these they they'd they'll they're they've this those though through throughout thru thus to together too
toward towards under unless until up upon us very via was wasn't we we'd we'll we're we've were weren't
what what's whatever when when's whence whenever where where's whereas wherever whether which while whither
who who's whoever whole whom whose why why's will with within without won't would wouldn't yet you you'd
you'll you're you've your yours yourself yourselves im ive id dont doesnt didnt cant wont isnt arent wasnt
youre youve thats theres whats lets gonna wanna gotta kinda sorta ya u ur e.g i.e vs via
hes shes theyre theyve theyll theyd youll youd weve werent hasnt havent hadnt wouldnt couldnt shouldnt
mustnt whos hows heres wheres whens whys
"""
# English only, dropped from terms besides the stop words (`stop_words`): the verbs and fillers a
# question is phrased with ("What did she say about...?"), which say nothing about the memory sought.
_EN_QUESTION = """
ask asked did do does doing done get got go going gone like likely kind kinds mention mentioned say said
tell told thing things think thought way ways yes yeah oh ok okay well
"""

_ES = """
a al algo algunas algunos ante antes aquel aquella aquellas aquellos aquí así cada como cómo con contra cual
cuál cuales cuáles cuando cuándo de del desde donde dónde durante e el él ella ellas ellos en entre era
eran eres es esa esas ese eso esos esta está estaba estado estamos están estar estas este esto estos estoy
fue fueron ha había han has hasta hay he la las le les lo los me mi mí mis mucho muy más nada ni no nos
nosotras nosotros nuestra nuestro o os otra otro para pero poco por porque qué que quien quién quienes se
sea ser si sí sido sin sobre sois somos son soy su sus también tan te tengo ti tiene tienen todo todos tu tú
tus un una unas uno unos usted ustedes vosotros y ya yo
"""

_FR = """
à ai aie as au aucun aussi autre aux avais avait avant avec avez avoir avons bien c ça car ce ceci cela
celle celles celui ces cet cette chez comme comment d dans de des donc dont du elle elles en encore es est
et étaient était été être eu eux fait il ils j je l la le les leur leurs lui m ma mais me même mes moi
mon n ne ni nos notre nous on ont ou où par parce pas peu peut plus pour pourquoi qu quand que quel quelle
quelles quels qui quoi s sa sans se ses si son sont suis sur t ta te tes toi ton tous tout toute toutes
très tu un une vers vos votre vous y sommes êtes
"""

_DE = """
aber alle allem allen aller alles als also am an auch auf aus bei beim bin bis bist da damit dann das dass
dein deine dem den denn der des dich die dir doch dort du durch ein eine einem einen einer eines er es
etwas euch euer eure für gegen habe haben hast hat hatte hatten hier ich ihm ihn ihnen ihr ihre im in ist
ja jetzt kann kein keine können man mein meine mich mir mit muss nach nein nicht noch nur ob oder ohne
schon sehr sein seine sich sie sind so soll um und uns unser unsere unter viel vom von vor war waren warum
was weil wenn wer werden wie wieder wir wird wo wurde zu zum zur über
"""

_RU = """
а без бы был была были было быть в вам вас весь во вот все всё всего всех вы где да даже для до его ее её
ей ему если есть еще ещё же за здесь и из или им их к как какой когда кто ли между меня мне много может
мой моя мы на над надо не него нее неё нет ни них но ну о об он она они оно от очень по под после потом
потому почему при про с со так также там тебе тебя то тогда того тоже только том ты у уж уже хотя чем
через что чтобы чуть эта эти это этого этой этот я
"""

# Chinese and Japanese: single function characters (tokens only when they stand alone) and the
# commonest two-character function words (which are bigram tokens).
_ZH_JA = """
的 了 是 在 我 你 他 她 它 们 这 那 有 和 与 也 就 都 而 及 或 但 吗 呢 吧 啊 呀 么 不 没 很 还 又 再 被 把 给 对
从 向 到 于 以 之 其 着 过 会 能 要 想 说 去 来
我们 你们 他们 她们 它们 这个 那个 这些 那些 这样 那样 什么 怎么 哪里 因为 所以 但是 如果 虽然 可以 没有 一个
就是 不是 还是 已经 现在 自己 我的 你的 他的 她的
の は が を に で と も へ や か ね よ な
です ます した して いる ある この その あの これ それ あれ ない から まで けど
"""

STOP_WORDS: Mapping[str, frozenset[str]] = {
    "en": frozenset(_EN.split()),
    "es": frozenset(_ES.split()),
    "fr": frozenset(_FR.split()),
    "de": frozenset(_DE.split()),
    "ru": frozenset(_RU.split()),
    "zh": frozenset(_ZH_JA.split()),
}
"""The commonest function words of each language, casefolded ("zh" also holds Japanese particles)."""

_LATIN_LANGUAGES = ("en", "es", "fr", "de")
_OTHER_SCRIPTS = STOP_WORDS["ru"] | STOP_WORDS["zh"]  # never collide with a Latin-script word
_MIN_NON_ENGLISH_HITS = 2

# --- words ----------------------------------------------------------------------------------------

_CJK_CLASS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u30fc"  # U+30FC: the katakana long-vowel mark
_UNSPACED_CLASS = r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"  # their marks included: the script, not \p{L}
_LETTER = rf"[[\p{{L}}\p{{N}}]--[{_CJK_CLASS}{_UNSPACED_CLASS}]]"
_LETTER_OR_MARK = rf"[[\p{{L}}\p{{N}}\p{{M}}]--[{_CJK_CLASS}{_UNSPACED_CLASS}]]"
_WORD_BODY = rf"{_LETTER}{_LETTER_OR_MARK}*(?:['’\-_]{_LETTER}{_LETTER_OR_MARK}*)*"
_CJK_RUN = rf"[{_CJK_CLASS}]+"
_UNSPACED_RUN = rf"[[{_UNSPACED_CLASS}]--[\p{{P}}\p{{Z}}]]+"  # not their own punctuation (Khmer's ។)
_WORD = regex.compile(rf"(?V1){_CJK_RUN}|{_UNSPACED_RUN}|{_WORD_BODY}")
_PIECE = regex.compile(rf"(?V1){_CJK_RUN}|{_UNSPACED_RUN}|{_WORD_BODY}|[^\s\p{{L}}\p{{N}}\p{{M}}]")
_IS_CJK = regex.compile(rf"(?V1)[{_CJK_CLASS}]+")
_IS_UNSPACED = regex.compile(rf"(?V1)[{_CJK_CLASS}{_UNSPACED_CLASS}]+")
_CLUSTER = regex.compile(r"\X")
_IS_LATIN = regex.compile(r"[\p{Latin}\p{N}\p{M}'\-_]+")
_ANY_LETTER = regex.compile(r"\p{L}")
_LATIN_LETTER = regex.compile(r"\p{Latin}")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})
_ELISIONS = frozenset("c d j l m n qu s t jusqu lorsqu puisqu".split())  # French: l'homme, qu'il, jusqu'à
_KEPT_S = frozenset(w for w in _EN.split() if w.endswith("'s"))  # "it's", "let's": contractions, not possessives
_VOWEL = regex.compile(r"[aeiouy]")


def _normal(text: str) -> str:
    """NFC, then casefolded (and NFC again: casefolding may decompose), typographic apostrophes as "'"."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold()).translate(_APOSTROPHES)


@lru_cache(maxsize=65536)
def is_cjk(token: str) -> bool:
    """Whether the token is Chinese, Japanese or Korean (a bigram or a lone character)."""
    return bool(_IS_CJK.fullmatch(token))


@lru_cache(maxsize=65536)
def is_unspaced(token: str) -> bool:
    """Whether the token is of a script written without spaces between words (CJK, Thai, Lao, Khmer,
    Myanmar): a bigram or a lone character (cluster), which is a term however short."""
    return bool(_IS_UNSPACED.fullmatch(token))


def _units(run: str) -> list[str]:
    """What a run's bigrams are made of: its characters (CJK) or its grapheme clusters (the others,
    whose vowels and tone marks are combining characters)."""
    return list(run) if is_cjk(run) else _CLUSTER.findall(run)


def _bigrams(units: list[str]) -> list[str]:
    """Overlapping pairs of a run's units (`_units`); a run of one unit is its own token."""
    return ["".join(units)] if len(units) == 1 else [units[i] + units[i + 1] for i in range(len(units) - 1)]


def _trimmed(word: str) -> str:
    """A word without a French elided article ("l'homme") or an English possessive ("caroline's")."""
    if "'" in word:
        head, _, rest = word.partition("'")
        if head in _ELISIONS and rest:
            word = rest
        if word.endswith("'s") and word not in _KEPT_S:
            word = word[:-2]
    return word


def words(text: str) -> list[str]:
    """The text's words as a reader sees them, casefolded: hyphenated and apostrophized words whole,
    and a run of an unspaced script (CJK, Thai...) whole (it is usually several words, so `tokens`
    splits it)."""
    return [w for w in (_trimmed(m) if not is_unspaced(m) else m for m in _WORD.findall(_normal(text))) if w]


def tokens(text: str) -> list[str]:
    """The text's tokens in order: its words, each run of an unspaced script as overlapping bigrams
    (see the module docstring). What counts, compares and looks up words should read these."""
    out: list[str] = []
    for word in words(text):
        if is_unspaced(word):
            out.extend(_bigrams(_units(word)))
        else:
            out.append(word)
    return out


def pieces(text: str) -> list[str]:
    """The text's words as written (case kept, NFC) and every other visible character on its own, in
    order: for a reader that needs to know where punctuation breaks a phrase."""
    return _PIECE.findall(unicodedata.normalize("NFC", text))


_QUESTION_MARKS = ("?", "\uff1f", "\u061f")
"""The marks that end a question: Latin, full-width (Chinese, Japanese) "？", Arabic "؟"."""


def ends_in_question(text: str) -> bool:
    """Whether the text ends in a question mark (closing quotes and brackets aside): what a short
    answer after it ("Priya." after "What's your name?") answers."""
    return text.rstrip(" \t\n\"')]\u201d\u2019\u300d\u300f\uff09").endswith(_QUESTION_MARKS)


def latin_share(text: str) -> float | None:
    """The share of the text's letters that are of the Latin script (None: it has no letter): whether
    a model that learned English can read it (the chain-break detector asks)."""
    letters = len(_ANY_LETTER.findall(text))
    return len(_LATIN_LETTER.findall(text)) / letters if letters else None


# --- stop words of a text ---------------------------------------------------------------------------


def latin_language(found: list[str]) -> str:
    """The language of Latin-script tokens, judged by whose stop words they hold most: English unless
    another language has at least two and more than English (short or unclear text reads as English)."""
    hits = {lang: sum(1 for t in found if t in STOP_WORDS[lang]) for lang in _LATIN_LANGUAGES}
    best = max(_LATIN_LANGUAGES[1:], key=lambda lang: hits[lang])
    return best if hits[best] >= _MIN_NON_ENGLISH_HITS and hits[best] > hits["en"] else "en"


@lru_cache(maxsize=8)
def _stops_for(language: str) -> frozenset[str]:
    extra = frozenset(_EN_QUESTION.split()) if language == "en" else frozenset()
    return STOP_WORDS[language] | extra | _OTHER_SCRIPTS


def stop_words(text_or_tokens: str | list[str]) -> frozenset[str]:
    """The stop words that apply to this text (or its tokens): its Latin-script language's list
    (`latin_language`; for English also the words a question is phrased with: "did", "say", "thing")
    with the Russian and Chinese/Japanese lists."""
    found = tokens(text_or_tokens) if isinstance(text_or_tokens, str) else text_or_tokens
    return _stops_for(latin_language(found))


# --- terms ----------------------------------------------------------------------------------------


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English suffix stripper for a Latin-script token: plurals, -ing, -ed, -ies and -ly, with
    a trailing "e" dropped so that "love" meets "loving" ("researching" and "researched" are both
    "research", "loves" and "loved" both "lov"). It conflates less than Porter's and never strips a
    word of three letters or fewer, a number, or a word of another script."""
    w = word
    if len(w) <= 3 or w.isdigit() or not _IS_LATIN.fullmatch(w):
        return w
    if w.endswith(("ies", "ied")):
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


def _parts(token: str) -> Iterator[str]:
    """A token cut at hyphens and underscores ("saiho-ji": "saiho", "ji"), as the lexicon indexes it."""
    if "-" not in token and "_" not in token:
        yield token
        return
    yield from (p for p in regex.split(r"[-_]", token) if p)


def _term(part: str, stops: frozenset[str]) -> str | None:
    if part in stops:
        return None
    part = part.replace("'", "")
    if not part or part in stops or (len(part) < 2 and not part.isdigit() and not is_unspaced(part)):
        return None
    return stem(part)


def terms(text: str) -> list[str]:
    """The text's terms in order (module docstring): what the lexical index stores and queries."""
    found = tokens(text)
    stops = stop_words(found)
    return [t for token in found for part in _parts(token) if (t := _term(part, stops)) is not None]


# --- the words of a query that were found -----------------------------------------------------------


def found_words(query: str, found: Callable[[str], bool]) -> list[str]:
    """The query's words (casefolded, as written) that `found` accepts, each once, in order: for
    showing which words of a search matched. Stop words and words under three characters are left
    out. A run of an unspaced script is shown by its longest stretches whose every bigram (or lone
    character) `found` accepts: "北京烤鸭" when all of 北京 京烤 烤鸭 were found, "北京" when only that
    one was."""
    query_words = words(query)
    stops = stop_words(tokens(query))
    out: list[str] = []
    for word in query_words:
        if is_unspaced(word):
            shown = _found_stretches(word, found, stops)
        elif len(word) >= 3 and word not in stops and found(word):
            shown = [word]
        else:
            shown = []
        out.extend(w for w in shown if w not in out)
    return out


def _found_stretches(run: str, found: Callable[[str], bool], stops: frozenset[str]) -> list[str]:
    units = _units(run)
    grams = _bigrams(units)
    hit = [g not in stops and found(g) for g in grams]
    if len(units) == 1:
        return [run] if hit[0] else []
    out: list[str] = []
    i = 0
    while i < len(grams):
        if not hit[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(grams) and hit[j + 1]:
            j += 1
        out.append("".join(units[i : j + 2]))
        i = j + 1
    return out
