"""Main-text extraction (trafilatura) and the selection of passages relevant to a question.

Extraction favours precision (the web-extraction benchmark: F1 0.961 with ``favor_precision`` against
0.958 with defaults) and keeps the metadata a source needs: title, date, site, author, language.

**Budget.** trafilatura's time and memory grow with the element count (a 5 MB page of 200k links took
13 s and 600 MB), and its worker thread cannot be cancelled, so a page is bounded *before* lxml builds
a tree: at most :data:`MAX_HTML_CHARS` decoded characters and :data:`MAX_ELEMENTS` start tags (a
cheap scan cuts the page at the first tag past the budget) and :data:`MAX_TEXT_CHARS` of text out; a
cut page says so (``truncated``). The caller bounds the wait with the page's share of the deadline.

**Hidden text.** Before trafilatura sees the page, elements a reader does not see are dropped — a
classic place for prompt injection. What a local rule can tell from the HTML itself is caught: the
``hidden`` and ``aria-hidden="true"`` attributes, ``<template>``, the closed part of ``<details>``, and
declarations in inline ``style`` attributes or in top-level rules of ``<style>`` blocks whose
selectors are simple (``.class``, ``#id``, ``tag.class``, lists of them): ``display:none``,
``visibility:hidden|collapse``, opacity ≤ 0.05, font size ≤ 1px, transparent text, text coloured like
the nearest background set on the element or an ancestor, clipping to nothing (``clip:rect`` ≤ 1px,
``clip-path:inset(≥50%)``/``circle(0)``), boxes of ≤ 1px or ``max-height:0`` with ``overflow:hidden``,
``transform:scale(0)`` and off-screen offsets (``left:-9999px`` with absolute or fixed position,
``text-indent``/``margin`` of -500px or more). Layout tricks of real sites are told apart by what the
hidden element is: a tiny font hides only the text set in it (an inline-block row with ``font-size:0``
keeps the children that set a readable size again); an element hidden by display, visibility,
opacity, ``hidden`` or ``aria-hidden`` that holds most of the page's text is the page's wrapper (a
fade-in a script reveals, the page behind a dialog) and is read, as is an inactive tab panel that a
tab still on the page names (``role="tabpanel"`` with ``aria-controls``/``aria-labelledby``); a
malformed value never raises, the rule it feeds just does not fire. Not caught: external stylesheets, complex selectors
(descendant, attribute, pseudo-class), the cascade (a later rule showing the element again),
``@media`` blocks, scripts that hide or reveal, a colour close to (not equal to) the background or a
background given only by an image or an external stylesheet, text covered by another element. The
extracted text is then cleaned of hidden characters.

Passages: the text is split on paragraphs into pieces of a few hundred characters, ranked against
the question with BM25 over the shared lexical analysis, and only pieces that share a term with it
are kept.
"""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio
import lxml.html
from lxml import etree
from simone.providers.web._types import ExtractedPage, scrub_surrogates
from simone.runtime import strip_hidden
from simone.runtime.text import (
    Analyzer,
    BM25Index,
    default_analyzer,
)

MAX_HTML_CHARS = 2_000_000
"""Decoded characters of one page the extractor reads; the rest is cut before parsing."""

MAX_ELEMENTS = 12_000
"""Start tags of one page the extractor reads (a long article has a few thousand; the time and memory
of the extraction grow with this); the page is cut at the first tag past it."""

MAX_TEXT_CHARS = 400_000
"""Characters of extracted text kept from one page (for passage selection)."""

PASSAGE_TARGET_CHARS = 700
"""Paragraphs are merged up to about this size: a passage says one thing with its context."""

PASSAGE_MAX_CHARS = 1400
"""Longer paragraphs are split at sentence boundaries."""

_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True)

_START_TAG = re.compile(r"<[A-Za-z]")


