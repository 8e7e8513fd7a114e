"""athena.text: words of any script, casefolded with their accents, CJK and Thai as bigrams, stop words per language."""

from __future__ import annotations

import unicodedata

from athena.text import (
    ends_in_question,
    found_words,
    latin_language,
    latin_share,
    pieces,
    stem,
    stop_words,
    terms,
    tokens,
    words,
)


def test_cafe_stays_cafe_whether_typed_precomposed_or_with_a_combining_accent() -> None:
    decomposed = unicodedata.normalize("NFD", "Café")
    assert tokens("Café") == tokens(decomposed) == tokens("CAFÉ") == ["café"]
    assert terms("cafés") == ["café"]


def test_spanish_keeps_accents_casefolds_and_drops_its_stop_words() -> None:
    assert tokens("¿Dónde está el Café?") == ["dónde", "está", "el", "café"]
    assert terms("Mañana compramos los libros de la Señora Núñez en la librería") == [
        "mañana",
        "compramo",
        "libro",
        "señora",
        "núñez",
        "librería",
    ]


def test_german_casefolds_sharp_s_and_drops_its_stop_words() -> None:
    assert tokens("Die STRASSE und die Straße") == ["die", "strasse", "und", "die", "strasse"]
    assert terms("Ich habe mit Jürgen über die Brücke gesprochen") == ["jürgen", "brück", "gesprochen"]


def test_french_drops_elided_articles_and_its_stop_words() -> None:
    assert tokens("L'été où j'ai vu l'océan") == ["été", "où", "ai", "vu", "océan"]
    # Latin-script words of any language take the one light stemmer: the same word, the same term.
    assert terms("Nous sommes allés à l'hôpital avec Hélène") == ["allé", "hôpital", "hélèn"]


def test_russian_is_casefolded_kept_whole_and_not_stemmed() -> None:
    assert tokens("Маша купила Велосипед") == ["маша", "купила", "велосипед"]
    assert terms("Я думаю, что он уже купил новый велосипед в Москве") == [
        "думаю",
        "купил",
        "новый",
        "велосипед",
        "москве",
    ]


def test_chinese_runs_become_overlapping_bigrams_and_a_lone_character_stays_one_token() -> None:
    assert tokens("我们在北京吃烤鸭") == ["我们", "们在", "在北", "北京", "京吃", "吃烤", "烤鸭"]
    assert tokens("猫") == ["猫"]
    assert "我们" not in terms("我们在北京吃烤鸭") and "北京" in terms("我们在北京吃烤鸭")
    assert tokens("我有iPhone手机") == ["我有", "iphone", "手机"]


def test_japanese_and_korean_runs_are_bigrams_too() -> None:
    assert tokens("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tokens("서울에서 왔어요")[:3] == ["서울", "울에", "에서"]


def test_thai_lao_khmer_and_myanmar_runs_are_bigrams_of_their_grapheme_clusters() -> None:
    # อยู่ is one consonant and one cluster with its vowel and tone marks: อ + ยู่
    assert tokens("อยู่") == ["อยู่"]
    assert tokens("ฉันแพ้กุ้ง") == ["ฉัน", "นแ", "แพ้", "พ้กุ้", "กุ้ง"]
    assert words("ฉันแพ้กุ้ง") == ["ฉันแพ้กุ้ง"]
    assert tokens("ກ") == ["ກ"] and terms("ກ") == ["ກ"]  # a lone letter of them is a term, as a CJK one is
    assert tokens("ខ្ញុំរស់នៅភ្នំពេញ។")[-1] == "ពេញ"  # Khmer's full stop is not a letter of the run
    assert tokens("ကျွန်တော် ရန်ကုန်") == ["ကျွန်", "န်တေ", "တော်", "ရန်", "န်ကု", "ကုန်"]


def test_a_thai_question_shares_terms_with_the_fact_it_asks_about() -> None:
    fact, question = terms("ฉันอาศัยอยู่ที่เชียงใหม่"), terms("ฉันอาศัยอยู่ที่ไหน")
    assert {"ฉัน", "ศัย", "อยู่", "ยู่ที่"} <= set(fact) & set(question)
    assert not set(terms("ฉันแพ้กุ้ง")) & {"เชี", "ชีย", "หม่"}
    held = set(fact)
    assert found_words("ฉันอาศัยอยู่ที่ไหน", lambda w: w in held) == ["ฉันอาศัยอยู่ที่"]


def test_words_of_any_script_keep_their_combining_marks() -> None:
    assert tokens("हिन्दी भाषा") == ["हिन्दी", "भाषा"]


def test_english_terms_are_as_the_lexical_index_always_read_them() -> None:
    assert terms("What did Caroline's sister say about the adoption agencies she researched?") == [
        "carolin",
        "sister",
        "adoption",
        "agency",
        "research",
    ]
    assert terms("Saiho-ji moss temple, user_id and rock'n'roll") == [
        "saiho",
        "ji",
        "moss",
        "templ",
        "user",
        "rocknroll",
    ]
    assert terms("We stayed 5 nights in 2023") == ["stay", "5", "night", "2023"]
    assert [stem(w) for w in ("running", "loves", "studies", "spell", "bus")] == ["run", "lov", "study", "spell", "bus"]


def test_a_word_that_is_a_function_word_elsewhere_stays_a_term_in_english() -> None:
    assert latin_language(tokens("My son took the car to the war museum")) == "en"
    assert terms("My son took the car to the war museum") == ["son", "took", "car", "war", "museum"]
    assert latin_language(tokens("Son fils a pris la voiture pour aller au musée")) == "fr"
    assert "son" in stop_words("Son fils a pris la voiture pour aller au musée")


def test_found_words_shows_query_words_as_written_and_cjk_by_its_found_stretches() -> None:
    held = {"北京", "京烤", "烤鸭", "велосипед"}
    assert found_words("北京烤鸭在哪里？", lambda w: w in held) == ["北京烤鸭"]
    assert found_words("Где купить велосипед?", lambda w: w in held) == ["велосипед"]
    assert found_words("Did the café open?", lambda w: True) == ["café", "open"]


def test_pieces_keep_words_as_written_and_punctuation_apart() -> None:
    assert pieces("Thanks, Zoë! Café—user_id 北京。") == [
        "Thanks",
        ",",
        "Zoë",
        "!",
        "Café",
        "—",
        "user_id",
        "北京",
        "。",
    ]


def test_latin_share_is_the_share_of_letters_in_the_latin_script() -> None:
    assert latin_share("Je suis végétarien") == 1.0
    assert latin_share("我的生日是十月三日。") == 0.0 and latin_share("Мой любимый писатель") == 0.0
    assert latin_share("ab 我的") == 0.5  # letters only: the space does not count
    assert latin_share("12:30 👍") is None  # no letter at all


def test_a_question_ends_in_a_latin_full_width_or_arabic_question_mark_closing_quotes_aside() -> None:
    assert ends_in_question("What's your name?") and ends_in_question("お名前は？") and ends_in_question("ما اسمك؟")
    assert ends_in_question('He asked "where do you live?" ') and ends_in_question("（どこに住んでいますか？）")
    assert (
        not ends_in_question("Noted.") and not ends_in_question("Why? Because it rained.") and not ends_in_question("")
    )
