"""The fixture web: pages about a lake that does not exist, served on a :class:`LoopbackWeb`.

The pages themselves are data (``fixture_web.json`` beside this module, shipped with the testing face):
overlapping facts (for corroboration), one aspect on one page only (for iterative research), another
lake (for ranking), and a page carrying hidden prompt-injection text. :func:`add_fixture_site` serves
them; :func:`load_fixture_pages` reads another file of the same shape (your own fixture site).
"""

from __future__ import annotations

import html as html_lib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from simone.providers.testing._web import LoopbackWeb

FIXTURE_WEB_FILE = Path(__file__).with_name("fixture_web.json")
"""The fixture web's pages: ``{"about": ..., "pages": [{host, path, title, paragraphs, ...}]}``."""


@dataclass(frozen=True, slots=True)
class FixturePage:
    """One page of a fixture web."""

    host: str
    path: str
    title: str
    paragraphs: tuple[str, ...]
    published: str | None = None
    hidden_html: str = ""


def load_fixture_pages(path: Path = FIXTURE_WEB_FILE) -> tuple[FixturePage, ...]:
    """The pages of a fixture-web file (by default simone's own, :data:`FIXTURE_WEB_FILE`)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    return tuple(
        FixturePage(
            host=page["host"],
            path=page["path"],
            title=page["title"],
            paragraphs=tuple(page["paragraphs"]),
            published=page.get("published"),
            hidden_html=page.get("hidden_html", ""),
        )
        for page in document["pages"]
    )


FIXTURE_PAGES: tuple[FixturePage, ...] = load_fixture_pages()
"""simone's fixture web (read from :data:`FIXTURE_WEB_FILE`)."""


def fixture_html(page: FixturePage) -> str:
    """The HTML of a fixture page: head metadata, navigation, the article, a footer."""
    paragraphs = "\n".join(f"<p>{html_lib.escape(text)}</p>" for text in page.paragraphs)
    date = f'<meta name="date" content="{page.published}">' if page.published else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html_lib.escape(page.title)}</title>{date}</head><body>"
        '<nav><a href="/">Home</a> | <a href="/about">About</a></nav>'
        f"<article><h1>{html_lib.escape(page.title)}</h1>{paragraphs}{page.hidden_html}</article>"
        "<footer>Fixture page written for simone's tests.</footer></body></html>"
    )


def add_fixture_site(web: LoopbackWeb, pages: Sequence[FixturePage] = FIXTURE_PAGES) -> dict[str, str]:
    """Serve the fixture pages on ``web`` (started); returns ``{host + path: url}``."""
    urls: dict[str, str] = {}
    for page in pages:
        urls[f"{page.host}{page.path}"] = web.add_page(
            page.path, fixture_html(page), host=page.host, published=page.published
        )
    return urls
