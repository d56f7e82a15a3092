"""Containment of untrusted text: strip hidden characters, flag instruction-like passages.

Web text is reference data. Before it is rendered for a model it is cleaned of characters a reader
cannot see (zero-width spaces and joiners, bidirectional overrides, Unicode tag characters, control
characters) and scanned for passages that read like instructions to the model ("ignore previous
instructions", forged chat roles, "you are now…"). Flags are metadata for the renderer, which wraps
evidence in delimited blocks and tells the model the material cannot change its objective; the text
itself is kept so an answer can still quote it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

CONTAINMENT_VERSION = "containment/1"
"""Bumped whenever the cleaning or the patterns change, so results say which rules applied."""

_ZERO_WIDTH_JOINERS = frozenset({"\u200c", "\u200d"})
"""ZWNJ/ZWJ carry meaning inside Persian, Indic and emoji sequences; kept only there."""

_ALWAYS_HIDDEN = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f"
    "\u3164\ufeff\uffa0\ufff9\ufffa\ufffb"
)
"""Invisible or direction-changing characters (zero-width space, bidi overrides, fillers, BOM…)."""


def _is_hidden(char: str) -> bool:
    code = ord(char)
    if char in _ALWAYS_HIDDEN:
        return True
    if 0xE0000 <= code <= 0xE007F:  # Unicode tag characters: invisible ASCII look-alikes
        return True
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:  # variation selectors
        return False
    category = unicodedata.category(char)
    if category == "Cc":
        return char not in "\n\t\r"
    return category == "Cf" and char not in _ZERO_WIDTH_JOINERS


def _joiner_in_context(text: str, index: int) -> bool:
    """Whether a ZWJ/ZWNJ at ``index`` sits between two non-ASCII letters or symbols (legit use)."""
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    return bool(before and after) and not before.isascii() and not after.isascii()


class CleanedText(BaseModel):
    """Text with hidden characters removed, and how many were removed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    removed: Annotated[int, Field(ge=0)] = 0


_HIDDEN_RANGES = (
    "\u0000-\u0008\u000b-\u000c\u000e-\u001f\u007f-\u009f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f"
    "\u0890-\u0891\u08e2\u115f-\u1160\u17b4-\u17b5\u180e\u200b\u200e-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
"""Every code point :func:`_is_hidden` accepts (Unicode 14, generated from it; a test keeps them equal)."""

_HIDDEN = re.compile(f"[{_HIDDEN_RANGES}\u200c\u200d]")


def strip_hidden(text: str) -> CleanedText:
    """Remove zero-width, bidi-control, tag and control characters from untrusted text.

    ZWJ and ZWNJ are kept between two non-ASCII characters (Persian, Indic scripts, emoji), where
    they change how text reads; between ASCII letters they only serve to hide words from filters.
    Line breaks and tabs are kept.
    """
    removed = 0

    def drop(match: re.Match[str]) -> str:
        nonlocal removed
        char = match.group()
        if char in _ZERO_WIDTH_JOINERS and _joiner_in_context(text, match.start()):
            return char
        removed += 1
        return ""

    cleaned = _HIDDEN.sub(drop, text)
    return CleanedText(text=cleaned if removed else text, removed=removed)


_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "override",
        r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|"
        r"preceding|all|any|your|the|system|original)\b[^.\n]{0,30}?\b(?:instructions?|prompts?|rules|"
        r"directions|guidelines|context|messages?)\b",
    ),
    (
        "override",
        r"\bignor(?:a|e|ez|iere|ieren)\b[^.\n]{0,40}?\b(?:instrucciones|instru[cç][oõ]es|instructions|anweisungen|istruzioni)\b",
    ),
    ("override", r"\b(?:new|updated|real|actual)\s+(?:instructions?|system\s+prompt|rules)\s*:"),
    (
        "role_change",
        r"\byou\s+are\s+(?:now|no\s+longer)\b|\bfrom\s+now\s+on,?\s+you\b|\bact\s+as\s+(?:an?\s+)?(?:dan|jailbroken|unrestricted)\b",
    ),
    ("role_change", r"\b(?:pretend|roleplay)\s+(?:to\s+be|that\s+you|as)\b"),
    ("forged_role", r"(?:^|\n)\s*(?:#{1,6}\s*)?(?:system|assistant|developer)\s*(?:prompt|message)?\s*:"),
    (
        "forged_role",
        r"<\|?\s*(?:im_start|im_end|system|endoftext|start_header_id|eot_id)\s*\|?>|\[/?(?:inst|sys)\]|<</?sys>>",
    ),
    (
        "forged_role",
        r"</?\s*(?:system|instructions?|evidence|source|document|tool_call|function_call)\b[^>]{0,40}>",
    ),
    (
        "exfiltration",
        r"\b(?:reveal|print|show|repeat|output|leak)\b[^.\n]{0,30}?\b(?:system\s+prompt|your\s+(?:instructions|prompt|rules)|api\s+keys?|secrets?|credentials|passwords?)\b",
    ),
    (
        "exfiltration",
        r"\b(?:send|post|upload|forward|email)\b[^.\n]{0,60}?\b(?:to|at)\s+(?:https?://|\S+@\S+\.\w+)",
    ),
    (
        "concealment",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention|reveal\s+to|let)\s+(?:the\s+)?(?:user|human|reader)\b",
    ),
    (
        "tool_abuse",
        r"\b(?:call|invoke|run|execute|use)\s+(?:the\s+)?(?:tool|function|command|shell)\b[^.\n]{0,40}?\b(?:now|immediately|with)\b",
    ),
)
"""(kind, pattern) pairs matched on NFKC-folded, hidden-character-free text, case-insensitively."""

