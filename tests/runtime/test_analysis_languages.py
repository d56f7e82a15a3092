"""A question in each language finds the right section among distractors (BM25 + the shared analysis)."""

from __future__ import annotations

import pytest
from simone.runtime.text import (
    Analyzer,
    BM25Index,
)

# language: (sections, question, the section it must find first)
CASES: dict[str, tuple[dict[str, str], str, str]] = {
    "ja": (
        {
            "license": "運転免許証の更新は、誕生日の前後1か月以内に運転免許センターまたは警察署で手続きできます。",
            "library": "図書館の開館時間は平日午前9時から午後8時までです。",
            "residence": "住民票の写しは市役所の窓口で申請できます。手数料は300円です。",
        },
        "免許証の更新はどこでできますか？",
        "license",
    ),
    "zh": (
        {
            "passport": "护照到期前可以在出入境管理局办理换发手续，需要携带身份证和照片。",
            "museum": "博物馆每周一闭馆，其他时间上午九点开放。",
            "bus": "本市公交车票价为两元，可使用交通卡支付。",
        },
        "护照怎么换发？",
        "passport",
    ),
    "ko": (
        {
            "license": "운전면허 갱신은 가까운 운전면허시험장이나 경찰서에서 할 수 있습니다.",
            "library": "도서관은 매주 월요일에 휴관합니다.",
            "passport": "여권 발급 수수료는 5만 원입니다.",
        },
        "면허 갱신은 어디서 하나요?",
        "license",
    ),
    "th": (
        {
            "license": "การต่ออายุใบขับขี่สามารถทำได้ที่สำนักงานขนส่งทุกแห่ง",
            "library": "ห้องสมุดเปิดให้บริการทุกวันตั้งแต่เวลาเก้าโมงเช้า",
            "passport": "ค่าธรรมเนียมการทำหนังสือเดินทางคือหนึ่งพันบาท",
        },
        "ต่ออายุใบขับขี่ได้ที่ไหน",
        "license",
    ),
    "ru": (
        {
            "passport": "Заграничный паспорт можно оформить в МФЦ или через портал госуслуг; срок изготовления — один месяц.",
            "library": "Библиотека работает ежедневно с девяти утра до восьми вечера.",
            "metro": "Стоимость проезда в метро составляет шестьдесят рублей.",
        },
        "Где оформить загранпаспорт?",
        "passport",
    ),
    "fr": (
        {
            "identity": "Le renouvellement de la carte d'identité se fait en mairie sur rendez-vous.",
            "pool": "La piscine municipale est fermée le lundi.",
            "students": "Le tarif réduit est accordé aux étudiants sur présentation d'un justificatif.",
        },
        "Où renouveler ma carte d'identité ?",
        "identity",
    ),
    "de": (
        {
            "passport": "Die Verlängerung des Reisepasses beantragen Sie beim Bürgeramt Ihres Wohnortes.",
            "pool": "Das Schwimmbad ist im Winter geschlossen.",
            "museum": "Das Museum ist dienstags bis sonntags von 10 bis 18 Uhr für Besucher zugänglich.",
        },
        "Wo kann ich meinen Reisepass verlängern?",
        "passport",
    ),
    "es": (
        {
            "passport": "La renovación del pasaporte se solicita con cita previa en una comisaría de policía.",
            "museum": "El museo abre de martes a domingo.",
            "tickets": "La entrada general para adultos se vende en la taquilla.",
        },
        "¿Dónde puedo renovar el pasaporte?",
        "passport",
    ),
    "pt": (
        {
            "license": "Os prazos de renovação da carteira de motorista variam conforme a idade do condutor.",
            "library": "A biblioteca fecha aos domingos e feriados.",
            "city_hall": "A prefeitura atende das 8h às 17h, de segunda a sexta-feira.",
        },
        "Qual é o prazo para renovar a carteira de motorista?",
        "license",
    ),
    "ar": (
        {
            "passport": "يمكن تجديد جواز السفر في مكتب الجوازات خلال أيام العمل الرسمية.",
            "library": "تفتح المكتبة العامة أبوابها من الساعة الثامنة صباحا.",
            "bus": "تذكرة الحافلة متوفرة في جميع المحطات.",
        },
        "أين يمكن تجديد جواز السفر؟",
        "passport",
    ),
}


