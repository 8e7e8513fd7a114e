"""Word lists for the heuristic analysis and the quality gate.

STOPWORDS split key phrases (RAKE-style): function words, plus the common verbs, adverbs, vague nouns
and conversational fillers that never name a topic ("help", "thing", "really", "try"). SMALLTALK holds
greetings, acknowledgements and phatic words: a text made only of these says nothing worth keeping.
A *content word* is a word in neither list.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["FUNCTION_WORDS", "SMALLTALK", "STOPWORDS", "VERB_FORMS", "is_content_word"]

_FUNCTION = """
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
"""

# Verbs, adverbs, adjectives and nouns too general to name a topic on their own.
_GENERAL = """
able actually add added adding again ago ahead allow allows almost already alright also always another
answer answered anymore appreciate appreciated apparently ask asked asking available away back bad basically
best better big bit bring call called came certain certainly change changed check checked clear clearly come
comes coming complete completely consider could currently day days definitely describe detail details did
different do does doing done easy either else end enough especially exactly example except fact fairly far
feel feeling feels felt fine find finding first follow following found free get gets getting give given gives
giving go goes going gone good got gotten great guess guys had happen happened happens hard has have having
hear heard help helped helpful helping helps hey hi hmm hope hopefully idea important instead issue issues
keep keeps kind know known knows last later least leave left let like liked likely likes little long look
looked looking looks lot lots made main make makes making many matter mean means meant mention mentioned
might mind minute moment much need needed needs new nice note ok okay old one ones options part particular
particularly people perfect pick place plan planning please point possible pretty probably problem problems
put question questions quick quickly quite rather read ready real really reason recently regarding right run
said say saying says second see seem seemed seems seen send sent set should show showed shows similar simple
simply since situation small so soon sort specific start started step steps still stuff sure take taken takes
taking talk talked talking tell telling tells thank thanks thing things think thinking thought time times
today told took tried tries true try trying turn turned understand understood use used useful uses using
usually want wanted wanting wants way ways well went whole wish wonder wondering word work worked working works
worry would wrong yeah yes yet yep yup absolutely awesome cool glad happy sounds sound wow oh ah uh um
early earlier late lately tons adorable beautiful cute fun funny lovely gorgeous incredible interesting
exciting excited proud sad tough busy crazy stunning inspiring inspired fantastic brilliant wonderful
worth older newer bigger larger smaller higher lower faster slower worse earlier later longer shorter
"""

_SMALLTALK = """
hi hello hey heya hiya howdy yo greetings morning afternoon evening night goodnight thanks thank thx ty
cheers appreciate appreciated welcome ok okay k kk alright cool great good nice fine awesome perfect sweet
super lovely wonderful amazing excellent lol lmao rofl haha hahaha hehe heh omg wow oh ah uh um hmm yes yeah
yep yup yea no nope nah sure bye goodbye later cya see ya doing well how are you been going what's up sup
fantastic glad happy hear sounds sound got it noted understood np problem worries right true exactly indeed
definitely totally agreed agree same too also again much very really so just day today have nice
"""

FUNCTION_WORDS: frozenset[str] = frozenset(_FUNCTION.split())
# Common verbs that head clauses, not topics ("convert FSGLI coverage", "wife enjoy"); with their -s
# and -ing forms (the -ed forms are caught by the key-phrase extractor's past-tense rule).
_VERBS = """
accept achieve apply arrange assume attend avoid become begin believe bring buy choose compare consider
contact continue convert create decide deliver depend describe discover eat enjoy ensure expect explain
explore forget gain handle hate include involve join learn live manage meet miss obtain prefer prepare
provide reach receive recommend reduce remember remove replace require seem sell spend stay stop submit
suggest suppose teach wait wonder write
"""


def _forms(base: str) -> tuple[str, ...]:
    stem_ = base[:-1] if base.endswith("e") and not base.endswith("ee") else base
    if base.endswith("y") and base[-2:-1] not in "aeiou":
        plural = base[:-1] + "ies"
    else:
        plural = base + "es" if base.endswith(("s", "sh", "ch", "x")) else base + "s"
    return base, plural, stem_ + "ing"


VERB_FORMS: frozenset[str] = frozenset(form for base in _VERBS.split() for form in _forms(base))
STOPWORDS: frozenset[str] = frozenset((_FUNCTION + _GENERAL).split()) | VERB_FORMS
SMALLTALK: frozenset[str] = frozenset(_SMALLTALK.split())


_CONTRACTIONS = ("'d", "'ll", "'re", "'ve", "n't", "'m")


@lru_cache(maxsize=65536)
def is_content_word(word: str) -> bool:
    """A lowercase word that is neither a stopword, small talk nor a contraction ("that'd") and has at
    least two letters."""
    return (
        word not in STOPWORDS
        and word not in SMALLTALK
        and not word.endswith(_CONTRACTIONS)
        and sum(ch.isalpha() for ch in word) >= 2
    )
