"""Build gate_labelled.jsonl, the quality gate's labelled set (see README.md beside it).

    .venv/bin/python tests/formation/data/build_gate_labelled.py [/work/shared/data/locomo]

Three parts, each segment labelled "admit" or "reject":
- locomo-evidence (admit): every distinct evidence turn of a category 1-4 question of the shared
  LoCoMo files, with the turn before it in its session (the first turn of a session: with the turn
  after it), the way a cut at a turn boundary would hand it to formation; speaker_a is the user,
  a shared photo's caption is appended as `athena eval locomo` does.
- locomo-small-talk (reject): session openings and closings (two turns) that hold no evidence of any
  question (category 5 included) and were read and picked by hand as greetings, thanks, goodbyes or
  encouragement without a fact (`SMALL_TALK_KEYS`).
- written (admit / reject): facts, preferences, corrections and plans in several phrasings and shapes
  (alone, acknowledged, answered), small talk in several forms, and a few non-English cases (`WRITTEN`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "gate_labelled.jsonl"
DEFAULT_LOCOMO = Path("/work/shared/data/locomo")

SMALL_TALK_KEYS: dict[str, list[str]] = {
    "26": ["D4:17", "D5:15", "D6:1", "D8:38", "D10:1", "D11:16", "D13:17", "D16:19", "D18:23", "D19:14"],
    "30": [
        "D2:15",
        "D3:13",
        "D4:18",
        "D6:18",
        "D7:16",
        "D8:25",
        "D9:13",
        "D10:13",
        "D12:18",
        "D13:1",
        "D13:22",
        "D14:19",
        "D16:15",
        "D17:20",
        "D18:21",
        "D19:13",
    ],
    "41": [
        "D3:16",
        "D4:25",
        "D5:15",
        "D6:21",
        "D8:25",
        "D11:20",
        "D12:22",
        "D13:1",
        "D13:36",
        "D16:18",
        "D17:15",
        "D20:17",
        "D21:28",
        "D22:20",
        "D24:16",
        "D26:16",
        "D27:15",
        "D28:18",
        "D29:17",
        "D30:22",
        "D31:22",
        "D32:16",
    ],
}
"""The first turn of each hand-picked two-turn small-talk segment."""

U, A = "user", "agent"
ACKS = ["Got it, I'll remember that.", "Noted, thanks!", "Thanks for letting me know.", "Okay!", "Good to know!"]

# (id, kind, language, turns): every written case that must be admitted.
FACTS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("wife-anniversary", "fact", [(U, "My wife's name is Ana and our anniversary is June 12")]),
    (
        "wife-anniversary-ack",
        "fact",
        [(U, "My wife's name is Ana and our anniversary is June 12"), (A, "That's lovely!")],
    ),
    (
        "peanut-allergy",
        "fact",
        [(U, "I'm allergic to peanuts."), (A, "Thanks for telling me, I'll keep that in mind.")],
    ),
    ("porto-cats", "fact", [(U, "I live in Porto with my two cats.")]),
    (
        "daughter-kindergarten",
        "plan",
        [(U, "My daughter Lily starts kindergarten next September."), (A, "Exciting! Big step.")],
    ),
    ("nurse", "fact", [(U, "I work as a nurse at St. Mary's hospital, mostly night shifts."), (A, "Noted, thanks!")]),
    ("age-birthplace", "fact", [(U, "I'm 34 and I was born in Kraków.")]),
    (
        "dog-max",
        "fact",
        [
            (U, "hi!"),
            (A, "Hello! How can I help?"),
            (U, "We have a golden retriever called Max, he's 3."),
            (A, "Max sounds adorable!"),
        ],
    ),
    ("tokyo-flight", "plan", [(U, "My flight to Tokyo is on the 3rd of March at 9:40."), (A, "Got it.")]),
    ("civic", "possession", [(U, "I drive a 2015 Honda Civic.")]),
    ("student-id", "fact", [(U, "My student ID is 20231457."), (A, "Thanks, I've saved it.")]),
    ("office-moved", "fact", [(U, "Our office moved to 221 Baker Street last month.")]),
    ("vegetarian-since", "diet", [(U, "I've been vegetarian since 2019."), (A, "Good to know!")]),
    ("brother-denver", "relationship", [(U, "My brother Tom lives in Denver.")]),
    (
        "lactose",
        "diet",
        [(U, "I'm lactose intolerant, so no milk in recipes please."), (A, "Understood, I'll leave dairy out.")],
    ),
    ("diabetes", "fact", [(U, "I have type 1 diabetes.")]),
    ("mom-birthday", "fact", [(U, "My mom's birthday is on October 3rd."), (A, "Okay!")]),
    ("bakery", "possession", [(U, "I own a small bakery in Leeds."), (A, "Oh nice, what do you bake?")]),
    ("married-lisbon", "fact", [(U, "We got married in Lisbon in 2018.")]),
    ("languages", "fact", [(U, "I speak Portuguese and a bit of German."), (A, "Great, that helps.")]),
    ("pixel", "possession", [(U, "My phone is a Pixel 7.")]),
    ("husband-chef", "relationship", [(U, "My husband Carlos is a chef."), (A, "Lucky you!")]),
    ("two-kids", "relationship", [(U, "I have two kids, Mia and Leo.")]),
    ("rent", "fact", [(U, "My landlord is raising the rent to $1,800 in August."), (A, "That's a big jump, sorry.")]),
    ("tesla", "possession", [(U, "I bought a used Tesla Model 3 last week.")]),
    ("bullet-points", "preference", [(U, "I prefer answers in bullet points")]),
    (
        "bullet-points-ack",
        "preference",
        [(U, "I prefer answers in bullet points"), (A, "Sure, I'll use bullet points from now on.")],
    ),
    ("short-replies", "preference", [(U, "Please keep your replies short, I read them on my phone."), (A, "Will do.")]),
    ("metric", "preference", [(U, "I'd rather get metric units, not imperial.")]),
    ("thai", "preference", [(U, "My favorite cuisine is Thai."), (A, "Noted!")]),
    ("spicy", "preference", [(U, "I don't like spicy food."), (A, "Okay, I'll keep recipes mild.")]),
    ("coffee-black", "preference", [(U, "I like my coffee black, no sugar.")]),
    (
        "typescript",
        "preference",
        [(U, "Always write the code examples in TypeScript for me, I don't use JavaScript."), (A, "Sure.")],
    ),
    (
        "morning-person",
        "preference",
        [(U, "I'm a morning person, so please schedule my meetings before 11."), (A, "Understood.")],
    ),
    ("long-emails", "preference", [(U, "I hate long emails, keep them to three sentences.")]),
    (
        "british-spelling",
        "preference",
        [(U, "Use British spelling when you write for me, I'm in London."), (A, "Will do.")],
    ),
    ("call-me-sam", "correction", [(U, "Call me Sam, not Samuel")]),
    ("call-me-sam-ack", "correction", [(U, "Call me Sam, not Samuel"), (A, "Okay, Sam it is!")]),
    ("thursday-not-tuesday", "correction", [(U, "Actually, my appointment is on Thursday, not Tuesday.")]),
    (
        "berlin-not-bern",
        "correction",
        [(U, "Sorry, I meant Berlin, not Bern. I'm flying there on Friday."), (A, "Thanks for the correction.")],
    ),
    ("three-kids", "correction", [(U, "Correction: I have three kids, not two.")]),
    ("nguyen", "correction", [(U, "My last name is spelled Nguyen, with a g."), (A, "Thanks, fixed.")]),
    ("austin", "correction", [(U, "No, I moved out of Chicago last year; I'm in Austin now.")]),
    (
        "not-vegan",
        "correction",
        [(U, "I'm not vegan anymore, just vegetarian."), (A, "Got it, thanks for the update.")],
    ),
    ("lisbon-conference", "plan", [(U, "I'm flying to Lisbon on May 3 for a conference.")]),
    ("new-job", "plan", [(U, "Next week I'm starting a new job at Shopify."), (A, "Congratulations!")]),
    ("move-canada", "plan", [(U, "We're planning to move to Canada next year.")]),
    ("marathon", "plan", [(U, "I'm going to run the Berlin marathon in September."), (A, "Wow, good luck!")]),
    ("dentist", "plan", [(U, "My dentist appointment is tomorrow at 4pm.")]),
    ("camping", "plan", [(U, "I'm taking the kids camping this weekend."), (A, "Have fun!")]),
    ("vacation", "plan", [(U, "I will be on vacation from July 1 to July 14."), (A, "Thanks, I'll note that.")]),
    ("nopa", "plan", [(U, "I've booked a table at Nopa for Friday at 8.")]),
]
NON_ENGLISH_FACTS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    (
        "es-name-allergy",
        "fact",
        "es",
        [(U, "Me llamo Lucía y soy alérgica a los frutos secos."), (A, "¡Entendido, gracias!")],
    ),
    ("es-birthday", "fact", "es", [(U, "Mi cumpleaños es el 4 de julio.")]),
    ("fr-lyon", "fact", "fr", [(U, "J'habite à Lyon avec mon mari et nos deux enfants.")]),
    (
        "fr-short-answers",
        "preference",
        "fr",
        [(U, "Je préfère les réponses courtes, en français s'il vous plaît."), (A, "Bien sûr !")],
    ),
    ("de-vegetarian", "diet", "de", [(U, "Ich bin Vegetarier und wohne in Hamburg.")]),
    ("de-son", "relationship", "de", [(U, "Mein Sohn heißt Jonas und ist 7 Jahre alt."), (A, "Danke, notiert.")]),
    ("pt-curitiba", "fact", "pt", [(U, "Eu moro em Curitiba e trabalho como professora.")]),
    ("it-gluten", "diet", "it", [(U, "Mi chiamo Giulia e sono allergica al glutine.")]),
    ("zh-peanuts", "diet", "zh", [(U, "我对花生过敏。"), (A, "好的，我记住了。")]),
    ("ja-birthday", "fact", "ja", [(U, "私の誕生日は5月3日です。")]),
]
SMALL_TALK: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("hi", "en", [(U, "hi")]),
    ("hello-help", "en", [(U, "hey there"), (A, "Hi! How can I help you today?")]),
    ("thanks-welcome", "en", [(U, "thanks!"), (A, "You're welcome!")]),
    ("lol", "en", [(U, "lol")]),
    ("haha-nice", "en", [(U, "haha nice"), (A, "😄")]),
    (
        "how-are-you",
        "en",
        [(U, "How are you?"), (A, "I'm doing well, thanks for asking! How about you?"), (U, "Good, thanks")],
    ),
    ("good-morning", "en", [(U, "Good morning!"), (A, "Good morning! What can I do for you?")]),
    ("ok", "en", [(U, "ok")]),
    ("cool-thanks", "en", [(U, "cool, thanks")]),
    ("bye", "en", [(U, "bye!"), (A, "Goodbye, have a great day!")]),
    ("see-you-tomorrow", "en", [(U, "See you tomorrow!")]),
    ("helpful", "en", [(U, "Thanks so much, that was really helpful!"), (A, "Glad I could help!")]),
    ("im-good-you", "en", [(U, "I'm good, thanks. You?"), (A, "Doing great, thanks!")]),
    ("nice-to-meet", "en", [(U, "Nice to meet you!"), (A, "Nice to meet you too!")]),
    ("happy-for-you", "en", [(U, "I'm so happy for you!")]),
    ("appreciate-it", "en", [(U, "I appreciate it!"), (A, "Anytime!")]),
    ("nice-weekend", "en", [(U, "Have a nice weekend!"), (A, "You too!")]),
    ("talk-later", "en", [(U, "Talk to you later 👋")]),
    ("happy-friday", "en", [(U, "Happy Friday!"), (A, "Happy Friday to you too!")]),
    ("love-it", "en", [(U, "I love it! Thanks!")]),
    ("me-too", "en", [(U, "Me too!"), (A, "Ha, same here.")]),
    ("have-to-go", "en", [(U, "Sorry, I have to go now. Bye!"), (A, "No problem, talk soon!")]),
    ("good-night", "en", [(U, "Good night!"), (A, "Good night, sleep well!")]),
    ("let-you-know", "en", [(U, "Awesome, I'll let you know if I need anything else."), (A, "Sounds good!")]),
    ("long-time", "en", [(U, "Hey! Long time no see. How have you been?"), (A, "I've been great, thanks! You?")]),
    ("youre-the-best", "en", [(U, "Thank you, Maria! You're the best!"), (A, "Anytime, John!")]),
    ("im-back", "en", [(U, "I'm back!"), (A, "Welcome back! What would you like to do?")]),
    ("yes-please", "en", [(U, "yes please")]),
    ("i-see", "en", [(U, "I see. Interesting!")]),
    ("merry-christmas", "en", [(U, "Merry Christmas!"), (A, "Merry Christmas to you too!")]),
    ("great-job", "en", [(U, "Great job, you're amazing!"), (A, "Thank you so much, that means a lot to me!")]),
    ("keep-going", "en", [(U, "You got this! Keep going!"), (A, "Thanks, I will! I really appreciate your support.")]),
    ("sounds-good", "en", [(U, "Sounds good to me."), (A, "Perfect!")]),
    ("es-hola", "es", [(U, "¡Hola! ¿Qué tal?"), (A, "¡Muy bien, gracias!")]),
    ("fr-merci", "fr", [(U, "Merci beaucoup, bonne journée !")]),
    ("de-danke", "de", [(U, "Danke, tschüss!"), (A, "Tschüss!")]),
    ("pt-obrigado", "pt", [(U, "Obrigado!")]),
    ("zh-thanks", "zh", [(U, "谢谢！"), (A, "不客气！")]),
    ("ja-hello", "ja", [(U, "こんにちは！"), (A, "こんにちは、お元気ですか？")]),
]


def _record(
    rid: str, source: str, label: str, kind: str, lang: str, turns: list[tuple[str, str]], **extra: object
) -> dict[str, object]:
    return {
        "id": rid,
        "source": source,
        "label": label,
        "kind": kind,
        "lang": lang,
        **extra,
        "turns": [{"role": r, "text": t} for r, t in turns],
    }


def _sessions(path: Path) -> tuple[dict[str, list[dict[str, str]]], list[dict[str, Any]]]:
    data = json.loads(path.read_text())
    conv = data.get("conversation", data)
    sessions: dict[str, list[dict[str, str]]] = {}
    for key, turns in conv.items():
        if key.startswith("session_") and isinstance(turns, list):
            for t in turns:
                text = t["text"] + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
                role = U if t["speaker"] == conv["speaker_a"] else A
                sessions.setdefault(t["dia_id"].split(":")[0], []).append(
                    {"dia_id": t["dia_id"], "role": role, "text": text}
                )
    return sessions, data.get("qa", [])


def _evidence_ids(qa: list[dict[str, Any]], categories: tuple[int, ...]) -> set[str]:
    return {
        x.strip()
        for q in qa
        if q.get("category") in categories
        for e in q.get("evidence", [])
        for x in str(e).split(";")
    }


def locomo_records(folder: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for path in sorted(folder.glob("*.json")):
        sessions, qa = _sessions(path)
        wanted = _evidence_ids(qa, (1, 2, 3, 4))
        for turns in sessions.values():
            for k, t in enumerate(turns):
                if t["dia_id"] not in wanted:
                    continue
                pair = turns[k - 1 : k + 1] if k > 0 else turns[k : k + 2]
                out.append(
                    _record(
                        f"locomo-{path.stem}-{t['dia_id']}",
                        "locomo-evidence",
                        "admit",
                        "evidence",
                        "en",
                        [(p["role"], p["text"]) for p in pair],
                        conversation=path.stem,
                        dia_ids=[p["dia_id"] for p in pair],
                        evidence=t["dia_id"],
                    )
                )
        every = _evidence_ids(qa, (1, 2, 3, 4, 5))
        by_id = {t["dia_id"]: (s, k) for s, turns in sessions.items() for k, t in enumerate(turns)}
        for first in SMALL_TALK_KEYS.get(path.stem, []):
            s, k = by_id[first]
            pair = sessions[s][k : k + 2]
            assert len(pair) == 2 and not {p["dia_id"] for p in pair} & every, first
            out.append(
                _record(
                    f"locomo-{path.stem}-{first}-small-talk",
                    "locomo-small-talk",
                    "reject",
                    "small_talk",
                    "en",
                    [(p["role"], p["text"]) for p in pair],
                    conversation=path.stem,
                    dia_ids=[p["dia_id"] for p in pair],
                )
            )
    return out


def written_records() -> list[dict[str, object]]:
    out = [_record(f"written-{i}", "written", "admit", kind, "en", turns) for i, kind, turns in FACTS]
    out += [
        _record(f"written-{i}", "written", "admit", kind, lang, turns) for i, kind, lang, turns in NON_ENGLISH_FACTS
    ]
    out += [_record(f"written-{i}", "written", "reject", "small_talk", lang, turns) for i, lang, turns in SMALL_TALK]
    return out


def main(folder: Path) -> None:
    records = locomo_records(folder) + written_records()
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)), "duplicate ids"
    with OUT.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(records)} segments -> {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_LOCOMO)