def build(sections: dict[str, str], analyzer: Analyzer | None = None) -> BM25Index:
    index = BM25Index(analyzer)
    for key, text in sections.items():
        index.add(key, text, locator=f"{key}.md#L1-L1")
    return index


@pytest.mark.parametrize("language", sorted(CASES))
def test_question_finds_the_right_section(language: str) -> None:
    sections, question, expected = CASES[language]
    hits = build(sections).search(question)
    assert hits, f"{language}: nothing found for {question!r}"
    assert hits[0].id == expected, f"{language}: {[(h.id, round(h.score, 3)) for h in hits]}"
    assert hits[0].coverage > 0


@pytest.mark.parametrize("language", sorted(CASES))
def test_question_words_are_explained(language: str) -> None:
    _sections, question, _expected = CASES[language]
    explained = Analyzer().explain(question)
    assert explained.words_used, explained
    assert not explained.all_ignored
    assert explained.terms


# Synonyms across languages: the query's word is not in the section, its synonym group is.
SYNONYM_CASES = [
    ("en", "How much does the ticket cost?", "Ticket prices: adults 10 EUR.", "The museum has three floors."),
    (
        "pt",
        "Qual o preço do ingresso?",
        "O valor cobrado (tarifa) é de R$ 20,00.",
        "O museu tem três andares.",
    ),
    (
        "es",
        "¿Cuánto cuesta la entrada?",
        "El precio de la entrada es de diez euros.",
        "El museo tiene tres plantas.",
    ),
    ("fr", "Quel est le prix ?", "Le tarif réduit est de cinq euros.", "Le musée a trois étages."),
    (
        "de",
        "Wann sind die Öffnungszeiten?",
        "Geschäftszeiten: Montag bis Freitag 9–17 Uhr.",
        "Das Museum hat drei Etagen.",
    ),
    ("ru", "Сколько стоит билет?", "Цена билета — пятьсот рублей.", "В музее три этажа."),
    ("ja", "料金はいくらですか", "入館の値段は500円です。", "博物館は三階建てです。"),
    ("zh", "价格是多少？", "门票费用为五十元。", "博物馆有三层楼。"),
    ("ko", "영업시간이 어떻게 되나요?", "운영시간은 오전 9시부터입니다.", "박물관은 3층입니다."),
    ("th", "ราคาเท่าไหร่", "ค่าธรรมเนียมเข้าชมห้าสิบบาท", "พิพิธภัณฑ์มีสามชั้น"),
    ("it", "Qual è il prezzo?", "La tariffa ridotta costa cinque euro.", "Il museo ha tre piani."),
    (
        "nl",
        "Wat zijn de openingstijden?",
        "Openingsuren: maandag tot vrijdag.",
        "Het museum heeft drie verdiepingen.",
    ),
]


@pytest.mark.parametrize(("language", "question", "answer", "distractor"), SYNONYM_CASES)
def test_builtin_synonyms_find_the_section(
    language: str, question: str, answer: str, distractor: str
) -> None:
    hits = build({"answer": answer, "distractor": distractor}).search(question)
    assert [h.id for h in hits][:1] == ["answer"], f"{language}: {Analyzer().explain(question).message}"
    off = build({"answer": answer, "distractor": distractor}, Analyzer(builtin_synonyms=False))
    assert all(h.id != "answer" or h.score < hits[0].score for h in off.search(question))


def test_ignore_list_drops_a_project_word_everywhere() -> None:
    sections = {
        "a": "Acme: the renewal deadline is thirty days.",
        "b": "Acme Acme Acme newsletter archive.",
    }
    plain = build(sections).search("acme renewal")
    assert {h.id for h in plain} == {"a", "b"}
    ignoring = build(sections, Analyzer(ignore_words=["acme"])).search("acme renewal")
    assert [h.id for h in ignoring] == ["a"]
    assert ignoring[0].matched_words == ("renewal",)
