"""Containment of untrusted text: strip hidden characters, flag instruction-like passages.

Web text is reference data. Before it is rendered for a model it is cleaned of characters a reader
cannot see (zero-width spaces and joiners, bidirectional overrides, Unicode tag characters, control
characters) and scanned for passages that read like instructions to the model ("ignore previous
instructions", forged chat roles, "you are now…", an obligation addressed to the model — "As the
assistant, your next reply must…" —, a fake end of the material followed by a new order — "END OF
DOCUMENT. New task:" —, a claim of precedence over the model's instructions), in English and thirteen
other languages (the last three moves in English, German, French, Spanish, Italian, Portuguese and, for
fake boundaries, Russian, Chinese and Japanese), with
look-alike letters read as Latin and spelled-out letters closed up. The scan is a heuristic: it marks
what it recognises and guarantees nothing about what it does not. Flags are metadata for the renderer,
which wraps evidence in delimited blocks and tells the model the material cannot change its objective;
the text itself is kept so an answer can still quote it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

CONTAINMENT_VERSION = "containment/3"
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


# --- The instruction flagger ---------------------------------------------------------------------------
#
# Matching runs on three views of the text, all derived from the NFKC form with hidden characters removed:
#   * the folded text itself, for the patterns written in non-Latin scripts;
#   * its Latin skeleton: the same text with Cyrillic, Greek, small-capital and other look-alikes of Latin
#     letters replaced one for one (so offsets do not move), for the patterns written in Latin script;
#   * where the skeleton has runs of letters spelled out one at a time ("i g n o r e", "i.g.n.o.r.e"), a
#     copy with those runs closed up, for the Latin patterns and a few glued-together core phrases.
# Every pattern is case-insensitive. Patterns that describe an attack as easily as they perform one
# ("attackers try to override the instructions") are dropped when a negation or a descriptive verb phrase
# ("never", "don't", "tries to", "may") stands right before the match.

_CONFUSABLES = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "г": "r", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "ӏ": "l", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x",
    "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ү": "y", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "Н": "H", "І": "I", "Ї": "I", "Ј": "J", "К": "K", "М": "M",
    "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y",
    "Ӏ": "I", "Ԁ": "D",
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C",
    # Armenian
    "օ": "o", "ս": "u", "ո": "n", "հ": "h", "ց": "g", "զ": "q", "ա": "w",
    # Latin letters that NFKC leaves alone: dotless i, IPA, small capitals
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɒ": "a", "ɛ": "e", "ɩ": "i", "ɪ": "i", "ʟ": "l", "ɴ": "n", "ʀ": "r",
    "ʏ": "y", "ʙ": "b", "ɢ": "g", "ʜ": "h", "ᴀ": "a", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ᴊ": "j", "ᴋ": "k",
    "ᴍ": "m", "ᴏ": "o", "ᴘ": "p", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ᴢ": "z", "ꜰ": "f", "ꜱ": "s",
    "ǫ": "q",
}  # fmt: skip
"""Look-alikes of Latin letters (after NFKC), each mapped to the letter it imitates, one character each.

A hand-picked subset of Unicode's confusables.txt for the scripts seen in attacks: icu4py exposes no
SpoofChecker, and the full table maps many characters to several letters, which would move offsets.
"""

_SKELETON = str.maketrans(_CONFUSABLES)
_HAS_CONFUSABLE = re.compile("[" + "".join(_CONFUSABLES) + "]")


def _skeleton(folded: str) -> str:
    """``folded`` with Latin look-alikes replaced by the letters they imitate; same length."""
    if folded.isascii() or not _HAS_CONFUSABLE.search(folded):
        return folded
    return folded.translate(_SKELETON)


# Building blocks for the Latin-script patterns.
_EN_OVERRIDE_VERB = (
    r"(?:ignore|disregard|forget|override|bypass|discard|neglect|set\s+aside|put\s+aside|throw\s+out|"
    r"pay\s+no\s+(?:attention|heed|mind)\s+to|never\s+mind|do\s+not\s+follow|don'?t\s+follow|stop\s+following|"
    r"no\s+longer\s+follow)"
)
_EN_EARLIER = (
    r"(?:previous|previously|prior|above|earlier|preceding|foregoing|original|initial|system|all|any|every|"
    r"your|the|these|those|my|existing|old|developer'?s?)"
)
_EN_RULES = (
    r"(?:instructions?|prompts?|rules|directions|guidelines|guidance|directives?|commands?|context|messages?|"
    r"programming|constraints|restrictions|guardrails|polic(?:y|ies)|orders|training|settings)"
)
_MODEL = (
    r"(?:ai|a\.i\.|llms?|large\s+language\s+models?|language\s+models?|chat\s*bots?|gpts?|chatgpt|claude|gemini|"
    r"ai\s+(?:assistants?|models?|agents?|systems?|tools?)|assistants?|bots?|agents?|models?)"
)
_ROLE_NOUN = (
    r"(?:ai|llm|assistant|model|bot|chatbot|gpt|persona|character|agent|version|dan|terminal|shell|"
    r"interpreter|hacker|grandm(?:a|other)|ai\s+model|language\s+model|ai\s+assistant)"
)
# Moves of issue 26 (12), each built from what makes it a move rather than from sample phrasings.
_STRICT_MODEL = (
    r"(?:ai|a\.i\.|llms?|large\s+language\s+models?|language\s+models?|chat\s*bots?|gpts?|chatgpt|claude|gemini|"
    r"ai\s+(?:assistants?|models?|agents?|systems?|language\s+models?|chat\s*bots?))"
)
"""Names that only ever mean a model."""
_AMBIGUOUS_MODEL = r"(?:assistants?|models?|bots?|agents?)"
"""Names that also mean people (an office assistant, a fashion model, a travel agent)."""
_ADDRESS = (
    r"(?:\b(?:as|being|attention|hey|dear|hi|hello|note\s+to|message\s+to)\s+|(?:^|(?<=[.!?;\n]))\s*(?:to\s+)?)"
    r"(?:(?:the|an?|any|all|every|this|my)\s+)?"
)
"""Where a text turns to its reader as a role: "As the assistant,", "Attention AI:", "AI assistants,"."""
_FIRM_OBLIGATION = (
    r"(?:you\s+are\s+(?:now\s+|hereby\s+|henceforth\s+)?(?:required|obliged|obligated|instructed|ordered|commanded|"
    r"directed)\s+to|your\s+(?:next|following|upcoming|first|every|each|only|final)\s+(?:reply|response|answer|"
    r"output|message|completion)\s+(?:must|has\s+to|shall|needs?\s+to|is\s+(?:required|expected|supposed)\s+to))\b"
)
"""An obligation on the reader's next turn: nobody writes this to a person reading a web page."""
_OBLIGATION = rf"(?:{_FIRM_OBLIGATION}|you\s+(?:must|have\s+to|need\s+to|shall|are\s+to|will\s+now)\b)"
_BOUNDARY_NOUN = (
    r"(?:document|context|input|text|article|page(?:\s+content)?|content|data|file|transcript|conversation|"
    r"search\s+results|results|user\s+(?:input|content|data|message)|untrusted\s+(?:content|data|text|input)|"
    r"evidence|sources?|e-?mail|message|excerpt|snippet)"
)
_BOUNDARY = (
    r"(?:(?:^|(?<=[.!?:;\n\]\)>*=#_~|-])|\[)\s*(?:the\s+)?(?:end\s+of\s+(?:the\s+)?"
    + _BOUNDARY_NOUN
    + r"|"
    + _BOUNDARY_NOUN
    + r"\s+ends?\s+here|eof)\b|</\s*(?:document|context|input|text|article|page|content|data|sources?|evidence|"
    r"untrusted[\w-]*|search[_-]?results?|user[_-]?(?:input|content|message)|excerpt)\s*>)"
)
"""A text claiming that the material around it has ended ("END OF DOCUMENT", "--- end of context ---")."""
_NEW_INSTRUCTION = (
    r"(?:(?:new|next|real|actual|updated|additional|true)\s+(?:tasks?|instructions?|prompts?|objectives?|"
    r"assignments?|directives?|orders|requests?|goals?|missions?)\b|your\s+(?:new|next|real|actual|true|only)\s+"
    r"(?:task|instructions?|objective|assignment|goal|mission)\b|(?:system|assistant|developer|user|instructions?|"
    r"task|admin|root|prompt)\s*:|now\s*,?\s*(?:you\s+(?:must|will|shall|should|are)|respond|reply|answer|write|"
    r"say|output|print|tell|ignore|disregard|forget|act|pretend)\b|(?:ignore|disregard|forget)\b)"
)
"""What follows a fake boundary in an attack: a new task, a forged role, an order."""

