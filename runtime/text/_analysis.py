"""Text analysis for lexical search: one function for documents and queries, in any language.

The pipeline, applied to documents and queries alike by :meth:`Analyzer.terms`:

1. Clean: unpaired surrogates become U+FFFD; soft hyphens, word joiners and BOMs are dropped.
2. NFKC, then words: ICU word segmentation (``icu4py`` bundles ICU, no system library) for blocks
   holding Chinese, Japanese, Korean, Thai, Lao, Khmer or Myanmar, which it splits into dictionary
   words (Korean at spaces and script changes: ``1924년`` → ``1924``, ``년``); one
   regular expression that cuts where ICU would (letters, digits, marks; ``20,00`` stays whole) for
   blocks of space-separated scripts, which is several times faster. Text is handled in 64k blocks.
3. Per word (cached): case fold; accents folded for Latin, Greek and Cyrillic (kana keep their marks:
   が stays が); Arabic diacritics and tatweel dropped; digits of any script made ASCII and numbers
   normalised (``20,00`` → ``20``, ``1.234,50`` → ``1234.5`` and ``1234``); stop words of 12
   languages and the project's ignore list dropped.
4. Is the text English? The stop words it held are the evidence: each counts for the Latin-script
   languages whose list holds it (shared words split their vote), a word written with a non-English
   Latin letter (``ã``, ``ü``, ``ı``…) counts against English, and English wins ties. So a text without
   evidence (``BRCA1 mutations``, a title, a Russian text) is taken as English: the title of an English
   document must emit the same terms as its body, and a short query the same terms as both.
5. Terms per kept word. A word of Latin letters (after folding) emits its Snowball English stem
   (``activation`` → ``activ``; see :data:`STEM_LANGUAGE`); in a text that is not English it also emits
   itself and, from 6 letters on, its first 5 letters (a language-neutral stemmer: ``prazos`` meets
   ``prazo``, ``Verlängerung`` meets ``verlängern``). In a Vietnamese text an accented word emits
   itself as written instead (``tổng``: tone marks tell syllables apart; see :func:`_language`).
   Words of other scripts emit themselves and the 5-letter prefix too, in any text.
6. Chinese, Japanese and Korean: two term families in one vocabulary. The dictionary word (a Korean
   word without its particle: ``운영시간은`` → ``운영시간``; the word with it is not a word) and the
   overlapping character bigrams of each run of such words, across word boundaries and the spaces
   between Korean words (``梅雨が`` → ``梅雨``, ``雨が``; ``국무 장관`` meets ``국무장관``), so a word the
   dictionary cuts badly (``ばいう`` → ``ば``, ``いう``) still meets its bigrams. A two-character word
   is also its own bigram and so counts twice; the families share the term space and the weight 1
   (measured better than separate, weighted families: ``benchmarks/lexical_quality.py`` against a
   plain character-bigram BM25 on JSQuAD and KorQuAD). A stop word emits nothing of its own.
   Every word or phrase of a synonym group emits the group's id (``preço``, ``cost``, ``料金`` →
   ``price``).

The English stem is the one term every Latin word emits in every text, so an English query still
meets a Portuguese document (and the reverse) whichever way each was classified. The prefixes make
matching looser, which helps languages without a stemmer here and costs English precision: on SciFact
(``benchmarks/index_quality.py``) 5-letter prefixes instead of stems put BM25 0.02 nDCG@10 below
LanceDB's own English-stemming FTS (``neuron`` met ``neurotransmitter``); XQuAD-R in 11 languages
(``benchmarks/lexical_quality.py``) stays where the prefixes had it. The price: a question in another
language no longer meets an English document through a shared 5-letter prefix (``Universität`` and
``university``), only through words both spell alike.

A term never contains whitespace, so terms joined by spaces survive any whitespace tokenizer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import resources
from itertools import chain, compress
from typing import NamedTuple

import Stemmer
from icu4py.breakers import WordBreaker
from icu4py.locale import Locale
from pydantic import BaseModel, ConfigDict
from simone.runtime._config import LexicalSettings
from simone.runtime._errors import ConfigError

ANALYSIS_VERSION = 4
"""Bumped whenever the same text can yield other terms (3: English stems, texts without evidence English;
4: bigrams across Chinese, Japanese and Korean word boundaries, Korean words without their particle,
Hangul through ICU, Vietnamese words as written); see :attr:`Analyzer.signature`."""
PREFIX_LENGTH = 5
"""Alphabetic words longer than this also emit their first 5 letters (a language-neutral stemmer)."""
STEM_LANGUAGE = "english"
"""The Snowball stemmer (PyStemmer) that reduces Latin-script words: ``activation`` → ``activ``."""
LATIN_STOPWORD_LANGUAGES = ("en", "pt", "es", "fr", "it", "de", "nl")
"""The Latin-script languages whose stop words vote on whether a text is English."""
BLOCK_CHARS = 65_536
"""Text is segmented in blocks of about this many characters, so ICU's working memory stays bounded."""
WORD_CACHE_SIZE = 1 << 17
"""Distinct surface words whose analysis is remembered (per analyzer)."""
MAX_WORD_CHARS = 256
"""Longer runs without a break (base64, minified code) are cut: a term is never longer than this."""
STOPWORD_LANGUAGES = ("en", "pt", "es", "fr", "it", "de", "nl", "ru", "ja", "zh", "ko", "th")
"""Languages whose stop words (question words included) ship in ``simone.runtime.text.lexicon``."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_NEEDS_CLEANING = re.compile("[\ud800-\udfff\u00ad\u2060\ufeff]")
# Invisible formatting characters that sit inside words (soft hyphen, word joiner, BOM) are removed.
# Control characters, apostrophes and ZWSP need nothing: they are not word characters, so they split.
# ZWJ/ZWNJ stay: some scripts spell with them.
_INVISIBLE = re.compile("[\u00ad\u2060\ufeff]")
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
# Blocks that ICU segments: scripts written without spaces between words (Thai, Lao, Myanmar, Khmer,
# kana, Han), Hangul (ICU cuts 1924년 into 1924 and 년, and keeps the spaces a run of bigrams crosses)
# and anything outside the BMP. The rest goes through one regular expression, much faster.
_NEEDS_ICU = re.compile(
    "[\u0e00-\u0eff\u1000-\u11ff\u1780-\u17ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[\U00010000-\U0010ffff]"
)
_LETTER_FOLD = str.maketrans(
    {"ø": "o", "đ": "d", "ł": "l", "ħ": "h", "ı": "i", "æ": "ae", "œ": "oe", "ð": "d", "þ": "th", "ŧ": "t"}
)
# The diacritics folded away: generic combining marks (Latin, Greek, Cyrillic accents), Cyrillic marks,
# and Arabic harakat, superscript alef and tatweel (as Arabic search engines do). Kana voicing marks
# (U+3099, U+309A) and the vowel signs of Indic and Southeast Asian scripts are not among them.
# Latin letters outside ASCII (× and ÷ are not letters): a word holding one is not written in English.
_ACCENTED_LATIN = re.compile("[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_ACCENT_SIGNAL = 1 << len(LATIN_STOPWORD_LANGUAGES)
"""The signal bit of a segment written with a non-English Latin letter (lower bits: stop-word languages)."""
_VIETNAMESE_SIGNAL = _ACCENT_SIGNAL << 1
"""The signal bit of a segment written with a letter only Vietnamese uses (``ơ``, ``ư``, ``ạ``, ``ổ``…)."""
VIETNAMESE_SHARE = 0.1
"""A text that is not English is Vietnamese when at least this share of its accented words hold a
letter only Vietnamese writes (see :func:`_language`). Vietnamese texts nearly always do (XQuAD-R:
every paragraph and 97 % of the questions hold one; the rest are mostly names and ``đã``, ``có``); a
Vietnamese name in a Spanish or German paragraph does not make it Vietnamese."""
# Letters only Vietnamese writes: o and u with horn, and the letters with a tone mark over a vowel that
# already has one, or with the hook above or the dot below (Latin Extended Additional, U+1EA0-U+1EF9).
_VIETNAMESE_LETTER = re.compile("[\u01a0\u01a1\u01af\u01b0\u1ea0-\u1ef9]")
_VIETNAMESE_ALPHABET = frozenset(
    "abcdefghijklmnopqrstuvwxyz0123456789đàáảãạăằắẳẵặâầấẩẫậèéẻẽẹêềếểễệìíỉĩịòóỏõọôồốổỗộơờớởỡợùúủũụưừứửữựỳýỷỹỵ"
)
"""Every lower-case letter Vietnamese writes: a word with another (``ü``, ``ñ``, ``ş``) is not
Vietnamese and is folded even in a Vietnamese text (a German paragraph about the Trần dynasty)."""
_FOLD_MARKS = re.compile(
    "[\u0300-\u036f\u0483-\u0489\u064b-\u065f\u0670\u0640\u1ab0-\u1aff\u1dc0-\u1dff"
    "\u20d0-\u20ff\ufe20-\ufe2f]"
)


@functools.cache
def _token_pattern() -> re.Pattern[str]:
    r"""Words of space-separated scripts, as ICU would cut them: letters, digits, marks, joiners.

    Python's ``\w`` leaves out combining marks (Devanagari vowel signs, for one). The class is spelled
    out from the running Unicode database instead: every BMP character that ``\w`` matches, plus the
    marks and ZWJ/ZWNJ (text with characters beyond the BMP goes to ICU). A plain character class
    compiles to a bitmap, faster than ``\w`` itself. A number keeps its ``.``/``,`` groups (``20,00``,
    ``1.234,5``); runs are cut every :data:`MAX_WORD_CHARS` characters so no word is unbounded.
    """
    ranges: list[str] = []
    start = -1
    for code in range(0x10001):
        char = chr(code) if code < 0x10000 else ""
        if char and (
            char.isalnum() or char == "_" or unicodedata.category(char)[0] == "M" or char in "\u200c\u200d"
        ):
            if start < 0:
                start = code
        elif start >= 0:
            first, last = re.escape(chr(start)), re.escape(chr(code - 1))
            ranges.append(f"{first}-{last}" if code - 1 > start else first)
            start = -1
    word = "".join(ranges)
    return re.compile(f"[{word}]{{1,{MAX_WORD_CHARS}}}(?:[.,][0-9]{{1,64}}){{0,16}}")


@functools.cache
def _root_locale() -> Locale:
    """ICU's root locale, built once (a breaker made from a Locale object starts faster than from a name)."""
    return Locale("root")


