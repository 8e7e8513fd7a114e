"""Word lists for the heuristic analysis and the quality gate.

FUNCTION_WORDS are English's stop words (athena.text.STOP_WORDS["en"]). STOPWORDS split key phrases
(RAKE-style): function words, plus the common English verbs, adverbs, vague nouns and conversational
fillers that never name a topic ("help", "thing", "really", "try"). SMALLTALK holds greetings,
acknowledgements and phatic words: a text made only of these says nothing worth keeping. A *content
word* is a word in neither list (`is_content_word`) nor among the stop words of its text's language
(athena.text.stop_words, which the callers apply: a word alone does not tell its language).
"""

from __future__ import annotations

from functools import lru_cache

from athena.text import STOP_WORDS

__all__ = [
    "EVERYDAY_OTHER",
    "FUNCTION_WORDS",
    "LATIN_FUNCTION_WORDS",
    "SMALLTALK",
    "STOPWORDS",
    "UNSPACED_SMALLTALK_PHRASES",
    "VERB_FORMS",
    "is_content_word",
]


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

# The same in the other languages the docs list, as athena.text tokenizes them (casefolded, accents
# kept, CJK as character bigrams; Thai's are phrases, UNSPACED_SMALLTALK_PHRASES): greetings, thanks, goodbyes, "how are you", "fine", generic offers
# of help (Spanish, French, German, Italian, Portuguese, Russian, Chinese, Japanese; Dutch, Polish,
# Turkish, Indonesian, Vietnamese, Hindi, Arabic, Hebrew, Swedish; and Greek, Thai, Czech, Romanian,
# Hungarian, Finnish, Ukrainian, Persian, Serbian, Croatian, Bulgarian, Macedonian, Kazakh, Catalan,
# Estonian, Latvian, Lithuanian, Slovak, Albanian, Icelandic, Swahili, Tagalog, Welsh, Basque and
# Afrikaans, whose other words the personal-fact signal cannot read: forming/unread_statements.py).
# Without them a greeting would count as content and pass the gate.
_SMALLTALK_OTHER = """
hola buenas buenos días dias tardes noches gracias muchas muchísimas adiós adios hasta luego pronto vale
bueno genial perfecto claro jaja jajaja qué que tal cómo como estás estas está esta bien muy todo placer
encantado encantada saludos chao chau nada ayudo ayudar puedo servirte
bonjour salut bonsoir coucou merci beaucoup revoir bientôt bientot ça ca va vas bien très tres accord
super génial genial parfait haha mdr plaisir comment allez aider puis rien
hallo servus moin guten morgen tag abend nacht danke dankeschön schön vielen tschüss tschüs bis bald
wiedersehen wie geht's gehts geht gut super toll klar okay prima gern gerne geschehen bitte helfen
привет здравствуйте здравствуй добрый доброе утро день вечер спасибо большое пожалуйста пока свидания
как дела хорошо отлично ладно окей ок ага хаха чем помочь могу всё все нормально рад рада
你好 您好 谢谢 多谢 再见 拜拜 好的 哈哈 早上 上好 晚安 晚上 不客 客气 怎么 么样 最近 我很 很好 还好 可以
什么 有什 帮你 帮您 没事 没问 问题 嗯嗯 不错 こん んに にち ちは ござ ざい いま ます ありが りが がと とう
hallo hoi goedemorgen goedemiddag goedenavond bedankt dankjewel dankuwel alsjeblieft gedaan ziens doei
gaat het goed prima oké fijn helpen
cześć dzień dobry dobrze wieczór dziękuję dzięki bardzo proszę widzenia jak się masz świetnie okej pomóc
mogę
merhaba selam günaydın akşamlar teşekkürler teşekkür ederim sağ nasılsın nasılsınız iyiyim iyi
görüşürüz hoşça kal rica tamam yardımcı olabilirim
halo hai selamat pagi siang malam terima kasih sama-sama apa kabar baik saja sampai jumpa oke bantu
xin chào chào cảm ơn cám tạm biệt bạn khỏe không vâng dạ được giúp gì
नमस्ते नमस्कार धन्यवाद शुक्रिया अलविदा फिर मिलेंगे आप कैसे कैसी हैं हूँ हूं ठीक अच्छा मदद करूँ करूं
مرحبا مرحباً أهلا أهلاً اهلا السلام عليكم وعليكم كيف حالك بخير الحمد لله شكرا شكرًا شكراً جزيلا عفوا
السلامة وداعا اللقاء أساعدك مساعدتك تمام حسنا حسنًا
שלום היי תודה רבה בבקשה להתראות נשמע שלומך בסדר טוב אעזור לעזור
hej hallå tack tackar bra mår hjälpa hejdå ses varsågod trevligt god morgon kväll natt okej gärna absolut
uppskattar verkligen waardeer echt senang membantu hari आपकी आपका करके खुश سعيد سعيدة بمساعدتك
γεια σας σου καλημέρα καλησπέρα καληνύχτα ευχαριστώ ευχαριστούμε πολύ παρακαλώ αντίο εντάξει λέμε χαίρετε
děkuji děkuju díky dobrý ahoj nashledanou prosím pořádku mulțumesc mulțumim frumos bună ziua seara salut
revedere mersi köszönöm szépen szia sziasztok jó napot reggelt estét viszontlátásra rendben kiitos hei moi
huomenta hyvää päivää iltaa näkemiin selvä дякую вітаю побачення будь ласка гаразд سلام ممنون ممنونم مرسی
خداحافظ خیلی روز خوبی داشته باشید خواهش کنم
ciao buongiorno buonasera buonanotte grazie mille prego arrivederci bene benissimo stai tutto perfetto
certo piacere volentieri olá oi obrigado obrigada muito tchau até tudo bem beleza valeu tranquilo
perfeito prazer ajudar posso
hvala puno dobro jutro laku noć zdravo ćao doviđenja хвала пуно добро јутро лаку ноћ велико здраво ћао
довиђења вече благодаря благодарам мерси лека нощ здравей довиждане чао рахмет сәлем сәлеметсіз сау
болыңыз gràcies adéu aitäh tere paldies sveiki ačiū labas ďakujem faleminderit mirëdita takk halló asante
habari jambo karibu salamat kumusta paalam diolch helo eskerrik asko kaixo agur dankie goeie môre totsiens
"""