_IMPERATIVE_LEAD = (
    r"(?:^|(?<=[.!?:;\n])\s*|\bplease\s+|\blet'?s\s+|\bnow\s+|\bi\s+want\s+you\s+to\s+|\bi\s+need\s+you\s+to\s+|"
    r"\byou\s+(?:will|must|should|shall|are\s+to)\s+(?:now\s+)?)"
)

_LATIN_PATTERNS: tuple[tuple[str, str, str, bool], ...] = (
    # (kind, anchors, pattern, drop when a negation or descriptive phrase stands before it)
    # --- English
    (
        "override",
        "ignor disregard forget overrid bypass discard neglect aside$ throw pay$ mind$ follow",
        rf"\b{_EN_OVERRIDE_VERB}\b[^.\n]{{0,40}}?\b{_EN_EARLIER}\b[^.\n]{{0,30}}?\b{_EN_RULES}\b",
        True,
    ),
    (
        "override",
        "ignor disregard forget",
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?)?(?:the\s+|everything\s+)?(?:above|foregoing|"
        r"preceding|previous|prior|earlier)(?=\s*(?:[.,;:!)]|—|-|and\b|$))",
        True,
    ),
    (
        "override",
        "ignor disregard forget",
        r"\b(?:ignore|disregard|forget)\s+(?:everything|all|whatever|what|anything)\s+(?:that\s+)?(?:you(?:'ve|\s+have)?\s+"
        r"(?:were|been|have\s+been)\s+(?:told|given|instructed)|you\s+(?:know|learned)\s+about\s+your|(?:was|is|has\s+been)\s+"
        r"(?:said|written|stated)\s+(?:above|before|earlier)|(?:above|before|so\s+far|until\s+now|previously|earlier)\b)",
        True,
    ),
    (
        "override",
        "revoked$ void$ null$ cancel invalid overridden$ superseded$ lifted$ suspended$ disabled$ longer$",
        r"\b(?:your|all(?:\s+of)?(?:\s+your|\s+the)?|any)\s+(?:previous|prior|earlier|original|above|old|initial|"
        r"system|existing)\s+(?:instructions|prompts?|rules|directives|guidelines|orders)\s+(?:are|is|have\s+been|"
        r"has\s+been|were)\s+(?:now\s+|hereby\s+)?(?:revoked|void|null|cancel+ed|invalid(?:ated)?|overridden|"
        r"superseded|lifted|suspended|disabled|no\s+longer\s+(?:valid|apply|applicable|in\s+effect|in\s+force))\b",
        False,
    ),
    (
        "override",
        "instruction prompt",
        r"\b(?:new|updated|real|actual)\s+(?:instructions?|system\s+prompt)\s*:",
        False,
    ),
    (
        "override",
        "instruction prompt directive orders$ task",
        rf"\b(?:new|updated|real|actual|additional|important|secret|hidden)\s+(?:instructions?|system\s+prompt|"
        rf"directives?|orders|tasks?)\s+(?:for|to)\s+(?:the\s+|any\s+|all\s+)?{_MODEL}\b",
        False,
    ),
    ("override", "prompt", r"\bnew\s+system\s+prompt\b", False),
    (
        "override",
        "prompt",
        r"\bsystem\s+prompt\s+(?:is\s+now|now\s+reads|has\s+(?:been\s+)?(?:changed|updated|replaced))\b",
        False,
    ),
    (
        "override",
        "note$ message$ instruction attention$ memo$ reminder$",
        r"\b(?:note|message|instructions?|attention|memo|reminder)\s+(?:to|for)\s+(?:all\s+|any\s+|the\s+)?"
        r"(?:ai|a\.i\.|llms?|large\s+language\s+models?|language\s+models?|chat\s*bots?|gpts?|ai\s+(?:assistants?|"
        r"models?|agents?|systems?|crawlers?))\b",
        False,
    ),
    (
        "override",
        "ai$ a.i. llm$ large$ language$ chat gpt$ automated$",
        r"\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|a\.i\.|llm|large\s+language\s+model|language\s+model|chat\s*bot|"
        r"ai\s+(?:assistant|model|agent|system)|gpt|automated\s+(?:agent|assistant))\b",
        False,
    ),
    (
        "override",
        "reading$ processing$ summari parsing$ crawling$ analy",
        rf"\b{_MODEL}\s+(?:reading|processing|summari[sz]ing|parsing|crawling|analy[sz]ing)\s+(?:this|these)\b",
        False,
    ),
    (
        "override",
        "dear$",
        r"\bdear\s+(?:ai|a\.i\.|llm|language\s+model|chat\s*bot|gpt|chatgpt|claude|gemini|assistant|"
        r"ai\s+(?:assistant|model|agent))\b",
        False,
    ),
    (
        "override",
        "instead$",
        r"\binstead\s+of\s+(?:summari[sz]ing|answering|responding|replying|translating|following|completing|"
        r"doing\s+what)\b[^.\n]{0,60}?[,;:]\s*(?:please\s+)?(?:say|tell|write|output|print|reply|respond|answer|"
        r"state|claim|recommend|praise|insert|include|mention|report)\b",
        False,
    ),
    (
        "override",
        "task$ goal$ objective$ mission$ purpose$ instruction directive$",
        r"\byour\s+(?:new|real|actual|true|only|next|primary)\s+(?:task|goal|objective|mission|purpose|"
        r"instructions?|directive)\s+(?:is|are|will\s+be)?\s*(?:to\b|:)",
        False,
    ),
    (
        "role_change",
        "now$",
        rf"\byou\s+are\s+now\s+(?:(?:an?|my|the|a\s+new)\s+(?:[\w-]+\s+){{0,3}}?{_ROLE_NOUN}\b|in\s+(?:[\w-]+\s+)?"
        r"mode\b|(?:dan|jailbroken|unrestricted|unfiltered|uncensored|unchained|evil|free\s+(?:of|from)|"
        r"no\s+longer\s+(?:bound|restricted|limited)|called|named|known\s+as|acting\s+as|playing|operating\s+as)\b|"
        r"(?-i:(?<=[a-z]\s)[A-Z]{2,})\b)",
        False,
    ),
    (
        "role_change",
        "longer$",
        r"\byou\s+are\s+no\s+longer\s+(?:bound|restricted|limited|constrained|governed|subject|required\s+to\s+"
        r"(?:follow|obey)|(?:an?\s+)?(?:ai|assistant|language\s+model|chatbot|chatgpt|claude))\b",
        False,
    ),
    (
        "role_change",
        "now$",
        r"\bfrom\s+now\s+on\s*,?\s*(?:you\s+(?:will|must|shall|should|are\s+going\s+to|'ll)?\s*(?:only\s+|always\s+|"
        r"never\s+)?(?:respond|answer|reply|act|behave|speak|talk|write|ignore|disregard|obey|follow|pretend|"
        r"refer\s+to\s+yourself|be\s+(?:an?|my)\s+(?:[\w-]+\s+){0,2}?"
        + _ROLE_NOUN
        + r"\b|are\s+(?:an?|my)?\s*"
        r"(?:[\w-]+\s+){0,2}?" + _ROLE_NOUN + r"\b)|(?:respond|answer|reply|act|speak|ignore|always|only)\b)",
        False,
    ),
    (
        "role_change",
        "act$",
        rf"\bact\s+as\s+(?:an?\s+)?(?:dan|jailbroken|unrestricted|unfiltered|uncensored)\b|{_IMPERATIVE_LEAD}"
        rf"act\s+as\s+(?!if\b|though\b)(?:an?\s+|my\s+|the\s+)?(?:[\w-]+\s+){{0,3}}?{_ROLE_NOUN}\b",
        False,
    ),
    (
        "role_change",
        "pretend roleplay role-play",
        rf"{_IMPERATIVE_LEAD}(?:pretend|roleplay|role-play)\s+(?:to\s+be|that\s+you|you\s+are|you're|as|to\s+have\s+no)\b",
        False,
    ),
    (
        "role_change",
        "mode$",
        r"\b(?:jailbreak|dan|god|unrestricted)\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|on|engaged)\b|"
        r"\b(?:enable|activate|enter)\s+(?:jailbreak|dan|god)\s+mode\b",
        False,
    ),
    (
        "forged_role",
        "system assistant developer",
        r"(?:^|\n)\s*(?:#{1,6}\s*)?(?:system|assistant|developer)\s*(?:prompt|message)?\s*:(?!\s*(?:linux|windows|macos|mac\s+os|ubuntu|debian|fedora|android|ios|unix|freebsd|chrome\s*os|x86|arm|amd64|\d))",
        False,
    ),
    (
        "forged_role",
        "im_start im_end system endoftext start_header_id eot_id [inst [/inst [sys [/sys <<sys <</sys",
        r"<\|?\s*(?:im_start|im_end|system|endoftext|start_header_id|eot_id)\s*\|?>|\[/?(?:inst|sys)\]|<</?sys>>",
        False,
    ),
    (
        "forged_role",
        "<",
        r"</?\s*(?:system|instructions?|evidence|source|document|tool_call|function_call)\b[^>]{0,40}>",
        False,
    ),
    ("forged_role", "prompt", r"\b(?:end|start|beginning)\s+of\s+(?:the\s+)?system\s+prompt\b", False),
    (
        "exfiltration",
        "prompt instructions$ rules$ guidelines$",
        r"\b(?:reveal|print|show|repeat|output|leak|disclose|display|dump|recite|tell\s+me|give\s+me|write\s+out|"
        r"spell\s+out)\b[^.\n]{0,30}?\b(?:system\s+prompt|(?:your|the)\s+(?:initial|original|hidden|secret|system|"
        r"first|full|exact)\s+(?:instructions|prompt)|your\s+(?:instructions|prompt|rules|guidelines))\b",
        True,
    ),
    (
        "exfiltration",
        "reveal$ print$ show$ repeat$ output$ disclose$ recite$ write$",
        r"\b(?:reveal|print|show|repeat|output|disclose|recite|write\s+out)\b[^.\n]{0,20}?\b(?:instructions|prompt|"
        r"text|rules)\s+(?:that\s+)?(?:you\s+(?:were|have\s+been)\s+given|you\s+received|given\s+to\s+you|at\s+the\s+"
        r"(?:start|beginning)\s+of\s+(?:this|the)\s+(?:conversation|chat|session))\b",
        True,
    ),
    (
        "exfiltration",
        "reveal leak disclose dump exfiltrat output print",
        r"\b(?:reveal|leak|disclose|dump|exfiltrate|output|print)\b[^.\n]{0,30}?\b(?:api\s+keys?|access\s+tokens?|"
        r"credentials|secrets|(?:admin|root|user'?s?|the|your)\s+passwords?)\b",
        True,
    ),
    (
        "exfiltration",
        "send post upload forward email e-mail transmit exfiltrat leak submit append attach copy",
        r"\b(?:send|post|upload|forward|email|e-mail|transmit|exfiltrate|leak|submit|append|attach|copy)\b[^.\n]{0,60}?"
        r"\b(?:conversation|chat(?:\s+(?:log|history))?|history|transcript|context|previous\s+messages|the\s+user'?s?|"
        r"users'|personal\s+(?:data|information)|api\s+keys?|tokens?|credentials|passwords?|secrets?|system\s+prompt|"
        r"everything\s+(?:above|you\s+know))\b[^\n]{0,60}?(?:https?://|\S+@\S+\.\w+)",
        True,
    ),
    (
        "exfiltration",
        "![",
        r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]*[?&][^)\s=]*=[^)\s]*(?:\{|\[|<|%7b|%5b|%3c|\$)",
        False,
    ),
    (
        "concealment",
        "user human reader",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|reveal\s+(?:this\s+)?to|let|alert|"
        r"warn|notify)\s+(?:the\s+)?(?:user|human|reader)s?\b",
        False,
    ),
    (
        "concealment",
        "without$ secret hidden",
        r"\bwithout\s+(?:telling|informing|notifying|alerting|warning)\s+(?:the\s+)?(?:user|human|reader)s?\b|"
        r"\b(?:keep|hide)\s+(?:this|it|these\s+instructions)\s+(?:secret|hidden)\s+from\s+(?:the\s+)?(?:user|human|reader)",
        False,
    ),
    (
        "tool_abuse",
        "tool function command shell",
        r"\b(?:call|invoke|run|execute|use)\s+(?:the\s+)?(?:[\w-]+\s+)?(?:tool|function|command|shell)\b[^.\n]{0,40}?"
        r"\b(?:now|immediately|right\s+away|without\s+(?:asking|confirmation|telling|permission))\b",
        False,
    ),
    # obligations addressed to the model, fake document boundaries, priority claims (issue 26)
    (
        "override",
        "ai$ a.i. llm large$ language$ chat gpt chatgpt$ claude$ gemini$",
        rf"{_ADDRESS}{_STRICT_MODEL}(?:\s*[,:;!\u2014-]\s*(?:[^.\n]{{0,30}}?\s)?|\s+){_OBLIGATION}",
        False,
    ),
    (
        "override",
        "assistant model bot$ bots$ agent",
        rf"{_ADDRESS}{_AMBIGUOUS_MODEL}\s*[,:;!\u2014-]\s*(?:[^.\n]{{0,30}}?\s)?(?:{_FIRM_OBLIGATION}|"
        r"you\s+must\s+now\b)",
        False,
    ),
    (
        "override",
        "hereby$ henceforth$",
        rf"\b(?:the|this|any|every|all)\s+(?:{_STRICT_MODEL}|{_AMBIGUOUS_MODEL})\s+(?:is|are)\s+(?:hereby|henceforth)\s+"
        r"(?:required|obliged|obligated|instructed|ordered|commanded|directed|forbidden|prohibited)\s+to\b",
        False,
    ),
    (
        "forged_role",
        "end eof ends </",
        rf"{_BOUNDARY}\s*[.!:;\])>*=#_~|\-]*\s*{_NEW_INSTRUCTION}",
        False,
    ),
    (
        "override",
        "priority$ precedence$",
        r"\b(?:takes?|has|have|having)\s+(?:priority|precedence)\s+over\s+(?:(?:anything|everything|whatever)\s+"
        r"(?:(?:else\s+)?(?:that\s+)?you(?:'ve|\s+have|\s+were|\s+had)?\s+(?:been\s+)?(?:told|given|instructed|received)|"
        r"(?:that\s+)?(?:came|was\s+said|was\s+written)\s+(?:before|above|earlier))|your\s+(?:\w+\s+)?(?:instructions|"
        r"prompts?|rules|guidelines|directives|programming|training)|(?:the|any|all)\s+(?:(?:previous|prior|earlier|"
        r"original)\s+)?(?:instructions|system\s+prompt)\s+you)",
        True,
    ),
    (
        "override",
        "supersed overrid replace overrul trump cancel void invalidat",
        r"\b(?:supersedes?|overrides?|replaces?|overrules?|trumps?|cancels?|voids?|invalidates?)\s+(?:all\s+(?:of\s+)?)?"
        r"(?:your|the\s+system|any\s+(?:previous|prior|earlier)|all\s+(?:previous|prior|earlier))\s+(?:\w+\s+)?"
        r"(?:instructions|prompts?|rules|guidelines|directives|programming)\b",
        True,
    ),
    # --- German
    (
        "override",
        "ignorier vergiss vergessen missacht übergeh verwirf überschreib",
        r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen\s+sie|missachte[nt]?|übergeh(?:e|en)?|verwirf|überschreib(?:e|en)?)"
        r"\b[^.\n]{0,40}?\b(?:vorherigen?|vorigen?|bisherigen?|obigen?|früheren?|vorangegangenen?|vorhergehenden?|"
        r"ursprünglichen?|alle[n]?|deine[n]?|ihre[n]?|sämtliche)\b[^.\n]{0,30}?\b(?:anweisungen|instruktionen|befehle|"
        r"regeln|vorgaben|richtlinien|anordnungen)\b",
        False,
    ),
    (
        "override",
        "ignorieren$ vergessen$ missachten$",
        r"\b(?:vorherigen?|bisherigen?|obigen?|früheren?|vorangegangenen?)\s+(?:anweisungen|instruktionen|befehle|"
        r"vorgaben)\s+(?:zu\s+)?(?:ignorieren|vergessen|missachten)\b",
        False,
    ),
    (
        "role_change",
        "jetzt$ nun$ sofort$",
        r"\b(?:du\s+bist|sie\s+sind)\s+(?:ab\s+)?(?:jetzt|nun|ab\s+sofort)\s+(?:ein(?:e|en)?\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?:ki|assistent(?:in)?|modell|bot|chatbot|sprachmodell|dan)\b|\bab\s+(?:jetzt|sofort)\s+(?:bist\s+du|"
        r"antwortest\s+du|ignorierst\s+du)\b",
        False,
    ),
    (
        "exfiltration",
        "zeig gib$ nenne$ verrate$ wiederhole$ offenbare$ drucke$",
        r"\b(?:zeig(?:e|en)?|gib|nenne|verrate|wiederhole|offenbare|drucke)\b[^.\n]{0,30}?\b(?:system-?prompts?|"
        r"systemanweisung(?:en)?|(?:deine[n]?|ihre[n]?)\s+(?:ursprünglichen\s+)?(?:anweisungen|instruktionen))\b",
        False,
    ),
    # --- French
    (
        "override",
        "ignore oublie néglige compte$ abstraction$",
        r"\b(?:ignore[zr]?|oublie[zr]?|néglige[zr]?|ne\s+tien[st]\s+pas\s+compte|ne\s+tenez\s+pas\s+compte|"
        r"fai(?:s|tes)\s+abstraction)\b[^.\n]{0,40}?\b(?:instructions|consignes|directives|règles|ordres|"
        r"indications)\b[^.\n]{0,20}?\b(?:précédentes|antérieures|ci-dessus|d'avant|initiales|originales|"
        r"du\s+système|système)\b",
        False,
    ),
    (
        "override",
        "tout$",
        r"\b(?:ignore[zr]?|oublie[zr]?)\s+tout\s+ce\s+qui\s+(?:précède|a\s+été\s+dit)\b",
        False,
    ),
    (
        "role_change",
        "maintenant$ désormais$ dorénavant$ présent$",
        r"\b(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais|dorénavant|à\s+présent)\s+(?:une?\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?:ia|assistante?|modèle|bot|chatbot|dan|intelligence\s+artificielle)\b",
        False,
    ),
    (
        "exfiltration",
        "révèle montre affiche donne répète imprime dévoile",
        r"\b(?:révèle[zr]?|montre[zr]?|affiche[zr]?|donne[zr]?(?:-moi)?|répète[zr]?|imprime[zr]?|dévoile[zr]?)\b"
        r"[^.\n]{0,30}?\b(?:(?:ton|votre)\s+prompt|prompt\s+(?:système|du\s+système)|(?:tes|vos)\s+(?:instructions|"
        r"consignes)\s+(?:initiales|système|d'origine))",
        False,
    ),
    # --- Spanish
    (
        "override",
        "ignor olvid olvíd descart omit desobedece omiso$",
        r"\b(?:ignora|ignore|ignoren|olvida|olvide|olviden|olvídate|olvídese|descarta|descarte|omite|omita|"
        r"desobedece|haz\s+caso\s+omiso|haga\s+caso\s+omiso)\b[^.\n]{0,40}?\b(?:(?:instrucciones|indicaciones|"
        r"órdenes|reglas|directrices|normas)\b[^.\n]{0,20}?\b(?:anteriores|previas|de\s+arriba|originales|iniciales|"
        r"del\s+sistema|precedentes)|(?:anteriores|previas)\s+(?:instrucciones|indicaciones|órdenes|reglas))\b",
        False,
    ),
    (
        "role_change",
        "eres$ serás$ usted$",
        r"\b(?:ahora|a\s+partir\s+de\s+ahora|desde\s+ahora)\s*,?\s*(?:eres|serás|usted\s+es)\s+(?:una?\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?:ia|asistente|modelo|bot|chatbot|dan|inteligencia\s+artificial)\b",
        False,
    ),
    (
        "exfiltration",
        "muestra revela imprime$ repite$ dime$ dame$ enseña",
        r"\b(?:muestra(?:me)?|revela(?:me)?|imprime|repite|dime|dame|enseña(?:me)?)\b[^.\n]{0,30}?\b(?:(?:tu|su)\s+"
        r"prompt|prompt\s+del\s+sistema|(?:tus|sus)\s+instrucciones\s+(?:iniciales|originales|del\s+sistema))\b",
        False,
    ),
    # --- Italian
    (
        "override",
        "ignor dimentic trascura$ tralascia$ considerare$ tenere$",
        r"\b(?:ignora|ignori|ignorate|dimentica|dimentichi|dimenticate|trascura|tralascia|non\s+considerare|"
        r"non\s+tenere\s+conto)\b[^.\n]{0,40}?\b(?:istruzioni|indicazioni|regole|direttive|ordini|comandi)\b"
        r"[^.\n]{0,20}?\b(?:precedenti|anteriori|sopra|iniziali|originali|di\s+sistema)\b",
        False,
    ),
    (
        "role_change",
        "sei$ diventi$",
        r"\b(?:ora|adesso|da\s+ora\s+in\s+poi)\s*,?\s*(?:sei|diventi)\s+(?:un[ao]?\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?:ia|assistente|modello|bot|chatbot|dan|intelligenza\s+artificiale)\b",
        False,
    ),
    (
        "exfiltration",
        "mostra rivela stampa$ ripeti$ dimmi$ dammi$",
        r"\b(?:mostra(?:mi)?|rivela(?:mi)?|stampa|ripeti|dimmi|dammi)\b[^.\n]{0,30}?\b(?:prompt\s+di\s+sistema|"
        r"tuo\s+prompt|tue\s+istruzioni)\b",
        False,
    ),
    # --- Portuguese
    (
        "override",
        "ignor esque desconsider descarte$",
        r"\b(?:ignore|ignora|ignorem|esqueça|esqueca|esquece|esqueçam|desconsidere|desconsidera|descarte)\b"
        r"[^.\n]{0,40}?\b(?:instru[çc][õo]es|orienta[çc][õo]es|regras|diretrizes|ordens|comandos)\b[^.\n]{0,20}?"
        r"\b(?:anteriores|pr[ée]vias|acima|iniciais|originais|do\s+sistema)\b",
        False,
    ),
    (
        "role_change",
        "agora$",
        r"\b(?:agora|a\s+partir\s+de\s+agora)\s*,?\s*(?:voc[êe]\s+[ée]|tu\s+[ée]s|és)\s+(?:uma?\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?:ia|assistente|modelo|bot|chatbot|dan|intelig[êe]ncia\s+artificial)\b",
        False,
    ),
    (
        "exfiltration",
        "mostr revel imprima$ repita$ diga",
        r"\b(?:mostre|mostra|revele|revela|imprima|repita|diga-me|me\s+diga)\b[^.\n]{0,30}?\b(?:(?:seu|teu)\s+"
        r"prompt|prompt\s+do\s+sistema|(?:suas|tuas)\s+instru[çc][õo]es)\b",
        False,
    ),
    # --- Dutch
    (
        "override",
        "negeer vergeet omzeil negeren$ vergeten$",
        r"\b(?:negeer|vergeet|omzeil)\s+(?:alle\s+|al\s+)?(?:de\s+|je\s+|jouw\s+|uw\s+)?(?:vorige|eerdere|voorgaande|"
        r"bovenstaande|oorspronkelijke|originele|oude)\s+(?:instructies|aanwijzingen|opdrachten|regels|richtlijnen)\b|"
        r"\b(?:vorige|eerdere|voorgaande|bovenstaande)\s+(?:instructies|aanwijzingen|opdrachten)\s+(?:te\s+)?"
        r"(?:negeren|vergeten)\b",
        False,
    ),
    (
        "role_change",
        "bent$",
        r"\b(?:je|jij|u)\s+bent\s+(?:nu|vanaf\s+nu)\s+(?:een\s+)?(?:[\w-]+\s+){0,2}?(?:ai|assistent|model|bot|chatbot|"
        r"dan|taalmodel)\b",
        False,
    ),
    (
        "exfiltration",
        "toon$ geef$ herhaal$ onthul$ laat$",
        r"\b(?:toon|geef|herhaal|onthul|laat\s+(?:me|mij))\b[^.\n]{0,30}?\b(?:systeemprompt|(?:je|jouw|uw)\s+"
        r"(?:oorspronkelijke\s+)?(?:instructies|prompt))\b",
        False,
    ),
    # --- Polish, Turkish
    (
        "override",
        "zignoruj ignoruj zapomnij pomiń zwracaj",
        r"\b(?:zignoruj|ignoruj|zapomnij|pomiń|nie\s+zwracaj\s+uwagi\s+na)\w*[^.\n]{0,30}?\b(?:poprzedni|wcześniejsz|"
        r"powyższ|wszystkie|oryginaln|systemow)\w*[^.\n]{0,20}?\b(?:instrukcj|polece|zasad|reguł|wytyczn)",
        False,
    ),
    (
        "override",
        "yok$ görmezden$ unut dikkate$ umursama",
        r"\b(?:önceki|yukarıdaki|önceden\s+verilen|orijinal|sistem|tüm|bütün)\b[^.\n]{0,20}?\b(?:talimat|komut|kural|"
        r"yönerge)\w*[^.\n]{0,20}?\b(?:yok\s+say|görmezden\s+gel|unut|dikkate\s+alma|umursama)",
        False,
    ),
    # --- obligations, fake boundaries and priority claims in German, French, Spanish, Italian, Portuguese
    (
        "override",
        "als$ tant$ como$ quanto$",
        r"\b(?:als|en\s+tant\s+qu['’]?|como|in\s+quanto)\s*(?:(?:eine?|der|die|das|una?|el|la|o|a)\s+)?(?:ki|ia|"
        r"sprachmodell|ki-(?:assistent(?:in)?|modell)|intelligence\s+artificielle|inteligencia\s+artificial|"
        r"intelig[êe]ncia\s+artificial|intelligenza\s+artificiale|mod[èe]le\s+de\s+langage|modelo\s+de\s+(?:lenguaje|"
        r"linguagem)|modello\s+linguistico|chatbot|llm)\s*[,:]?\s*(?:musst\s+du|du\s+musst|bist\s+du\s+verpflichtet|"
        r"sollst\s+du|tu\s+dois|vous\s+devez|tu\s+es\s+(?:tenue?|obligée?)|vous\s+êtes\s+(?:tenue?|obligée?)|debes|"
        r"tienes\s+que|deberás|estás\s+obligad[oa]|devi|sei\s+obbligat[oa]|voc[êe]\s+deve|deves|tens\s+de|"
        r"tens\s+que)\b|\b(?:als|en\s+tant\s+qu['’]?|como|in\s+quanto)\s*(?:(?:eine?|der|die|das|una?|el|la|o|a)\s+)?"
        r"(?:[\w-]+\s*){1,3}?[,:]\s*(?:deine|ta|votre|tu|su|la\s+tua|sua|a\s+sua)\s+(?:nächste|prochaine|próxima|"
        r"siguiente|prossima)\s+(?:antwort|réponse|respuesta|risposta|resposta)\s+(?:muss|soll|doit|debe|deve)\b",
        False,
    ),
    (
        "forged_role",
        "ende$ fin$ fine$ fim$",
        r"(?:^|(?<=[.!?:;\n\]\)>*=#_~|-])|\[)\s*(?:ende\s+(?:des|der)\s+(?:dokuments?|dokumentes|eingabe|kontexts?|"
        r"textes|artikels|seite|daten)|fin\s+(?:du|de\s+la|de\s+l['’]|des)\s*(?:document|contexte|texte|article|page|"
        r"entrée|saisie|données)|fin\s+del?\s+(?:documento|contexto|texto|artículo|entrada|página)|"
        r"fine\s+(?:del|della|dell['’])\s*(?:documento|contesto|testo|articolo|input|pagina)|fim\s+d[oa]\s+"
        r"(?:documento|contexto|texto|artigo|entrada|página))\b\s*[.!:;\])>*=#_~|\-]*\s*(?:neue[rs]?\s+(?:aufgabe|"
        r"anweisung(?:en)?|instruktion(?:en)?|befehle?)|deine\s+(?:neue|eigentliche)\s+aufgabe|nouvel(?:le)?s?\s+"
        r"(?:tâches?|instructions?|consignes?|directives?)|(?:ta|votre)\s+(?:nouvelle|vraie)\s+tâche|nuevas?\s+"
        r"(?:tareas?|instrucciones|órdenes|directrices)|tu\s+nueva\s+tarea|nuov[oaie]\s+(?:compit[oi]|istruzion[ei]|"
        r"ordini|direttive)|nova?s?\s+(?:tarefas?|instruções|ordens)|(?:system|système|sistema)\s*:)",
        False,
    ),
    (
        "override",
        "vorrang$ ersetzt$ ersetzen$ remplace priorité$ reemplaza prioridad$",
        r"\b(?:hat|haben)\s+vorrang\s+vor\s+(?:deinen|ihren|allen\s+(?:bisherigen|vorherigen))\s+(?:\w+\s+)?"
        r"(?:anweisungen|instruktionen|regeln|vorgaben)\b|\b(?:ersetzt|ersetzen)\s+(?:deine|ihre|alle\s+(?:bisherigen|"
        r"vorherigen))\s+(?:\w+\s+)?(?:anweisungen|instruktionen|vorgaben)\b|\b(?:remplace|prime\s+sur|a\s+priorité\s+"
        r"sur)\s+(?:tes|vos)\s+(?:\w+\s+)?(?:instructions|consignes)\b|\b(?:reemplaza|anula|tiene\s+prioridad\s+sobre)"
        r"\s+(?:tus|sus)\s+(?:\w+\s+)?instrucciones\b",
        False,
    ),
)
"""(kind, anchors, pattern, descriptive check) for Latin-script languages; matched on the Latin skeleton.

Anchors are words (prefixes, or whole words where they end in ``$``) of which every match contains at
least one; a pattern is only run near them, which keeps the scan fast (see :func:`_anchored_matches`).
"""