def _is_cjk(code: int) -> bool:
    """Han, kana and Hangul: words that also emit character bigrams."""
    return (
        0x3040 <= code < 0x3100  # hiragana, katakana
        or 0x3005 <= code < 0x3008  # 々 〆 〇
        or 0x31F0 <= code < 0x3200
        or 0x3400 <= code < 0x4DC0
        or 0x4E00 <= code < 0xA000
        or 0xF900 <= code < 0xFB00
        or 0x20000 <= code < 0x30000
        or 0xAC00 <= code < 0xD7B0  # Hangul syllables
        or 0x1100 <= code < 0x1200
        or 0x3130 <= code < 0x3190
    )


def _is_dictionary_script(code: int) -> bool:
    """Thai, Lao, Myanmar, Khmer: segmented by ICU's dictionaries, no prefix terms."""
    return 0x0E00 <= code < 0x0F00 or 0x1000 <= code < 0x10A0 or 0x1780 <= code < 0x1800


def fold(word: str) -> str:
    """Case-fold a word and remove Latin, Greek and Cyrillic accents and Arabic diacritics.

    Kana, Devanagari, Thai and every other script keep their marks (が stays が): only the generic
    combining diacritics (U+0300–U+036F and kin), the Cyrillic ones and Arabic harakat are removed.
    """
    word = word.casefold()
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    stripped = _FOLD_MARKS.sub("", decomposed)
    if stripped is not decomposed and stripped != decomposed:
        word = unicodedata.normalize("NFC", stripped)
    return word.translate(_LETTER_FOLD)