def bound_html(
    html: str, *, max_chars: int = MAX_HTML_CHARS, max_elements: int = MAX_ELEMENTS
) -> tuple[str, bool]:
    """``html`` cut to the extraction budget, and whether it was cut.

    A linear scan for start tags, no parsing: at most ``max_chars`` characters, and the text before
    the first start tag past ``max_elements`` (lxml closes what the cut leaves open).
    """
    cut = False
    if len(html) > max_chars:
        html, cut = html[:max_chars], True
    for count, match in enumerate(_START_TAG.finditer(html), 1):
        if count > max_elements:
            return html[: match.start()], True
    return html, cut


# -- hidden elements ----------------------------------------------------------------------------------

_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_SIMPLE_SELECTOR = re.compile(r"([A-Za-z][\w-]*)?((?:[.#][\w-]+)+)")
_LENGTH = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))([a-z%]*)$")
_NAMED_COLOURS = {
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "red": (255, 0, 0),
    "green": (0, 128, 0),
    "blue": (0, 0, 255),
    "yellow": (255, 255, 0),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "silver": (192, 192, 192),
    "snow": (255, 250, 250),
    "whitesmoke": (245, 245, 245),
    "ivory": (255, 255, 240),
}


def _declarations(css: str) -> dict[str, str]:
    """``property: value`` pairs of a declaration block, lower-cased, ``!important`` dropped; last wins."""
    out: dict[str, str] = {}
    for part in css.split(";"):
        name, colon, value = part.partition(":")
        if colon:
            out[name.strip().lower()] = " ".join(value.lower().replace("!important", "").split())
    return out


def _css_rules(css: str) -> Iterator[tuple[str, str]]:
    """``(selectors, declarations)`` of the top-level rules of a style sheet; ``@`` blocks are skipped."""
    css = _CSS_COMMENT.sub(" ", css)
    position, size = 0, len(css)
    while position < size:
        brace = css.find("{", position)
        if brace < 0:
            return
        prelude = css[position:brace].strip()
        semicolon = prelude.rfind(";")  # @import …; @charset …; before the rule
        if semicolon >= 0:
            prelude = prelude[semicolon + 1 :].strip()
        depth, index = 1, brace + 1
        while index < size and depth:
            if css[index] == "{":
                depth += 1
            elif css[index] == "}":
                depth -= 1
            index += 1
        if not prelude.startswith("@"):
            yield prelude, css[brace + 1 : index - 1]
        position = index


def _length(value: str) -> tuple[float, str] | None:
    match = _LENGTH.match(value.strip())
    if match is None:
        return None
    return float(match.group(1)), match.group(2)


def _tiny(value: str | None) -> bool:
    """A length of at most 1px (or zero in any unit)."""
    if value is None:
        return False
    parsed = _length(value)
    if parsed is None:
        return False
    number, unit = parsed
    return number <= 0 or (number <= 1 and unit in ("px", "pt"))


def _far_off(value: str | None) -> bool:
    """A negative offset that moves content out of any viewport (-500px, -50em, -100%…)."""
    if value is None:
        return False
    parsed = _length(value.split()[0]) if value.split() else None
    if parsed is None:
        return False
    number, unit = parsed
    limits = {"px": -500.0, "pt": -400.0, "em": -50.0, "rem": -50.0, "%": -100.0, "vw": -100.0, "vh": -100.0}
    return unit in limits and number <= limits[unit]


