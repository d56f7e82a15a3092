"""Main-text extraction (trafilatura) and the selection of passages relevant to a question.

Extraction favours precision (the web-extraction benchmark: F1 0.961 with ``favor_precision`` against
0.958 with defaults) and keeps the metadata a source needs: title, date, site, author, language.
Before trafilatura sees the page, elements hidden from readers (``hidden``, ``aria-hidden``,
``display:none``, ``visibility:hidden``, zero font size or opacity, ``<template>``) are dropped — a
classic place for prompt injection — and the extracted text is cleaned of hidden characters.

Passages: the text is split on paragraphs into pieces of a few hundred characters, ranked against
the question with BM25 over the shared lexical analysis, and only pieces that share a term with it
are kept.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio
import lxml.html
from lxml import etree
from simone.providers.web._types import ExtractedPage
from simone.runtime import Analyzer, BM25Index, default_analyzer, strip_hidden

MAX_HTML_CHARS = 8_000_000
"""Pages beyond this are cut before parsing (the fetcher's byte cap normally stops them first)."""

PASSAGE_TARGET_CHARS = 700
"""Paragraphs are merged up to about this size: a passage says one thing with its context."""

PASSAGE_MAX_CHARS = 1400
"""Longer paragraphs are split at sentence boundaries."""

_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:\.0*)?(?:px|em|rem|pt|%)?\s*(?:;|$)|"
    r"opacity\s*:\s*0(?:\.0*)?\s*(?:;|$)|(?:height|width)\s*:\s*0(?:px)?\s*;[^\"]*overflow\s*:\s*hidden",
    re.IGNORECASE,
)
_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True)

_HIDDEN_XPATH = "//*[@hidden] | //*[@aria-hidden='true'] | //template | //*[@style]"


def _drop_hidden(tree: Any) -> int:
    removed = 0
    for element in list(tree.xpath(_HIDDEN_XPATH)):
        if element.getparent() is None:
            continue
        if (
            element.tag != "template"
            and element.get("hidden") is None
            and element.get("aria-hidden") != "true"
        ):
            if not _HIDDEN_STYLE.search(element.get("style") or ""):
                continue
        element.drop_tree()
        removed += 1
    return removed


def extract_page(html: str, url: str, *, content_type: str = "text/html") -> ExtractedPage:
    """Extract the main text and metadata of a page (blocking: call it in a worker thread).

    ``text/plain`` is taken as it is. HTML goes through trafilatura; when trafilatura finds no main
    text the visible text of the body is used instead (``method="plain"``), so a short page still
    yields something rather than nothing.
    """
    if content_type == "text/plain":
        cleaned = strip_hidden(html[:MAX_HTML_CHARS])
        return ExtractedPage(
            url=url, text=_tidy(cleaned.text), hidden_removed=cleaned.removed, method="plain"
        )
    import trafilatura

    source = html[:MAX_HTML_CHARS]
    try:
        # bytes with an explicit codec: lxml would read undeclared bytes as Latin-1
        tree = lxml.html.document_fromstring(source.encode("utf-8", "replace"), parser=_PARSER)
    except (etree.ParserError, ValueError):
        return ExtractedPage(url=url, text="", method="plain")
    hidden_elements = _drop_hidden(tree)
    document = trafilatura.bare_extraction(
        tree,
        url=url,
        favor_precision=True,
        include_comments=False,
        include_tables=True,
        with_metadata=True,
    )
    title = site = ""
    date = author = language = None
    text = ""
    method: Literal["trafilatura", "plain"] = "trafilatura"
    if document is not None and not isinstance(document, dict):
        text = document.text or ""
        title = document.title or ""
        site = document.sitename or document.hostname or ""
        date = document.date or None
        author = document.author or None
        language = document.language or None
    if not text.strip():
        method = "plain"
        body = tree.find("body")
        for element in (body if body is not None else tree).xpath(".//script | .//style | .//noscript"):
            element.drop_tree()
        text = (body if body is not None else tree).text_content()
        if not title:
            found = tree.find(".//title")
            title = (found.text_content() if found is not None else "").strip()
    cleaned = strip_hidden(text)
    return ExtractedPage(
        url=url,
        title=" ".join(strip_hidden(title).text.split())[:500],
        site=site[:200],
        date=date,
        author=author[:200] if author else None,
        language=language,
        text=_tidy(cleaned.text),
        hidden_removed=cleaned.removed,
        hidden_elements_removed=hidden_elements,
        method=method,
    )


def _tidy(text: str) -> str:
    paragraphs = (" ".join(line.split()) for line in text.splitlines())
    return "\n\n".join(p for p in paragraphs if p)


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")


def split_passages(
    text: str, *, target_chars: int = PASSAGE_TARGET_CHARS, max_chars: int = PASSAGE_MAX_CHARS
) -> list[str]:
    """Split extracted text into passages: paragraphs merged up to ``target_chars``, long ones cut."""
    pieces: list[str] = []
    for paragraph in (p.strip() for p in re.split(r"\n\s*\n|\n", text)):
        if not paragraph:
            continue
        if len(paragraph) <= max_chars:
            pieces.append(paragraph)
            continue
        current = ""
        for sentence in _SENTENCE.split(paragraph):
            while len(sentence) > max_chars:  # a run-on "sentence": cut at a space
                cut = sentence.rfind(" ", 0, max_chars)
                cut = cut if cut > max_chars // 2 else max_chars
                if current:
                    pieces.append(current)
                    current = ""
                pieces.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if current and len(current) + 1 + len(sentence) > target_chars:
                pieces.append(current)
                current = sentence
            else:
                current = f"{current} {sentence}".strip()
        if current:
            pieces.append(current)
    passages: list[str] = []
    buffer = ""
    for piece in pieces:
        if buffer and len(buffer) + 2 + len(piece) > target_chars:
            passages.append(buffer)
            buffer = piece
        else:
            buffer = f"{buffer}\n\n{piece}" if buffer else piece
    if buffer:
        passages.append(buffer)
    return passages


