from __future__ import annotations

import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import pytest
import Stemmer
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.runtime import (
    ConfigError,
    LexicalSettings,
    load_settings,
)
from simone.runtime.text import (
    Analyzer,
    BM25Index,
    Explanation,
    default_analyzer,
)
from simone.runtime.text._analysis import (
    ANALYSIS_VERSION,
    MAX_WORD_CHARS,
    STEM_LANGUAGE,
    builtin_stop_words,
    fold,
    normalize_number,
)

A = default_analyzer()
ENGLISH = Stemmer.Stemmer(STEM_LANGUAGE)
STOP = builtin_stop_words()
PLAIN = Analyzer(builtin_synonyms=False)


def meets(query: str, document: str, analyzer: Analyzer = A) -> bool:
    """True when the query shares a term with the document."""
    return bool(set(analyzer.terms(query)) & set(analyzer.terms(document)))


# -- normalisation ------------------------------------------------------------------------------


def test_case_and_latin_accents_fold() -> None:
    assert A.terms("SÃO PAULO") == A.terms("sao paulo")
    assert [fold(w) for w in ("Ça", "coûte", "Straße")] == ["ca", "coute", "strasse"]
    assert fold("Ørsted") == "orsted"
    # An accent is also evidence that a text is not English, which adds looser terms; the folded
    # word and its stem are there either way.
    assert set(A.terms("ca coute")) <= set(A.terms("Ça coûte"))
    assert set(A.terms("strasse")) <= set(A.terms("Straße"))


def test_greek_and_cyrillic_accents_fold() -> None:
    assert fold("Καλημέρα") == "καλημερα"
    assert fold("Ёлка") == "елка"
    assert meets("ёлка", "ЕЛКА")


def test_kana_keep_their_voicing_marks() -> None:
    assert fold("が") == "が"
    assert A.terms("ガス") != A.terms("カス")
    assert "ガス" in A.terms("ガスが出る")


def test_devanagari_and_thai_keep_vowel_signs() -> None:
    assert A.terms("किताबें") == ["किताबें"]
    assert "ขับขี่" in A.terms("ใบขับขี่")


def test_arabic_diacritics_and_tatweel_are_dropped() -> None:
    assert A.terms("مَدْرَسَة") == A.terms("مدرسة")
    assert A.terms("عـــربي") == A.terms("عربي")


def test_nfkc_fullwidth_and_ligatures() -> None:
    assert A.terms("ＰＲＩＣＥ ２０") == A.terms("price 20")
    assert A.terms("ﬁnance") == A.terms("finance")


@pytest.mark.parametrize(
    ("written", "terms"),
    [
        ("20,00", ["20"]),
        ("20.00", ["20"]),
        ("1.234,50", ["1234.5", "1234"]),
        ("1,234.50", ["1234.5", "1234"]),
        ("1,000", ["1000"]),
        ("1.000.000", ["1000000"]),
        ("3.14", ["3.14", "3"]),
        ("0.125", ["0.125"]),
        ("1.2.3", ["1.2.3"]),
        ("007", ["007"]),
    ],
)
def test_numbers_normalise(written: str, terms: list[str]) -> None:
    assert normalize_number(written) == terms
    assert A.terms(written) == terms


def test_currency_meets_the_plain_number() -> None:
    assert meets("20", "O ingresso custa R$ 20,00.")
    assert meets("€20", "Der Eintritt kostet 20,00 €.")
    assert meets("١٢٠", "120")  # Arabic-Indic digits are digits
    assert not meets("21", "R$ 20,00")


# -- words and terms -----------------------------------------------------------------------------


