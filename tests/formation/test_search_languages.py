"""SearchMemory finds chains in any script through its lexical side, and shows the words it matched."""

from __future__ import annotations

from typing import Any

from support.formation_data import COOKING, SCOPE, make_segment

from athena.internal.v1 import formation_pb2
from athena_client.memory.v1 import memory_pb2
from athena_formation.search.ranking import Ranking
from athena_formation.server import Formation

# Two friends plan a bicycle ride along the embankment in Kazan.
RUSSIAN = [
    ("user", "Маша купила новый велосипед, и мы хотим поехать вдоль набережной в Казани. Какой маршрут лучше выбрать?"),
    (
        "agent",
        "Начните от Кремля и поезжайте по набережной Казанки до Центра семьи: это около восьми километров ровной дороги.",
    ),
    ("user", "А где в Казани можно взять велосипед напрокат для меня, пока Маша едет на своём?"),
    (
        "agent",
        "Прокат велосипедов есть у Кремлёвской набережной и в парке Горького; возьмите велосипед с корзиной и шлем.",
    ),
]
# A trip to Chengdu: hot pot and mapo tofu.
CHINESE = [
    ("user", "我下个月要去成都旅行，想吃正宗的火锅和麻婆豆腐，你有什么推荐的餐厅吗？"),
    ("agent", "成都的火锅店很多，推荐去玉林路附近的老店；麻婆豆腐可以去陈麻婆豆腐总店，记得提前排队。"),
    ("user", "火锅太辣的话怎么办？我不太能吃辣。"),
    ("agent", "可以点鸳鸯锅，一半是清汤一半是麻辣，吃火锅的时候配一杯豆奶也能解辣。"),
]


async def _form(stub: Any, turns: list[tuple[str, str]]) -> str:
    response = await stub.FormChain(formation_pb2.FormChainRequest(segment=make_segment(turns)), timeout=60)
    assert response.outcome == formation_pb2.FORM_OUTCOME_CREATED, response.reason
    return response.chain_id


async def _search(stub: Any, query: str) -> memory_pb2.SearchMemoryResponse:
    return await stub.SearchMemory(
        formation_pb2.SearchRequest(request=memory_pb2.SearchMemoryRequest(scope=SCOPE, query=query, limit=3)),
        timeout=30,
    )


async def test_a_russian_and_a_chinese_chain_are_found_by_their_words_and_show_them_as_matched(
    formation: Formation, stub: Any
) -> None:
    russian = await _form(stub, RUSSIAN)
    chinese = await _form(stub, CHINESE)
    await _form(stub, COOKING)

    doc = await formation.store.get(russian)
    assert doc["lexicon"]["велосипед"] >= 3 and "маша" in doc["lexicon"]
    assert "火锅" in (await formation.store.get(chinese))["lexicon"]

    by_russian = await _search(stub, "Какой велосипед купила Маша?")
    by_chinese = await _search(stub, "成都哪家火锅好吃？")

    first = by_russian.hits[0]
    assert first.chain.id == russian and first.lexical_score > 0
    assert {"велосипед", "купила", "маша"} <= set(first.matched_terms)
    first = by_chinese.hits[0]
    assert first.chain.id == chinese and first.lexical_score > 0
    assert {"成都", "火锅"} <= set(first.matched_terms)

    formation.recall.ranking = Ranking(lexical_weight=1.0, size_prior=0.0)  # the words alone
    assert (await _search(stub, "Какой велосипед купила Маша?")).hits[0].chain.id == russian
    assert (await _search(stub, "成都哪家火锅好吃？")).hits[0].chain.id == chinese


# A trip to Chiang Mai: the temple on the mountain and the night market.
THAI = [
    ("user", "เดือนหน้าฉันจะไปเที่ยวเชียงใหม่ อยากไปวัดพระธาตุดอยสุเทพและตลาดกลางคืน ควรไปวันไหนดี"),
    ("agent", "ไปวัดพระธาตุดอยสุเทพตอนเช้าจะดีที่สุด ส่วนตลาดกลางคืนวันอาทิตย์ที่ถนนคนเดินคึกคักมาก"),
    ("user", "จากตัวเมืองเชียงใหม่ไปดอยสุเทพใช้เวลานานไหม"),
    ("agent", "นั่งรถสองแถวสีแดงจากประตูช้างเผือกประมาณสี่สิบนาทีก็ถึงวัดพระธาตุดอยสุเทพ"),
]


async def test_a_thai_chain_is_found_by_its_words_though_thai_puts_no_space_between_them(
    formation: Formation, stub: Any
) -> None:
    thai = await _form(stub, THAI)
    await _form(stub, CHINESE)
    await _form(stub, COOKING)

    lexicon = (await formation.store.get(thai))["lexicon"]
    assert lexicon["เชี"] >= 2 and "สุเ" in lexicon  # bigrams of grapheme clusters, not whole runs

    formation.recall.ranking = Ranking(lexical_weight=1.0, size_prior=0.0)  # the words alone
    first = (await _search(stub, "ไปดอยสุเทพยังไง")).hits[0]
    assert first.chain.id == thai and first.lexical_score > 0
    assert "ไปดอยสุเทพ" in first.matched_terms