def _colour(value: str | None) -> tuple[float, ...] | None:
    """An RGB(A) tuple for a CSS colour (hex, rgb()/rgba(), a few names, ``transparent``)."""
    if not value:
        return None
    value = value.strip()
    if value == "transparent":
        return (0, 0, 0, 0)
    if value in _NAMED_COLOURS:
        return _NAMED_COLOURS[value]
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) in (3, 4):
            digits = "".join(d * 2 for d in digits)
        if len(digits) in (6, 8) and all(c in "0123456789abcdef" for c in digits):
            channels = [int(digits[i : i + 2], 16) for i in range(0, len(digits), 2)]
            if len(channels) == 4:
                return (*channels[:3], channels[3] / 255)
            return tuple(channels)
        return None
    if value.startswith(("rgb(", "rgba(")) and value.endswith(")"):
        parts = [p for p in re.split(r"[\s,/]+", value[value.index("(") + 1 : -1]) if p]
        try:
            numbers = [
                float(p[:-1]) * (2.55 if i < 3 else 0.01) if p.endswith("%") else float(p)
                for i, p in enumerate(parts)
            ]
        except ValueError:
            return None
        if not all(math.isfinite(n) for n in numbers):
            return None
        if len(numbers) == 3:
            return tuple(round(n) for n in numbers)
        if len(numbers) == 4:
            return (*(round(n) for n in numbers[:3]), numbers[3])
    return None


def _invisible_colour(colour: tuple[float, ...] | None) -> bool:
    return colour is not None and len(colour) == 4 and colour[3] <= 0.05


def _background(style: dict[str, str]) -> tuple[float, ...] | None:
    """The plain background colour these declarations set; ``None`` for images, gradients or bad values."""
    if "background-color" in style:
        return _colour(style["background-color"])
    value = style.get("background", "")
    words = value.split()
    if not words or "url(" in value or "gradient(" in value:
        return None
    return _colour(value) or _colour(words[-1])


def _toggled(style: dict[str, str]) -> bool:
    """Hidden by a property a script or a widget flips to show the element: display, visibility, opacity."""
    if style.get("display") == "none" or style.get("visibility") in ("hidden", "collapse"):
        return True
    opacity = _length(style.get("opacity", "1"))
    return opacity is not None and opacity[0] <= (5.0 if opacity[1] == "%" else 0.05)


def _concealed(style: dict[str, str]) -> bool:
    """Hidden by a trick that has no use on text meant to be read: no colour, clipped, shrunk, off-screen."""
    get = style.get
    if _invisible_colour(_colour(get("color"))):
        return True
    clip = get("clip", "")
    if clip.startswith("rect("):
        numbers = [n for n in (_length(p) for p in re.split(r"[\s,]+", clip[5:].rstrip(")")) if p) if n]
        if len(numbers) == 4 and (
            abs(numbers[2][0] - numbers[0][0]) <= 1 or abs(numbers[1][0] - numbers[3][0]) <= 1
        ):
            return True
    clip_path = get("clip-path", "")
    if clip_path.startswith("inset("):
        inset = clip_path[6:].rstrip(")").split()
        first = _length(inset[0]) if inset else None
        if first is not None and first[1] == "%" and first[0] >= 50:
            return True
    if clip_path.startswith(("circle(0", "ellipse(0")):
        return True
    if get("overflow", get("overflow-x", get("overflow-y", ""))) in ("hidden", "clip") and any(
        _tiny(get(name)) for name in ("width", "height", "max-width", "max-height")
    ):
        return True
    if re.search(r"scale[xy]?\(\s*0(?:\.0*)?\s*[,)]", get("transform", "")):
        return True
    if get("position") in ("absolute", "fixed") and any(
        _far_off(get(side)) for side in ("left", "top", "right", "bottom")
    ):
        return True
    return any(_far_off(get(name)) for name in ("text-indent", "margin-left", "margin-top"))


_INHERITING_SIZES = frozenset({"inherit", "unset", "revert", "revert-layer", "smaller", "larger"})
_RELATIVE_UNITS = frozenset({"em", "%", "ex", "ch", "cap", "ic", "lh", "rlh"})
_SIZE_KEYWORDS = frozenset(
    {"initial", "xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large", "xxx-large"}
)