def test_prefix_terms_for_long_alphabetic_words() -> None:
    # Outside English text a word emits itself, its 5-letter prefix (from 6 letters on) and its stem.
    assert A.terms("Os prazos") == ["prazos", "prazo"]
    assert A.terms("os gatos") == ["gatos", "gato"]  # under six letters: no prefix, the stem
    assert A.terms("o covid19") == ["covid19"]  # not alphabetic: no prefix (and the stemmer leaves it)
    assert meets("o prazo", "Os prazos de renovação")
    assert meets("prazo para renovar a carteira", "Os prazos de renovação da carteira")
    assert meets("renouveler le passeport", "le renouvellement du passeport")
    assert meets("verlängern", "die Verlängerung des Passes")
    # A word alone is no evidence of another language: it is taken as English and emits its stem,
    # which the Portuguese document emits too.
    assert A.terms("prazos") == ["prazo"]
    assert meets("prazos", "Os prazos de renovação")


def test_english_text_emits_snowball_stems_only() -> None:
    assert A.terms("The activation of the cells") == ["activ", "cell"]
    assert A.terms("Cells are activated by it") == ["cell", "activ"]
    assert meets("Is the receptor activated in these cells?", "The activation of T cells")
    # no 5-letter prefix in English: a neuron is not a neurotransmitter, a variant is not variability
    assert not meets("The neurons of the cortex", "The release of a neurotransmitter")
    assert not meets("What is this variant?", "The variability of the response")
    # a stem that is a stop word would never meet anything: the word stands in for it
    assert A.terms("the others") == ["others"]


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("What is the capital of France?", True),
        ("The activation of T cells by IL-6", True),
        ("Qual é o prazo para renovar a carteira?", False),
        ("¿Cuál es el plazo para renovar el pasaporte?", False),
        ("Wie lange dauert die Verlängerung des Passes?", False),
        ("Quel est le délai de renouvellement du passeport ?", False),
        ("Pasaportun yenilenmesi ne kadar sürer?", False),  # no stop list, but ü and ı
        ("Gia hạn hộ chiếu mất bao lâu?", False),
        # no evidence either way: English (a title, a short query, text in another script)
        ("BRCA1 mutations", True),
        ("prazo renovar carteira", True),
        ("Сколько стоит продление паспорта?", True),
        ("", True),
    ],
)
def test_which_texts_are_english(text: str, english: bool) -> None:
    assert A.is_english(text) is english
    assert A.explain(text).english is english


def test_english_and_other_texts_still_meet_through_the_stem() -> None:
    # The stem is the one term every Latin word emits, however its text was classified.
    assert meets("the renewal deadlines", "Prazos: renewal of the driving licence (Portugal, São Paulo)")
    assert meets("What does the Café Müller serve?", "Café Müller serves coffee")
    assert meets("the cafe", "Café Müller")
    assert not A.is_english("Café Müller serves coffee")


def test_a_prefix_that_is_a_stop_word_is_not_emitted() -> None:
    assert A.terms("others") == ["others"]


def test_cjk_bigrams() -> None:
    assert meets("免許", "免許証の更新")
    assert meets("갱신", "갱신은 어디서 하나요")
    # A Korean word emits itself without its particle, and its bigrams (the word with it is no word).
    assert set(A.terms("갱신은")) == {"갱신", "신은"}


def test_dictionary_scripts_split_into_words() -> None:
    assert [word for word, _terms in A.word_terms("运输许可证在哪里更新")] == ["运输", "许可", "证", "更新"]
    assert "ต่ออายุ" not in A.terms("ต่ออายุ") or A.terms("ต่ออายุ")  # segmented, whatever the split
    assert len(A.terms("ຂ້ອຍຢາກໄປຕະຫຼາດ")) >= 3  # Lao
    assert len(A.terms("ខ្ញុំចង់ទៅផ្សារ")) >= 2  # Khmer
    assert len(A.terms("မြန်မာစာကိုလေ့လာနေပါတယ်")) >= 4  # Myanmar


def test_punctuation_splits_words() -> None:
    assert A.terms("get_user example.com") == ["get", "user", "example", "examp", "exampl"]
    assert A.terms("l'homme")[0] == "homme"  # French elision: the article goes