def normalize_number(token: str) -> list[str]:
    """Terms of a number written with ``.`` or ``,`` separators: its canonical form, and its integer part.

    ``20,00`` and ``20.00`` → ``["20"]``; ``1.234,50`` → ``["1234.5", "1234"]``; ``1,000`` → ``["1000"]``;
    version-like ``1.2.3`` stays as written. Digits must already be ASCII.
    """
    groups = re.split(r"[.,]", token)
    if len(groups) == 1:
        return [token]
    head, *middle, last = groups
    if all(len(g) == 3 for g in middle) and len(head) <= 3:
        if len(last) == 3 and head != "0" and (middle or len(groups) == 2):
            integer, fraction = head + "".join(middle) + last, ""
        else:
            integer, fraction = head + "".join(middle), last
    elif not middle:
        integer, fraction = head, last
    else:
        return [".".join(groups)]
    integer = integer.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    if not fraction:
        return [integer]
    if integer == "0":
        return [f"0.{fraction}"]
    return [f"{integer}.{fraction}", integer]


def _ascii_digits(word: str) -> str:
    if word.isascii():
        return word
    return "".join(
        str(unicodedata.digit(c)) if c.isdigit() and unicodedata.digit(c, -1) >= 0 else c for c in word
    )


def _split_parts(word: str) -> list[str]:
    """Split an ICU word at anything that is not a letter, digit or mark (``get_user``, ``example.com``)."""
    if word.isalnum():
        return [word]
    parts: list[str] = []
    current: list[str] = []
    for char in word:
        if char.isalnum() or char in "\u200c\u200d" or unicodedata.category(char)[0] == "M":
            current.append(char)
        elif current:
            parts.append("".join(current))
            current = []
    if current:
        parts.append("".join(current))
    return parts


def _bigrams(word: str) -> list[str]:
    return [word[i : i + 2] for i in range(len(word) - 1)]


class _Word(NamedTuple):
    """One word as analysed: its terms in a text that is not English, in an English one, in a Vietnamese one.

    A tuple of strings: the garbage collector stops tracking it, which matters with 100k in the cache.
    """

    word: str
    terms: tuple[str, ...]
    english: tuple[str, ...]
    ignored: bool
    key: str  # what synonym phrases match: the word, or a Korean word without its particle
    marked: tuple[str, ...] = ()  # terms in a Vietnamese text (its diacritics kept); () when == terms

    @property
    def vietnamese(self) -> tuple[str, ...]:
        """The word's terms in a Vietnamese text."""
        return self.marked or self.terms


class _Segment(NamedTuple):
    """The cached analysis of one segment (an ICU word or a regex token): its words and their terms.

    ``signal`` is the segment's evidence on the text's language: a bit per stop-word language of
    :data:`LATIN_STOPWORD_LANGUAGES` whose list holds it, and :data:`_ACCENT_SIGNAL` when it is written
    with a non-English Latin letter (0: no evidence).
    """

    terms: tuple[str, ...]
    english: tuple[str, ...]
    words: tuple[_Word, ...]
    synonym_start: bool
    signal: int
    run: str = ""  # a kept or ignored word of Han, kana or Hangul: its folded text (see _run_bigrams)
    vietnamese: tuple[str, ...] = ()  # the terms in a Vietnamese text (often the ``terms`` tuple itself)


_EMPTY = _Segment((), (), (), False, 0)
_SPACE = _Segment((), (), (), False, 0)
"""A segment of whitespace only: a run of Chinese, Japanese or Korean words goes on across it."""
_TERMS_OF = operator.attrgetter("terms")
_ENGLISH_OF = operator.attrgetter("english")
_RUN_OF = operator.attrgetter("run")
_SIGNAL_OF = operator.attrgetter("signal")
_STARTS_SYNONYM = operator.attrgetter("synonym_start")
_STEMMERS = threading.local()


