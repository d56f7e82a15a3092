"""Value types of the web layer: search hits, fetched pages, extracted pages, fetch errors."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from simone.runtime import FailureKind, ProviderError

_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(text: str) -> str:
    r"""``text`` with every lone surrogate replaced by U+FFFD (halves of a pair are joined first).

    Web text can carry them (a JSON ``"\ud800"`` escape, a page declaring an escape codec); they
    cannot be encoded as UTF-8, so one would break every later write (cache, logs, MCP answers).
    """
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SearchHit(_Frozen):
    """One result of a search backend, as the backend described it (untrusted text)."""

    url: str
    title: str = ""
    snippet: str = ""
    rank: Annotated[int, Field(ge=1)]
    score: float | None = None
    published: str | None = None
    engine: str = ""


class SearchPage(_Frozen):
    """The results of one query on one backend.

    Attributes:
        backend: the backend's name.
        query: the query as sent (after truncation).
        query_truncated: the asked query was longer than the backend accepts and was cut.
        hits: results best first, malformed entries left out.
        skipped: how many entries were left out as malformed (no URL, odd scheme…).
        partial: the backend said some of its sources did not answer (never cached as complete).
        notes: plain sentences about the above.
    """

    backend: str
    query: str
    query_truncated: bool = False
    hits: list[SearchHit] = Field(default_factory=list)
    skipped: Annotated[int, Field(ge=0)] = 0
    partial: bool = False
    notes: list[str] = Field(default_factory=list)


FetchReason = Literal[
    "blocked_url",
    "blocked_address",
    "robots",
    "too_large",
    "content_type",
    "too_many_redirects",
    "http_status",
    "timeout",
    "unreachable",
    "invalid_content",
]
"""Why a page could not be fetched (kept on the source that asked for it)."""

_REASON_KIND: dict[FetchReason, FailureKind] = {
    "blocked_url": "forbidden",
    "blocked_address": "forbidden",
    "robots": "forbidden",
    "too_large": "invalid_response",
    "content_type": "invalid_response",
    "too_many_redirects": "invalid_response",
    "http_status": "unavailable",
    "timeout": "timeout",
    "unreachable": "unavailable",
    "invalid_content": "invalid_response",
}


class FetchError(ProviderError):
    """A page could not be fetched safely; ``reason`` says why, the message says what to do.

    Its ``kind`` follows the reason (an SSRF block or robots.txt is ``forbidden``, a slow server
    ``timeout``, an HTTP 5xx ``unavailable``…).
    """

    def __init__(
        self,
        reason: FetchReason,
        message: str,
        *,
        url: str = "",
        status_code: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        kind = _REASON_KIND[reason]
        super().__init__(
            message,
            provider="web-fetch",
            retryable=kind in ("timeout", "unavailable"),
            retry_after_s=retry_after_s,
        )
        self.kind = kind
        self.reason: FetchReason = reason
        self.url = url
        self.status_code = status_code


class FetchedPage(_Frozen):
    """A page the safe fetcher read.

    Attributes:
        url: the URL asked for.
        final_url: where the redirects ended.
        redirects: every hop after the first, in order.
        status_code: the final HTTP status.
        content_type: the media type without parameters.
        charset: the codec the text was decoded with.
        charset_note: set when the declared charset was missing or invalid and another was used.
        text: the decoded body.
        bytes_read: decoded bytes read (what the byte cap counts).
        elapsed_ms: time from the first request to the end of the body.
    """

    url: str
    final_url: str
    redirects: list[str] = Field(default_factory=list)
    status_code: int
    content_type: str
    charset: str
    charset_note: str | None = None
    text: str
    bytes_read: Annotated[int, Field(ge=0)]
    elapsed_ms: float = 0.0


class ExtractedPage(_Frozen):
    """The main text of a page and its metadata (from trafilatura), cleaned of hidden characters.

    Attributes:
        url: the final URL of the page.
        title, site, date, author, language: metadata when the page declares it.
        text: the main text, paragraphs separated by blank lines.
        hidden_removed: hidden characters stripped from the text.
        hidden_elements_removed: HTML elements hidden from readers (``display:none``, ``hidden``…)
            dropped before extraction.
        method: how the text was obtained (``trafilatura`` or ``plain``).
        truncated: the page was over the extraction budget (characters or elements) and only its
            beginning was read.
    """

    url: str
    title: str = ""
    site: str = ""
    date: str | None = None
    author: str | None = None
    language: str | None = None
    text: str
    hidden_removed: Annotated[int, Field(ge=0)] = 0
    hidden_elements_removed: Annotated[int, Field(ge=0)] = 0
    method: Literal["trafilatura", "plain"] = "trafilatura"
    truncated: bool = False

    def to_cache(self) -> dict[str, Any]:
        """The JSON form stored in the page cache."""
        return self.model_dump(mode="json")