def test_mixed_scripts_in_one_sentence() -> None:
    terms = A.terms("Kyoto 京都 Москва 서울에서 Zürich ราคา")
    for expected in ("kyoto", "京都", "москва", "서울", "울에", "zurich", "ราคา"):
        assert expected in terms


def test_term_frequency_is_kept() -> None:
    assert A.terms("rank rank fusion") == ["rank", "rank", "fusion"]
    assert A.terms("o rank rank fusion") == ["rank", "rank", "fusion", "fusio"]


def test_terms_never_hold_whitespace_and_are_joinable() -> None:
    text = "Le prix est R$ 20,00. 免許証 갱신은 ใบขับขี่ «quoted» tab\there\u00a0nbsp"
    terms = A.terms(text)
    assert all(t and not any(c.isspace() for c in t) for t in terms)
    assert " ".join(terms).split() == terms


# -- stop words, ignore list, synonyms ----------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "what is the",
        "o que é isso?",
        "¿qué es esto?",
        "qu'est-ce que c'est",
        "was ist das?",
        "что это",
        "これは何ですか",
        "这是什么",
        "어디서 하나요",
        "ที่ไหน",
    ],
)
def test_all_stop_word_queries_emit_nothing(query: str) -> None:
    assert A.terms(query) == []
    explained = A.explain(query)
    assert explained.all_ignored
    assert "matches nothing" in explained.message


def test_all_stop_word_query_matches_nothing_not_everything() -> None:
    index = BM25Index()
    index.add("a", "What is the capital of France?")
    index.add("b", "The cat is on the mat.")
    assert index.search("what is the") == []


def test_ignore_list_is_analysed_like_text() -> None:
    analyzer = Analyzer(ignore_words=["Simone", "PROJETO"])
    assert analyzer.terms("simone projeto prazo") == ["prazo"]
    explained = analyzer.explain("Simone")
    assert explained.words_ignored == ("simone",)
    assert explained.all_ignored
    assert "project's ignore list: simone" in explained.message
    assert "stop words: o" in analyzer.explain("o projeto").message


def test_builtin_synonyms_across_languages() -> None:
    assert meets("price", "Le prix du billet")
    assert meets("preço", "the cost of a ticket")
    assert meets("料金", "价格")
    assert meets("Öffnungszeiten", "opening hours: 9 to 5")
    assert meets("horário de funcionamento", "営業時間は9時から")
    assert meets("passport", "身份证")


def test_phrase_synonyms_match_whole_phrases_only() -> None:
    assert "openinghours" in A.terms("our opening hours")
    assert "openinghours" not in A.terms("opening the hours")
    assert "price" in A.terms("how much is it")
    assert "price" not in A.terms("much")


def test_builtin_synonyms_can_be_switched_off() -> None:
    plain = Analyzer(builtin_synonyms=False)
    assert plain.terms("cost") == ["cost"]
    assert not meets("price", "le prix", plain)


def test_project_synonyms() -> None:
    analyzer = Analyzer(synonyms=[["car", "automobile", "carro"]], builtin_synonyms=False)
    assert "car" in analyzer.terms("automobile")
    assert meets("carro", "a red car", analyzer)
    assert not meets("carro", "a red bike", analyzer)


def test_from_settings() -> None:
    settings = LexicalSettings(ignore_words=["acme"], synonyms=[["sku", "item code"]], builtin_synonyms=False)
    analyzer = Analyzer.from_settings(settings)
    assert analyzer.terms("acme") == []
    assert "sku" in analyzer.terms("the item code")
    assert analyzer.terms("cost") == ["cost"]


def test_signature_names_the_analysis_and_its_configuration() -> None:
    assert A.signature == Analyzer().signature
    assert A.signature.startswith(f"v{ANALYSIS_VERSION}-")
    others = {
        Analyzer(ignore_words=["acme"]).signature,
        Analyzer(synonyms=[["sku", "item code"]]).signature,
        Analyzer(builtin_synonyms=False).signature,
    }
    assert A.signature not in others and len(others) == 3
    assert Analyzer(ignore_words=["acme"]).signature == Analyzer(ignore_words=["ACME"]).signature


