"""Clean (X)HTML as Markdown-like text: for EPUB chapters and e-mail bodies.

Web pages go through trafilatura (the loaders), which drops navigation and boilerplate; an EPUB
chapter or an HTML e-mail is all content, and trafilatura's precision mode would drop short chapters,
lists of contents and most tables. This walker keeps everything but scripts and styles: ``h1``…``h6``
as headings, paragraphs and block elements as paragraphs, list items with their nesting, ``pre`` as
fenced code, tables as pipe tables.
"""

from __future__ import annotations

from typing import Any

from simone.providers.documents._formats._common import (
    FormatSkip,
    escape_text,
    fenced,
    heading,
    join_blocks,
    markdown_table,
    one_line,
)

_SKIP = frozenset({"script", "style", "head", "noscript", "template", "svg", "math", "button", "form"})
_BLOCK = frozenset(
    {"p", "div", "section", "article", "header", "footer", "main", "aside", "blockquote", "figure",
     "figcaption", "dl", "dt", "dd", "address", "center", "body", "html", "nav", "hr", "caption"}
)  # fmt: skip


def html_to_markdown(markup: bytes | str) -> tuple[str | None, str]:
    """``(title, text)`` of an HTML or XHTML document (the ``<title>``, else ``None``).

    Raises:
        FormatSkip: the markup cannot be parsed.
    """
    import lxml.html
    from lxml import etree

    if isinstance(markup, str):
        markup = markup.encode("utf-8")  # lxml refuses str with an XML encoding declaration
    if not markup.strip():
        return None, ""
    try:
        root = lxml.html.document_fromstring(markup, parser=lxml.html.HTMLParser(no_network=True))
    except (etree.ParserError, ValueError) as exc:
        raise FormatSkip(f"HTML could not be parsed: {exc}") from exc
    title = one_line(root.findtext(".//title") or "") or None
    walker = _Walker()
    body = root.find("body")
    walker.walk(body if body is not None else root, 0)
    walker.flush()
    return title, join_blocks(walker.blocks)


class _Walker:
    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.inline: list[str] = []
        self.prefix = ""

    def flush(self) -> None:
        text = one_line("".join(self.inline))
        self.inline = []
        if text:
            self.blocks.append(self.prefix + escape_text(text))
        self.prefix = ""

    def walk(self, element: Any, depth: int) -> None:
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        if not tag or tag in _SKIP:
            return
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.flush()
            self.blocks.append(heading(int(tag[1]), element.text_content()))
            return
        if tag == "pre":
            self.flush()
            code = element.text_content()
            if code.strip():
                self.blocks.append(fenced(code))
            return
        if tag == "table":
            self.flush()
            rows = [
                [
                    one_line(cell.text_content())
                    for cell in row
                    if isinstance(cell.tag, str) and cell.tag in ("td", "th")
                ]
                for row in element.iter("tr")
            ]
            table = markdown_table(rows)
            if table:
                self.blocks.append("\n".join(table))
            return
        if tag in ("ul", "ol"):
            self.flush()
            for item in element:
                if not isinstance(item.tag, str) or item.tag != "li":
                    continue
                self.flush()
                self.prefix = "  " * depth + ("1. " if tag == "ol" else "- ")
                self.inline.append(item.text or "")
                for child in item:
                    self._child(child, depth + 1)
                self.flush()
            return
        if tag == "br":
            self.inline.append(" ")
            return
        block = tag in _BLOCK
        if block:
            self.flush()
        self.inline.append(element.text or "")
        for child in element:
            self._child(child, depth)
        if block:
            self.flush()

    def _child(self, child: Any, depth: int) -> None:
        self.walk(child, depth)
        self.inline.append(child.tail or "")