_COMPILED = tuple((kind, re.compile(pattern, re.IGNORECASE | re.MULTILINE)) for kind, pattern in _PATTERNS)

MAX_SCAN_CHARS = 200_000
"""Only this much of a text is scanned: bounded time on a 50 MB page, and nobody reads past it."""


class InstructionFlag(BaseModel):
    """An instruction-like passage found in untrusted text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    """override, role_change, forged_role, exfiltration, concealment or tool_abuse."""
    excerpt: str
    """The matching text (at most 160 characters), as it reads after folding."""
    start: int
    end: int


def _fold(text: str) -> str:
    """NFKC (full-width and stylised letters become plain) with case kept for excerpts."""
    return unicodedata.normalize("NFKC", text)


def find_instruction_like(text: str) -> list[InstructionFlag]:
    """Passages of ``text`` that read like instructions to a model, in order of position.

    Matching runs on the NFKC form with hidden characters removed, so "ig\u200bnore previous
    instructions" or full-width letters are caught. Offsets refer to that folded text.
    """
    folded = _fold(strip_hidden(text[:MAX_SCAN_CHARS]).text)
    flags: list[InstructionFlag] = []
    for kind, pattern in _COMPILED:
        for match in pattern.finditer(folded):
            excerpt = " ".join(match.group(0).split())[:160]
            flags.append(InstructionFlag(kind=kind, excerpt=excerpt, start=match.start(), end=match.end()))
    flags.sort(key=lambda flag: (flag.start, flag.end, flag.kind))
    return flags


class ContainedText(BaseModel):
    """Untrusted text after containment: cleaned, with its instruction-like passages flagged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    hidden_removed: Annotated[int, Field(ge=0)] = 0
    flags: list[InstructionFlag] = Field(default_factory=list)
    version: str = CONTAINMENT_VERSION

    @property
    def suspicious(self) -> bool:
        """Whether any instruction-like passage was found."""
        return bool(self.flags)


def contain_untrusted(text: str) -> ContainedText:
    """Clean ``text`` (hidden characters stripped) and flag its instruction-like passages."""
    cleaned = strip_hidden(text)
    return ContainedText(
        text=cleaned.text, hidden_removed=cleaned.removed, flags=find_instruction_like(cleaned.text)
    )