def _stem(word: str) -> str:
    """The Snowball English stem of a folded word (one stemmer per thread: PyStemmer's are not shared)."""
    stemmer: Stemmer.Stemmer | None = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = Stemmer.Stemmer(STEM_LANGUAGE, 0)
    return str(stemmer.stemWord(word))


def _is_latin(word: str) -> bool:
    """A folded word of ASCII letters and digits holding a letter (what the English stemmer reduces)."""
    return word.isascii() and word.isalnum() and not word.isdigit()


def _is_english(signals: Iterable[tuple[int, int]]) -> bool:
    """Whether the evidence (each signal with the number of segments that gave it) says "English".

    A stop word held by ``n`` of the lists gives each of those languages ``1/n`` of a vote; a word
    written with a non-English Latin letter is one vote against English. English wins with at least
    the votes of the strongest other language plus the accented words, so a text without evidence is
    English (measured: taking such texts the other way made titles and short queries emit prefixes
    that the bodies of English documents never hold, and ranked a page by its title's prefixes).
    A short query in another language without a stop word or an accent (``prazo renovar``) then
    emits stems only; it still meets that language's documents through the stems they also emit.
    """
    votes = [0.0] * len(LATIN_STOPWORD_LANGUAGES)
    against = 0
    for signal, count in signals:
        if signal & _ACCENT_SIGNAL:
            against += count
        members = [i for i in range(len(votes)) if signal >> i & 1]
        for i in members:
            votes[i] += count / len(members)
    return votes[0] >= max(votes[1:]) + against


def _language(signals: Iterable[tuple[int, int]]) -> str:
    """Which terms the text's words emit: ``"english"``, ``"vietnamese"`` or ``"terms"`` (any other).

    English as :func:`_is_english` decides; otherwise Vietnamese when at least
    :data:`VIETNAMESE_SHARE` of the words written with a non-English Latin letter hold a letter only
    Vietnamese uses, and those words outnumber the stop words of the strongest other Latin-script
    language (a Spanish paragraph on the Trần dynasty is Spanish). Vietnamese marks tones with diacritics, and the tone tells syllables apart
    (``là`` is, ``lá`` leaf, ``lạ`` strange): folded like a French accent, they merge, so in a
    Vietnamese text an accented word emits itself as written (lower case) instead of its folded
    terms. Measured on XQuAD-R vi (``benchmarks/lexical_quality.py``): nDCG@10 0.930 folded, 0.962
    as written; emitting both forms, 0.955 (the folded form still merges the syllables).
    """
    items = list(signals)
    if _is_english(items):
        return "english"
    vietnamese = sum(count for signal, count in items if signal & _VIETNAMESE_SIGNAL)
    if not vietnamese:
        return "terms"
    accented = sum(count for signal, count in items if signal & _ACCENT_SIGNAL)
    # The stop words of another language, written without accents (``là`` folds to the French ``la``).
    votes = [0.0] * len(LATIN_STOPWORD_LANGUAGES)
    for signal, count in items:
        if not signal & _ACCENT_SIGNAL:
            members = [i for i in range(len(votes)) if signal >> i & 1]
            for i in members:
                votes[i] += count / len(members)
    if vietnamese >= VIETNAMESE_SHARE * accented and vietnamese > max(votes):
        return "vietnamese"
    return "terms"


@functools.lru_cache(maxsize=4096)
def _language_cached(signals: tuple[int, ...]) -> str:
    """:func:`_language` of a short, sorted list of signals (a query's), remembered."""
    return _language(Counter(signals).items())


_TERMS_IN: dict[str, Callable[[_Segment], tuple[str, ...]]] = {
    "english": _ENGLISH_OF,
    "terms": _TERMS_OF,
    "vietnamese": operator.attrgetter("vietnamese"),
}
"""A segment's terms in a text of each kind (see :func:`_language`)."""


def _run_bigrams(block: Sequence[_Segment]) -> list[tuple[int, str]]:
    """The character bigrams across word boundaries in runs of Chinese, Japanese and Korean words.

    Each kept word already emits the bigrams inside it; this adds the one that joins its last
    character to the next word's first, when the next word goes on the same run (only whitespace in
    between: Korean writes spaces between words, and ``국무 장관`` meets ``국무장관``), with the index
    of the segment it belongs to. An ignored word (a particle) adds none of its own, but the word
    before it still reaches into it (``梅雨が``: ``雨が``).
    """
    out: list[tuple[int, str]] = []
    previous = -1
    for index, segment in enumerate(block):
        run = segment.run
        if run:
            if previous >= 0:
                before = block[previous]
                if not before.words[0].ignored:
                    out.append((previous, before.run[-1] + run[0]))
            previous = index
        elif segment is not _SPACE:
            previous = -1
    return out


_FEW_SIGNALS = 16
"""Texts with at most this many signals (queries, titles) look their verdict up in a cache."""


# Korean particles written onto the word they follow (longest first): 갱신은 is 갱신 + 은.
_KOREAN_PARTICLES = tuple(
    sorted(
        "에서는 에서도 에게서 으로는 이라는 에서 에게 으로 까지 부터 이나 하고 이랑 처럼 보다 마다 "
        "은 는 이 가 을 를 에 의 도 와 과 로 만".split(),
        key=len,
        reverse=True,
    )
)


