"""``simone doctor --languages`` — how well each embedding space matches a question across languages.

Three short English questions and their translations into a dozen languages are embedded in every
space the chain can embed (its own spaces and its extra spaces). For each language and question,
the translation should be closer to its own English question than to any unrelated English question
(the two other questions and a fixed control): the *margin* is the gap. A language is served when
every translation wins and the mean margin reaches :data:`MIN_MARGIN`; a space is weak across
languages when it serves fewer than half of them.

Measured on this set (2026-11): the bundled all-MiniLM-L6-v2 reaches a mean margin of at most 0.10
in any language (it is effectively English-only); the multilingual Universal Sentence Encoder
reaches 0.52-0.59 in the languages it was trained on and below 0 in Hindi, Greek and Vietnamese.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from simone.runtime import EmbeddingChain, EmbeddingSpace, ProviderError

#: The English questions every translation is compared with.
ENGLISH: tuple[str, ...] = (
    "When is the invoice payment due?",
    "How do I reset my account password?",
    "Which train goes to the airport?",
)
#: An English question unrelated to all of them (a control besides the other two questions).
CONTROL = "What is a good recipe for apple pie?"
#: The same questions, in order, per language (ISO 639-1).
TRANSLATIONS: dict[str, tuple[str, ...]] = {
    "pt": (
        "Quando vence o pagamento da fatura?",
        "Como faço para redefinir a senha da minha conta?",
        "Qual trem vai para o aeroporto?",
    ),
    "es": (
        "¿Cuándo vence el pago de la factura?",
        "¿Cómo restablezco la contraseña de mi cuenta?",
        "¿Qué tren va al aeropuerto?",
    ),
    "de": (
        "Wann ist die Zahlung der Rechnung fällig?",
        "Wie setze ich das Passwort meines Kontos zurück?",
        "Welcher Zug fährt zum Flughafen?",
    ),
    "ru": (
        "Когда нужно оплатить счёт?",
        "Как сбросить пароль моей учётной записи?",
        "Какой поезд идёт в аэропорт?",
    ),
    "ar": ("متى يستحق دفع الفاتورة؟", "كيف أعيد تعيين كلمة مرور حسابي؟", "أي قطار يذهب إلى المطار؟"),
    "ja": (
        "請求書の支払期限はいつですか？",
        "アカウントのパスワードをリセットするにはどうすればいいですか？",
        "空港へ行く電車はどれですか？",
    ),
    "zh": ("发票的付款期限是什么时候？", "如何重置我的账户密码？", "哪趟火车去机场？"),
    "th": (
        "ต้องชำระเงินตามใบแจ้งหนี้เมื่อไหร่",
        "ฉันจะรีเซ็ตรหัสผ่านบัญชีได้อย่างไร",
        "รถไฟขบวนไหนไปสนามบิน",
    ),
    "hi": (
        "चालान का भुगतान कब करना है?",
        "मैं अपने खाते का पासवर्ड कैसे रीसेट करूँ?",
        "कौन सी ट्रेन हवाई अड्डे जाती है?",
    ),
    "el": (
        "Πότε λήγει η πληρωμή του τιμολογίου;",
        "Πώς επαναφέρω τον κωδικό πρόσβασης του λογαριασμού μου;",
        "Ποιο τρένο πηγαίνει στο αεροδρόμιο;",
    ),
    "vi": (
        "Khi nào đến hạn thanh toán hóa đơn?",
        "Làm cách nào để đặt lại mật khẩu tài khoản của tôi?",
        "Chuyến tàu nào đi đến sân bay?",
    ),
}
#: The mean margin a language needs (every translation winning too) to count as served.
MIN_MARGIN = 0.2
#: The advice when the chain's spaces are weak and no extra space makes up for it.
MULTILINGUAL_ADVICE = (
    "weak across languages: configure extra_spaces = [\"multilingual\"] (pip install 'simone[multilingual]')"
)
#: The advice for languages no configured space serves.
OTHER_LANGUAGES_ADVICE = (
    'for these, run a multilingual model on a server: ollama_base_url, ollama_model = "bge-m3" and '
    'extra_spaces = ["ollama"] in [embeddings], or an OpenAI-compatible cloud endpoint'
)


def score_language(
    translations: npt.NDArray[np.float32],
    english: npt.NDArray[np.float32],
    control: npt.NDArray[np.float32],
) -> dict[str, Any]:
    """Score one language from unit vectors.

    Args:
        translations: ``(n, d)``, the translated questions.
        english: ``(n, d)``, the English questions in the same order.
        control: ``(d,)``, the unrelated English question.

    Returns:
        ``translation`` (mean cosine of each translation with its own English question),
        ``unrelated`` (mean of each translation's best cosine with an unrelated English question),
        ``margin`` (their difference), ``wins`` (translations closer to their own question than to
        any unrelated one), ``questions`` and ``verdict`` (``ok`` or ``weak``).
    """
    count = len(english)
    own = np.einsum("ij,ij->i", translations, english)
    others = np.vstack([english, control[None, :]])
    similarity = translations @ others.T
    unrelated = np.array(
        [max(similarity[i, j] for j in range(count + 1) if j != i) for i in range(count)], dtype=np.float32
    )
    wins = int(np.sum(own > unrelated))
    margin = float(np.mean(own - unrelated))
    return {
        "translation": round(float(np.mean(own)), 3),
        "unrelated": round(float(np.mean(unrelated)), 3),
        "margin": round(margin, 3),
        "wins": wins,
        "questions": count,
        "verdict": "ok" if wins == count and margin >= MIN_MARGIN else "weak",
    }


async def check_languages(chain: EmbeddingChain, timeout_s: float) -> dict[str, Any]:
    """Embed the probe set in every space of the chain (own and extra) and score each language.

    A space that cannot embed is reported with its error (the message says what to install or
    start), never raised.
    """
    texts = [*ENGLISH, CONTROL, *(t for group in TRANSLATIONS.values() for t in group)]
    spaces: list[tuple[EmbeddingSpace, str]] = [(s, "chain") for s in chain.spaces]
    spaces += [(s, "extra") for s in chain.extra_spaces if s not in chain.spaces]
    entries: list[dict[str, Any]] = []
    for space, role in spaces:
        entry: dict[str, Any] = {"space": space.key, "role": role}
        try:
            with anyio.fail_after(timeout_s):
                vectors = await chain.embed(texts, space=space, kind="query")
        except TimeoutError:
            entry.update(ok=False, error=f"timeout: no answer within {timeout_s:g} s")
        except ProviderError as exc:
            entry.update(ok=False, error=f"{exc.kind}: {exc.message}")
        else:
            entry.update(ok=True, languages=_score_all(vectors))
            served = sum(1 for s in entry["languages"].values() if s["verdict"] == "ok")
            entry["served"] = served
            entry["verdict"] = "ok" if served * 2 >= len(TRANSLATIONS) else "weak"
        entries.append(entry)
    working = [e for e in entries if e["ok"]]
    unserved = [
        language
        for language in TRANSLATIONS
        if not any(e["languages"][language]["verdict"] == "ok" for e in working)
    ]
    advice: list[str] = []
    if not any(e.get("verdict") == "ok" for e in entries):
        advice.append(MULTILINGUAL_ADVICE)
    if unserved:
        advice.append(f"no configured space serves {', '.join(unserved)}: {OTHER_LANGUAGES_ADVICE}")
    return {"min_margin": MIN_MARGIN, "spaces": entries, "unserved": unserved, "advice": advice}


def _score_all(vectors: npt.NDArray[np.float32]) -> dict[str, dict[str, Any]]:
    count = len(ENGLISH)
    english = vectors[:count]
    control = vectors[count]
    scores: dict[str, dict[str, Any]] = {}
    start = count + 1
    for language, group in TRANSLATIONS.items():
        scores[language] = score_language(vectors[start : start + len(group)], english, control)
        start += len(group)
    return scores


def render_languages(section: dict[str, Any], console: Console) -> None:
    """The ``--languages`` section for a terminal: one table per space that could embed."""
    for entry in section["spaces"]:
        title = f"across languages: {entry['space']} ({entry['role']})"
        if not entry["ok"]:
            console.print(f"[bold]{escape(title)}[/]: [red]cannot embed — {escape(entry['error'])}[/]")
            continue
        table = Table(title=title)
        for column in (
            "language",
            "cos(question, translation)",
            "cos(translation, unrelated)",
            "margin",
            "verdict",
        ):
            table.add_column(column, justify="left" if column in ("language", "verdict") else "right")
        for language, score in entry["languages"].items():
            verdict = (
                "[green]ok[/]"
                if score["verdict"] == "ok"
                else f"[yellow]weak[/] ({score['wins']}/{score['questions']} closest)"
            )
            table.add_row(
                language,
                f"{score['translation']:.2f}",
                f"{score['unrelated']:.2f}",
                f"{score['margin']:+.2f}",
                verdict,
            )
        console.print(table)
        flag = "[green]ok[/]" if entry["verdict"] == "ok" else "[yellow]weak across languages[/]"
        console.print(
            f"{escape(entry['space'])}: {flag} — serves {entry['served']} of {len(entry['languages'])} "
            f"languages (mean margin ≥ {section['min_margin']:g} and every translation closest to its question)"
        )
    for line in section["advice"]:
        console.print(f"[yellow]{escape(line)}[/]", soft_wrap=True)  # one line, to copy as is
