"""What a user's question about themselves asks for, in the words such facts are told with: "Who is my
spouse?" is answered by "My wife is called Priya", "Do I have any medical conditions?" by "I take
insulin twice a day", "What's my name?" by "Call me Sam".

The local embedding model puts such a question and its answer far apart (cosines of 0.06 to 0.48
measured on written pairs, docs/formation.md), and the question shares no word with the answer. A
question in the first person naming a kind of personal fact (a partner, an engagement, children,
parents, siblings, family, pets, health, diet, home, where they grew up, their age, work, their
commute, their name, their preferences, where they are online) adds the words such facts are told
with to its lexical side, at SEARCH_EXPANSION_WEIGHT of a query word's weight (LexicalIndex.query).
Questions about someone else ("What pets does Melanie have?") are left alone: on LoCoMo's, which
all are, the same words lowered recall. An agent's own query about the user ("user allergies",
"dietary restrictions") counts as the user's (`_about_the_user`). Events in no chain yet are scored
with them too (open_events.lexical_scores). English, Spanish, French, German, Italian and
Portuguese, and Dutch, Swedish, Polish, Turkish, Indonesian, Vietnamese, Arabic and Hindi; words are
terms of athena.text, as the lexicons hold them.

A request to the assistant that names a need such facts bear on ("Can you recommend a restaurant for
tonight?", "Suggest a workout for me"; English) and asks for no kind adds the words of those facts
in the same way ("vegan", "allergic"; "asthma", "knee"): an agent searches with the user's message,
which seldom asks for the fact that should shape the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from athena.text import ends_in_question, is_cjk, pieces, terms, tokens
from athena_formation.forming.answered_questions import names_no_one, with_hyphen_parts
from athena_formation.forming.personal_facts import elided_je, speaks_of_self_unmarked
from athena_formation.text.english_words import is_english_word
from athena_formation.text.gazetteer import FIRST_NAMES

__all__ = [
    "FACT_KINDS",
    "TOLD_TERMS",
    "asked_kinds",
    "asks_of_the_user_alone",
    "expansion_kinds",
    "of_someone_else",
    "the_users_own",
    "told_kinds",
]

_ABOUT_THE_USER = frozenset(
    """
    i i'm im i've me my mine myself we our ours
    yo mi mis tengo estoy soy vivo trabajo hablo bebo
    je moi mon ma mes
    ich mich mir mein meine meinen meinem meiner
    io mio mia miei mie ho sono abito lavoro parlo mangio bevo
    eu meu minha meus minhas moro trabalho falo
    я меня мне мой моя моё мое мои мы нас нам наш наша наши
    저는 제가 제 내 나는 내가 저의 저도 나도
    ik mijn mij jag mig min mitt mój moja moje mojego mojej mnie mam jestem benim bana saya aku tôi mình
    मैं मेरा मेरी मेरे मुझे أنا لي عندي
    adım eşim karım kocam oğlum kızım kedim köpeğim alerjim işim evim اسمي زوجتي زوجي ابني ابنتي عملي وظيفتي
    """.split()
)
"""First-person words of a question a user asks about themselves ("Who is my spouse?", "Am I
married?", "Do we have kids?", "¿Tengo mascotas?", "¿Dónde vivo?": Spanish, Italian and Portuguese
often say the person by the verb alone, and the verbs of home, work, language and diet are the ones
such questions ask with;
Turkish and Arabic say "my" by a suffix: "Adım ne?", "ما اسمي؟")."""

_PARTNER_TOLD = "wife husband partner spouse married engaged fiancé fiancée boyfriend girlfriend wedding anniversary"
_CHILDREN_TOLD = (
    "son sons daughter daughters kid kids child children baby toddler newborn infant teenager grandchildren grandkids "
    "grandson granddaughter"
)
_PARENTS_TOLD = "mom mum mother dad father parents"
_SIBLINGS_TOLD = "brother brothers sister sisters sibling siblings twin"
_PETS_TOLD = (
    "dog dogs cat cats puppy kitten rabbit rabbits bunny hamster guinea parrot budgie bird birds fish goldfish "
    "horse pony tortoise turtle lizard snake retriever labrador poodle terrier beagle spaniel bulldog"
)
_OCCUPATIONS = (
    "accountant actor architect artist baker banker barber barista bartender builder butcher carpenter cashier "
    "chef cleaner clerk coach consultant cook dentist designer developer doctor driver editor electrician "
    "engineer farmer firefighter gardener hairdresser journalist lawyer lecturer librarian manager mechanic "
    "midwife musician nurse paramedic pharmacist photographer physician physiotherapist pilot plumber "
    "policeman policewoman professor programmer psychologist receptionist researcher scientist secretary "
    "soldier surgeon teacher teach technician therapist translator tutor vet veterinarian waiter waitress "
    "writer freelancer retired analyst bookkeeper"
)
FACT_KINDS: dict[str, tuple[str, str]] = {
    "partner": ("spouse married marriage partner wife husband boyfriend girlfriend", _PARTNER_TOLD),
    "engagement": ("fiancé fiancée engaged engagement betrothed", "engaged engagement fiancé fiancée proposed"),
    "children": ("kids kid children child grandkids grandchildren sons daughters", _CHILDREN_TOLD),
    "family": ("family relatives", f"{_PARTNER_TOLD} {_CHILDREN_TOLD} {_PARENTS_TOLD} {_SIBLINGS_TOLD}"),
    "parents": ("parents parent mother father mom mum dad", _PARENTS_TOLD),
    "siblings": ("siblings sibling brother brothers sister sisters", _SIBLINGS_TOLD),
    "pets": ("pet pets animal animals", _PETS_TOLD),
    "health": (
        "health medical condition conditions illness allergies allergic medication medications medicine vision "
        "eyesight",
        "allergic allergy diabetic diabetes prediabetic prediabetes asthma insulin adhd migraines celiac epilepsy "
        "arthritis pregnant "
        "medication deaf blind pressure colorblind colourblind glasses nearsighted shortsighted",
    ),
    "diet": (
        "diet dietary food foods eat meal meals",
        "vegetarian vegan pescatarian allergic gluten lactose dairy kosher halal intolerant meat keto ketogenic "
        "paleo carb carbs atkins whole30",
    ),
    "home": (
        "live living based city town home address location",
        "live moved home apartment house flat based rent renting mortgage landlord",
    ),
    "origin": ("grow grew raised childhood", "grew raised born hometown originally native"),
    "age": ("age", "age old turning turned"),
    "work": (
        "job work career profession occupation employer boss supervisor colleagues coworkers",
        f"work job employer company office boss supervisor colleague colleagues coworker coworkers {_OCCUPATIONS}",
    ),
    "name": ("name names nickname", "call called name named nickname"),
    "preferences": (
        "preference preferences prefer favourite favorite favourites favorites likes dislikes",
        "prefer rather favourite favorite love hate dislike enjoy",
    ),
    "style": (
        "style tone format formatting formatted responses verbosity",
        "short brief concise detailed bullet bullets formal casual emoji emojis",
    ),
    "commute": (
        "commute commuting",
        "cycle cycling bike bicycle bus train tube subway metro tram ferry carpool commute scooter drive",
    ),
    "online": (
        "network networks media platform platforms handle username usernames online",
        "twitter mastodon bluesky instagram facebook linkedin tiktok snapchat reddit youtube whatsapp telegram discord",
    ),
}
"""Kind: (the words a question asks for it with, the words a fact of it is told with), in English.
A question about one relation asks for that relation's words alone ("Do I have siblings?": "My sister
Nadia lives in Cairo.", not every relative the user named; "Who is my fiancé?": "I'm engaged to
Marco.", not "We got married"); "family" asks for all of them.
"style" is how the user wants to be answered ("response style preferences": "Please keep your
answers short."); "answer" and "reply" are not its telling words, as any request names them.
"commute" is how the user gets to work ("How do I get to work?": _ASKING_PHRASES, not the job; "I take the
bus to work"). "online" is where the user is on the internet ("Which social network am I on?": "reach
me on Mastodon"); "social" and "account" do not ask for it, as help-desk talk of "Social Security"
and of "my account" is full of them. "origin" is where the user was born or grew up ("Where did I grow
up?": "I grew up near Lyon", "I'm originally from Porto"), not where they live now. "age" is asked
with "How old" (_ASKING_PHRASES) and told with "turning 40". "health" is asked for by the eyesight
too ("Do I have any problems with my vision?": "I'm colorblind"), not by the hearing: its facts name
it ("I'm hard of hearing"), and as an asking word it put the user's other health facts first."""

_PARTNER_OTHER = (
    "esposa esposo marido casado casada pareja novio novia épouse époux mari femme mariée marié conjoint "
    "ehefrau ehemann verheiratet partnerin freundin moglie marito sposato sposata mulher namorado namorada"
)
_ENGAGED_OTHER = "prometido prometida verlobt verlobte verlobter fidanzato fidanzata noivo noiva"
_PARENTS_OTHER = (
    "madre padre mamá papá mère père maman mutter vater mamma papà mãe pai moeder vader pappa matka ojciec "
    "tata annem babam ibu ayah mẹ bố أمي أبي माँ मां पिता"
)
_SIBLINGS_OTHER = (
    "hermano hermana hermanos hermanas frère frères sœur sœurs bruder brüder schwester schwestern geschwister "
    "fratello fratelli sorella sorelle irmão irmãos irmã irmãs broer broers zus zussen bror syster syskon "
    "siostra rodzeństwo kardeşim kardeşlerim kakak adik saudara أخي أختي إخوتي भाई बहन"
)
_CHILDREN_OTHER = (
    "hijos hijas hijo hija enfants enfant kinder sohn söhne tochter töchter figli figlio figlia figlie bambini "
    "filhos filho filha filhas"
)
_OTHER_LANGUAGES: dict[str, tuple[str, str]] = {
    "partner": (_PARTNER_OTHER, f"{_PARTNER_OTHER} {_ENGAGED_OTHER} frau mann"),
    "engagement": (_ENGAGED_OTHER, _ENGAGED_OTHER),
    "children": (_CHILDREN_OTHER, _CHILDREN_OTHER),
    "family": (
        "familia famille familie famiglia família",
        f"{_PARTNER_OTHER} {_ENGAGED_OTHER} {_CHILDREN_OTHER} {_PARENTS_OTHER} {_SIBLINGS_OTHER}",
    ),
    "parents": ("padres eltern genitori ouders föräldrar rodzice ebeveynlerim", _PARENTS_OTHER),
    "siblings": (
        "hermanos hermanas frères sœurs geschwister fratelli sorelle irmãos irmãs broers zussen syskon "
        "rodzeństwo kardeşlerim saudara إخوة إخوتي",
        _SIBLINGS_OTHER,
    ),
    "pets": (
        "mascota mascotas animal animales animaux haustier haustiere tiere animale animali animais estimação",
        "perro perros gato gatos chien chiens chatte chattes hund hunde katze katzen gatto gatti cachorro cão",
    ),
    "health": (
        "salud santé gesundheit salute saúde alergias alergia allergien allergie allergia enfermedad maladie "
        "krankheit malattia doença",
        "alérgico alérgica alergia allergique allergie allergisch allergico allergica diabético diabética "
        "diabétique diabetiker diabetico celíaco celíaca cœliaque zöliakie celiaco celiaca asma asthme insulina "
        "insuline",
    ),
    "diet": (
        "dieta régime ernährung diät alimentación comida nourriture cibo comer mangiare mangio mange manger "
        "esse essen isst",
        "vegano vegana vegetariano vegetariana végétarien végétarienne végane végétalien vegetarier vegetarierin "
        "vegetarisch veganer veganerin lactosa lactose laktose lattosio glutenfrei",
    ),
    "home": (
        "vivo vives ciudad casa dirección habite vis ville maison adresse wohne lebe stadt wohnort abito città "
        "indirizzo moro cidade endereço",
        "vivo vivimos mudé habite habitons déménagé wohne wohnen umgezogen abito trasferito moro mudei",
    ),
    "work": (
        "trabajo profesión empleo oficio travail métier emploi beruf arbeit lavoro professione mestiere "
        "trabalho profissão emprego",
        "trabajo enfermera enfermero médico médica ingeniero ingeniera profesor profesora maestro maestra "
        "travaille infirmière infirmier ingénieur professeur enseignant enseignante médecin arbeite ingenieur "
        "ingenieurin lehrer lehrerin arzt ärztin krankenschwester lavoro infermiere infermiera ingegnere "
        "insegnante trabalho enfermeira engenheiro engenheira",
    ),
    "name": (
        "nombre nom nome",
        # with the forms an agent asks with ("¿Cómo te llamas? Priya.": answered_questions.py)
        "llamo nombre appelle nom heiße chamo nome chiamo llamas llama appelles heißt chama chamas chiami",
    ),
    "origin": (
        "creciste crecí naciste nací grandi aufgewachsen geboren cresciuto cresciuta cresci nasci nasceu",
        "crecí nací grandi aufgewachsen geboren cresciuto cresciuta cresci nasci",
    ),
    "preferences": (
        "preferencias préférences vorlieben preferenze preferências",
        "prefiero préfère bevorzuge preferisco prefiro",
    ),
}
"""The same kinds in Spanish, French, German, Italian and Portuguese. A question in any of the six
languages adds the telling words of all six: the local model is English, and a fact told in one
language is asked after in another ("What do I do for work?" for "Ich bin Lehrerin."). Words that are
also common English words are left out ("chat", "kind", "cane", "tier"), and so are those whose term
is an English word's: "fils" and "fille" are "file" and "fill" to athena.text."""

_FURTHER_LANGUAGES: dict[str, tuple[str, str]] = {
    "partner": (
        "vrouw echtgenote echtgenoot getrouwd fru maka sambo żona mąż żonaty mężatka eşim karım kocam evli "
        "istri suami menikah vợ chồng زوجتي زوجي متزوج متزوجة पत्नी पति शादी",
        "vrouw echtgenote echtgenoot fru maka sambo żona żoną mąż eşim karım kocam istri suami vợ chồng زوجتي "
        "زوجي पत्नी पति",
    ),
    "children": (
        "kinderen zoon dochter söner döttrar dzieci córka çocuklarım çocuk anak أطفالي أولادي बच्चे",
        "kinderen zoon dochter dotter söner döttrar dzieci syn córka oğlum kızım çocuklarım anak ابني ابنتي "
        "أطفالي أولادي बच्चे बेटा बेटी",
    ),
    "family": (
        "familie familj rodzina aile keluarga gia đình عائلة عائلتي परिवार",
        "moeder vader broer zus mamma pappa bror syster matka mama tata ojciec siostra annem babam kardeşim ibu "
        "ayah kakak adik mẹ bố أمي أبي أخي أختي माँ मां पिता भाई बहन",
    ),
    "pets": (
        "huisdier huisdieren husdjur zwierzę zwierzęta evcil hayvan peliharaan hewan thú cưng vật nuôi حيوان "
        "أليف पालतू जानवर",
        "hond honden kat katten katt katter psa psy kot kota koty köpeğim kedim kedilerim kedi köpek anjing "
        "kucing chó mèo كلب قطة قطط قطتان كلبي قطتي कुत्ता बिल्ली",
    ),
    "health": (
        "allergisch ziekte allergisk allergi sjukdom alergię alergia uczulony uczulona choroba alerjim alerji "
        "hastalık alergi penyakit dị ứng bệnh حساسية مرض एलर्जी बीमारी",
        "allergisch allergisk alergię uczulony uczulona alerjim alergi dị ứng حساسية एलर्जी मधुमेह السكري",
    ),
    "diet": (
        "dieet eten vlees kost äter kött dieta dietę jem mięso beslenme diyet yemek makan makanan daging ăn "
        "طعام آكل اللحم खाना आहार",
        "vegetariër vegetarisch veganist vegetarian wegetarianin wegetarianka weganin weganinem weganka "
        "vejetaryen vejetaryenim veganım chay نباتي نباتية शाकाहारी",
    ),
    "home": (
        "woon woonplaats stad adres bor adress mieszkam miasto yaşıyorum oturuyorum şehir şehirde tinggal kota "
        "alamat sống thành phố أسكن أعيش مدينة عنوان रहता रहती शहर",
        "woon wonen verhuisd bor flyttade mieszkam yaşıyorum oturuyorum taşındım tinggal pindah sống أعيش أسكن "
        "रहता रहती",
    ),
    "work": (
        "werk beroep baan jobbar jobb arbete yrke praca pracuję zawód işim meslek pekerjaan kerja profesi nghề "
        "công việc عمل وظيفة وظيفتي مهنة काम पेशा नौकरी",
        "werk werken jobbar arbetar pracuję pracuje çalışıyorum bekerja kerja làm việc أعمل عملي काम "
        "verpleegkundige leraar lerares lärare läkare sjuksköterska lekarz lekarzem nauczyciel nauczycielka "
        "programista öğretmen doktor mühendis hemşire perawat dokter insinyur giáo viên bác sĩ kỹ sư y tá مهندس "
        "مهندسًا طبيب معلم معلمة ممرضة डॉक्टर शिक्षक इंजीनियर नर्स",
    ),
    "name": (
        "naam namn imię adım isim nama tên اسم اسمي नाम",
        "heet heter nazywam nazywa wabi imię adım nama tên اسمي नाम",
    ),
    "preferences": ("voorkeur favoriet favorit ulubiony tercih favorit sở thích تفضيل पसंद", "voorkeur favoriet"),
}
"""The same kinds in Dutch, Swedish, Polish, Turkish, Indonesian, Vietnamese, Arabic and Hindi, read as
the others are. Words that are also English words or other words of their language are left out
("man", "kind", "barn", "arts", "guru", "gift", "pies"; Vietnamese "con", a word for child and the mark of an
animal)."""

_SOMEONE_ELSE_LIVES = re.compile(
    r"\blives\b|(\b(?:my|our|his|her|their)\s+(?:(?!and\b|i\b|me\b)[\w']+\s+){1,2})live\b", re.IGNORECASE
)
"""Where someone else lives: "lives" ("My sister Nadia lives in Cairo.") and "live" after a relative of
the user's ("My parents live in Nairobi.", not "My wife and I live in Leeds."): once stemmed it would
tell the home, and a user's homes are one subject (newest_first.ONE_AT_A_TIME). Taken out, the
relative kept (group 1)."""

_ASKING_PHRASES: tuple[tuple[re.Pattern[str], frozenset[str], frozenset[str]], ...] = (
    (re.compile(r"\bfor\s+a\s+living\b", re.IGNORECASE), frozenset(terms("living")), frozenset(terms("occupation"))),
    (
        re.compile(r"\b(?:get|go|travel|come|commute)\s+(?:in\s+)?to\s+work\b", re.IGNORECASE),
        frozenset(terms("work")),
        frozenset(terms("commute")),
    ),
    (
        re.compile(r"^\W*where\s+(?:am\s+i|do\s+i\s+come|did\s+i\s+come)\s+(?:originally\s+)?from\b", re.IGNORECASE),
        frozenset(),
        frozenset(terms("childhood")),
    ),
    (re.compile(r"\bhow\s+old\b", re.IGNORECASE), frozenset(), frozenset(terms("age"))),
)
"""Phrases that ask for another kind than their words: (the phrase, the terms it takes away, a term of
the kind it asks for). "What do I do for a living?" asks for work ("living" alone asks for home:
"Where am I living?"); "How do I get to work?" for the commute, not the job; "Where am I from?" for
the origin, by a word ("from") every question holds; "How old am I?" for the age, by a word ("old")
that asks nothing alone."""


def _word_terms(words: Mapping[str, tuple[str, str]]) -> tuple[dict[str, frozenset[str]], dict[str, list[str]]]:
    """Per key, the asking words' terms (a set) and the telling words' terms (in order, once each)."""
    asking = {key: frozenset(terms(asked)) for key, (asked, _) in words.items()}
    telling = {key: list(dict.fromkeys(terms(told))) for key, (_, told) in words.items()}
    return asking, telling


def _in_every_language(kind: str) -> tuple[str, str]:
    """The kind's asking and telling words in English and the other languages that list it."""
    lists = [FACT_KINDS[kind], _OTHER_LANGUAGES.get(kind, ("", "")), _FURTHER_LANGUAGES.get(kind, ("", ""))]
    return " ".join(asked for asked, _ in lists), " ".join(told for _, told in lists)


_ASKED, _TOLD = _word_terms({kind: _in_every_language(kind) for kind in FACT_KINDS})

_TOLD_SET = {kind: frozenset(words) for kind, words in _TOLD.items()}
"""A question naming what is told of a kind, and no kind by its asking words, asks for the kinds of
what it names: "Do I have a dog?" is answered by "Tenho um cachorro."."""

TOLD_TERMS = frozenset().union(*_TOLD_SET.values())
"""Every term that tells a kind of fact ("work", "nurs", "liv", "girlfriend"), in every language."""

_RELATIONS = frozenset(("partner", "engagement", "children", "parents", "siblings"))
"""The kinds of one relation, each narrower than "family"."""

_RELATIVE_TERMS = frozenset().union(*(_TOLD_SET[kind] for kind in (*_RELATIONS, "family")))
"""Terms that name a relative of the user's ("husband", "son", "frau"), in every language."""
_ASKS_OF_RELATIVES = _RELATIVE_TERMS.union(*(_ASKED[kind] for kind in (*_RELATIONS, "family")))
_WHO = re.compile(
    r"^\W*(?:who(?!\s+(?:is|are)\s+my\b|'s\s+my\b)|whom|whose|wer|wem|wessen|qui|quién|quiénes|chi|quem)\b",
    re.IGNORECASE,
)
"""A question asking who, of people ("Who lives with me?", "Whose birthday is coming up?"), not of
the user's one ("Who is my employer?")."""
_SPEAKER = frozenset(
    """
    i i'm im i've i'd i'll me we we're we've us ich je yo io eu ik jag я мы
    tengo estoy soy vivo trabajo hablo bebo ho sono abito lavoro parlo mangio bevo moro trabalho falo mam jestem
    """.split()
)
"""Words that make the speaker a subject of a sentence (tokens: "j'habite" is read as "habite"), with
the verbs that say the person alone (_ABOUT_THE_USER: "Moro em Lisboa com a minha namorada.")."""


_NEEDS: dict[str, tuple[str, str]] = {
    "food": (
        "restaurant restaurants recipe recipes dinner lunch breakfast brunch meal meals snack snacks bake "
        "cook cooking dessert pizza menu dish dishes wine beer cocktail drinks",
        "vegetarian vegan pescatarian gluten lactose dairy kosher halal intolerant allergic allergy diabetic "
        "diabetes celiac pregnant alcohol",
    ),
    "exercise": (
        "workout exercise exercises running run hike hiking gym sport sports yoga training",
        "asthma asthmatic knee back hip heart arthritis pregnant injury wheelchair",
    ),
    "travel": (
        "travel trip flight flights fly ferry cruise boat vacation holiday museum tour",
        "afraid flying seasick carsick wheelchair pregnant",
    ),
    "outings": ("movie movies gift gifts toys games playground", _CHILDREN_TOLD),
    "shopping": (
        "buy buying purchase laptop laptops phone phones price prices cheap expensive shopping afford",
        "budget afford",
    ),
    "local": ("weather nearby local around", "live moved"),
}
"""Need: (the words of a request a kind of fact bears on, the words such facts are told with): "Can you
recommend a restaurant for tonight?" is answered with "I'm vegan." in mind."""
_ADDRESSED = _ABOUT_THE_USER | frozenset("you your we our ты тебя тебе твой вы вас вам ваш".split())
"""A request to the assistant, or about the user: needs are read only then ("us" is also "US")."""
_THE_USER = frozenset("user users usuario usuaria utilisateur utilisatrice nutzer nutzerin utente usuário".split())
"""How an agent names the person it serves in a query of its own ("user allergies"; "user's" loses
its "'s" to athena.text)."""
_OTHERS = frozenset("he she they him her his hers them their theirs".split())
_BARE_TOPIC_WORDS = 5
"""At most this many words in a query that asks nothing and names no one to read it as the user's."""
_QUESTION_OPENER = re.compile(r"^\W*(?:what|who|when|where|which|why|how|did|does|do|is|are|was|were)\b", re.IGNORECASE)
_CJK_PERSONS = ("我", "私", "僕", "俺", "你", "您", "あなた")
"""The first and second person in Chinese and Japanese, read as characters (their text is tokenised
into character pairs)."""
_NEEDED, _NEEDED_TOLD = _word_terms(_NEEDS)


def the_users_own(query: str) -> bool:
    """Whether the query is in the first or the second person: the user's own question or request
    ("Am I married?", "Can you recommend a restaurant?", "Где я живу?", "我住在哪里？"; in Japanese or
    Korean, one that names no one else: "ペットはいますか？"), as an agent passes it on, not a
    question about someone named ("What pets does Melanie have?"); or an agent's own query about
    the user (`_about_the_user`)."""
    return (
        _in_the_first_person(query, or_second=True)
        or any(p in query for p in _CJK_PERSONS)
        or speaks_of_self_unmarked(query)
        or _about_the_user(query)
        or _foreign_question_of_no_one(query)
    )


def _in_the_first_person(query: str, *, or_second: bool = False) -> bool:
    """A word of the user's own (_ABOUT_THE_USER; with `or_second`, of the assistant's too: _ADDRESSED),
    also as the pronoun of a French inversion ("ai-je") or an elided "j'" ("Est-ce que j'ai des
    enfants ?", which the tokenizer reads as "ai")."""
    words = _ADDRESSED if or_second else _ABOUT_THE_USER
    return not words.isdisjoint(with_hyphen_parts(tokens(query))) or elided_je(query)


def _foreign_question_of_no_one(query: str) -> bool:
    """A question in a language other than English that names no one else ("Hangi şehirde
    oturuyorum?", "Câți câini am?", "Syönkö lihaa?"): many languages say the person by the verb alone,
    in forms no list holds, and in one user's memory a question that names no one is theirs. English
    says "I" or "my" of the user, so an English question without them asks about the world. Chinese,
    Japanese and Korean have rules of their own (`speaks_of_self_unmarked`, _CJK_PERSONS): a name there
    is not capitalised ("田中さんはどこに住んでいますか？")."""
    if not ends_in_question(query) or any(is_cjk(ch) for ch in query):
        return False
    words = [w.casefold() for w in pieces(query) if any(ch.isalpha() for ch in w)]
    if not words or 2 * sum(is_english_word(w) for w in words) >= len(words):
        return False
    return names_no_one(query, with_hyphen_parts(tokens(query)))


def _about_the_user(query: str) -> bool:
    """An agent's query about the user: one naming "the user" ("user allergies", "the user's
    spouse"), or a few words that ask nothing and name no one ("dietary restrictions", "medical
    conditions"): in one user's memory, what a bare topic asks for is the user's."""
    found = tokens(query)
    if not _THE_USER.isdisjoint(found):
        return True
    words = pieces(query)
    return (
        "?" not in query
        and 0 < len(found) <= _BARE_TOPIC_WORDS
        and _OTHERS.isdisjoint(found)
        and not any(w[:1].isupper() for w in words[1:] if w[:1].isalpha())
        and found[0] not in FIRST_NAMES  # "Melanie pottery" is about Melanie
        and not _QUESTION_OPENER.match(query)
    )


def expansion_kinds(query: str, query_terms: Iterable[str]) -> dict[str, str]:
    """The telling words of every kind the query's terms ask for (else of the kinds of the told words
    it names), when the query is in the first person, and of every need they name, when it addresses
    the assistant or is about the user; minus the query's own terms. Else none. Each with the kind or
    need that brought it (the first, for a word of several)."""
    if not the_users_own(query):
        return {}
    held = set(query_terms)
    kinds = _kinds_asked(query, held)
    told = [(t, kind) for kind in kinds for t in _TOLD[kind]]
    if not kinds:  # a question asking for a kind of fact is answered by that kind, not by a need's facts
        told += [(t, need) for need, words in _NEEDED.items() if held & words for t in _NEEDED_TOLD[need]]
    found: dict[str, str] = {}
    for term, kind in told:
        if term not in held:
            found.setdefault(term, kind)
    return found


def asked_kinds(query: str, query_terms: Iterable[str]) -> frozenset[str]:
    """The kinds of personal fact (FACT_KINDS) a question of the user's own asks for ("Where do I
    live?": home); none for a question about someone else or a request."""
    return frozenset(_kinds_asked(query, set(query_terms))) if the_users_own(query) else frozenset()


def asks_of_the_user_alone(query: str, query_terms: Iterable[str]) -> bool:
    """Whether a question asks of the user and of no one else: it names no relative or the family
    ("Does my son have allergies?", "Who is in my family?") and does not ask who ("Who lives with me?")."""
    return not _WHO.match(query) and _ASKS_OF_RELATIVES.isdisjoint(query_terms)


@lru_cache(maxsize=8192)
def of_someone_else(text: str) -> bool:
    """Whether a fact is told of a relative of the user's and not of the user ("My husband Tom is a
    firefighter.", "Meine Frau ist Lehrerin."; not "My wife and I live in Leeds."): it answers a
    question about that relative, and less one about the user. Kept per text, as the same facts come
    back search after search."""
    return not _RELATIVE_TERMS.isdisjoint(terms(text)) and _SPEAKER.isdisjoint(tokens(text))


def told_kinds(text: str) -> frozenset[str]:
    """The kinds of personal fact whose telling words the text holds of the user ("I moved to Oslo.":
    home; "My mom lives with us.": no home of the user's, only the family's)."""
    found = set(terms(_SOMEONE_ELSE_LIVES.sub(r"\1 ", text)))
    return frozenset(kind for kind, words in _TOLD_SET.items() if found & words)


def _kinds_asked(query: str, held: set[str]) -> list[str]:
    """The kinds a question in the first person (or an agent's query about the user) asks for by its
    terms (`held`), else those of the told words it names ("Do I have a dog?": pets)."""
    if not _in_the_first_person(query) and not _about_the_user(query):
        return []
    asked = set(held)
    for phrase, taken, meant in _ASKING_PHRASES:
        if phrase.search(query):
            asked = (asked - taken) | meant
    kinds = [kind for kind, words in _ASKED.items() if asked & words]
    if not set(kinds) - {"name", "age"}:  # "What's my dog's name?", "How old is my cat?" ask for the pets too
        named = [kind for kind, words in _TOLD_SET.items() if asked & words and kind not in kinds]
        # "What's my wife's name?" asks for the partner, not for every relative
        kinds += [kind for kind in named if kind != "family" or _RELATIONS.isdisjoint(named)]
    return kinds