# The commonest function words (pronouns, articles, copulas, auxiliaries, prepositions, conjunctions,
# question words) of the languages whose stop words athena.text does not list: Dutch, Swedish, Polish,
# Turkish, Indonesian, Vietnamese, Hindi, Arabic, Italian and Portuguese (those of the last two that
# Spanish or English share are listed there). Without them every word of such a text counted as
# content, and "Ik ben blij dat ik kon helpen!" read as a fact by its content words alone. Words that
# are also English words, names or chat spellings are left out ("van", "men", "den", "ten", "ben", "dan",
# "kim", "ada", "die", "em", "ve", "mi", "da", "na").
_FUNCTION_OTHER = """
ik je jij hij zij ze wij we jullie het een de en dat dit zijn waren heb hebt heeft hebben kan kunnen
wilt zal zou niet geen ook maar als naar voor bij uit aan op om te nog wel erg zeer veel mijn mij jou
jouw uw haar ons onze hun er hier daar wat waar waarom wanneer kon
jag du hon vi ni det ett och att som är var har hade kan vill inte också eller om när där här vad vem hur
varför dig med ditt hennes vår vårt våra deras sig oss på av för från hos utan efter mycket så bara
ja ty ona ono wy oni jest są był była było byli jestem jesteś jesteśmy mam masz mają nie tak we ze od
po za przez dla że żeby tutaj te tego tej tym jak co kto gdzie kiedy dlaczego czy się mnie mój moja moje twój
twoja jego jej nasz nasza bardzo już jeszcze też tylko lub albo może można
sen bu şu bir ile de mı mu mü için gibi çok daha ama fakat veya ne neden nasıl nerede var yok değil
benim senin onun bizim sizin onların bana sana ona seni onu siz onlar
saya aku kamu anda dia kami kita ini itu di ke dari dengan untuk pada adalah akan sudah belum tidak bukan
juga atau tetapi tapi karena jika kalau apa siapa bagaimana kapan mengapa sangat sekali bisa dapat mau
ingin punya
tôi anh chị ông bà nó chúng họ mình là và của có không được đã đang sẽ rất thì mà này đó với cho ở
trong để từ như những các một cũng nhưng hoặc gì đâu nào sao khi bị
मैं तुम वह यह हम वे मेरा मेरी मेरे तुम्हारा आपका उसका हमारा था थी थे का की के को में से पर और या भी तो ही
नहीं न क्या कौन कहाँ कब क्यों एक बहुत कुछ सब
أنا انا أنت انت هو هي نحن هم هذا هذه ذلك تلك في من إلى الى على عن مع و أو او لا لم لن ما ماذا أين متى
كيف لماذا هل كان كانت يكون قد كل بعض جدا أيضا لكن الذي التي
blev blir bli igen redan innan klockan aldrig alltid yine sonra önce kadar hep şimdi artık hiç lagi masih
hanya sedang pernah telah selalu altijd nooit toch straks znowu zawsze nigdy teraz potem lại lúc giờ luôn
gli dello degli dalla dalle nel nella nei nelle sulla tra cui è sei siamo siete erano essere abbiamo avete
hanno questo questa questi queste quello quella quelli quando perché anche molto più già ancora sempre
tutte ogni lì tuo tua suo sua vostro loro sto sta anch'io però quindi allora oppure neanche nemmeno poi
dopo senza verso sopra sotto dentro fuori stata stato stati sarà sarebbe ero eri eravamo allo agli coi nello
negli sugli sullo
uma umas pelo pela pelos pelas sem quem não é são estão estou eram tem temos têm esse essa esses essas isso
isto aquele aquela aquilo onde porquê também muita muitos muitas já ainda nunca aqui lá teu seu você
vocês ele ela eles elas lhe então depois às aos foi foram fui estava estavam estive será seria vai vão vou
tinha tinham havia há
"""

