"""The quality gate in many languages: a stated fact becomes a chain, small talk does not.

Greetings, thanks and goodbyes are small talk in every language the docs list (their words are in
the small-talk lists, Chinese, Japanese and Korean phrases included); a personal fact (first person
and something specific: an allergy, a family member, a date, or enough content words) passes in fast
and balanced mode.
"""

from __future__ import annotations

import numpy as np
import pytest

from athena.embeddings import LocalEmbedder
from athena_client.memory.v1 import memory_pb2 as pb
from athena_formation.forming.analysis import analyze
from athena_formation.forming.quality_gate import QualityReport, assess_quality

U, A = pb.ROLE_USER, pb.ROLE_AGENT

SMALL_TALK = {
    "es-hello": [(U, "¡Hola! ¿Qué tal?"), (A, "¡Hola! Muy bien, gracias. ¿En qué te ayudo?")],
    "es-bye": [(U, "Muchas gracias, adiós"), (A, "¡De nada! Hasta luego.")],
    "de-hello": [(U, "Hallo, wie geht's?"), (A, "Gut, danke! Wie kann ich helfen?")],
    "de-bye": [(U, "Danke schön, tschüss!"), (A, "Gern geschehen, bis bald!")],
    "fr-hello": [(U, "Bonjour, ça va ?"), (A, "Bonjour ! Très bien, merci. Comment puis-je vous aider ?")],
    "fr-bye": [(U, "Merci beaucoup, au revoir"), (A, "Avec plaisir, à bientôt !")],
    "ru-hello": [(U, "Привет! Как дела?"), (A, "Привет! Всё хорошо, спасибо. Чем помочь?")],
    "ru-bye": [(U, "Спасибо большое, пока!"), (A, "Пожалуйста, до свидания!")],
    "zh-hello": [(U, "你好！最近怎么样？"), (A, "你好！我很好，谢谢。有什么可以帮你？")],
    "zh-bye": [(U, "谢谢，再见！"), (A, "不客气，再见！")],
    "en-hello": [(U, "hi, how are you?"), (A, "I'm good, thanks! How can I help?")],
    "ko-hello": [(U, "안녕하세요! 잘 지내세요?"), (A, "안녕하세요! 무엇을 도와드릴까요?")],
    "ar-hello": [(U, "مرحبا! كيف حالك؟"), (A, "أهلاً! بخير، شكرًا. كيف أساعدك؟")],
    "hi-hello": [(U, "नमस्ते! आप कैसे हैं?"), (A, "नमस्ते! मैं ठीक हूँ। मैं आपकी कैसे मदद करूँ?")],
    # An agent's friendly first-person line: its words are function words and small talk, not content.
    "sv-hello": [(U, "Hej! Hur mår du?"), (A, "Hej! Jag mår bra, tack. Vad kan jag hjälpa dig med?")],
    "nl-thanks": [(U, "Dank je wel, ik waardeer het echt!"), (A, "Graag gedaan!")],
    "pl-hello": [(U, "Cześć!"), (A, "Dzień dobry! Jestem tutaj, żeby pomóc.")],
    "tr-hello": [(U, "Merhaba!"), (A, "Merhaba! Size nasıl yardımcı olabilirim?")],
    "id-thanks": [(U, "Terima kasih banyak!"), (A, "Saya senang bisa membantu Anda hari ini.")],
    "vi-hello": [(U, "Xin chào!"), (A, "Xin chào! Tôi rất vui được giúp bạn.")],
    "hi-thanks": [(U, "धन्यवाद!"), (A, "मैं आपकी मदद करके खुश हूँ।")],
    "ar-thanks": [(U, "شكرا جزيلا!"), (A, "أنا سعيد بمساعدتك.")],
    # Languages whose other words the signal cannot read (forming/unread_statements.py).
    "el-thanks": [(U, "Ευχαριστώ πολύ!"), (A, "Παρακαλώ!")],
    "th-hello": [(U, "สวัสดีครับ"), (A, "สวัสดีค่ะ")],
    "cs-thanks": [(U, "Děkuji, to je všechno."), (A, "Prosím, nashledanou!")],
    "fa-thanks": [(U, "خیلی ممنون!"), (A, "خواهش می‌کنم. روز خوبی داشته باشید.")],
}
FACTS = {
    "es-allergy": [(U, "Soy alérgico a los cacahuetes."), (A, "Entendido, nada de cacahuetes.")],
    "es-birthday": [(U, "Mi hija Lucía cumple siete años el 3 de marzo."), (A, "¡Qué bonito! Lo recordaré.")],
    "de-allergy": [(U, "Ich bin allergisch gegen Erdnüsse."), (A, "Verstanden, keine Erdnüsse.")],
    "de-birthday": [(U, "Meine Tochter Lucia wird am 3. März sieben."), (A, "Schön, ich merke es mir.")],
    "fr-allergy": [(U, "Je suis allergique aux arachides."), (A, "Compris, pas d'arachides.")],
    "fr-birthday": [(U, "Ma fille Lucie aura sept ans le 3 mars."), (A, "C'est noté !")],
    "ru-allergy": [(U, "У меня аллергия на арахис."), (A, "Понял, никакого арахиса.")],
    "ru-birthday": [(U, "Моей дочери Люсии исполнится семь лет 3 марта."), (A, "Запомню!")],
    "zh-allergy": [(U, "我对花生过敏。"), (A, "好的，我记住了，不放花生。")],
    "zh-birthday": [(U, "我女儿露西亚三月三日满七岁。"), (A, "好的，我记住了。")],
    "en-allergy": [(U, "I'm allergic to peanuts."), (A, "Noted, no peanuts.")],
    "ja-allergy": [(U, "私はピーナッツアレルギーです。"), (A, "了解しました。")],
    "ko-allergy": [(U, "저는 땅콩 알레르기가 있어요."), (A, "알겠습니다, 땅콩은 빼겠습니다.")],
    "ko-home": [(U, "저는 서울에 살고 있어요."), (A, "알겠습니다.")],
    "ko-pets": [(U, "강아지를 키워요."), (A, "알겠습니다.")],
    "ja-pets": [(U, "猫を二匹飼っています。"), (A, "了解しました。")],
    "ja-work": [(U, "私は看護師です。"), (A, "了解しました。")],
    "zh-pets": [(U, "我养了两只猫。"), (A, "好的，我记住了。")],
    "ru-pets": [(U, "У меня две кошки."), (A, "Понял!")],
    "ru-work": [(U, "Я медсестра."), (A, "Понял!")],
    "ar-work": [(U, "أنا أعمل مدرسًا في القاهرة."), (A, "رائع!")],
    "he-allergy": [(U, "אני אלרגי לבוטנים."), (A, "הבנתי, בלי בוטנים.")],
    "hi-allergy": [(U, "मुझे मूंगफली से एलर्जी है।"), (A, "ठीक है, मूंगफली नहीं।")],
    "tr-allergy": [(U, "Benim fıstık alerjim var."), (A, "Anladım, fıstık yok.")],
    "nl-allergy": [(U, "Ik ben allergisch voor pinda's."), (A, "Begrepen, geen pinda's.")],
    "pl-allergy": [(U, "Mam alergię na orzeszki ziemne."), (A, "Rozumiem, bez orzeszków.")],
    "id-allergy": [(U, "Saya alergi kacang tanah."), (A, "Baik, tanpa kacang.")],
    "vi-allergy": [(U, "Tôi bị dị ứng đậu phộng."), (A, "Vâng, không có đậu phộng.")],
    "it-allergy": [(U, "Sono allergico alle arachidi."), (A, "Capito, niente arachidi.")],
    "pt-allergy": [(U, "Sou alérgica a amendoim."), (A, "Entendido, sem amendoim.")],
    # The person said by the verb or a suffix alone, a negated diet, a name, a home.
    "sv-home": [(U, "Jag bor i Malmö med min fru."), (A, "Noterat!")],
    "nl-diet": [(U, "Ik eet geen vlees."), (A, "Begrepen.")],
    "pl-work": [(U, "Pracuję jako księgowa w Poznaniu."), (A, "Rozumiem.")],
    "tr-home": [(U, "Ankara'da yaşıyorum."), (A, "Anladım.")],
    "id-diet": [(U, "Saya tidak makan daging babi."), (A, "Baik.")],
    "vi-pets": [(U, "Tôi nuôi một con chó."), (A, "Vâng.")],
    "ar-name": [(U, "اسمي ليلى."), (A, "تشرفنا!")],
    "hi-home": [(U, "मैं जयपुर में रहती हूँ।"), (A, "ठीक है।")],
    # Statements the signal cannot read, kept rather than lost.
    "el-home": [(U, "Μένω στην Αθήνα."), (A, "Εντάξει.")],
    "th-allergy": [(U, "ฉันแพ้ถั่วลิสง"), (A, "รับทราบค่ะ")],
    "cs-home": [(U, "Bydlím v Brně."), (A, "Rozumím.")],
    "fa-home": [(U, "من در شیراز زندگی می‌کنم."), (A, "متوجه شدم.")],
}


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