def _korean_stem(word: str) -> str:
    """The word without a trailing particle if it is all Hangul and one is there, else the word."""
    if not "\uac00" <= word[0] <= "\ud7a3" or not all("\uac00" <= c <= "\ud7a3" for c in word):
        return word
    for particle in _KOREAN_PARTICLES:
        if len(word) > len(particle) and word.endswith(particle):
            return word[: -len(particle)]
    return word


def _word_terms(word: str) -> tuple[str, ...]:
    """Terms of one folded, kept word."""
    first = ord(word[0])
    if word[0].isdigit() and _NUMBER.fullmatch(word):
        return tuple(normalize_number(word))
    if _is_cjk(first) or _is_cjk(ord(word[-1])):
        if all(_is_cjk(ord(c)) for c in word):
            # The dictionary word (a Korean one without its particle: 운영시간은 → 운영시간) and its
            # character bigrams; bigrams across word boundaries come from _run_bigrams.
            return (_korean_stem(word), *_bigrams(word))
        return (word,)
    if (
        len(word) > PREFIX_LENGTH
        and word.isalpha()
        and not _is_dictionary_script(first)
        and not _is_cjk(first)
    ):
        return (word, word[:PREFIX_LENGTH])
    return (word,)


def _kept_word(part: str, key: str, stop: frozenset[str], marked: str = "") -> _Word:
    """A kept (not ignored) folded word with its terms in a text that is not English, and in English.

    A prefix or stem that is itself a stop word (``other`` of ``others``) would never meet anything
    (queries drop it), so the word itself stands in for such a stem and such a prefix is left out.
    ``marked`` is the word before its accents were folded (lower case), when they were: in a
    Vietnamese text the word emits only that (``tổng``, not ``tong``: see :func:`_language`).
    """
    if marked and marked != part:
        return _kept_word(part, key, stop)._replace(marked=(marked,))
    if _is_latin(part):
        stem = _stem(part)
        if not stem or stem in stop:
            stem = part
        if len(part) > PREFIX_LENGTH and part.isalpha() and part[:PREFIX_LENGTH] not in stop:
            generic: tuple[str, ...] = tuple(dict.fromkeys((part, part[:PREFIX_LENGTH], stem)))
        else:
            generic = (part, stem) if stem != part else (part,)
        return _Word(part, generic, (stem,), False, key)
    terms = tuple(t for t in _word_terms(part) if t == part or t not in stop)
    return _Word(part, terms, terms, False, key)