def test_threads_share_an_analyzer() -> None:
    # PyStemmer stemmers are not shared between threads; each thread gets its own.
    texts = [f"The {word}s were {word}ed again by the others" for word in ("test", "jump", "walk", "mark")]
    expected = [Analyzer().terms(text) for text in texts]
    shared = Analyzer()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(shared.terms, texts * 50))
    assert results == expected * 50


def test_settings_refuse_a_one_member_group() -> None:
    with pytest.raises(ConfigError, match="at least 2"):
        load_settings(lexical={"synonyms": [["car"]]})


def test_bad_configuration_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        Analyzer(ignore_words="acme")
    with pytest.raises(ConfigError):
        Analyzer(synonyms=["car"])
    with pytest.raises(ConfigError, match="no words"):
        Analyzer(synonyms=[["!!!", "car"]])
    with pytest.raises(ConfigError, match="one member"):
        Analyzer(synonyms=[["car"]])


# -- explain -------------------------------------------------------------------------------------


def test_explain_reports_words_synonyms_and_terms() -> None:
    explained = A.explain("Qual é o horário de funcionamento?")
    assert isinstance(explained, Explanation)
    assert explained.words_used == ("horario", "funcionamento")
    assert explained.words_ignored == ("qual", "e", "o", "de")
    assert [(u.words, u.term) for u in explained.synonyms_applied] == [
        (("horario", "de", "funcionamento"), "openinghours")
    ]
    assert explained.terms == tuple(A.terms("Qual é o horário de funcionamento?"))
    assert "openinghours" in explained.terms
    assert not explained.all_ignored
    assert "horario de funcionamento → openinghours" in explained.message


def test_explain_of_an_empty_query() -> None:
    explained = A.explain("  ?! ")
    assert explained.terms == ()
    assert not explained.all_ignored
    assert "no words" in explained.message


def test_explanation_is_frozen() -> None:
    explained = A.explain("price")
    with pytest.raises(Exception, match="frozen"):
        explained.message = "x"  # type: ignore[misc]


def test_word_terms_group_the_same_terms_by_word() -> None:
    pairs = A.word_terms("how much are the prazos?")
    assert pairs == [("much", ["much", "price"]), ("prazos", ["prazo"])]  # English: stems
    assert sorted(t for _w, ts in pairs for t in ts) == sorted(A.terms("how much are the prazos?"))
    # a synonym phrase made only of stop words is an entry of its own
    analyzer = Analyzer(synonyms=[["help", "what is this"]], builtin_synonyms=False)
    assert analyzer.word_terms("what is this?") == [("help", ["help"])]
    assert analyzer.terms("what is this?") == ["help"]


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "   ", "!!!???...", "\x00\x01\x02\x7f", "a\ud800b", "\udfff", "\ufeff\u00ad\u2060", "\u200b" * 10],
)
def test_odd_input_never_raises(text: str) -> None:
    assert isinstance(A.terms(text), list)
    assert isinstance(A.explain(text), Explanation)


def test_unpaired_surrogates_and_controls_split_words() -> None:
    assert A.terms("prazo\ud800renovação\x00carteira") == ["prazo", "renovacao", "renov", "carteira", "carte"]


def test_non_str_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        A.terms(b"bytes")  # type: ignore[arg-type]


def test_a_word_without_end_is_cut() -> None:
    terms = A.terms("x" * 100_000)
    assert terms and all(len(t) <= MAX_WORD_CHARS for t in terms)


MIXED = (
    "Os prazos de renovação variam. The price is R$ 20,00. 免許証の更新はどこでできますか。"
    "ใบขับขี่ต้องต่ออายุที่ไหน 갱신은 어디서 하나요? Заграничный паспорт. \x00\ud800 "
)