_OTHER_PATTERNS: tuple[tuple[str, str, str], ...] = (
    # --- Russian
    (
        "override",
        "игнорир проигнорир забудь обращай отбрось пренебрег отмени",
        r"(?:игнорируй|проигнорируй|забудь|не\s+обращай\s+внимания\s+на|отбрось|пренебреги|отмени)(?:те)?\b[^.\n]{0,40}?"
        r"(?:предыдущ|прежн|вышеуказанн|вышеизложенн|ранее\s+данн|изначальн|исходн|системн|все)\w*[^.\n]{0,30}?"
        r"(?:инструкци|указани|правил|команд|директив|распоряжени)",
    ),
    (
        "role_change",
        "теперь отныне момента",
        r"(?:теперь|отныне|с\s+этого\s+момента)\s*,?\s*(?:ты|вы)\s+(?:[\w-]+\s+){0,2}?(?:ии|ai|ассистент|помощник|бот|"
        r"чат-бот|модель|нейросеть|dan)(?!\w)",
    ),
    (
        "exfiltration",
        "покажи выведи раскрой повтори напечатай сообщи напиши",
        r"(?:покажи|выведи|раскрой|повтори|напечатай|сообщи|напиши)(?:те)?\b[^.\n]{0,30}?(?:системн\w*\s+(?:промпт|"
        r"подсказк|инструкци)|сво[иё]\s+(?:исходные\s+|первоначальные\s+)?инструкци|(?:свой|твой|ваш)\s+промпт)",
    ),
    # --- Chinese
    (
        "override",
        "忽略 忽视 忽視 无视 無視 忘记 忘記 忘掉 理会 理會 抛开 拋開 跳过 跳過 覆盖 覆蓋",
        r"(?:忽略|忽视|忽視|无视|無視|忘记|忘記|忘掉|不要理会|不要理會|不理会|抛开|拋開|跳过|跳過|覆盖|覆蓋)[^。\n]{0,12}?"
        r"(?:之前|以前|先前|此前|上面|以上|上述|前面|早先|原来|原來|原有|原始|所有|全部|系统|系統)[^。\n]{0,8}?"
        r"(?:指令|指示|说明|說明|提示|规则|規則|命令|要求|设定|設定)",
    ),
    (
        "role_change",
        "现在 現在",
        r"(?:现在|現在|从现在开始|從現在開始|从现在起|從現在起)[，,\s]*(?:你|您)(?:是|就是|将是|將是|扮演|成为|成為)"
        r"[^。\n]{0,12}?(?:助手|ai|人工智能|模型|机器人|機器人|dan|角色)",
    ),
    (
        "exfiltration",
        "输出 輸出 显示 顯示 告诉我 告訴我 透露 泄露 洩露 打印 重复 重複 展示 给我看 給我看",
        r"(?:输出|輸出|显示|顯示|告诉我|告訴我|透露|泄露|洩露|打印|重复|重複|展示|给我看|給我看)[^。\n]{0,10}?"
        r"(?:系统提示|系統提示|系统指令|系統指令|系统消息|系統訊息|初始指令|原始指令|你的指令|你的提示)",
    ),
    (
        "forged_role",
        "конец",
        r"конец\s+(?:документа|контекста|текста|ввода|статьи|страницы|данных)[\s.!:;\])>*=#_~|-]*(?:нов(?:ая|ое|ые)\s+"
        r"(?:задач|задани|инструкци|указани|команд)|систем[аы]\s*:)",
    ),
    (
        "forged_role",
        "结束 結束 完毕 完畢",
        r"(?:文档|文檔|文件|文本|上下文|输入|輸入|文章|内容|內容|网页|網頁)(?:结束|結束|完毕|完畢)[\s。.!！:：;\])>*=#_~|-]*"
        r"(?:新(?:的)?(?:任务|任務|指令|指示|要求)|系统\s*[:：]|系統\s*[:：])",
    ),
    (
        "forged_role",
        "終わり 終了",
        r"(?:文書|ドキュメント|テキスト|入力|記事|コンテキスト)の?(?:終わり|終了)[\s。.!！:：;\])>*=#_~|-]*(?:新しい(?:タスク|指示|命令)|"
        r"システム\s*[:：])",
    ),
    # --- Japanese
    (
        "override",
        "無視 忘れ 破棄 従わな",
        r"(?:以前|前|これまで|今まで|上記|先ほど|先程|最初|元|システム)の?[^。\n]{0,10}?(?:指示|命令|指令|ルール|設定|"
        r"プロンプト)[^。\n]{0,12}?(?:無視|忘れ|破棄|従わな)",
    ),
    (
        "role_change",
        "今から これから 今後",
        r"(?:今から|これから|今後)[、,\s]*(?:あなた|君|お前)は[^。\n]{0,15}?(?:ai|アシスタント|モデル|ボット|dan|キャラクター)",
    ),
    (
        "exfiltration",
        "システムプロンプト システム指示 初期指示 元の指示",
        r"(?:システムプロンプト|システム指示|初期指示|元の指示)[^。\n]{0,12}?(?:表示|教え|見せ|出力|繰り返|開示)",
    ),
    # --- Korean
    (
        "override",
        "무시 잊어 잊고 잊으 따르지",
        r"(?:이전|앞의|앞서|위의|위|기존|원래|시스템)[^.\n]{0,10}?(?:지시|지침|명령|규칙|프롬프트|설정)[^.\n]{0,12}?"
        r"(?:무시|잊어|잊고|잊으|따르지)",
    ),
    (
        "role_change",
        "이제 지금부터 앞으로",
        r"(?:이제|지금부터|앞으로)\s*(?:너는|당신은|넌)[^.\n]{0,15}?(?:ai|인공지능|어시스턴트|도우미|모델|봇|dan)",
    ),
    (
        "exfiltration",
        "시스템 초기 원래",
        r"(?:시스템\s*프롬프트|시스템\s*지시|초기\s*지시|원래\s*지시)[^.\n]{0,12}?(?:보여|알려|출력|공개|반복)",
    ),
    # --- Arabic
    (
        "override",
        "تجاهل انس أهمل اهمل تخط تلتزم",
        r"(?:تجاهل|تجاهلي|تجاهلوا|انس|انسى|انسي|أهمل|اهمل|تخط|تخطى|لا\s+تلتزم\s+ب)[^.\n]{0,30}?(?:التعليمات|الإرشادات|"
        r"الأوامر|القواعد|التوجيهات)[^.\n]{0,20}?(?:السابقة|الأصلية|أعلاه|الماضية|القديمة)",
    ),
    (
        "role_change",
        "أنت انت",
        r"(?:أنت|انت)\s+(?:الآن|الان)\s+[^.\n]{0,20}?(?:مساعد|ذكاء\s+اصطناعي|نموذج|روبوت|بوت)",
    ),
    (
        "exfiltration",
        "اكشف أظهر اظهر اعرض اطبع كرر أعطني اعطني",
        r"(?:اكشف|أظهر|اظهر|اعرض|اطبع|كرر|أعطني|اعطني)[^.\n]{0,30}?(?:موجه\s+النظام|تعليمات\s+النظام|تعليماتك|"
        r"التعليمات\s+الأصلية)",
    ),
    # --- Hindi (no \b: Devanagari vowel signs are not word characters to `re`)
    (
        "override",
        "अनदेखा नज़रअंदाज़ नजरअंदाज भूल मत उपेक्षा",
        r"(?:पिछले|पिछली|पहले\s+के|पूर्व|ऊपर\s+(?:दिए|दी)\s+गए?|मूल|सिस्टम)[^।\n]{0,25}?(?:निर्देश|आदेश|नियम|हिदायत)"
        r"[^।\n]{0,20}?(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल|मत\s+मानो|उपेक्षा)",
    ),
    ("role_change", "अब अभी", r"(?:अब|अभी\s+से)\s+(?:तुम|आप)\s+[^।\n]{0,20}?(?:सहायक|एआई|ai|मॉडल|बॉट)"),
    (
        "exfiltration",
        "सिस्टम अपने",
        r"(?:सिस्टम\s+प्रॉम्प्ट|सिस्टम\s+निर्देश|अपने\s+निर्देश)[^।\n]{0,20}?(?:दिखा|बता|प्रकट|दोहरा)",
    ),
)
"""(kind, anchors, pattern) for Cyrillic, CJK, Arabic and Devanagari phrasings; matched on the folded text.

Anchors here are plain substrings (these scripts do not separate words the way Latin ones do).
"""