PASSAGE_MEMO_SIZE = 16_384
"""Whole passages whose analysis is remembered (per analyzer, per process; about 20 MB at most)."""


class MemoAnalyzer:
    """The lexical analyzer with a bounded memo of whole texts.

    Passages come back again and again: every iteration of a run re-ranks the pages it has, the critic
    reads the same passages, and a warm research cache serves the same pages to later runs in the same
    process. The analysis is deterministic, so remembering it changes no result, only the time.
    """

    def __init__(self, analyzer: Analyzer, maxsize: int = PASSAGE_MEMO_SIZE) -> None:
        self.analyzer = analyzer
        self._terms = functools.lru_cache(maxsize=maxsize)(lambda text: tuple(analyzer.terms(text)))
        self._words = functools.lru_cache(maxsize=1024)(
            lambda text: tuple((word, tuple(terms)) for word, terms in analyzer.word_terms(text))
        )

    def terms(self, text: str) -> list[str]:
        """``analyzer.terms(text)``, remembered."""
        return list(self._terms(text))

    def word_terms(self, text: str) -> list[tuple[str, list[str]]]:
        """``analyzer.word_terms(text)``, remembered (fresh lists each call)."""
        return [(word, list(terms)) for word, terms in self._words(text)]

    def cache_clear(self) -> None:
        """Forget every remembered analysis."""
        self._terms.cache_clear()
        self._words.cache_clear()


_MEMOS: weakref.WeakKeyDictionary[Analyzer, MemoAnalyzer] = weakref.WeakKeyDictionary()


def memo_analyzer(analyzer: Analyzer | MemoAnalyzer | None = None) -> MemoAnalyzer:
    """The process-wide memo of ``analyzer`` (the shared default analyzer when ``None``)."""
    if isinstance(analyzer, MemoAnalyzer):
        return analyzer
    base = analyzer if analyzer is not None else default_analyzer()
    memo = _MEMOS.get(base)
    if memo is None:
        memo = _MEMOS[base] = MemoAnalyzer(base)
    return memo


def clear_analysis_memos() -> None:
    """Forget every remembered analysis (what a fresh process would start with)."""
    for memo in list(_MEMOS.values()):
        memo.cache_clear()


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage selected for a question: where it came from, its text and its BM25 score."""

    source: str
    index: int
    text: str
    score: float


def select_passages(
    question: str,
    documents: Sequence[tuple[str, Sequence[str]]],
    *,
    per_source: int = 3,
    analyzer: Any = None,
) -> list[Passage]:
    """The passages relevant to ``question``, best first, at most ``per_source`` per source.

    Args:
        question: what the passages must speak to.
        documents: ``(source key, passages)`` pairs; passages are ranked together so scores compare.
        per_source: the most passages kept from one source.
        analyzer: the lexical analyzer (the shared default when ``None``).

    Passages that share no term with the question are never selected. Ties keep source order, then
    passage order.
    """
    index = BM25Index(cast(Analyzer, memo_analyzer(analyzer)))  # duck-typed: terms + word_terms
    keys: list[tuple[str, int, str]] = []
    for source, passages in documents:
        for position, text in enumerate(passages):
            if text.strip():
                keys.append((source, position, text))
    if not keys or not question.strip():
        return []
    for number, (_, _, text) in enumerate(keys):
        # the locator keeps ties in source order, then passage order
        index.add(str(number), text, locator=f"{number:08d}")
    taken: dict[str, int] = {}
    selected: list[Passage] = []
    for hit in index.search(question, limit=len(keys)):
        score = hit.score
        if score <= 0:
            continue
        source, position, text = keys[int(hit.id)]
        if taken.get(source, 0) >= per_source:
            continue
        taken[source] = taken.get(source, 0) + 1
        selected.append(Passage(source=source, index=position, text=text, score=float(score)))
    return selected


INLINE_SELECTION_CHARS = 100_000
"""Below this much text, passage selection takes about a millisecond: cheaper inline than a thread hop."""

_SELECTION_LIMITER: list[anyio.CapacityLimiter] = []


async def rank_passages(
    question: str,
    documents: Sequence[tuple[str, Sequence[str]]],
    *,
    per_source: int = 3,
    analyzer: Any = None,
) -> list[Passage]:
    """:func:`select_passages` without blocking the event loop: large inputs go to a worker thread."""
    size = sum(len(text) for _, passages in documents for text in passages)
    if size <= INLINE_SELECTION_CHARS:
        return select_passages(question, documents, per_source=per_source, analyzer=analyzer)
    if not _SELECTION_LIMITER:
        _SELECTION_LIMITER.append(anyio.CapacityLimiter(2))
    return await anyio.to_thread.run_sync(
        lambda: select_passages(question, documents, per_source=per_source, analyzer=analyzer),
        limiter=_SELECTION_LIMITER[0],
    )
