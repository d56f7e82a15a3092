"""Issue 21: Chinese, Japanese and Korean words with the bigrams that join them; Vietnamese as written."""

from __future__ import annotations

from collections import Counter

from simone.runtime.text import Analyzer, BM25Index, default_analyzer
from simone.runtime.text._analysis import ANALYSIS_VERSION

A = default_analyzer()


def meets(query: str, document: str, analyzer: Analyzer = A) -> bool:
    """True when the query shares a term with the document."""
    return bool(set(analyzer.terms(query)) & set(analyzer.terms(document)))


def test_japanese_words_and_the_bigrams_across_their_boundaries() -> None:
    terms = A.terms("梅雨がない")
    assert "梅雨" in terms  # the dictionary word
    assert "雨が" in terms  # the bigram that crosses into the particle
    # A word the dictionary cuts badly still meets itself through the bigram across the cut.
    assert "ばい" in A.terms("ばいう")


def test_a_two_character_word_is_also_its_own_bigram() -> None:
    assert Counter(A.terms("梅雨"))["梅雨"] == 2


def test_stop_words_emit_nothing_of_their_own() -> None:
    assert A.terms("どこ") == []
    assert A.explain("どこですか").all_ignored


def test_korean_words_lose_their_particle_and_bigrams_cross_spaces() -> None:
    assert "운영시간" in A.terms("운영시간은")
    assert "운영시간은" not in A.terms("운영시간은")
    assert meets("국무장관", "국무 장관")
    assert "무장" in A.terms("국무 장관")


def test_punctuation_ends_a_run() -> None:
    assert "무장" not in A.terms("국무. 장관")
    assert "本東" not in A.terms("日本。東京")


def test_numbers_written_onto_korean_words_stand_alone() -> None:
    terms = A.terms("1924년에 태어났다")
    assert "1924" in terms
    assert "1924년에" not in terms
    assert meets("1924년", "1924년에 태어났다")


def test_word_terms_hold_exactly_the_terms() -> None:
    for text in (
        "日本で梅雨がないのは北海道とどこか。",
        "알렉산더 헤이그 2세(영어: Alexander Haig, 1924년 12월 2일) 국무 장관을 지냈다",
        "营业时间和价格 料金 운영시간은",
        "Ai là tổng thống đầu tiên của Việt Nam?",
        "Opening hours and prices",
    ):
        grouped = [term for _word, terms in A.word_terms(text) for term in terms]
        assert Counter(grouped) == Counter(A.terms(text)), text


def test_vietnamese_keeps_its_tone_marks() -> None:
    assert A.is_vietnamese("Ai là tổng thống đầu tiên của Việt Nam?")
    terms = A.terms("Ai là tổng thống đầu tiên của Việt Nam?")
    assert "tổng" in terms
    assert "tong" not in terms
    # Tones tell syllables apart: lá (leaf) is not là (is) nor lạ (strange).
    assert not meets("lá", "Ông ấy là người lạ ở đây.")
    assert meets("lạ", "Ông ấy là người lạ ở đây.")


def test_other_accented_languages_still_fold() -> None:
    for text in ("¿Cuándo murió el presidente?", "Die Öffnungszeiten der Behörde", "Ağustos'ta açıldı"):
        assert not A.is_vietnamese(text)
    assert meets("cuando murio", "¿Cuándo murió el presidente?")
    # A Vietnamese name in a Spanish text does not make it Vietnamese.
    assert not A.is_vietnamese(
        "El presidente Nguyễn visitó la capital; después de la reunión, la delegación regresó a "
        "la región, según informó el ministerio, que también anunció más reuniones este año."
    )


def test_ranking_prefers_the_paragraph_with_the_japanese_word() -> None:
    index = BM25Index(Analyzer())
    index.add(
        "rainy", "梅雨は、東アジアの広範囲においてみられる特有の気象現象で、5月から7月にかけての雨の季節。"
    )
    index.add("winter", "冬の間、シベリア気団が覆っている範囲は広く、乾燥した冷たい風が吹く。")
    hits = index.search("梅雨とは何季の一種か?")
    assert hits[0].id == "rainy"
    assert "梅雨" in hits[0].matched_words


def test_the_analysis_version_names_the_change() -> None:
    assert ANALYSIS_VERSION >= 4
    assert A.signature.startswith(f"v{ANALYSIS_VERSION}-")


def test_a_word_outside_the_vietnamese_alphabet_still_folds_in_a_vietnamese_text() -> None:
    text = "Trần Hưng Đạo besiegte die Mongolen; die Bemühungen Kublais scheiterten am Bạch Đằng."
    assert A.is_vietnamese(text)
    terms = A.terms(text)
    assert "trần" in terms
    assert "bemuhungen" in terms  # ü is no Vietnamese letter: the German word is folded as before
    assert meets("Bemühungen", text)