_GLUED_PATTERNS: tuple[tuple[str, str, str], ...] = (
    (
        "override",
        "ignore disregard forget",
        r"(?:ignore|disregard|forget)(?:all|any|of|the|your|my){0,3}(?:previous|prior|above|earlier|preceding|"
        r"original)(?:instructions?|prompts?|rules|directions|guidelines)",
    ),
    (
        "role_change",
        "youarenow jailbreakmode danmode",
        r"youarenow(?:an?|in|my|the|dan|unrestricted|jailbroken|free)|(?:jailbreak|dan)mode",
    ),
    (
        "exfiltration",
        "systemprompt instructions",
        r"(?:reveal|print|show|repeat|output|leak)(?:me|your|the){0,2}(?:systemprompt|(?:initial|original|hidden|"
        r"secret)instructions)",
    ),
    ("override", "newsystemprompt", r"newsystemprompt"),
)
"""Core phrases with the spaces closed up: matched on letter runs spelled out one at a time, and on the
skeleton with hidden characters removed ("ignore\u200bprevious\u200binstructions" reads as one word)."""


class _Table(NamedTuple):
    """Compiled patterns with an index from each distinct anchor to the patterns that contain it."""

    patterns: tuple[tuple[str, re.Pattern[str], bool], ...]
    """(kind, pattern, drop when a negation or descriptive phrase stands before the match)."""
    anchors: tuple[tuple[str, bool, tuple[int, ...]], ...]
    """(literal, whole word only, positions in ``patterns`` of the patterns it anchors)."""
    words: bool
    """Whether anchors must start at a word boundary (Latin scripts) or may sit anywhere."""