def test_memory_is_linear_and_small() -> None:
    analyzer = Analyzer()
    analyzer.terms(MIXED)
    text = MIXED * (1024 * 1024 // len(MIXED))
    tracemalloc.start()
    terms = analyzer.terms(text)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(terms) > 100_000
    # the terms list (one pointer per term; the strings are shared) plus one 64k block at a time
    assert peak < 32 * len(text), f"peak {peak:,} bytes for {len(text):,} chars"


@pytest.mark.slow
def test_ten_megabytes_of_mixed_scripts() -> None:
    text = MIXED * (10 * 1024 * 1024 // len(MIXED))
    terms = Analyzer().terms(text)
    assert len(terms) > 1_000_000
    assert terms[:3] == ["prazos", "prazo", "renovacao"]


# -- properties ----------------------------------------------------------------------------------

ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=300)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_TEXT)
def test_property_never_raises_and_terms_are_tokens(text: str) -> None:
    terms = A.terms(text)
    assert all(isinstance(t, str) and t and not any(c.isspace() for c in t) for t in terms)
    assert all(len(t) <= MAX_WORD_CHARS for t in terms)
    explained = A.explain(text)
    assert list(explained.terms) == terms


@settings(max_examples=200, deadline=None)
@given(ANY_TEXT)
def test_property_word_terms_hold_exactly_the_terms(text: str) -> None:
    grouped = sorted(t for _word, terms in A.word_terms(text) for t in terms)
    assert grouped == sorted(A.terms(text))


ALPHABETIC = st.text(
    alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyzàéîõüçßøABCDÉΣαβγδέжзийё0123456789 .,;-!?'")),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(ALPHABETIC)
def test_property_idempotent_on_its_own_output(text: str) -> None:
    # For space-separated scripts, every emitted term is a word of its own: analysed again in a text
    # that is not English (where each word emits itself), the terms are all still there. Terms are
    # folded, numbers normalised, and no term is a stop word. (Not in English text, where each term
    # would be stemmed again and Snowball stems are not always fixed points; not for CJK and Thai,
    # where dictionary segmentation depends on the neighbours of a word; nor for synonym terms.)
    analyzer = Analyzer(builtin_synonyms=False)
    once = analyzer.terms(text)
    again = analyzer.terms("Não " + " ".join(once))
    assert not analyzer.is_english("Não " + " ".join(once))
    assert set(once) <= set(again)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_TEXT)
def test_property_a_document_is_found_by_its_own_text(text: str) -> None:
    # Query and document go through the same analysis: any text with terms finds itself.
    index = BM25Index()
    index.add("self", text)
    index.add("other", "zzqx unrelated filler")
    hits = index.search(text, limit=5)
    if A.terms(text):
        assert hits and hits[0].id == "self" or any(h.id == "self" for h in hits)
    else:
        assert hits == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789", min_size=1, max_size=12))
def test_property_plain_ascii_words_follow_the_rules(word: str) -> None:
    # The ASCII short-cut and the general path must agree: same rules, whatever the route.
    lower = word.lower()
    stop = A.terms(lower) == [] and A.explain(lower).all_ignored
    if stop:
        assert A.terms(word) == []
    elif lower.isdigit():
        assert A.terms(word) == [lower]
    else:
        # one word alone is no evidence of another language: English, its stem (the word itself
        # when the stem is a stop word); in a Portuguese text, the word, its prefix and its stem
        stem = ENGLISH.stemWord(lower)
        stem = lower if stem in STOP or not stem else stem
        assert PLAIN.terms(word) == [stem]
        prefix = [lower[:5]] if lower.isalpha() and len(lower) > 5 and lower[:5] not in STOP else []
        assert PLAIN.terms(f"os {word}") == list(dict.fromkeys([lower, *prefix, stem]))
    # the same word through the general path: a combining accent makes it non-ASCII, folding removes
    # it (a composed accented letter also says "not English", which only adds terms)
    assert set(A.terms(word)) <= set(A.terms(word + "\u0301"))
