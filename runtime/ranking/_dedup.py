"""Duplicate detection across providers: same digest, same normalised URL, or near-duplicate text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

NEAR_DUPLICATE_JACCARD = 0.9
"""Shingle similarity at or above which two texts count as the same passage (DESIGN.md)."""

SHINGLE_CHARS = 5
"""Character shingles work in every script (no word segmentation needed); 5 keeps them selective."""

WORD_SHINGLE_MIN_WORDS = 8
"""Below this many words, word 3-grams are too few to compare; characters are used instead."""

MAX_WORD_CHARS = 15
"""Average "word" length above which the text is not really space-separated (CJK runs, URLs)."""

MAX_SHINGLE_CHARS = 4000
"""Only the first characters are shingled: enough to tell passages apart, bounded in time."""

TRACKING_PARAMS = frozenset(
    {
        "gclid",
        "fbclid",
        "dclid",
        "msclkid",
        "yclid",
        "igshid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "ref",
        "ref_src",
        "ref_url",
        "spm",
        "si",
        "utm",
        "vero_id",
        "oly_anon_id",
        "oly_enc_id",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "srsltid",
    }
)
"""Query parameters that say who sent the visitor, not what the page is."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """A comparison key for a URL: one spelling per page.

    Lower-cases scheme and host, folds ``http``/``https`` and a leading ``www.``, converts the host to
    IDNA, drops default ports, credentials, fragments, tracking parameters (``utm_*`` and friends) and a
    trailing slash, sorts the remaining query parameters and normalises percent-escapes.
    Returns the input stripped when it is not an absolute http(s) URL.
    """
    text = url.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return text
    host = parts.hostname.rstrip(".")
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        host = host.lower()
    if host.startswith("www."):
        host = host[4:]
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = quote(unquote(parts.path), safe="/:@!$&'()*+,;=-._~%")
    path = path.rstrip("/")
    query_pairs = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if not key.lower().startswith("utm_") and key.lower() not in TRACKING_PARAMS
    ]
    query = urlencode(sorted(query_pairs))
    return urlunsplit(("https", netloc, path, query, ""))


def is_url(locator: str) -> bool:
    """Whether a locator is an absolute http(s) URL."""
    head = locator[:8].lower()
    return head.startswith("http://") or head.startswith("https://")


Shingles = frozenset[tuple[str, ...]]


def shingles(text: str, size: int = SHINGLE_CHARS) -> Shingles:
    """Shingles of the normalised text (NFKC, case fold, whitespace collapsed).

    Text made of space-separated words gets word 3-grams (cheap, and as selective); text without
    spaces (Chinese, Japanese, Thai…) gets character ``size``-grams, which need no segmentation.
    Built with ``zip`` over shifted sequences so the work stays in C.
    """
    words = unicodedata.normalize("NFKC", text[:MAX_SHINGLE_CHARS]).casefold().split()
    if len(words) >= WORD_SHINGLE_MIN_WORDS and sum(map(len, words)) <= MAX_WORD_CHARS * len(words):
        return frozenset(zip(words, words[1:], words[2:], strict=False))
    normalised = " ".join(words)
    if len(normalised) <= size:
        return frozenset({(normalised,)}) if normalised else frozenset()
    return frozenset(zip(*(normalised[i:] for i in range(size)), strict=False))


def jaccard(left: Shingles, right: Shingles) -> float:
    """Jaccard similarity of two shingle sets (1.0 for two empty sets)."""
    if not left and not right:
        return 1.0
    common = len(left & right)
    union = len(left) + len(right) - common
    return common / union if union else 0.0


class DuplicateFinder:
    """Remembers kept items and tells whether a new one duplicates any of them.

    Checks, in order of cost: the same content digest, the same normalised URL, near-duplicate
    text (character-shingle Jaccard >= ``threshold``).
    """

    def __init__(self, threshold: float = NEAR_DUPLICATE_JACCARD) -> None:
        self.threshold = threshold
        self._digests: dict[str, str] = {}
        self._urls: dict[str, str] = {}
        self._shingles: list[tuple[str, Shingles, int]] = []

    def check(
        self, item_id: str, digest: str, locator: str, content: str, *, by_url: bool = True
    ) -> tuple[str, str] | None:
        """Return ``(kept_id, why)`` if the item duplicates a kept one; otherwise remember it.

        ``by_url=False``: the locator is a citation, not the item's identity (a document chunk behind
        a repository URL: two chunks of one PDF page share ``#page=3``), so only the digest and the
        text can make it a duplicate.
        """
        if digest in self._digests:
            return self._digests[digest], "same content digest"
        url_key = _url_key(locator) if by_url and is_url(locator) else None
        if url_key is not None and url_key in self._urls:
            return self._urls[url_key], "same normalised URL"
        grams = shingles(content)
        size = len(grams)
        for kept_id, kept, kept_size in self._shingles:
            # Jaccard can only reach the threshold when the sizes are close enough.
            small, large = sorted((size, kept_size))
            if large and small / large < self.threshold:
                continue
            if jaccard(grams, kept) >= self.threshold:
                return kept_id, "near-duplicate text"
        self._digests[digest] = item_id
        if url_key is not None:
            self._urls[url_key] = item_id
        self._shingles.append((item_id, grams, size))
        return None


_CHUNK_FRAGMENT = re.compile(r"L\d+(?:-L\d+)?|(?:page|slide)=\d+")
"""A fragment that names a chunk of a document (``#L10-L24``, ``#page=3``, ``#slide=2``), not a place on a page."""


def _url_key(locator: str) -> str:
    """The URL a locator is deduplicated by: normalised, and keeping a chunk's fragment.

    Two chunks of one file behind a repository URL (``[index] locator_base``) are different evidence;
    two links to one web page that differ in their ``#section`` are the same page.
    """
    key = normalize_url(locator)
    fragment = urlsplit(locator.strip()).fragment
    return f"{key}#{fragment}" if _CHUNK_FRAGMENT.fullmatch(fragment) else key


def unique_urls(urls: Iterable[str]) -> list[str]:
    """The URLs with one spelling per page, first spelling kept, order preserved."""
    seen: set[str] = set()
    out: list[str] = []
    for url in urls:
        key = normalize_url(url)
        if key not in seen:
            seen.add(key)
            out.append(url)
    return out