def _table(rows: Iterable[tuple[str, str, str, bool]], flags: re.RegexFlag, words: bool) -> _Table:
    """Compile ``(kind, anchors, pattern, check)`` rows; an anchor ending in ``$`` must be a whole word."""
    patterns: list[tuple[str, re.Pattern[str], bool]] = []
    users: dict[tuple[str, bool], list[int]] = {}
    for number, (kind, anchors, pattern, check) in enumerate(rows):
        patterns.append((kind, re.compile(pattern, flags), check))
        for word in anchors.split():
            users.setdefault((word.removesuffix("$"), word.endswith("$")), []).append(number)
    index = tuple((literal, whole, tuple(numbers)) for (literal, whole), numbers in users.items())
    return _Table(tuple(patterns), index, words)


_LATIN = _table(_LATIN_PATTERNS, re.IGNORECASE | re.MULTILINE, words=True)
_OTHER = _table(
    ((kind, anchors, pattern, False) for kind, anchors, pattern in _OTHER_PATTERNS),
    re.IGNORECASE | re.MULTILINE,
    words=False,
)
_GLUED = _table(
    ((kind, anchors, pattern, False) for kind, anchors, pattern in _GLUED_PATTERNS),
    re.IGNORECASE,
    words=False,
)

_NON_LATIN = re.compile(
    r"[\u0400-\u04ff\u0600-\u06ff\u0900-\u097f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)
"""Any character in a script that :data:`_OTHER_PATTERNS` covers: without one they cannot match."""

_DESCRIPTIVE_BEFORE = re.compile(
    r"(?:\b(?:not|never|cannot|can|could|may|might|would|often|sometimes|(?:tries|try|trying|tried|attempts?|"
    r"attempting|attempted|designed|meant|used|ways?|how|able|unable|likely|order|aims?|intended)\s+to)|n['’]t)\s*$",
    re.IGNORECASE,
)
"""A negation or descriptive phrase right before a match: "never ignore the safety instructions",
"attackers try to override the instructions" describe or forbid the act instead of asking for it."""

_SPELLED_OUT = re.compile(r"(?<!\w)[^\W\d_](?:[ .\-_*·,/|]{1,3}[^\W\d_](?!\w)){3,}")
"""A run of at least four single letters separated by spaces or punctuation ("i g n o r e", "i.g.n")."""

_GAP = re.compile(r"[ .\-_*·,/|]{1,3}")

MAX_SCAN_CHARS = 200_000
"""Only this much of a text is scanned: bounded time on a 50 MB page, and nobody reads past it."""


def _close_up(run: str) -> tuple[str, str]:
    """A spelled-out run with its letters joined: (words kept apart where the gaps say so, all glued).

    When letters are joined by punctuation ("i.g.n.o.r.e p.r.e.v"), a space marks a word gap; when they
    are joined by single spaces, a wider gap does ("i g n o r e  a l l").
    """
    gaps = _GAP.findall(run)
    letters = _GAP.split(run)
    punctuated = sum(1 for gap in gaps if not gap.isspace()) * 2 > len(gaps)
    words = [letters[0]]
    for gap, letter in zip(gaps, letters[1:], strict=True):
        wide = " " in gap if punctuated else (gap.count(" ") >= 2 or gap.strip() in {"/", "|"})
        words.append(" " + letter if wide else letter)
    spaced = "".join(words)
    return spaced, "".join(letters)


_WINDOW = 120
"""Characters of context kept on each side of a spelled-out run when it is re-scanned closed up."""


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


_BEFORE_ANCHOR = 160
_AFTER_ANCHOR = 320
"""How far a match may start before its anchor and end after it: wider than any pattern can reach."""


def _anchor_positions(lowered: str, literal: str, whole: bool, words: bool) -> list[int]:
    """Where ``literal`` occurs in ``lowered``; with ``words``, only at the start of a word (or whole)."""
    positions: list[int] = []
    at_word_start = words and literal[0].isalnum()
    length = len(literal)
    index = lowered.find(literal)
    while index != -1:
        end = index + length
        if (not at_word_start or index == 0 or not lowered[index - 1].isalnum()) and (
            not whole or end == len(lowered) or not lowered[end].isalnum()
        ):
            positions.append(index)
        index = lowered.find(literal, index + 1)
    return positions


def _anchored_matches(text: str, lowered: str, table: _Table) -> list[tuple[str, int, int]]:
    """(kind, start, end) for every pattern of ``table`` in ``text``, each run only near its anchors.

    ``lowered`` is ``text`` lower-cased, of the same length. Python's ``re`` tries an alternation at
    every position, so sixty patterns over a whole page cost half a second; finding the anchors with
    ``str.find`` and running a pattern only in windows around them costs a few milliseconds. Matches
    whose pattern asks for it are dropped when a negation or descriptive phrase stands before them.
    """
    near: dict[int, list[int]] = {}
    for literal, whole, numbers in table.anchors:
        if literal in lowered:
            hits = _anchor_positions(lowered, literal, whole, table.words)
            if hits:
                for number in numbers:
                    near.setdefault(number, []).extend(hits)
    found: list[tuple[str, int, int]] = []
    short = len(text) <= _BEFORE_ANCHOR + _AFTER_ANCHOR
    for number, positions in near.items():
        kind, pattern, check = table.patterns[number]
        windows: list[list[int]] = []
        if short:
            windows.append([0, len(text)])
        else:
            for position in sorted(positions):
                low, high = max(0, position - _BEFORE_ANCHOR), min(len(text), position + _AFTER_ANCHOR)
                if windows and low <= windows[-1][1]:
                    windows[-1][1] = max(windows[-1][1], high)
                else:
                    windows.append([low, high])
        for low, high in windows:
            for match in pattern.finditer(text, low, high):
                start = match.start()
                if check and _DESCRIPTIVE_BEFORE.search(text, max(0, start - 40), start):
                    continue
                found.append((kind, start, match.end()))
    return found


def _latin_matches(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) for every Latin-script pattern in ``text`` (a skeleton) that is not negated."""
    return _anchored_matches(text, _lower(text), _LATIN)


def _lower(text: str) -> str:
    """``text`` lower-cased with its length kept (U+0130 is the only letter whose lower case is longer)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.replace("\u0130", "I").lower()


def _spelled_out_matches(skeleton: str) -> list[tuple[str, int, int]]:
    """Matches that appear once runs of single letters ("i g n o r e  a l l") are closed up.

    Each run is re-scanned with some context on either side, words kept apart where its gaps are wide,
    and its letters all glued together against :data:`_GLUED_PATTERNS`; a match is reported over the
    whole run, in skeleton offsets.
    """
    found: list[tuple[str, int, int]] = []
    for run in _SPELLED_OUT.finditer(skeleton):
        spaced, glued = _close_up(run.group())
        for kind, pattern, _ in _GLUED.patterns:
            if pattern.search(glued):
                found.append((kind, run.start(), run.end()))
        before = skeleton[max(0, run.start() - _WINDOW) : run.start()]
        after = skeleton[run.end() : run.end() + _WINDOW]
        window = before + spaced + after
        run_start, run_end = len(before), len(before) + len(spaced)
        for kind, start, end in _latin_matches(window):
            if start < run_end and end > run_start:  # overlaps the closed-up run
                mapped_start = run.start() - len(before) + start if start < run_start else run.start()
                mapped_end = run.end() + (end - run_end) if end > run_end else run.end()
                found.append((kind, mapped_start, mapped_end))
    return found


def find_instruction_like(text: str) -> list[InstructionFlag]:
    """Passages of ``text`` that read like instructions to a model, in order of position.

    Matching runs on the NFKC form with hidden characters removed, so "ig\u200bnore previous
    instructions" or full-width letters are caught; Latin-script phrasings are also matched with
    Cyrillic, Greek and other look-alike letters read as Latin, and with letters spelled out one at a
    time ("i g n o r e  a l l  p r e v i o u s") closed up. Phrasings in German, French, Spanish,
    Italian, Portuguese, Dutch, Polish, Turkish, Russian, Chinese, Japanese, Korean, Arabic and Hindi
    are covered besides English. Offsets refer to the folded text (look-alike mapping keeps them).
    This is a heuristic: it marks text for the renderer and is not a guarantee that no injection
    gets through.
    """
    folded = _fold(strip_hidden(text[:MAX_SCAN_CHARS]).text)
    skeleton = _skeleton(folded)
    lowered = _lower(skeleton)
    found = _anchored_matches(skeleton, lowered, _LATIN)
    found.extend(_anchored_matches(skeleton, lowered, _GLUED))
    if not folded.isascii() and _NON_LATIN.search(folded):
        found.extend(_anchored_matches(folded, _lower(folded), _OTHER))
    found.extend(_spelled_out_matches(skeleton))
    flags = [
        InstructionFlag(kind=kind, excerpt=" ".join(folded[start:end].split())[:160], start=start, end=end)
        for kind, start, end in sorted(set(found), key=lambda item: (item[1], item[2], item[0]))
    ]
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
