"""Personal facts: does a message state something specific about its speaker or their world?

The quality gate's metrics reward exchanges (a question and its answer, a topic carried over several
turns). "My wife's name is Ana and our anniversary is June 12", "I prefer answers in bullet points" or
"Call me Sam, not Samuel" have neither, yet they are what a memory is most for. This module recognises
such statements so that the gate can admit them (quality_gate.py, the personal-fact signal).

A sentence *states a personal fact* when all three hold:

1. it is not a question: it does not end with "?", nor open like one and end without "." or "!"
   ("Can i use this tool to check my claim"); "Can you check my order 1234?" asks, it tells nothing.
   A sentence that asks in one clause and tells in another ("I'm allergic to bee stings, what should
   be in my first-aid kit?", "Help me plan a walk, I had knee surgery in May.") is read clause by
   clause: its telling clauses are the facts (`_told_clauses`; not a clause that only supposes, "if
   I'm vegan"), and a question naming someone of the speaker's ("What should I feed my cat Pepper?")
   tells "my cat Pepper" (`_own_named`): users tell most facts inside their requests;
2. it refers to its speaker: a first-person word ("I", "me", "my", "we", "our", ...; also the Spanish,
   French, German, Portuguese and Italian forms, a French "j'", Chinese 我, Japanese 私/僕, and those
   of Russian, Dutch, Swedish, Polish, Turkish, Indonesian, Vietnamese, Hindi, Arabic and Hebrew, with
   the verbs and suffixes that say the first person: "mieszkam", "yaşıyorum", "adım", "أعيش");
3. it carries a specific, one of:
   - a number: "June 12", "order 1234", "5月3日";
   - a date word: a month, a weekday, "yesterday", "tomorrow", "tonight", "next week", "3 days ago";
   - a name that is not a form of address: a capitalised word after the sentence's first word that is
     neither a first name nor a function word ("Lisbon", "Honda", "Shopify"; not "Unfortunately We
     can't"), or any name after a naming cue ("my name is Ana", "call me Sam", "I'm Lucía");
     "Thanks, Maria!" and "Hey Mel," name the person spoken to;
   - a cue word of a kind of personal fact: family, relationships and pets ("wife", "cousin", "dog"),
     diet and health ("allergic", "vegetarian", "gluten"), preferences ("prefer", "favorite",
     "dislike", "I'd rather", "don't like"), identity, home and work ("name", "birthday", "born",
     "live", "moved", "job", "rent"), contact details ("my phone number is", "my email is");
   - a liking or a habit with an object: "like", "love", "enjoy", "use", "own", "drive", "play",
     "speak", "wear" after "I"/"we" with a content word within the next three words ("I like my
     coffee black", "I use vim", not "I love that!"), or "I'm into" one ("I'm into rock climbing"); a
     habit by its frequency ("I always take the stairs", "every morning"; "tous les matins", "毎朝"
     with something done, _cjk_habit); what the speaker does not do or where they work ("I can't
     eat peanuts", "I work nights"); "I" and a content verb with a
     content word ("I commute by bike"); a habit or choice that changed ("I no longer drink coffee",
     "I switched to an iPhone");
   - a lasting condition of the body: "I have a bad knee", "I've got a weak heart";
   - where they grew up or what they run ("I grew up on a farm", "I run a small bakery"), how they get
     to work ("I cycle to work"); and, a fact of the present rather than a lasting one, what they are
     in the middle of ("I'm training for a marathon"; not "I'm waiting for the download");
   - a correction or a choice with a content word after it ("tea, not coffee", "instead of aisle
     seats", "I said Tuesday"), a fear ("afraid of flying");
   - what the speaker is rather than how they feel ("I'm left-handed", "I'm a night owl", "I am an
     engineer"; not "I'm so tired", "I'm a big fan", "I'm running late");
   - or at least FACT_MIN_CONTENT_WORDS content words (first names aside) in a sentence in the
     singular first person ("I had to shut down my bank account"). Plural "we"/"us"/"our" need one
     of the specifics above: alone they mostly make generic statements ("pushing boundaries is how we
     grow").

Four kinds of sentence state a fact without a first person: a correction with a name, a number, a
date or "X, not Y" ("Correction: it's Anna with two n's"), a memory request or standing instruction
with a content word ("Keep in mind ...", "From now on, answer in Spanish", "Always reply in German",
"Use Celsius, not Fahrenheit"), a negated diet or habit whose verb says its person ("No como
carne"), and a Japanese or Korean statement with a fact cue that names no one else, as those languages
seldom say "I" ("猫を二匹飼っています").

A *lasting* fact (lasting_fact_sentences) is one whose specific tells what stays true of the speaker:
a cue word, "call me", a liking or habit, what they are or do not do; or a correction, a memory
request or standing instruction. A plan, an event or a situation told by a date, a number, a name or
content words alone is a fact of a moment. Formation keeps chains with a lasting fact of the user out
of the archiver (ARCHIVE_LASTING_FACTS).

Small talk fails on 2 or 3: "Thanks, Maria! Your support means a lot." has no first person; "I'm doing
well, thanks for asking!" and "I really appreciate it" carry nothing specific.

Language: numbers and capitalised names work in any Latin script; the pronoun, month, weekday and cue
lists cover English, Spanish, French, German, Portuguese and Italian, with Russian, Chinese, Japanese
and Korean cue words (a Japanese or Korean statement naming no one else is the speaker's, as those
languages seldom say "I"); the first-person words also Russian, Dutch, Polish, Turkish, Indonesian, Vietnamese,
Hindi, Arabic and Hebrew, whose facts are then told by a number or by the content-word count (which
leaves CJK and Thai out: their bigrams are not words). Words come from
athena.text, the one Unicode tokenizer, through the analysis's `content_words` and `split_sentences`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from athena.text import STOP_WORDS, is_unspaced, pieces, tokens
from athena_formation.forming.self_description import describes_self, is_activity, is_passing_state
from athena_formation.forming.unread_statements import is_unread
from athena_formation.text.calendar_words import MONTHS
from athena_formation.text.gazetteer import FIRST_NAMES
from athena_formation.text.messages import content_words, split_sentences, strip_markup, without_smalltalk_phrases
from athena_formation.text.stopwords import (
    EVERYDAY_OTHER,
    LATIN_FUNCTION_WORDS,
    SMALLTALK,
    STOPWORDS,
    is_content_word,
)

__all__ = [
    "FACT_MIN_CONTENT_WORDS",
    "elided_je",
    "is_question",
    "lasting_fact_sentences",
    "names_fact_kind",
    "personal_fact_sentences",
    "speaks_of_self_unmarked",
    "states_lasting_fact",
    "states_personal_fact",
]

FACT_MIN_CONTENT_WORDS = 3
"""A sentence in the singular first person with this many content words states a fact without a cue,
a number or a name. Chosen, with the rule's other options, by leave-one-conversation-out
cross-validation on the shared LoCoMo conversations (docs/formation.md)."""

_SINGULAR = frozenset(
    """
    i i'm im i've ive i'd i'll me my mine myself
    yo mi mis mío mía míos mías conmigo soy estoy tengo
    je moi mon ma mes suis
    ich mich mir mein meine meinen meinem meiner meines bin
    eu meu minha meus minhas sou tenho moro
    io mio mia miei mie sono
    я меня мне мной мой моя моё мое мои моего моей моему мою моим моих моими
    ik mijn mij
    jag mig mitt
    mój moja moje mojego mojej mnie mam jestem mieszkam pracuję nazywam lubię uwielbiam wolę nienawidzę
    benim bana eşim karım kocam oğlum kızım çocuklarım annem babam kardeşim köpeğim kedim kedilerim alerjim
    adım işim evim vejetaryenim veganım
    saya aku
    tôi mình
    मैं मेरा मेरी मेरे मुझे मुझको
    أنا انا لي عندي اسمي زوجتي زوجي ابني ابنتي أمي أبي أخي أختي كلبي قطتي عملي وظيفتي بيتي عائلتي أعيش أسكن
    أعمل أحب أكره أفضل أفضّل آكل أشرب
    אני שלי
    저는 제가 나는 내가 저의 제 내 저도 나도 저를 나를
    """.split()
)
"""Singular first-person words, casefolded (Spanish, Portuguese, Italian and Polish often drop the
pronoun, so their commonest first-person verbs are here too: "soy", "tengo", "sou", "sono", "mam",
"jestem", "mieszkam"). Also Dutch, Swedish (not "min", "five min" in English, unless a cue follows
it: "Min dotter heter Elsa", `_singular_first_person`), Turkish (not "ben" nor
"beni", English names too; the person is a suffix, so "my wife", "my name", "my allergy" are here
whole: "eşim", "adım", "alerjim"; verbs in "-yorum" are read by `_TURKISH_PRESENT`), Indonesian,
Vietnamese, Hindi, Arabic (whose "my" is a suffix and whose verbs say their person: "زوجتي", "أعيش"),
Hebrew, and Korean as athena.text tokenizes it: a pronoun with its particle is one bigram ("저는"), a
lone "제" or "내" ("my") one token."""
_PRO_DROP_OPENER = re.compile(
    r"^\W*(?:(?:ahora|ya|no|actualmente|todavía|aún|también|tampoco|hoy|ora|adesso|ancora|non|già|anche|oggi"
    r"|agora|ainda|não|já|também|hoje)\s+){0,2}"
    r"(?:(?:trabajo|vivo|trabalho|moro|lavoro|abito)\s+(?:en|de|desde|como|con|para|em|no|na|in|a|da|per|come)\b"
    r"|(?:odio|detesto|adoro|prefiero|prefiro|preferisco)\s+(?:el|la|los|las|il|lo|gli|le|o|os|as|l')\b)"
    r"|^\W*(?:(?:btw|also|so|just|currently|finally|soon|still)\s+)?(?:moving|relocating|heading|flying|travell?ing"
    r"|starting|leaving|visiting|training|studying|expecting|switching|quitting|retiring|graduating)\s+"
    r"(?:to|from|for|in|at|on|a|an|the|my|our|back|out|abroad|home|next|this|tomorrow)\b",
    re.IGNORECASE,
)
"""Where the speaker lives or works, or what they hate, love or prefer, its person said by the verb
alone, at the start of a sentence: before a preposition, where "trabajo" and "lavoro" are verbs rather
than the noun "work" ("Trabajo desde casa", "Vivo en Madrid", "Lavoro da remoto"); before an article,
where "odio" is "I hate" rather than "hatred" ("Odio il coriandolo", "Prefiero el té"); after "now",
"no longer", "still" and the like, as a change is told ("Ahora vivo en Barcelona", "Ya no trabajo en
Google", "Ora abito a Roma"). In English, a
plan or a change of life told without "I", as chat is typed ("moving to austin next month", "starting
a new job on monday")."""
_PLURAL = frozenset(
    """
    we we're we've we'd we'll us our ours ourselves nosotros nosotras nuestro nuestra nuestros nuestras
    nous notre nos wir uns unser unsere unseren unserem nós nosso nossa nossos nossas noi nostro nostra
    nostri nostre мы нас нам наш наша наше наши нашего нашей
    """.split()
)
_CJK_FIRST_PERSON = ("我", "私", "僕", "俺")

_DATE_WORDS = frozenset(MONTHS) | frozenset(
    """
    monday tuesday wednesday thursday friday saturday sunday yesterday tomorrow tonight weekend
    lunes martes miércoles jueves viernes sábado domingo mañana ayer
    lundi mardi mercredi jeudi vendredi samedi dimanche demain hier
    montag dienstag mittwoch donnerstag freitag samstag sonntag morgen gestern
    amanhã ontem domani ieri
    понедельник вторник среда четверг пятница суббота воскресенье завтра вчера
    """.split()
)
"""Months (text/calendar_words.py), weekdays and day words, casefolded ("may" and "march" are verbs
too; with a first person and no question they are rarely small talk)."""
_RELATIVE_DATE = re.compile(
    r"\b(?:next|last|this)\s+(?:week|month|year|summer|winter|spring|fall|autumn)\b"
    r"|\b\d+\s+(?:days?|weeks?|months?|years?)\s+ago\b",
    re.IGNORECASE,
)

_CUES = frozenset(
    """
    wife husband spouse partner fiance fiancé fiancée boyfriend girlfriend son sons daughter daughters kid kids
    child children baby toddler toddlers newborn infant teenager teenagers mom mum mother dad father parents
    brother brothers sister sisters cousin cousins aunt uncle niece nephew grandma grandpa grandmother
    grandfather grandson granddaughter grandkids in-laws mother-in-law father-in-law sister-in-law
    brother-in-law son-in-law daughter-in-law
    grandchild grandchildren grandsons granddaughters stepson stepdaughter twins
    dog dogs cat cats puppy kitten pet pets rabbit rabbits bunny hamster hamsters parrot parrots budgie
    tortoise turtle turtles lizard gecko snake goldfish
    hypertension cholesterol
    allergic allergy allergies intolerant intolerance vegetarian vegan pescatarian gluten lactose kosher halal
    diabetes diabetic prediabetes prediabetic celiac pregnant diet keto ketogenic paleo whole30
    adhd autism autistic asthma asthmatic epilepsy epileptic arthritis migraine migraines insomnia dyslexia
    dyslexic deaf blind wheelchair seasick carsick bipolar insulin medication medications meds thinners
    antidepressants statins chemo chemotherapy dialysis inhaler epipen pacemaker snore snoring sleepwalk
    prefer prefers preferred preference favorite favourite favorites favourites dislike hate
    name named called birthday born anniversary live lived moved job career employer salary landlord rent
    mortgage
    esposa esposo marido mujer hijo hija hijos hijas madre padre hermano hermana mascota perro perros gato gatos
    alérgico alérgica alergia vegetariano vegetariana vegano vegana prefiero favorito favorita llamo nombre odio
    detesto adoro
    cumpleaños vivo trabajo
    femme mari fils fille enfants mère père frère sœur chien chiens chat allergique allergie végétarien végétarienne
    végane préfère préféré préférée appelle nom anniversaire habite travaille
    frau mann sohn söhne tochter töchter kinder mutter vater bruder schwester hund hunde katze katzen allergisch
    allergie vegetarier
    vegetarierin vegetarisch bevorzuge lieblings heiße geburtstag wohne arbeite
    filho filha filhos mãe pai irmão irmã cachorro cachorros cão cães alérgica prefiro chamo nome aniversário
    trabalho moro
    moglie marito figlio figlia figli fratello sorella cane cani gatto gatti allergico preferisco chiamo compleanno
    abito lavoro
    жена муж сын сына дочь дочери дочка дети ребёнок ребенок мама мать папа отец брат сестра собака кошка
    аллергия аллергии аллергик вегетарианец вегетарианка веган предпочитаю люблю любимый любимая зовут
    имя рождения живу работаю диабет диабетик левша правша кошки кошку кошек кот кота коты собаки собаку пёс пес попугай
    хомяк детей изучаю врач врачом медсестра медсестрой учитель учителем учительница учительницей программист
    программистом инженер инженером юрист юристом бухгалтер бухгалтером
    शाकाहारी एलर्जी मधुमेह पत्नी पति बेटा बेटी बच्चे माँ मां पिता भाई बहन कुत्ता बिल्ली रहता रहती रहते काम नाम पसंद
    जन्मदिन
    نباتي نباتية حساسية السكري زوجتي زوجي ابني ابنتي أعيش أعمل أسكن اسمي أمي أبي أخي أختي كلبي قطتي عملي وظيفتي
    أحب أكره أفضل أفضّل أطفال أولاد كلب قطة قطط قطتان
    vrouw echtgenote echtgenoot zoon dochter kinderen moeder vader broer zus hond honden kat katten vegetariër
    veganist woon werk heet verjaardag geboren
    fru maka sambo dotter döttrar mamma pappa bror syster katt katter allergisk bor jobbar arbetar heter
    födelsedag född
    żona mąż syn córka dzieci matka tata ojciec siostra psa kot kota koty alergię uczulony uczulona
    wegetarianin wegetarianka weganin weganka mieszkam pracuję urodziny nazywam imię lubię uwielbiam wolę
    nienawidzę
    eşim karım kocam oğlum kızım çocuklarım annem babam kardeşim köpeğim kedim kedilerim alerjim alerji
    vejetaryen vejetaryenim veganım yaşıyorum oturuyorum çalışıyorum adım seviyorum sevmiyorum yemiyorum
    içmiyorum kullanıyorum
    istri suami anak ibu ayah kakak adik anjing kucing alergi tinggal bekerja nama lahir suka menikah
    vợ chồng mẹ bố chó mèo sống tên thích ghét
    """.split()
)
"""Cue words of the kinds of personal fact, casefolded; in English also common lasting conditions
("adhd", "asthma", "seasick"); in other languages the words of family, pets, diet, home, work, names
and likings, without those that are also English words ("man", "kind", "barn", "make", Polish "pies")."""
_PHRASE_CUES = re.compile(
    r"\b(?:dị\s+ứng|ăn\s+chay|sinh\s+nhật|làm\s+việc|ulang\s+tahun)\b|\bучу\s+(?!тебя|вас|его|её|ее|их)\w",
    re.IGNORECASE,
)
"""Cues of two words: Vietnamese "allergic", "vegetarian", "birthday", "work" and Indonesian "birthday",
whose single words mean other things ("ứng" is also "apply"); Russian "I learn" with what is learnt
("Я учу испанский"; not "Я учу тебя", "I teach you")."""
_TURKISH_PRESENT = re.compile(r"\w{3,}[ıiuü]yorum\b", re.IGNORECASE)
"""A Turkish verb in the present, first person singular ("yaşıyorum", "I live"; "yorum" alone is "comment")."""
_HINDI_SELF = re.compile(r"^\W*मैं\s+एक\s+\S+(?:\s+\S+)?\s+हूँ")
"""Hindi "I am a ..." ("मैं एक डॉक्टर हूँ"), what the speaker is, as describes_self reads English."""
_CJK_CUES = (
    "过敏",
    "素食",
    "不吃",
    "不喝",
    "不能吃",
    "不能喝",
    "糖尿病",
    "名字",
    "叫",
    "生日",
    "喜欢",
    "妻子",
    "丈夫",
    "老婆",
    "老公",
    "儿子",
    "女儿",
    "住在",
    "アレルギー",
    "ベジタリアン",
    "食べません",
    "飲みません",
    "食べられません",
    "飲めません",
    "名前",
    "誕生日",
    "好き",
    "息子",
    "娘",
    "住んで",
    "飼って",
    "猫",
    "犬",
    "左利き",
    "右利き",
    "夫は",
    "夫が",
    "妻は",
    "妻が",
    "子供",
    "子ども",
    "看護師",
    "医者",
    "医師",
    "教師",
    "エンジニア",
    "弁護士",
    "会社員",
    "働いて",
    "勤めて",
    "狗",
    "养了",
    "孩子",
    "护士",
    "医生",
    "알레르기",
    "채식",
    "안 먹",
    "못 먹",
    "안 마시",
    "못 마시",
    "안 마셔",
    "못 마셔",
    "당뇨",
    "이름",
    "생일",
    "살고",
    "살아요",
    "좋아해",
    "싫어해",
    "아내",
    "남편",
    "아들",
    "딸",
    "강아지",
    "고양이",
    "직업",
    "일해요",
    "키워",
    "키우",
    "간호사",
    "의사",
    "엔지니어",
    "개발자",
)
_CJK_FREQUENCIES = (
    "毎朝",
    "毎日",
    "毎晩",
    "毎週",
    "每天",
    "每周",
    "每晚",
    "每个周末",
    "매일",
    "매주",
    "아침마다",
    "주말마다",
)
"""Every morning, day, evening, week or weekend in Japanese, Chinese and Korean: a habit's cue
(_cjk_habit), as "every morning" is in English (_HABITUAL)."""
_CJK_OBJECT = re.compile(r"[を을를]|して(?:い)?ます|します|해요|합니다")
"""The Japanese and Korean object particles, and "do" after a noun ("ジョギングしています", "운동해요"):
"毎朝ジョギングをしています" does something, "毎日暑いです" ("hot every day") and "매일 비가 와요" ("it
rains every day") do not."""
_CJK_STATE = ("你", "您", "很")
"""A Chinese sentence to the other person or of a state ("我每天都很忙", "busy every day"), not a habit."""
_THANKS = re.compile(
    r"\bthank|\bmerci\b|\bremerci|\bdanke\b|\bgracias\b|\bagradezco\b|\bgrazie\b|\bobrigad|\bспасибо\b|\bблагодар"
    r"|谢|ありがとう|감사|고마",
    re.IGNORECASE,
)
"""Thanks, in the languages of the habits: "I thank you every day" states no habit."""
_PREFERENCE = re.compile(
    r"\b(?:don't|do not|doesn't|never|can't|cannot|can not|won't)\s+(?:like|eat|drink|want|drive|smoke|fly|use)\b"
    r"|\bi'?d\s+rather\b|\bcan't stand\b|\bnot\s+a\s+(?:big\s+|huge\s+)?fan\s+of\b"
    r"|\bi\s+(?:now\s+|currently\s+|still\s+|also\s+)?work\s+"
    r"(?:at|as|for|in|from|nights?|weekends|remotely|part-time|full-time|shifts?)\b",
    re.IGNORECASE,
)
"""A dislike, a thing the speaker does not do, or where they work: "I can't eat peanuts", "I don't
drive", "I'm not a fan of long emails", "I work nights", "I now work at Stripe"."""
_CHANGED_HABIT = re.compile(
    r"\bno\s+longer\s+\w+|\bi\s+(?:just\s+|recently\s+)?(?:stopped|quit|gave\s+up)\s+\w+ing\b"
    r"|\bi\s+(?:just\s+|recently\s+)?(?:switched|converted)\s+(?:over\s+)?to\b"
    r"|\b(?:i|we)\s+(?:now\s+)?only\s+(?:eat|drink|buy|wear|use|read|watch|cook|drive|take)\b"
    r"|\b(?:i'?m|i\s+am|i|we)\s+(?:eating|drinking|smoking|eat|drink|smoke)\s+\w+\s+again\b"
    r"(?!\s+(?:today|tonight))"
    r"|\bje\s+ne\s+\w+\s+plus\b|\bich\s+\w+\s+(?:nicht|kein\w*)\s+(?:\w+\s+)?mehr\b",
    re.IGNORECASE,
)
"""A habit or choice that changed, what now holds: "I no longer drink coffee", "I stopped eating
meat", "I switched to an iPhone", "I only drink green tea now", "I'm eating meat again" (not "...
again today"), "Je ne bois plus de café", "Ich trinke keinen Kaffee mehr" (with the first person that
every lasting fact needs)."""
_NAME = r"(?!(?:Dr|Doctor|Mr|Mrs|Ms|Miss|Prof)\b)(?-i:[A-Z])\w+"
_SELF_CORRECTED = re.compile(
    r"\bi\s+(?:meant|said)\s+(?:that\s+)?(?:i'?m|i’m|i\s+am|i\s+have|i've|my)\s+[^.!?]*\d", re.IGNORECASE
)
"""A number the speaker corrects in what they said of themselves: "Sorry, I meant I'm 34, not 43", "I
said my son is 8" (a number alone tells no lasting kind of fact; the correction of one does)."""
_RELATIONSHIP = re.compile(
    rf"\b(?:{_NAME}\s+and\s+i|i\s+and\s+{_NAME}|we)\s+(?:just\s+)?(?:broke|split)\s+up\b"
    r"|\bi\s+(?:just\s+)?(?:broke|split)\s+up\s+with\b"
    rf"|\b(?:i'?m|i\s+am)\s+(?:now\s+)?(?:seeing|dating|going\s+out\s+with)\s+{_NAME}"
    r"|\b(?:i'?m|i\s+am)\s+(?:now\s+|newly\s+)?(?:single|divorced|separated|widowed)\b"
    r"|\b(?:i|we)\s+(?:just\s+)?got\s+(?:divorced|separated)\b",
    re.IGNORECASE,
)
"""Whom the speaker is with, or no longer: "Sofia and I broke up", "I'm seeing Marta now", "I'm dating
Alex", "I'm single", "We got divorced" (a name, not a title, after "seeing": not "I'm seeing an
error", "I'm seeing Dr Patel")."""
_INTO = re.compile(r"\bi'?m\s+(?:really\s+|very\s+|totally\s+|big\s+|so\s+)?into\s+(\w[\w'-]*)", re.IGNORECASE)
"""A liking by "into" with a content word after it: "I'm into rock climbing" (not "I'm into it")."""
_LASTING_CONDITION = re.compile(
    r"\bi\s+(?:have|'ve\s+got|got)\s+(?:a\s+)?(?:bad|weak|dodgy|bum|chronic|trick)\s+"
    r"(?:knee|knees|back|hip|hips|shoulder|ankle|wrist|neck|heart|eye|eyes|ear|ears)\b"
    r"|\bi\s+(?:have|'ve\s+got|got)\s+high\s+blood\s+pressure\b"
    r"|\b(?:i'?m|i\s+am|we'?re|we\s+are)\s+on\s+a\s+(?:tight|small|limited|low|fixed|strict)\s+budget\b"
    r"|\b(?:i'?m|i\s+am)\s+(?:a\s+(?:bit|little)\s+|slightly\s+|quite\s+|very\s+)?hard\s+of\s+hearing\b",
    re.IGNORECASE,
)
"""A lasting condition of the body or the purse: "I have a bad knee", "I've got a weak heart", "I have
high blood pressure", "I'm on a tight budget", "I'm hard of hearing"."""
_ROOTS_AND_ROUNDS = re.compile(
    r"\b(?:i|we)\s+grew\s+up\s+(?:in|on|by|near|at|around|outside|with|speaking)\s+(?:a\s+|an\s+|the\s+)?"
    r"(?:(?:small|little|tiny|big|large|quiet|sleepy)\s+)?(\w[\w'-]*)"
    r"|\bi\s+was\s+(?:born\s+and\s+)?raised\s+(?:in|on|by|near|outside)\s+(?:a\s+|an\s+|the\s+)?(\w[\w'-]*)"
    r"|\b(?:i'?m|i\s+am|we'?re|we\s+are)\s+originally\s+from\s+(?:a\s+|the\s+)?(\w[\w'-]*)"
    r"|\b(?:i|we)\s+(?:run|manage|own)\s+(?:a|an|my|our|the|two|three)\s+(?:\w+\s+)?(\w[\w'-]*)",
    re.IGNORECASE,
)
"""Where the speaker comes from and what they run, with a content word: "I grew up on a farm", "I was
raised in Ohio", "I'm originally from Porto", "I run a small bakery" ("run" is too common to be a
content word, so `_does` does not read it)."""
_COMMUTE = re.compile(
    r"\b(?:i|we)\s+(?:now\s+|usually\s+|always\s+|often\s+)?(?:cycle|bike|walk|drive|commute|ride|carpool|run"
    r"|take\s+the\s+(?:bus|train|tube|subway|metro|tram|ferry))\s+to\s+work\b",
    re.IGNORECASE,
)
"""How the speaker gets to work: "I cycle to work", "I take the bus to work" ("work" is not a content
word)."""
_ONGOING = re.compile(
    r"\b(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?:currently\s+|still\s+|now\s+)?(\w+ing)\s+"
    r"(?:up\s+for\s+|for\s+|to\s+\w+\s+)?(?:a\s+|an\s+|the\s+|my\s+|our\s+)?(\w[\w'-]*)",
    re.IGNORECASE,
)
"""What the speaker is in the middle of, with a content word: "I'm training for a marathon", "I'm
saving up for a house", "I'm learning to play the cello" (not the verbs of the moment, _OF_THE_MOMENT:
"I'm waiting for the download", "I'm trying to fix the printer")."""
_YEARS_AS = re.compile(
    r"\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten|twenty|many|several)\s+years\s+as\s+an?\s+"
    r"(?!(?:result|whole|rule|matter|consequence|exception|precaution)\b)(\w[\w'-]*)(?:\s+(\w[\w'-]*))?",
    re.IGNORECASE,
)
"""A work of years, with a content word: "after six years as a bookkeeper", "ten years as a school
nurse" (what the speaker was or is, told beside something else); not "two years as a result"."""
_LONG_WORK = re.compile(
    r"\b(?:i'?m|i\s+am)\s+(?:currently\s+|still\s+|slowly\s+)?(?:writing|working\s+on|finishing)\s+"
    r"(?:a|an|my)\s+(?:\w+\s+)?(?:novel|book|thesis|dissertation|memoir|screenplay|phd|album|cookbook)\b",
    re.IGNORECASE,
)
"""A work of months the speaker is writing: "I'm writing a novel", "I'm working on my PhD thesis"
("writing" is a verb of the moment otherwise: "I'm writing an email")."""
_RESTRICTION = re.compile(
    r"\bi\s+(?:can't|can’t|cannot|can\s+not|shouldn't|mustn't|must\s+not)\s+"
    r"(?:have|eat|drink|take|tolerate|digest)\s+(?:any\s+)?(\w[\w'-]*)"
    r"|\bi\s+(?:don't|do\s+not)\s+(?:eat|drink|take)\s+(?:any\s+)?(\w[\w'-]*)"
    r"|\bi\s+(?:try\s+to\s+)?(?:avoid|stay\s+away\s+from|steer\s+clear\s+of|cut\s+out)\s+(?:all\s+)?(\w[\w'-]*)",
    re.IGNORECASE,
)
"""What the speaker does not eat, drink or take, with a content word: "I can't have caffeine after
noon", "I avoid dairy", "I don't drink alcohol" (not "I can't have it ready", "I avoid that")."""
_OF_THE_MOMENT = frozenset(
    """
    going getting doing looking heading trying thinking working waiting hoping reading checking running
    kidding joking feeling coming leaving staying wondering calling asking writing having sitting
    standing talking typing sending using holding starting finishing done
    """.split()
)
_TEACHES = re.compile(r"\b(?:i|we)\s+teach\s+(?!you\b|him\b|her\b|them\b)\w", re.IGNORECASE)
"""What the speaker teaches, their work: "I teach maths at a secondary school" ("teach" is a stop
word, so `_does` does not read it)."""
_EMPLOYER_CHANGE = re.compile(r"\b[Ii]\s+(?:just\s+)?(?:left|quit|joined)\s+([A-Z][\w&.-]*)")
"""Leaving or joining a named employer or group: "I left Google", "I joined Stripe" (a capitalised name
that is not a first name: not "I left Anna a message")."""
_FOREIGN_HABIT = re.compile(
    r"\bno\s+(?:como|bebo|tomo(?!\s+(?:nota|en\s+cuenta))|fumo|manejo|conduzco)\b"
    r"|\bne\s+(?:mange|bois|fume|conduis)\s+pas\b|\bnão\s+(?:como|bebo|tomo|fumo)\b"
    r"|\bnon\s+(?:mangio|bevo|fumo)\b|\bне\s+(?:ем|пью|курю)\b"
    r"|\b(?:ik\s+)?(?:eet|drink|rook)\s+geen\b|\b(?:jag\s+)?(?:äter|dricker|röker)\s+inte\b"
    r"|\bnie\s+(?:jem|piję|palę)\b|\btidak\s+(?:makan|minum|merokok)\b|\bkhông\s+(?:ăn|uống|hút)\b"
    r"|नहीं\s+(?:खाता|खाती|पीता|पीती)|\bلا\s+(?:آكل|أشرب|أدخن)\b",
    re.IGNORECASE,
)
"""The same in Spanish, French, Portuguese, Italian, Russian, Dutch, Swedish, Polish, Indonesian,
Vietnamese, Hindi and Arabic, whose verb or word order says its first person ("No como carne", "Ya no
tomo café", "Je ne mange pas de viande", "Не ем мясо", "Ik eet geen vlees", "Saya tidak makan daging")."""
_KANA_OR_HANGUL = re.compile("[\u3040-\u30ff\uac00-\ud7af]")
"""Japanese kana or Korean hangul: text in one of the two languages that seldom say "I"."""
_REMARK = re.compile(r"(?:ね|네요|군요|죠)\W*$")
"""The end of a Japanese or Korean remark that seeks agreement ("毎日暑いですね", "날씨가 좋네요"):
about the moment the two share, not the speaker."""
_OTHER_PERSON_UNMARKED = ("あなた", "君", "彼", "さん", "様", "당신", "그는", "그녀", "씨", "님")
"""Words of Japanese and Korean that name someone other than the speaker: a statement with none of
them and no first person is the speaker's ("猫を二匹飼っています", "강아지를 키워요"), as those
languages seldom say "I"."""
_LIKING = frozenset("like likes love loves enjoy enjoys adore use own drive play speak wear".split())
_LIKING_SUBJECTS = frozenset(("i", "we"))
_WISHING = frozenset(("would", "i'd", "we'd", "id"))
_CORRECTION = re.compile(
    r",\s*not\s+(\w[\w'-]*)|\b(?:rather than|instead of)\s+(\w[\w'-]*)"
    r"|\bi\s+(?:said|meant)\s+(?:the\s+|a\s+|an\s+)?(\w[\w'-]*)|\b(?:afraid|scared|terrified)\s+of\s+(\w[\w'-]*)",
    re.IGNORECASE,
)
"""A correction or a choice, with a content word after it: "tea, not coffee", "vim instead of emacs",
"No, I said Tuesday", "I meant the blue one"; and a fear: "afraid of flying" (not "fine, not great",
"I said thanks", "afraid of that")."""
_HABITUAL = re.compile(
    r"\b(?:i|we)\s+(?:usually|always|never|often|normally|typically|rarely|seldom|mostly|generally)\b"
    r"|\bevery\s+(?:day|morning|night|evening|week|weekend|month|year"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
    r"|\bon\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b"
    r"|\b(?:once|twice)\s+a\s+(?:day|week|month|year)\b|\bon\s+weekends\b"
    r"|\b(?:two|three|four|five|six|several|a\s+few|[2-9])\s+times\s+a\s+(?:day|week|month|year)\b"
    r"|\bevery\s+other\s+(?:day|week|weekend|month|year)\b"
    r"|\b(?:todos\s+los|todas\s+las|todos\s+os|todas\s+as|tous\s+les|toutes\s+les)\s+"
    r"(?:días|mañanas|noches|semanas|dias|manhãs|noites|jours|matins|soirs|semaines)\b"
    r"|\b(?:cada|chaque|ogni|jeden|jede|jeder)\s+(?:día|mañana|noche|semana|dia|manhã|noite|jour|matin|soir"
    r"|semaine|giorno|mattina|sera|settimana|tag|morgen|abend|woche"
    r"|lunedì|martedì|mercoledì|giovedì|venerdì|sabato|domenica)\b"
    r"|\btutti\s+i\s+giorni\b|\btutte\s+le\s+(?:mattine|sere|settimane)\b"
    r"|\blos\s+(?:lunes|martes|miércoles|jueves|viernes|sábados|domingos|fines\s+de\s+semana)\b"
    r"|\baos\s+(?:sábados|domingos|fins\s+de\s+semana)\b"
    r"|^\W*(?:siempre|sempre|normalmente|di\s+solito)\b"
    r"|\b(?:каждый|каждое|каждую|каждые)\s+\w+|\bпо\s+(?:утрам|вечерам|выходным)\b",
    re.IGNORECASE,
)
""""I usually", "every morning", "twice a week", "three times a week", "every other week": with a first
person and a content word, a habit ("I go to the gym every morning", "I always take the stairs"; not
"I'm always here for you"). The same
frequencies in Spanish, Portuguese, French, Italian, German and Russian ("Je cours tous les matins",
"Я каждое утро бегаю", "Nuoto tutti i giorni", "Juego al tenis los sábados", a sentence opening with
"Siempre"); Chinese, Japanese and Korean ones are cues (_CJK_CUES)."""
_PRO_DROP_VERB = re.compile(
    r"^\W*(?:(?:siempre|sempre|casi|quase|normalmente|también|anche|também|lo|la|los|las|me|mi|ci|ti|te|si)\s+)?"
    r"(\w{3,}o)\s+(\w+)",
    re.IGNORECASE,
)
"""A Spanish, Italian or Portuguese verb in the first person present opening the sentence ("Nado",
"Corro", "Lo hago"): with a frequency of _HABITUAL, the speaker's habit, though no pronoun says whose
("Nado todas las mañanas", "Nuoto ogni mattina"); not a function word ("Esto pasa todos los días"), a
participle ("Cerrado los domingos") nor a noun, which an adjective or a verb follows ("Centro abierto
todos los días"): the word after the verb is a function word."""
_IRREGULAR_PARTICIPLES = frozenset(
    "abierto cubierto muerto puesto dicho hecho escrito visto roto vuelto resuelto aperto chiuso fatto detto".split()
)
"""With the regular ones ("cerrado", "servido"; not "nado"), participles open notices ("Cerrado los
domingos", "Abierto todos los días"), not habits."""
_AFTER_THE_VERB = frozenset("todos todas tutti tutte cada ogni los aos al ao à na no nos nas".split())
"""Words that follow a verb and not a noun, besides function words: a frequency's first word and the
contractions of a preposition and an article ("Juego al tenis", "Treino na academia")."""
_EVERYWHERE = re.compile(r"\b(?:i|we)\s+(\w+)\s+everywhere\b", re.IGNORECASE)
"""A habit by where it holds: "I bike everywhere" (not a verb in the past: "I looked everywhere")."""
_MEMORY_REQUEST = re.compile(
    r"\bremember\s+(?:that|this|my|i|i'm|i've|we|our)\b|\b(?:don't|do not)\s+forget\s+(?:that|my|i|i'm|i've|we|our)\b"
    r"|\b(?:keep|bear)\s+in\s+mind\b|\bnote\s+that\b|\bplease\s+note\b|\b(?:make|take)\s+a\s+note\b"
    r"|\bfor\s+future\s+reference\b|\bfrom\s+now\s+on\b|\bgoing\s+forward\b|\bin\s+future\b|\bfyi\b"
    r"|\bjust\s+so\s+you\s+know\b|\bfor\s+the\s+record\b",
    re.IGNORECASE,
)
"""Asking to be remembered, or a standing instruction: "Remember that ...", "Keep in mind ...", "From
now on, answer in Spanish". With a content word of its own, such a sentence is kept whoever it is
about. Not advice ("don't forget to stretch") nor "in the future" ("I hope to go there in the
future")."""
_STANDING_INSTRUCTION = re.compile(
    r"^\W*(?:please\s*,?\s+)?(?:(?P<adverb>always|never)|(?:stop|quit)\s+\w+ing)\s+(\w[\w'-]*)(?:\s+(\w[\w'-]*))?",
    re.IGNORECASE,
)
"""An instruction that holds from now on by its first words: "Always reply in German", "Always include
sources", "Please stop using emojis": a content word in the two words after them, the first after
"always" or "never" not a function word nor a passing state (not "Always a pleasure", "Never mind",
"always hungry after a run", "Stop, that's enough")."""
_UNITS = re.compile(
    r"^\W*(?:please\s*,?\s+)?use\s+(?:the\s+)?(?:metric|imperial|us|uk|si)\s+(?:units|system|measurements)\b"
    r"|^\W*(?:please\s*,?\s+)?use\s+(?:british|american|us|uk|canadian|australian)\s+(?:spelling|english)\b",
    re.IGNORECASE,
)
"""A standing instruction on units or spelling: "Use metric units, please", "Please use British
spelling"."""
_INSTRUCTED_CHOICE = re.compile(
    r"^\W*(?:please\s*,?\s+)?(?:use|write|reply|answer|respond|spell|call|address|format|send|give|show|list)\b",
    re.IGNORECASE,
)
"""An instruction on how to answer which, with a correction or choice after it, is a preference:
"Use Celsius, not Fahrenheit", "Write dates as day/month rather than month/day"."""
_IRREGULAR_PAST = frozenset(
    """
    ate began bought broke brought built caught chose drank drove fell felt flew forgot fought found gave
    grew heard hid held kept knew left lost met paid ran rode sang sat saw sent sold spent spoke stole stood
    swam taught thought threw told took understood went woke won wore wrote
    """.split()
)
"""Irregular past tenses: after "I", an event rather than a habit ("I ran a marathon today")."""
_MEMORY_REQUEST_WORDS = frozenset("remember forget note future reference record mind forward fyi bear".split())
_CORRECTION_OPENER = re.compile(
    r"^\W*(?:correction\b|actually\b|no\s*,|nope\b|oops\b|wait\b|to clarify\b)", re.IGNORECASE
)
"""A sentence that corrects what was said before ("Correction: it's Anna with two n's", "Actually, the
meeting moved to Thursday"): with a name, a number, a date or "X, not Y", a fact without a first
person."""
_NAMING = re.compile(
    r"\b(?:name\s+is|name's|call\s+me|called|named|i\s+am|i'm|soy|me\s+llamo|je\s+m'appelle|ich\s+heiße|"
    r"mi\s+chiamo|me\s+chamo)\s+$",
    re.IGNORECASE,
)
"""Words just before a name that make it a fact about the speaker: "my name is", "call me", "I'm"."""
_CALLED = re.compile(
    r"\bcall\s+me\b(?!\s+(?:later|back|again|soon|now|tomorrow|tonight|when|if|at|on|in|after|before|anytime)\b)"
    r"|\bme\s+llamo\b|\bje\s+m'appelle\b|\bich\s+heiße\b|\bmi\s+chiamo\b|\bme\s+chamo\b",
    re.IGNORECASE,
)
"""What the speaker is called ("Call me Sam", "Me llamo Lucía"; not "Call me later"); "my name is" has
its cue word."""
_CONTACT = re.compile(
    r"\bmy\s+(?:new\s+)?(?:(?:phone|mobile|cell|home|work)\s+)?(?:number|e-?mail(?:\s+address)?|address|postcode"
    r"|zip\s+code)\s+(?:is|has\s+changed|changed)\b",
    re.IGNORECASE,
)
"""How to reach the speaker: "My phone number is 555-1234", "my email address changed" (not "my
order number is", "my address was wrong")."""
_QUESTION_END = re.compile(r"[?？؟;]\W*$")
"""A question mark at the end: also the Arabic and Persian "؟" and the Greek ";" (U+037E, which NFC makes
";")."""
_QUESTION_WORDS = (
    r"can|could|would|will|should|shall|do|does|did|is|are|am|was|were|have|has|how|what|when|where|why|who|which"
)
_QUESTION_START = re.compile(rf"^(?:{_QUESTION_WORDS})\b", re.IGNORECASE)
_STATEMENT_END = re.compile(r"[.!。！]\W*$")
_CLAUSE_BREAK = re.compile(r"(?<=\w)\s*[,;:，、]\s*|\s+[-–—]\s+")
"""Where a sentence's clauses meet: a comma, a semicolon or a colon after a word (the full-width ones
too), or a dash."""
_ASKING_OR_SUPPOSING = re.compile(
    rf"^(?:{_QUESTION_WORDS}|if|unless|whether|suppose|supposing|assuming|say|what\s+if|in\s+case"
    r"|any|anything|tips|ideas|thoughts|advice|please|help|tell|give|suggest|recommend|explain)\b",
    re.IGNORECASE,
)
"""A clause that asks ("what should I pack?", "any tips?") or only supposes ("if I'm vegan"): not told."""
_I_AM = re.compile(r"(?<=\w)\s+(?=(?:i'm|i’m|im|i am)\b)", re.IGNORECASE)
_BINDS_THE_NEXT_CLAUSE = frozenset(
    "if whether that when because since as so what where how why who which whom unless though although and or but".split()
)
_OWN_SOMEONE = (
    r"\b(?:[Mm]y|[Oo]ur)\s+(?:(?:little|older|younger|big|baby|new|old|best)\s+)?"
    r"(wife|husband|partner|fiancée?|boyfriend|girlfriend|son|daughter|kid|child|baby|mom|mum|mother|dad|father"
    r"|brother|sister|cousin|aunt|uncle|niece|nephew|grandma|grandpa|grandmother|grandfather|grandson"
    r"|granddaughter|friend|boss|manager|colleague|roommate|flatmate|neighbou?r|dog|cat|puppy|kitten|rabbit"
    r"|hamster|parrot|horse|pony|parents|kids|children|sons|daughters)"
)
"""Someone of the speaker's: "my cat", "our son", "my older sister"."""
_OWN_NAMED = re.compile(_OWN_SOMEONE + r"\s+(?:named\s+|called\s+)?([^\W\d_][\w'-]*)")
""""my cat Pepper", "our son Leo", "my boss called Hannah": someone of the speaker's, by name."""
_OWN_MENTIONED = re.compile(_OWN_SOMEONE + r"\b", re.IGNORECASE)
_SAID_OF_THEM = re.compile(r"^\W*(she|he|they)\b", re.IGNORECASE)
"""A sentence opening with a pronoun of someone else: of whom the sentence before named, when it
named someone of the speaker's ("... a gift for my daughter? She turns 10 next week.")."""
_ADDRESSED_I = frozenset(("I", "I'm", "I've", "I'd", "I'll"))
_NOT_NAMES = SMALLTALK | LATIN_FUNCTION_WORDS
"""Capitalised, these are not names: "LOL", "Unfortunately We can't"."""


_KNOWN_WORDS = (
    frozenset().union(*STOP_WORDS.values())
    | STOPWORDS
    | SMALLTALK
    | EVERYDAY_OTHER
    | _SINGULAR
    | _PLURAL
    | _CUES
    | _DATE_WORDS
)
"""Every word the signal's lists hold, in any language: a sentence with few of them is one it cannot
read (unread_statements.py)."""


def names_fact_kind(found: list[str], text: str) -> bool:
    """Whether the tokens (`found`, of `text`) hold a cue word of a kind of personal fact (_CUES: "dog",
    "name", "allergy"), or the text a Chinese, Japanese or Korean one (_CJK_CUES: "名前", "孩子", "이름")."""
    return any(t in _CUES for t in found) or _has_cjk_cue(text)


def is_question(sentence: str) -> bool:
    """Ends with "?", or opens like a question ("Can i use this tool to check my claim") and does not
    end like a statement."""
    text = sentence.strip()
    return bool(_QUESTION_END.search(text) or (_QUESTION_START.match(text) and not _STATEMENT_END.search(text)))


def elided_je(sentence: str) -> bool:
    """French "j'habite", "j'ai": the tokenizer drops the elided "j'", the written pieces keep it."""
    return any(p.lower().startswith(("j'", "j’")) for p in pieces(sentence))


def _singular_first_person(sentence: str, found: list[str]) -> bool:
    return (
        any(t in _SINGULAR for t in found)
        or any(t == "min" and k + 1 < len(found) and found[k + 1] in _CUES for k, t in enumerate(found))
        or elided_je(sentence)
        or any(ch in sentence for ch in _CJK_FIRST_PERSON)
        or bool(_PRO_DROP_OPENER.match(sentence))
        or _pro_drop_habit(sentence)
        or bool(_TURKISH_PRESENT.search(sentence))
    )


def _pro_drop_habit(sentence: str) -> bool:
    """_PRO_DROP_VERB with a frequency of _HABITUAL."""
    match = _PRO_DROP_VERB.match(sentence)
    if match is None:
        return False
    verb, after = match.group(1).lower(), match.group(2).lower()
    return (
        not _is_function_word(verb)
        and not (verb in _IRREGULAR_PARTICIPLES or (len(verb) > 5 and verb.endswith(("ado", "ido"))))
        and (_is_function_word(after) or after in _AFTER_THE_VERB)
        and bool(_HABITUAL.search(sentence))
    )


def _is_function_word(word: str) -> bool:
    return word in STOPWORDS or word in LATIN_FUNCTION_WORDS


def _first_person(sentence: str, found: list[str]) -> bool:
    return _singular_first_person(sentence, found) or any(t in _PLURAL for t in found)


def _capitalised(found: list[str]) -> Iterator[tuple[int, str]]:
    """(index, casefolded word) of the capitalised words after the first word of `found` that are not
    "I", small talk ("LOL") nor a function word ("Unfortunately We can't"): the candidates for a name."""
    words = [(k, p) for k, p in enumerate(found) if p[:1].isalpha()]
    for k, piece in words[1:]:
        lower = piece.lower()
        if piece[:1].isupper() and piece not in _ADDRESSED_I and lower not in _NOT_NAMES:
            yield k, lower


def _named(sentence: str) -> bool:
    """A capitalised word after the sentence's first word that names something rather than someone
    addressed: a first name counts only after a naming cue, a name right after a greeting or thanks
    ("Hey Gina", "Thanks Maria") does not, nor does a capitalised word of small talk ("LOL")."""
    found = pieces(sentence)
    for k, lower in _capitalised(found):
        if _NAMING.search(" ".join(found[max(0, k - 3) : k]) + " "):
            return True
        if lower.removesuffix("'s") not in FIRST_NAMES and found[k - 1].lower() not in SMALLTALK:
            return True
    return False


def _names_something(sentence: str) -> bool:
    """A capitalised word after the first one, a first name included unless it follows a comma, as the
    person addressed does ("No, Maria, ..."): in a correction a first name is the fact ("it's Anna
    with two n's")."""
    found = pieces(sentence)
    return any(lower not in FIRST_NAMES or found[k - 1] != "," for k, lower in _capitalised(found))


def _corrects(sentence: str, found: list[str]) -> bool:
    """A correction with something specific in it, first person or not."""
    return bool(_CORRECTION_OPENER.search(sentence)) and (
        any(ch.isdigit() for ch in sentence)
        or any(t in _DATE_WORDS for t in found)
        or _content_after(_CORRECTION, sentence)
        or _names_something(sentence)
    )


def _asks_to_be_remembered(sentence: str) -> bool:
    """A memory request or a standing instruction (_MEMORY_REQUEST) with a content word of its own; an
    instruction that holds by its first words (_STANDING_INSTRUCTION), or one on how to answer with a
    choice in it (_INSTRUCTED_CHOICE)."""
    return (
        (
            bool(_MEMORY_REQUEST.search(sentence))
            and any(w not in _MEMORY_REQUEST_WORDS for w in content_words(sentence))
        )
        or _instructs(sentence)
        or bool(_UNITS.search(sentence))
        or (bool(_INSTRUCTED_CHOICE.search(sentence)) and _content_after(_CORRECTION, sentence))
    )


def _instructs(sentence: str) -> bool:
    """A standing instruction by its first words (_STANDING_INSTRUCTION)."""
    match = _STANDING_INSTRUCTION.search(sentence)
    if match is None:
        return False
    first, second = match.group(2), match.group(3)
    if match.group("adverb") and (first.lower() in LATIN_FUNCTION_WORDS or is_passing_state(first.lower())):
        return False
    return any(w and is_content_word(w.lower()) for w in (first, second))


def _changes_employer(sentence: str) -> bool:
    """_EMPLOYER_CHANGE, its name not a first name."""
    return any(m.group(1).lower() not in FIRST_NAMES for m in _EMPLOYER_CHANGE.finditer(sentence))


def _habit(sentence: str) -> bool:
    return (
        (bool(_HABITUAL.search(sentence)) or any(not _past(m[1].casefold()) for m in _EVERYWHERE.finditer(sentence)))
        and any(w not in FIRST_NAMES for w in content_words(sentence))
        and not _THANKS.search(sentence)
    )


def _cjk_habit(sentence: str) -> bool:
    """A frequency of _CJK_FREQUENCIES with something done: in Japanese and Korean an object
    (_CJK_OBJECT), in Chinese no one addressed and no state (_CJK_STATE); not thanks."""
    if not any(f in sentence for f in _CJK_FREQUENCIES) or _THANKS.search(sentence):
        return False
    if _KANA_OR_HANGUL.search(sentence):
        return bool(_CJK_OBJECT.search(sentence))
    return not any(w in sentence for w in _CJK_STATE)


def _does(found: list[str], *, or_did: bool = False) -> bool:
    """ "I" and a content verb in the present with a content word within the next three words ("I
    commute by bike", "I teach high school chemistry"): what the speaker does. With `or_did`, also
    what they did ("I bought a new home"): a fact, but an event, not a lasting one. The commonest verbs
    ("get", "run", "have") and those of small talk ("appreciate", "hope", "miss") are not content
    words."""
    return any(
        t == "i"
        and k + 1 < len(found)
        and is_content_word(found[k + 1])
        and not is_activity(found[k + 1])
        and (or_did or not _past(found[k + 1]))
        and any(is_content_word(w) and w not in FIRST_NAMES for w in found[k + 2 : k + 5])
        for k, t in enumerate(found)
    )


def _past(verb: str) -> bool:
    """A verb in the past tense: regular in -ed ("finished"), or irregular ("ran", "bought")."""
    return (verb.endswith("ed") and not verb.endswith("eed")) or verb in _IRREGULAR_PAST


def _likes(found: list[str]) -> bool:
    """A liking or habit verb ("like", "use", "speak", ...) after "I"/"we" (within three words: "I really
    don't like") with a content word in the next three words; not a wish ("I would like more
    information", "I'd love to")."""
    return any(
        t in _LIKING
        and any(s in _LIKING_SUBJECTS for s in found[max(0, k - 3) : k])
        and not any(w in _WISHING for w in found[max(0, k - 3) : k])
        and any(is_content_word(w) for w in found[k + 1 : k + 4])
        for k, t in enumerate(found)
    )


def _content_after(pattern: re.Pattern[str], sentence: str) -> bool:
    """Whether `pattern` matches with a content word among its groups: "tea, not coffee" and "I'm a
    nurse" state something, "fine, not great" and "I'm a bit tired" do not."""
    return any(any(w and is_content_word(w.lower()) for w in match.groups()) for match in pattern.finditer(sentence))


def _enough_content(sentence: str, found: list[str]) -> bool:
    """FACT_MIN_CONTENT_WORDS content words (not first names, not the bigrams of an unspaced script:
    CJK, Thai) in the singular first person."""
    if not _singular_first_person(sentence, found):
        return False
    counted = [w for w in content_words(sentence) if not is_unspaced(w) and w not in FIRST_NAMES]
    return len(counted) >= FACT_MIN_CONTENT_WORDS


def _lasting(sentence: str, found: list[str]) -> bool:
    """The specifics of condition 3 that tell what stays true of the speaker: family and pets,
    health and diet, preferences, home and work, likings and habits, what they are."""
    return (
        any(t in _CUES for t in found)
        or _has_cjk_cue(sentence)
        or bool(_PHRASE_CUES.search(sentence) or _HINDI_SELF.match(sentence))
        or any(
            p.search(sentence)
            for p in (_PREFERENCE, _CALLED, _CONTACT, _LASTING_CONDITION, _CHANGED_HABIT, _TEACHES, _RELATIONSHIP)
        )
        or _content_after(_INTO, sentence)
        or _content_after(_RESTRICTION, sentence)
        or bool(_LONG_WORK.search(sentence))
        or _content_after(_ROOTS_AND_ROUNDS, sentence)
        or _content_after(_YEARS_AS, sentence)
        or bool(_COMMUTE.search(sentence))
        or _changes_employer(sentence)
        or _likes(found)
        or _content_after(_CORRECTION, sentence)
        or bool(_SELF_CORRECTED.search(sentence))
        or describes_self(sentence)
        or _habit(sentence)
        or _does(found)
    )


def _specific(sentence: str, found: list[str]) -> bool:
    """Condition 3 of the module docstring."""
    return (
        any(ch.isdigit() for ch in sentence)
        or any(t in _DATE_WORDS for t in found)
        or bool(_RELATIVE_DATE.search(sentence))
        or _lasting(sentence, found)
        or _does(found, or_did=True)
        or _named(sentence)
        or _enough_content(sentence, found)
        or _ongoing(sentence)
    )


def _ongoing(sentence: str) -> bool:
    """What the speaker is in the middle of (_ONGOING): a fact of their present, not a lasting one."""
    return any(
        m.group(1).lower() not in _OF_THE_MOMENT and is_content_word(m.group(2).lower())
        for m in _ONGOING.finditer(sentence)
    )


def _without_first_person(sentence: str, found: list[str]) -> bool:
    """The four kinds of sentence that state a fact without a first person."""
    return (
        _corrects(sentence, found)
        or _asks_to_be_remembered(sentence)
        or bool(_FOREIGN_HABIT.search(sentence))
        or _unmarked_speaker(sentence)
    )


def _has_cjk_cue(sentence: str) -> bool:
    """A cue of _CJK_CUES, not inside 大丈夫 ("all right" in Japanese; 丈夫 is "husband" in Chinese),
    or a habit (_cjk_habit)."""
    sentence = sentence.replace("大丈夫", "")
    return any(cue in sentence for cue in _CJK_CUES) or _cjk_habit(sentence)


def _unmarked_speaker(sentence: str) -> bool:
    """A Japanese or Korean statement of a kind of lasting fact (a CJK cue) that names no one else and
    does not seek agreement (_REMARK)."""
    return speaks_of_self_unmarked(sentence) and _has_cjk_cue(sentence) and not _REMARK.search(sentence)


def speaks_of_self_unmarked(text: str) -> bool:
    """Japanese or Korean naming no one other than the speaker (_OTHER_PERSON_UNMARKED): about the
    speaker, as those languages seldom say "I" ("猫を二匹飼っています", "ペットはいますか？")."""
    return bool(_KANA_OR_HANGUL.search(text)) and not any(w in text for w in _OTHER_PERSON_UNMARKED)


def personal_fact_sentences(text: str) -> list[str]:
    """The sentences of `text` that state a personal fact (see the module docstring), or that are
    statements in a language the signal has no words for (unread_statements.py)."""
    return _stating(text, _specific, or_unread=True)


def lasting_fact_sentences(text: str) -> list[str]:
    """The sentences of `text` that state a lasting personal fact: a first person with a specific of
    `_lasting` ("I'm allergic to peanuts", "Call me Sam", "I'm left-handed", "I work nights"), a
    correction, a memory request or standing instruction. Not a plan, an event or a situation told by
    a date, a number, a name or its content words alone ("I'm flying to Kyoto in April", "My script
    crashes with KeyError"): those are facts of a moment."""
    return _stating(text, _lasting)


def _stating(text: str, specific: Callable[[str, list[str]], bool], *, or_unread: bool = False) -> list[str]:
    """The statements of `text` in the first person with `specific`, or of the kinds that need none;
    with `or_unread`, also those the signal cannot read."""
    out: list[str] = []
    previous = ""
    for sentence in split_sentences(strip_markup(text)):
        before, previous = previous, sentence
        told = [c for c in _told_clauses(sentence) if _states(c, tokens(c), specific)]
        if told or is_question(sentence):
            out += told or [n for n in _own_named(sentence) if _states(n, tokens(n), specific)]
            continue
        found = tokens(sentence)
        if _states(sentence, found, specific) or (
            or_unread and is_unread(sentence, _without_smalltalk_tokens(sentence, found), _KNOWN_WORDS)
        ):
            out.append(sentence)
        elif (theirs := _said_of_theirs(sentence, before)) and _states(theirs, tokens(theirs), specific):
            # told with the sentence that names them: "She turns 10." alone says of whom to no one
            if out and out[-1] == before:
                out.pop()
            out.append(f"{before} {sentence}")
    return out


def _said_of_theirs(sentence: str, before: str) -> str:
    """The sentence with its opening "she", "he" or "they" (_SAID_OF_THEM) read as the one of the
    speaker's the sentence `before` names ("my daughter"); "" when it opens otherwise or none is named."""
    pronoun = _SAID_OF_THEM.match(sentence)
    named = _OWN_MENTIONED.findall(before) if pronoun else []
    if not pronoun or len(set(named)) != 1:
        return ""
    return f"{sentence[: pronoun.start(1)]}my {named[0]}{sentence[pronoun.end(1) :]}"


def _states(sentence: str, found: list[str], specific: Callable[[str, list[str]], bool]) -> bool:
    return (_first_person(sentence, found) and specific(sentence, found)) or _without_first_person(sentence, found)


def _told_clauses(sentence: str) -> list[str]:
    """The clauses that tell, of a sentence that also asks: users tell most facts inside a request
    ("I'm allergic to bee stings, what should be in my first-aid kit?", "Help me plan a walk, I had
    knee surgery in May."), and the fact is the clause, not the request. Clauses that ask or only
    suppose ("if I'm vegan, ...") are left out; a sentence that does not ask has none."""
    clauses = [c.strip() for part in _CLAUSE_BREAK.split(sentence) for c in _at_unpunctuated_i(part) if c.strip()]
    if len(clauses) < 2:  # most sentences: nothing more to read
        return []
    asking = [is_question(c) or bool(_ASKING_OR_SUPPOSING.match(c)) for c in clauses]
    if not any(asking):
        return []
    return [c for c, asks in zip(clauses, asking) if not asks]


def _at_unpunctuated_i(clause: str) -> list[str]:
    """A clause cut where "I'm" opens another without a comma, as chat is typed ("what snacks should i
    bring im allergic to nuts"); not after a word that makes it part of the first ("if im late")."""
    out = [clause]
    for m in reversed(list(_I_AM.finditer(clause))):
        before = out[0][: m.start()].split()
        if before and before[-1].lower() not in _BINDS_THE_NEXT_CLAUSE:
            out[:1] = [out[0][: m.start()], out[0][m.start() :]]
    return out


def _own_named(question: str) -> list[str]:
    """Who or what of the speaker's a question names ("What should I feed my cat Pepper?": "my cat
    Pepper"): asking about them tells that they are the speaker's."""
    return [
        m.group(0)
        for m in _OWN_NAMED.finditer(question)
        if m.group(2)[0].isupper() and m.group(2).casefold() not in _NOT_NAMES
    ]


def _without_smalltalk_tokens(sentence: str, found: list[str]) -> list[str]:
    """The sentence's tokens (`found`) without its CJK or Thai small-talk phrases: read again only when
    it held one."""
    plain = without_smalltalk_phrases(sentence)
    return found if plain == sentence else tokens(plain)


def states_personal_fact(texts: str | Iterable[str]) -> bool:
    """Whether any of the texts states a personal fact."""
    return any(personal_fact_sentences(t) for t in _texts(texts))


def states_lasting_fact(texts: str | Iterable[str]) -> bool:
    """Whether any of the texts states a lasting personal fact (lasting_fact_sentences)."""
    return any(lasting_fact_sentences(t) for t in _texts(texts))


def _texts(texts: str | Iterable[str]) -> Iterable[str]:
    return [texts] if isinstance(texts, str) else texts