def _font_tiny(value: str | None, *, inherited: bool) -> bool:
    """Whether text at this declared font size is too small to read, given whether the parent's text is.

    Zero or at most 1px/1pt is tiny; sizes relative to the parent's (``em``, ``%``, ``smaller``…) and
    values a browser would ignore inherit; other lengths, the size keywords and functions (``calc()``,
    ``var()``, ``clamp()``: not evaluated) set a readable size.
    """
    if value is None:
        return inherited
    value = value.strip()
    if value in _INHERITING_SIZES:
        return inherited
    if value in _SIZE_KEYWORDS or re.match(r"[a-z-]+\(", value):
        return False
    parsed = _length(value)
    if parsed is None:
        return inherited  # not a size: ignored, as a browser would
    number, unit = parsed
    if number <= 0:
        return True
    if unit in _RELATIVE_UNITS:
        return inherited
    return unit in ("px", "pt") and number <= 1


@dataclass(slots=True)
class _ClassRules:
    """The simple-selector rules of a page's ``<style>`` blocks, indexed by class and id."""

    by_key: dict[str, list[tuple[str | None, frozenset[str], str | None, dict[str, str]]]]

    @classmethod
    def of(cls, tree: Any) -> _ClassRules:
        by_key: dict[str, list[tuple[str | None, frozenset[str], str | None, dict[str, str]]]] = {}
        for style in tree.iter("style"):
            for selectors, block in _css_rules(style.text_content() or ""):
                declarations = _declarations(block)
                if not declarations:
                    continue
                for selector in selectors.split(","):
                    match = _SIMPLE_SELECTOR.fullmatch(selector.strip())
                    if match is None:
                        continue
                    parts = re.findall(r"[.#][\w-]+", match.group(2))
                    classes = frozenset(p[1:] for p in parts if p[0] == ".")
                    ids = [p[1:] for p in parts if p[0] == "#"]
                    if len(ids) > 1:
                        continue
                    tag = match.group(1).lower() if match.group(1) else None
                    rule = (tag, classes, ids[0] if ids else None, declarations)
                    key = f"#{ids[0]}" if ids else f".{min(classes)}"
                    by_key.setdefault(key, []).append(rule)
        return cls(by_key)

    def style(self, element: Any) -> dict[str, str]:
        """The declarations of every matching rule, in source order (later rules win)."""
        if not self.by_key:
            return {}
        classes = frozenset((element.get("class") or "").split())
        ident = element.get("id")
        keys = [f".{c}" for c in classes] + ([f"#{ident}"] if ident else [])
        merged: dict[str, str] = {}
        for key in keys:
            for tag, needed, rule_id, declarations in self.by_key.get(key, ()):
                if (tag is None or tag == element.tag) and needed <= classes and rule_id in (None, ident):
                    merged.update(declarations)
        return merged


WRAPPER_SHARE = 0.5
"""An element hidden by display, visibility, opacity, ``hidden`` or ``aria-hidden`` that holds more than
this share of the page's text is the page's own wrapper (a fade-in or anti-flicker wrapper a script
reveals, the page behind an open dialog) and is read; a smaller one is a piece hidden inside the page."""

_STYLE_ERRORS = (ValueError, IndexError, OverflowError, TypeError, KeyError)
"""What a malformed declaration could raise in a rule; the rule then does not fire, the page is kept."""


def _blank(text: str | None) -> tuple[str | None, bool]:
    """``text`` with its words removed (a space kept between neighbours), and whether it had any."""
    if text is None or not text.strip():
        return text, False
    return " ", True