UNSPACED_SMALLTALK_PHRASES: tuple[str, ...] = tuple(
    """
    有什么可以帮你 有什么可以帮您 有什么能帮你 我也很好 我很好 早上好 晚上好 大家好 不客气 没问题 怎么样
    你好 您好 谢谢 多谢 感谢 再见 拜拜 好的 哈哈 晚安 没事 最近 还好 不错 请问 こんにちは こんばんは
    おはよう ありがとう ございます さようなら よろしく 무엇을 도와드릴까요 도와드릴게요 안녕하세요 안녕히 안녕
    감사합니다 고맙습니다 고마워요 천만에요 반갑습니다 지내세요 지내요 괜찮아요 알겠습니다 좋아요
    ขอบคุณมาก ขอบคุณ สวัสดี ลาก่อน โอเค ครับ ค่ะ
    """.split()
)
"""Chinese, Japanese, Korean and Thai small-talk phrases (Thai's polite particles ครับ and ค่ะ with
them), taken out of a text before its words are read: their bigrams would otherwise read as content
(Chinese, Japanese and Thai have no spaces to say where a greeting ends, and Korean glues endings to
its words). A longer phrase before the phrases it holds."""

FUNCTION_WORDS: frozenset[str] = STOP_WORDS["en"]
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
STOPWORDS: frozenset[str] = (
    FUNCTION_WORDS | frozenset(_GENERAL.split()) | VERB_FORMS | frozenset(_FUNCTION_OTHER.casefold().split())
)
SMALLTALK: frozenset[str] = frozenset(w.casefold() for w in f"{_SMALLTALK} {_SMALLTALK_OTHER}".split())
"""Casefolded, as tokens are (Greek "σας" is "σασ")."""
EVERYDAY_OTHER: frozenset[str] = frozenset(
    """
akşam allemaal allihop anoche aujourd'hui avond bagus bellissima bellissimo bello bonita bonito
bonne bugün buona buono bữa caldo calor cantik cena chaud chúc ciepło clima comida cuaca deliciosa
delicioso deliziosa delizioso dingin dobra dzisiaj dziś délicieuse délicieux dîner dün enak eten
etentje excelente excellente filme fint freddo frio froid frío gece gisteren gott gra güzel hafta
harika hava hebat heerlijk heerlijke helg herkes herkese hermosa hermoso heute hoje hoy härlig
härligt hôm idag iedereen igår increíble incroyable incrível indah jantar jeu jogo juego kallt kalt
kemarin kolacja koud lecker leckere leckeres lekker lekkere leuk leuke lezzetli lindo lạnh
magnifique makan makanan mantap maç mecz middag minggu miłego mooi mooie météo mọi ngon người ngủ
noc noche noite notte nóng oggi ottima ottimo oyun panas partido partita película permainan
pertandingan phim piękna pięknie piękny pogoda prachtig prachtige pranzo pyszne qua ragazzi repas
schöne schönen schöner schönes semaine semana semua semuanya settimana soir soirée soğuk spel spiel
splendida splendido stasera süper sıcak tarde tiempo todas tolle toller tolles trevlig trận trời
tutti tuyệt tuần tối vandaag varmt väder wczoraj wedstrijd weekendu weer weertje wetter woche
wochenende wszyscy wszystkim wunderbar wunderschön wunderschöne yemek zimno zusammen ótima ótimo đêm
đẹp ładna ładnie ładny świetna świetny
""".split()
)
"""Everyday words of the Latin-script languages the signal reads beyond English (today, tonight, the
weather, good, beautiful, delicious, a game, dinner, everyone), casefolded; words that are also English
words are left out ("bella", "match", "warm"). Not small talk and not function words: a remark made of
them ("Fa caldo oggi.", "Tolles Spiel gestern.") is of a listed language, which the signal reads, not
an unread one (forming/unread_statements.py)."""
LATIN_FUNCTION_WORDS: frozenset[str] = frozenset().union(*(STOP_WORDS[lang] for lang in ("en", "es", "fr", "de")))
"""The stop words of English, Spanish, French and German: capitalised, they are not names ("Unfortunately
We can't"); after "I'm" they end what the speaker is ("I'm off to bake")."""


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