async def _gate(turns: list[tuple[int, str]], mode: str, embedder: LocalEmbedder | None) -> QualityReport:
    events = [pb.Event(role=role, type=pb.EVENT_TYPE_MESSAGE, content=text) for role, text in turns]  # type: ignore[arg-type]
    vectors = np.asarray(await embedder.embed([e.content for e in events])) if embedder is not None else None
    return assess_quality(events, await analyze(events, llm=None), mode=mode, embeddings=vectors)


@pytest.mark.parametrize("with_embeddings", [True, False], ids=["embeddings", "lexical"])
@pytest.mark.parametrize("mode", ["fast", "balanced"])
@pytest.mark.parametrize("name", sorted(SMALL_TALK))
async def test_small_talk_forms_no_chain_in_any_language(
    name: str, mode: str, with_embeddings: bool, embedder: LocalEmbedder
) -> None:
    report = await _gate(SMALL_TALK[name], mode, embedder if with_embeddings else None)
    assert not report.passed, report


@pytest.mark.parametrize("with_embeddings", [True, False], ids=["embeddings", "lexical"])
@pytest.mark.parametrize("mode", ["fast", "balanced"])
@pytest.mark.parametrize("name", sorted(FACTS))
async def test_a_stated_fact_passes_in_any_language(
    name: str, mode: str, with_embeddings: bool, embedder: LocalEmbedder
) -> None:
    report = await _gate(FACTS[name], mode, embedder if with_embeddings else None)
    assert report.passed and report.personal_fact, report