class _Hider:
    """One pass over a page dropping what a reader does not see (see the module docstring)."""

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self.rules = _ClassRules.of(tree)
        self.removed = 0
        self.stack: list[tuple[Any, tuple[float, ...] | None, bool]] = [(tree, None, False)]
        self._lengths = _text_lengths(tree)  # of the page as served, before anything is dropped
        self._tabs: dict[str, list[Any]] | None = None

    def run(self) -> int:
        """Walk the page (deferred tab panels last, once their tabs are known to stay); how many went."""
        deferred: list[tuple[Any, tuple[float, ...] | None, bool, list[Any]]] = []
        while self.stack or deferred:
            if not self.stack:
                panel, background, tiny, tabs = deferred.pop(0)
                if any(self._attached(tab) for tab in tabs):
                    self._visit(panel, background, tiny, toggle_exempt=True)
                else:
                    self._drop(panel)
                continue
            parent, background, tiny = self.stack.pop()
            for element in list(parent):
                if isinstance(element.tag, str) and element.tag.lower() not in ("style", "script"):
                    tabs = self._visit(element, background, tiny, toggle_exempt=False)
                    if tabs:
                        deferred.append((element, background, tiny, tabs))
        return self.removed

    def _style(self, element: Any) -> dict[str, str]:
        declared = self.rules.style(element)
        inline = element.get("style")
        return {**declared, **_declarations(inline)} if inline else declared

    def _drop(self, element: Any) -> None:
        element.drop_tree()
        self.removed += 1

    def _visit(
        self, element: Any, background: tuple[float, ...] | None, tiny: bool, *, toggle_exempt: bool
    ) -> list[Any]:
        """Drop, blank or queue ``element``; returns the tabs of a hidden tab panel to decide on later."""
        tag = element.tag.lower()
        declared = self._style(element)
        try:
            own_background = _background(declared)
            colour = _colour(declared.get("color"))
            concealed = _concealed(declared)
            toggled = _toggled(declared)
            tiny_here = _font_tiny(declared.get("font-size"), inherited=tiny)
        except _STYLE_ERRORS:  # a hostile value: that rule does not fire, the page is still read
            own_background = colour = None
            concealed = toggled = False
            tiny_here = tiny
        here = own_background if own_background is not None and len(own_background) == 3 else background
        same_colour = colour is not None and here is not None and len(colour) == 3 and colour[:3] == here[:3]
        if tag == "template" or concealed or same_colour:
            self._drop(element)
            return []
        toggled = toggled or element.get("hidden") is not None
        toggled = toggled or (element.get("aria-hidden") or "").strip().lower() == "true"
        if toggled and not toggle_exempt:
            tabs = self._tabs_of(element)
            if tabs:
                return tabs
            if not self._is_wrapper(element):
                self._drop(element)
                return []
        if toggled:
            _reveal(element)
        if tiny_here:
            if not self._restores(element):
                self._drop(element)
                return []
            element.text, had_text = _blank(element.text)
            for child in element:
                child.tail, had_tail = _blank(child.tail)
                had_text = had_text or had_tail
            self.removed += had_text
        if tag == "details" and element.get("open") is None:
            summary_seen = False
            element.text = None
            for child in list(element):
                if isinstance(child.tag, str) and child.tag.lower() == "summary" and not summary_seen:
                    summary_seen = True
                    self.stack.append((child, here, tiny_here))
                    continue
                if isinstance(child.tag, str):
                    self.removed += 1
                child.tail = None
                element.remove(child)
            return []
        self.stack.append((element, here, tiny_here))
        return []

    def _restores(self, element: Any) -> bool:
        """Whether a descendant of a tiny-font element sets a readable size again (inline-block rows)."""
        for descendant in element.iterdescendants():
            if isinstance(descendant.tag, str):
                value = self._style(descendant).get("font-size")
                if value is not None and not _font_tiny(value, inherited=True):
                    return True
        return False

    def _is_wrapper(self, element: Any) -> bool:
        """Whether a hidden element holds most of the page's text (see :data:`WRAPPER_SHARE`)."""
        body = self.tree.find("body")
        total = self._lengths.get(body if body is not None else self.tree, 0)
        return total > 0 and self._lengths.get(element, 0) > WRAPPER_SHARE * total

    def _tabs_of(self, element: Any) -> list[Any]:
        """The tabs (``role="tab"``) that name this tab panel, through ``aria-controls`` or ``aria-labelledby``."""
        if "tabpanel" not in (element.get("role") or "").lower().split():
            return []
        if self._tabs is None:
            self._tabs = {}
            for tab in self.tree.iter():
                if isinstance(tab.tag, str) and "tab" in (tab.get("role") or "").lower().split():
                    for key in (tab.get("aria-controls") or "").split():
                        self._tabs.setdefault(f"controls:{key}", []).append(tab)
                    if tab.get("id"):
                        self._tabs.setdefault(f"id:{tab.get('id')}", []).append(tab)
        found = list(self._tabs.get(f"controls:{element.get('id')}", ())) if element.get("id") else []
        for key in (element.get("aria-labelledby") or "").split():
            found.extend(self._tabs.get(f"id:{key}", ()))
        return found

    def _attached(self, element: Any) -> bool:
        """Whether ``element`` is still in the page (not dropped with a hidden ancestor)."""
        while element is not None:
            if element is self.tree:
                return True
            element = element.getparent()
        return False


