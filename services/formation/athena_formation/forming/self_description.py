"""What the speaker is, rather than how they feel: "I'm left-handed", "I'm a night owl", "Soy zurdo".

One of the specifics of the personal-fact signal (personal_facts.py), and of a lasting fact: a trait,
an occupation or an identity stays true of the speaker; a passing state ("I'm so tired"), an activity
("I'm running late") or a place ("I'm home") does not.
"""

from __future__ import annotations

import re

from athena.text import pieces
from athena_formation.text.gazetteer import FIRST_NAMES
from athena_formation.text.stopwords import LATIN_FUNCTION_WORDS, is_content_word

__all__ = ["describes_self", "is_activity", "is_passing_state"]

_SELF = re.compile(
    r"\b(?:i'?m|i’m|i am|soy|sou|je suis|ich bin|sono)\s+|\bi(?:'ve|’ve|\s+have)\s+been\s+(?=an?\s)", re.IGNORECASE
)
""""I'm" or "I am", the Spanish and Portuguese "soy"/"sou" (the copula of what one is, not of how one
feels: that is "estoy"/"estou"), French "je suis", German "ich bin" and Italian "sono", before what the
speaker is (describes_self); and "I've been" before an article, what the speaker has been until now
("I've been a nurse for twelve years", not "I've been busy" or "I've been to Rome")."""
_SELF_FILLERS = frozenset(
    """
    a an so very really pretty quite totally completely currently now also still actually just kind sort of
    super extremely fairly rather somewhat definitely originally technically both much even not un una um uma
    très vraiment assez plutôt une pas sehr wirklich echt ganz ziemlich ein eine kein keine nicht molto davvero
    proprio abbastanza uno
    """.split()
)
"""Words between "I'm" and what the speaker is: articles and degree words ("I'm a", "I'm pretty")."""
_PASSING_STATES = frozenset(
    """
    tired sorry confused stuck curious starving bored hungry thirsty sleepy exhausted lost glad worried stressed
    nervous scared upset annoyed frustrated angry mad sad thrilled delighted grateful thankful impressed
    surprised amazed relieved disappointed overwhelmed home awake online offline away outside inside back here
    there ready done fine good great okay ok well alright afraid sick ill cold hot full free busy serious
    kidding joking certain positive sure aware excited happy proud honored honoured jealous embarrassed shocked
    speechless intrigued fascinated touched blessed lucky anxious inspired motivated determined optimistic
    hopeful confident energized pumped psyched stoked keen eager honest right wrong correct ecstatic overjoyed
    content satisfied pleased moved humbled beat wiped fried swamped slammed drained bed fan bit lot little
    mess fool glad late way yo happier better worse sadder busier unsure
    fatigué fatiguée désolé désolée contente heureux heureuse prêt prête là ici occupé occupée malade perdu
    perdue sûr sûre ravi ravie fier fière triste crevé crevée épuisé épuisée surpris surprise déçu déçue inquiet
    inquiète stressé stressée enchanté enchantée bien mal confus confuse curieux curieuse impatient impatiente
    rentré rentrée d'accord accord
    müde froh glücklich bereit fertig da hier zurück traurig krank sicher beschäftigt spät gespannt begeistert
    dankbar stolz verwirrt unterwegs gleich erschöpft überrascht enttäuscht besorgt gestresst neugierig zuhause
    daheim satt hungrig
    stanco stanca felice pronto pronta contento contenta sicuro sicura occupato occupata malato malata qui
    arrivato arrivata grato grata stufo stufa confuso confusa curioso curiosa bene sorpreso sorpresa deluso delusa
    preoccupato preoccupata stressato stressata emozionato emozionata fiero fiera d'accordo accordo
    """.split()
)
"""How one feels or where one is right now, not what one is: "I'm tired", "I'm so grateful", "I'm
home", "I'm a big fan", "I'm a bit lost"."""
_THINGS_IN_ING = frozenset(
    "morning evening thing nothing something everything king ring spring string wedding building sibling darling".split()
)
"""Words in -ing that are not a verb's: "I'm a morning person" describes the speaker."""
_CJK_SELF = re.compile(r"我是(?!说|不是|谁)[\u4e00-\u9fff]{2,}")
"""Chinese "我是" and what the speaker is ("我是左撇子", "我是医生"), not "我是说" ("I mean")."""
_ELONGATED = re.compile(r"(\w)\1{2,}")
"""A letter typed three times or more: "sooo" is "so"."""
_SELF_WORDS = 3
"""How many words after "I'm" (fillers included) may say what the speaker is."""


def describes_self(sentence: str) -> bool:
    """What the speaker is rather than how they feel: "I'm left-handed", "I'm a night owl", "I am an
    engineer", "I'm pretty introverted", "Soy zurdo": a content word among the _SELF_WORDS words
    after "I'm", within its clause, fillers skipped ("a", "pretty") and adjectives passed over ("a
    big coffee drinker"), letters typed thrice read once ("sooo"). A passing state ("I'm so tired",
    "I'm a big fan"), a function word ("I'm off to bake"), a verb in -ing ("I'm running late": an
    activity, not a trait; after an article it is an adjective, "a recovering perfectionist") or a
    first name (the naming cue's) ends the look. Also French "je suis", German "ich bin" and Italian
    "sono", with their passing states."""
    for match in _SELF.finditer(sentence):
        previous = ""
        for k, piece in enumerate(pieces(sentence[match.end() :])):
            word = _ELONGATED.sub(r"\1", piece.lower())
            if not any(ch.isalnum() for ch in piece) or k == _SELF_WORDS:
                break
            if word in _SELF_FILLERS or (previous in ("a", "an") and is_activity(word)):
                previous = word
                continue
            if is_passing_state(word) or word in LATIN_FUNCTION_WORDS or is_activity(word) or word in FIRST_NAMES:
                break
            if is_content_word(word):
                return True
    return bool(_CJK_SELF.search(sentence))


def is_activity(word: str) -> bool:
    """A verb in -ing ("running"), not a word that merely ends so ("morning")."""
    return word.endswith("ing") and word not in _THINGS_IN_ING


def is_passing_state(word: str) -> bool:
    """How one feels or where one is right now ("tired", "home"), casefolded: not what one is."""
    return word in _PASSING_STATES