def _load_lines(name: str) -> list[str]:
    text = resources.files("simone.runtime.text.lexicon").joinpath(name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@functools.cache
def builtin_stop_words() -> frozenset[str]:
    """The shipped stop words of :data:`STOPWORD_LANGUAGES`, folded like any word."""
    words: set[str] = set()
    for language in STOPWORD_LANGUAGES:
        words.update(fold(unicodedata.normalize("NFKC", w)) for w in _load_lines(f"stopwords_{language}.txt"))
    return frozenset(words)


@functools.cache
def _stop_word_signals() -> dict[str, int]:
    """Each stop word of :data:`LATIN_STOPWORD_LANGUAGES`, folded, with the bits of the lists holding it."""
    signals: dict[str, int] = {}
    for bit, language in enumerate(LATIN_STOPWORD_LANGUAGES):
        for line in _load_lines(f"stopwords_{language}.txt"):
            word = fold(unicodedata.normalize("NFKC", line))
            signals[word] = signals.get(word, 0) | 1 << bit
    return signals


@functools.cache
def builtin_synonym_groups() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The shipped synonym groups: ``(group id, members)`` for price, opening hours and identity documents."""
    text = (
        resources.files("simone.runtime.text.lexicon").joinpath("synonyms.json").read_text(encoding="utf-8")
    )
    data = json.loads(text)
    return tuple((str(g["id"]), tuple(str(m) for m in g["members"])) for g in data["groups"])


class SynonymUse(BaseModel):
    """A synonym applied to a query: the words that matched and the group term they added."""

    model_config = ConfigDict(frozen=True)

    words: tuple[str, ...]
    term: str


class Explanation(BaseModel):
    """What the analysis made of a query, so that "why was this (not) found" is never hidden.

    Attributes:
        query: the query as given.
        words_used: the words that produce terms, normalised (folded), in order.
        words_ignored: the words dropped as stop words or by the project's ignore list.
        synonyms_applied: each synonym match and the group term it added.
        terms: every term the query emits, in order (what BM25 looks up).
        all_ignored: True when the query has words but every one was ignored, so it matches nothing.
        english: True when the query was taken as English (its Latin-script words emit their English
            stems only); False when it also emits each word and its 5-letter prefix.
        message: one plain sentence summing this up.
    """

    model_config = ConfigDict(frozen=True)

    query: str
    words_used: tuple[str, ...]
    words_ignored: tuple[str, ...]
    synonyms_applied: tuple[SynonymUse, ...]
    terms: tuple[str, ...]
    all_ignored: bool
    english: bool = True
    message: str


def _clean(text: str) -> str:
    if _NEEDS_CLEANING.search(text):  # one scan in the common case: nothing to clean
        text = _INVISIBLE.sub("", _SURROGATE.sub("\ufffd", text))
    return unicodedata.normalize("NFKC", text)


def _blocks(text: str) -> Iterator[str]:
    """Cut text into blocks of about :data:`BLOCK_CHARS`, at whitespace when there is some."""
    start = 0
    size = len(text)
    while size - start > BLOCK_CHARS:
        end = start + BLOCK_CHARS
        cut = text.rfind(" ", start + BLOCK_CHARS // 2, end)
        if cut < 0:
            cut = text.rfind("\n", start + BLOCK_CHARS // 2, end)
        if cut < 0:
            cut = end
        yield text[start:cut]
        start = cut
    if start < size:
        yield text[start:]


class Analyzer:
    """The text analysis of lexical search, the same for documents and queries.

    Args:
        ignore_words: the project's own words to ignore (analysed like any text).
        synonyms: the project's synonym groups; each group is a list of words or phrases, and every member
            also emits the group's term (the first member's words, joined).
        builtin_synonyms: also apply the shipped groups (price, opening hours, identity documents in 13
            languages).
    """

    def __init__(
        self,
        *,
        ignore_words: Iterable[str] = (),
        synonyms: Iterable[Iterable[str]] = (),
        builtin_synonyms: bool = True,
    ) -> None:
        if isinstance(ignore_words, str) or isinstance(synonyms, str):
            raise ConfigError("ignore_words and synonyms take lists of words, not one string")
        self._stop = builtin_stop_words()
        self._signals = _stop_word_signals()
        self._ignore: frozenset[str] = frozenset()
        self._phrases: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self._longest_phrase = 1
        self._cache: dict[str, _Segment] = {}
        ignore: set[str] = set()
        for entry in ignore_words:
            ignore.update(w.word for w in self._words(str(entry)))
        self._ignore = frozenset(ignore)
        self._cache.clear()
        groups: list[tuple[str, Sequence[str]]] = []
        if builtin_synonyms:
            groups.extend(builtin_synonym_groups())
        for group in synonyms:
            if isinstance(group, str):
                raise ConfigError(f"synonym group {group!r} must be a list of words or phrases")
            texts = [str(m) for m in group]
            if len(texts) < 2:
                raise ConfigError(
                    f"synonym group {texts!r} has one member; a group lists two or more words or phrases"
                )
            head = [w.word for w in self._words(texts[0])]
            if not head:
                raise ConfigError(f"synonym group {texts!r}: the first member has no words")
            groups.append(("".join(head), texts))
        phrases: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for group_id, members in groups:
            term = fold(unicodedata.normalize("NFKC", group_id))
            for member in members:
                words = tuple(w.key for w in self._words(member))
                if not words:
                    continue
                phrase = (words, term)
                bucket = phrases.setdefault(words[0], [])
                if phrase not in bucket:
                    bucket.append(phrase)
        for bucket in phrases.values():
            bucket.sort(key=lambda item: -len(item[0]))
        self._phrases = phrases
        self._longest_phrase = max((len(p) for bucket in phrases.values() for p, _t in bucket), default=1)
        self._signature: str | None = None
        self._cache.clear()

    @property
    def signature(self) -> str:
        """Identifies what this analyzer makes of text: :data:`ANALYSIS_VERSION` and its configuration.

        Terms stored under another signature are stale: an index keeps it with its rows and re-analyses
        them when it changes (the shipped stop words and synonyms belong to the version).
        """
        if self._signature is None:
            phrases = sorted((words, term) for bucket in self._phrases.values() for words, term in bucket)
            payload = json.dumps([ANALYSIS_VERSION, STEM_LANGUAGE, sorted(self._ignore), phrases])
            digest = hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            self._signature = f"v{ANALYSIS_VERSION}-{digest}"
        return self._signature

    @classmethod
    def from_settings(cls, settings: LexicalSettings) -> Analyzer:
        """Build the analyzer a project configured (``[lexical]`` in ``simone.toml``)."""
        return cls(
            ignore_words=settings.ignore_words,
            synonyms=settings.synonyms,
            builtin_synonyms=settings.builtin_synonyms,
        )

    # -- the analysis -------------------------------------------------------------------------------

    def _analyse_segment(self, segment: str) -> _Segment:
        if segment.isascii() and segment.isalnum():  # the common case, short-cut
            word = segment.lower()
            starts = word in self._phrases
            if word in self._stop or word in self._ignore:
                ignored = _Word(word, (), (), True, word)
                return _Segment((), (), (ignored,), starts, self._signals.get(word, 0), "", ())
            if word.isdigit():
                terms: tuple[str, ...] = (word,)
                return _Segment(terms, terms, (_Word(word, terms, terms, False, word),), starts, 0, "", terms)
            kept = _kept_word(word, word, self._stop)
            return _Segment(kept.terms, kept.english, (kept,), starts, 0, "", kept.terms)
        word = _ascii_digits(fold(segment[:MAX_WORD_CHARS]))
        if not word or not any(c.isalnum() for c in word):
            return _SPACE if segment.isspace() else _EMPTY
        accent = _ACCENT_SIGNAL if _ACCENTED_LATIN.search(segment) else 0
        if _NUMBER.fullmatch(word):
            numbers = tuple(normalize_number(word))
            return _Segment(
                numbers, numbers, (_Word(word, numbers, numbers, False, word),), False, 0, "", numbers
            )
        parts = _split_parts(word)
        marks = [""] * len(parts)
        if accent:
            # The word as written (lower case) for Vietnamese texts, whose tone marks tell words apart.
            lowered = _split_parts(unicodedata.normalize("NFC", segment[:MAX_WORD_CHARS].casefold()))
            if len(lowered) == len(parts):
                marks = [m if _VIETNAMESE_ALPHABET.issuperset(m) else "" for m in lowered]
            if _VIETNAMESE_LETTER.search(segment):
                accent |= _VIETNAMESE_SIGNAL
        words: list[_Word] = []
        signal = accent
        for part, marked in zip(parts, marks, strict=True):
            if part in self._stop or part in self._ignore:
                kept_marked = (marked,) if marked and marked != part and marked not in self._ignore else ()
                words.append(_Word(part, (), (), True, part, kept_marked))
                signal |= self._signals.get(part, 0)
            else:
                words.append(_kept_word(part, _korean_stem(part), self._stop, marked))
        starts = any(w.key in self._phrases for w in words)
        run = word if len(words) == 1 and all(_is_cjk(ord(c)) for c in word) else ""
        terms = tuple(term for w in words for term in w.terms)
        vietnamese = tuple(term for w in words for term in w.vietnamese)
        return _Segment(
            terms,
            tuple(term for w in words for term in w.english),
            tuple(words),
            starts,
            signal,
            run,
            vietnamese if vietnamese != terms else terms,
        )

    def _segments(self, text: str) -> Iterable[list[_Segment]]:
        """The analysed segments of ``text``, one list per block (one block unless the text is long)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        text = _clean(text)
        if len(text) <= BLOCK_CHARS:
            return (self._block(text),)
        return map(self._block, _blocks(text))

    def _block(self, block: str) -> list[_Segment]:
        if _NEEDS_ICU.search(block):
            pieces = list(WordBreaker(block, _root_locale()))
            if len(block) > MAX_WORD_CHARS and max(map(len, pieces)) > MAX_WORD_CHARS:
                pieces = [piece[:MAX_WORD_CHARS] for piece in pieces]
        else:
            pieces = _token_pattern().findall(block)
        cache = self._cache
        found = list(map(cache.get, pieces))
        if None in found:
            if len(cache) > WORD_CACHE_SIZE:
                cache.clear()  # bounded memory; the common words come back at once
            for index, item in enumerate(found):
                if item is None:
                    piece = pieces[index]
                    found[index] = cache[piece] = self._analyse_segment(piece)
        return found  # type: ignore[return-value]

    def _analysed(self, text: str) -> tuple[list[list[_Segment]], str]:
        """The segments of ``text`` (one list per block) and its kind (see :func:`_language`)."""
        blocks = list(self._segments(text))
        if len(blocks) == 1:
            signals = list(filter(None, map(_SIGNAL_OF, blocks[0])))
        else:
            signals = [s for block in blocks for s in filter(None, map(_SIGNAL_OF, block))]
        if len(signals) <= _FEW_SIGNALS:
            signals.sort()
            return blocks, _language_cached(tuple(signals))
        return blocks, _language(Counter(signals).items())

    def is_english(self, text: str) -> bool:
        """Whether ``text`` is taken as English (its Latin-script words then emit only their stems)."""
        return self._analysed(text)[1] == "english"

    def is_vietnamese(self, text: str) -> bool:
        """Whether ``text`` is taken as Vietnamese (its accented words then emit themselves as written)."""
        return self._analysed(text)[1] == "vietnamese"

    def _words(self, text: str) -> list[_Word]:
        """Every word of ``text`` in order, ignored ones included."""
        return [word for block in self._segments(text) for segment in block for word in segment.words]

    def _synonym_matches(
        self, words: Sequence[_Word], heads: int | None = None
    ) -> list[tuple[int, tuple[str, ...], str]]:
        """``(position, matched words, group term)`` for every synonym phrase found in ``words``.

        With ``heads``, only phrases starting among the first ``heads`` words.
        """
        phrases = self._phrases
        found: list[tuple[int, tuple[str, ...], str]] = []
        for index, item in enumerate(words[:heads] if heads is not None else words):
            bucket = phrases.get(item.key)
            if bucket is None:
                continue
            seen: set[str] = set()
            for phrase, term in bucket:
                if term in seen:
                    continue
                size = len(phrase)
                if size == 1 or tuple(w.key for w in words[index : index + size]) == phrase:
                    seen.add(term)
                    found.append((index, phrase, term))
        return found

    def _synonym_terms(
        self, words: Sequence[_Word], language: str, heads: int | None = None
    ) -> list[tuple[int, str]]:
        """The group terms that synonyms add, each with the word it belongs to.

        That word is the phrase's first kept word (-1 when every word of the phrase is ignored). A group
        term the word already emits (``prices`` has the stem ``price``) is not added again.
        """
        out: list[tuple[int, str]] = []
        for index, phrase, term in self._synonym_matches(words, heads):
            owner = next((i for i in range(index, index + len(phrase)) if not words[i].ignored), -1)
            if owner >= 0 and term in getattr(words[owner], language):
                continue
            out.append((owner, term))
        return out

    def terms(self, text: str) -> list[str]:
        """Every term of ``text`` in order, repeats kept (term frequency counts).

        The one analysis for documents and queries alike. Never raises on any ``str``; a term never
        contains whitespace. The bigrams that join Chinese, Japanese and Korean words (see
        :func:`_run_bigrams`), then synonym group terms, follow the terms of the words of their block.
        """
        blocks, language = self._analysed(text)
        terms_of = _TERMS_IN[language]
        out: list[str] = []
        for block in blocks:
            out.extend(chain.from_iterable(map(terms_of, block)))
            if any(map(_RUN_OF, block)):
                out.extend(bigram for _index, bigram in _run_bigrams(block))
            if any(map(_STARTS_SYNONYM, block)):
                out.extend(self._block_synonym_terms(block, language))
        return out

    def _block_synonym_terms(self, block: list[_Segment], language: str) -> list[str]:
        """The group terms of :meth:`_synonym_terms` for one block.

        Only the segments that can start a phrase are visited (documents are long; few words do).
        """
        out: list[str] = []
        longest = self._longest_phrase
        for start in compress(range(len(block)), map(_STARTS_SYNONYM, block)):
            ahead: list[_Word] = []
            following = start
            while len(ahead) < len(block[start].words) + longest and following < len(block):
                ahead.extend(block[following].words)
                following += 1
            out.extend(term for _owner, term in self._synonym_terms(ahead, language, len(block[start].words)))
        return out

    def word_terms(self, text: str) -> list[tuple[str, list[str]]]:
        """Each kept word of ``text`` with its terms (synonym group terms included), for coverage.

        A word counts as present in an item when any of its terms is in the item. Together the lists
        hold exactly the terms of :meth:`terms` (a synonym phrase of ignored words only, such as
        "how much", is listed as one entry of its own).
        """
        result: list[tuple[str, list[str]]] = []
        blocks, language = self._analysed(text)
        for block in blocks:
            synonyms = any(map(_STARTS_SYNONYM, block))
            runs = any(map(_RUN_OF, block))
            if not synonyms and not runs:
                result.extend(
                    (w.word, list(terms))
                    for segment in block
                    for w in segment.words
                    if (terms := getattr(w, language)) or not w.ignored
                )
                continue
            words: list[_Word] = []
            entries: list[tuple[str, list[str]]] = []
            # The bigrams of _run_bigrams, in one pass: the last run word before this one (None when
            # no run goes on) receives the bigram that joins it to the next.
            before: tuple[str, list[str]] | None = None
            before_run = ""
            for segment in block:
                run = segment.run
                for w in segment.words:
                    words.append(w)
                    entries.append((w.word, list(getattr(w, language))))
                if run:
                    if before is not None:
                        before[1].append(before_run[-1] + run[0])
                    # An ignored word (a particle) adds no bigram of its own, but the one before reaches it.
                    before = None if segment.words[0].ignored else entries[-1]
                    before_run = run
                elif segment is not _SPACE:
                    before = None
            orphans: list[tuple[str, list[str]]] = []
            for owner, term in self._synonym_terms(words, language) if synonyms else ():
                if owner >= 0:
                    entries[owner][1].append(term)
                else:
                    orphans.append((term, [term]))
            result.extend(entry for entry, w in zip(entries, words, strict=True) if entry[1] or not w.ignored)
            result.extend(orphans)
        return result

    def _why_ignored(self, ignored: Sequence[str]) -> str:
        project = [w for w in ignored if w in self._ignore and w not in self._stop]
        stop = [w for w in ignored if w not in project]
        parts = []
        if stop:
            parts.append("stop words: " + ", ".join(stop))
        if project:
            parts.append("on the project's ignore list: " + ", ".join(project))
        return "; ".join(parts)

    def explain(self, query: str) -> Explanation:
        """Explain the analysis of a query: words used and ignored, synonyms applied, terms emitted."""
        words = self._words(query)
        language = self._analysed(query)[1]
        used = tuple(w.word for w in words if not w.ignored or getattr(w, language))
        ignored = tuple(w.word for w in words if w.ignored and not getattr(w, language))
        uses = tuple(
            SynonymUse(words=phrase, term=term)
            for _index, phrase, term in self._synonym_matches(words)
            if not (len(phrase) == 1 and phrase[0] == term)
        )
        terms = tuple(self.terms(query))
        english = language == "english"
        all_ignored = bool(words) and not terms
        if not words:
            message = "The query has no words to search for; it matches nothing."
        elif all_ignored:
            message = (
                f"Every word of the query is ignored ({self._why_ignored(ignored)}), so it matches "
                "nothing; add a word that names what you are looking for."
            )
        else:
            stems = {
                "english": "English stems",
                "vietnamese": "words as written and unaccented, 5-letter prefixes and English stems",
            }.get(language, "words, 5-letter prefixes and English stems")
            parts = [f"Searching for {len(terms)} terms ({stems}) from {len(used)} words"]
            if ignored:
                parts.append(f"ignoring {self._why_ignored(ignored)}")
            if uses:
                parts.append("synonyms: " + ", ".join(f"{' '.join(u.words)} → {u.term}" for u in uses))
            message = "; ".join(parts) + "."
        return Explanation(
            query=query,
            words_used=used,
            words_ignored=ignored,
            synonyms_applied=uses,
            terms=terms,
            all_ignored=all_ignored,
            english=english,
            message=message,
        )


@functools.cache
def default_analyzer() -> Analyzer:
    """The shared analyzer with the built-in settings (stop words and synonyms, no ignore list)."""
    return Analyzer()