_TOGGLES = frozenset({"display", "visibility", "opacity"})


def _reveal(element: Any) -> None:
    """Show a hidden element that is read (a page wrapper, a tab panel) to trafilatura.

    trafilatura drops ``display:none``, ``visibility:hidden`` and ``aria-hidden`` elements itself.
    """
    for name in ("hidden", "aria-hidden"):
        element.attrib.pop(name, None)
    inline = element.get("style")
    if inline:
        kept = [part for part in inline.split(";") if part.partition(":")[0].strip().lower() not in _TOGGLES]
        element.set("style", ";".join(kept))


_UNREAD = frozenset({"script", "style", "noscript", "template"})


def _text_lengths(tree: Any) -> dict[Any, int]:
    """Non-space characters of text under each element (scripts, styles and templates not counted)."""
    lengths: dict[Any, int] = {}
    for element in reversed(list(tree.iter())):  # children before their parents
        if not isinstance(element.tag, str) or element.tag.lower() in _UNREAD:
            lengths[element] = 0
            continue
        size = len("".join((element.text or "").split()))
        for child in element:
            size += lengths.get(child, 0) + len("".join((child.tail or "").split()))
        lengths[element] = size
    return lengths


def _drop_hidden(tree: Any) -> int:
    """Drop the elements a reader does not see (see the module docstring); returns how many went."""
    return _Hider(tree).run()


def extract_page(html: str, url: str, *, content_type: str = "text/html") -> ExtractedPage:
    """Extract the main text and metadata of a page (blocking: call it in a worker thread).

    ``text/plain`` is taken as it is. HTML is first cut to the extraction budget (:func:`bound_html`)
    and cleared of hidden elements, then goes through trafilatura; when trafilatura finds no main
    text the visible text of the body is used instead (``method="plain"``), so a short page still
    yields something rather than nothing.
    """
    if content_type == "text/plain":
        cut = len(html) > MAX_TEXT_CHARS
        cleaned = strip_hidden(scrub_surrogates(html[:MAX_TEXT_CHARS]))
        return ExtractedPage(
            url=url, text=_tidy(cleaned.text), hidden_removed=cleaned.removed, method="plain", truncated=cut
        )
    import trafilatura

    source, truncated = bound_html(html)
    try:
        # bytes with an explicit codec: lxml would read undeclared bytes as Latin-1
        tree = lxml.html.document_fromstring(source.encode("utf-8", "replace"), parser=_PARSER)
    except (etree.ParserError, ValueError):
        return ExtractedPage(url=url, text="", method="plain", truncated=truncated)
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
    if len(text) > MAX_TEXT_CHARS:
        text, truncated = text[:MAX_TEXT_CHARS], True
    cleaned = strip_hidden(scrub_surrogates(text))
    return ExtractedPage(
        url=url,
        title=" ".join(strip_hidden(scrub_surrogates(title)).text.split())[:500],
        site=scrub_surrogates(site)[:200],
        date=scrub_surrogates(date) if date else None,
        author=scrub_surrogates(author)[:200] if author else None,
        language=scrub_surrogates(language) if language else None,
        text=_tidy(cleaned.text),
        hidden_removed=cleaned.removed,
        hidden_elements_removed=hidden_elements,
        method=method,
        truncated=truncated,
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
