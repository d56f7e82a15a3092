"""OpenDocument text (``.odt``): the ``content.xml`` of the package, read with lxml.

ODF is a zip of XML files with a small, stable vocabulary, so no library beyond lxml (already a
dependency) is needed: ``text:h`` headings at their ``outline-level``, paragraphs, lists with
their nesting, ``table:table`` as tables, sections opened in place, and ``office:annotation``
comments gathered at the end with their authors. The title comes from ``meta.xml``.
"""

from __future__ import annotations

from typing import Any

from simone.providers.documents._formats._common import (
    Extracted,
    FormatSkip,
    escape_text,
    heading,
    join_blocks,
    markdown_table,
    one_line,
    open_zip,
    parse_xml,
)

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_SKIPPED = frozenset({f"{_OFFICE}annotation", f"{_TEXT}note-citation", f"{_TEXT}tracked-changes"})


def odf_content(data: bytes, what: str) -> Any:
    """The root of an ODF package's ``content.xml``.

    Raises:
        FormatSkip: not an ODF package, encrypted, or malformed.
    """
    archive = open_zip(data, what)
    try:
        manifest = archive.read("META-INF/manifest.xml")
    except KeyError:
        manifest = b""
    if b"encryption-data" in manifest:
        raise FormatSkip(f"encrypted {what} (a password is needed)")
    try:
        content = archive.read("content.xml")
    except KeyError as exc:
        raise FormatSkip(f"not an OpenDocument file ({what}): no content.xml") from exc
    return parse_xml(content)


def odf_title(data: bytes) -> str | None:
    """``dc:title`` from the package's ``meta.xml``, if any."""
    try:
        root = parse_xml(open_zip(data, "ODF").read("meta.xml"))
    except (KeyError, FormatSkip):
        return None
    found = next(root.iter(f"{_DC}title"), None)
    return one_line(found.text or "") or None if found is not None else None


def odf_text(element: Any) -> str:
    """The text of a paragraph-like element: ``text:s`` spaces, tabs and line breaks honoured."""
    parts: list[str] = [element.text or ""]
    for child in element:
        tag = child.tag
        if tag == f"{_TEXT}s":
            parts.append(" " * min(int(child.get(f"{_TEXT}c", "1") or 1), 64))
        elif tag in (f"{_TEXT}tab", f"{_TEXT}line-break"):
            parts.append(" ")
        elif tag not in _SKIPPED and isinstance(tag, str):
            parts.append(odf_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def read_odt(data: bytes) -> Extracted:
    """An OpenDocument text file (see the module docstring).

    Raises:
        FormatSkip: not an ODT file, encrypted, or malformed.
    """
    root = odf_content(data, "ODT")
    body = next(root.iter(f"{_OFFICE}text"), None)
    if body is None:
        raise FormatSkip("not an OpenDocument text (ODT): no office:text body")
    blocks: list[str] = []
    first_heading: list[str] = []
    _walk(body, blocks, first_heading, 0)
    comments = []
    for note in root.iter(f"{_OFFICE}annotation"):
        author = one_line("".join(note.findtext(f"{_DC}creator") or "")) or "unknown"
        text = one_line(" ".join(odf_text(p) for p in note.iter(f"{_TEXT}p")))
        if text:
            comments.append(f"- {author}: {escape_text(text)}")
    if comments:
        blocks += [heading(2, "Comments"), "\n".join(comments)]
    text = join_blocks(blocks)
    if not text:
        raise FormatSkip("ODT without text")
    return Extracted(title=odf_title(data) or (first_heading[0] if first_heading else None), text=text)


def _walk(element: Any, blocks: list[str], first_heading: list[str], depth: int) -> None:
    for child in element:
        tag = child.tag
        if tag == f"{_TEXT}h":
            text = one_line(odf_text(child))
            if text:
                first_heading.append(text)
                blocks.append(heading(int(child.get(f"{_TEXT}outline-level", "1") or 1), text))
        elif tag == f"{_TEXT}p":
            text = one_line(odf_text(child))
            if text:
                blocks.append(escape_text(text))
        elif tag == f"{_TEXT}list":
            lines: list[str] = []
            _list_lines(child, lines, depth)
            if lines:
                blocks.append("\n".join(lines))
        elif tag == f"{_TABLE}table":
            rows = [
                [one_line(" ".join(odf_text(p) for p in cell.iter(f"{_TEXT}p"))) for cell in row
                 if cell.tag in (f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell")]
                for row in child.iter(f"{_TABLE}table-row")
            ]  # fmt: skip
            blocks.append("\n".join(markdown_table(rows)))
        elif isinstance(tag, str) and tag not in _SKIPPED:
            _walk(child, blocks, first_heading, depth)  # sections, frames, text boxes


def _list_lines(element: Any, lines: list[str], depth: int) -> None:
    for item in element:
        if item.tag not in (f"{_TEXT}list-item", f"{_TEXT}list-header"):
            continue
        for child in item:
            if child.tag == f"{_TEXT}list":
                _list_lines(child, lines, depth + 1)
            elif child.tag in (f"{_TEXT}p", f"{_TEXT}h"):
                text = one_line(odf_text(child))
                if text:
                    lines.append("  " * depth + "- " + escape_text(text))
