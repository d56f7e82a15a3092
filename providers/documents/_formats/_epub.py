"""EPUB 2 and 3 books: the package's spine in reading order, each chapter a section.

An EPUB is a zip holding an OPF package file (found through ``META-INF/container.xml``) whose
spine lists the chapters; each is XHTML, read by :func:`~._html.html_to_markdown`. No EPUB library
is needed (EbookLib, the usual one, is AGPL-licensed): zipfile and lxml are enough. A chapter's own
headings are kept one level below the chapter (``## Chapter``, ``### its sections``); its title is
its first heading, else its ``<title>``, else its file name. A DRM-encrypted book is skipped.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from simone.providers.documents._formats._common import (
    Extracted,
    FormatSkip,
    demote,
    heading,
    join_blocks,
    one_line,
    open_zip,
    parse_xml,
)
from simone.providers.documents._formats._html import html_to_markdown

_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_FIRST_HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/x-dtbook+xml"})


def read_epub(data: bytes) -> Extracted:
    """An ``.epub`` book (see the module docstring).

    Raises:
        FormatSkip: not an EPUB, DRM-encrypted, or without readable chapters.
    """
    archive = open_zip(data, "EPUB")
    names = set(archive.namelist())
    if "META-INF/encryption.xml" in names and b"EncryptedData" in archive.read("META-INF/encryption.xml"):
        raise FormatSkip("EPUB with encrypted content (DRM); it cannot be read without the key")
    try:
        container = parse_xml(archive.read("META-INF/container.xml"))
    except KeyError as exc:
        raise FormatSkip("not an EPUB: no META-INF/container.xml") from exc
    rootfile = next(container.iter(f"{_CONTAINER}rootfile"), None)
    opf_path = rootfile.get("full-path", "") if rootfile is not None else ""
    if opf_path not in names:
        raise FormatSkip(f"not an EPUB: its package file {opf_path or '(none)'} is missing")
    package = parse_xml(archive.read(opf_path))
    base = posixpath.dirname(opf_path)
    title_node = next(package.iter(f"{_DC}title"), None)
    title = one_line(title_node.text or "") if title_node is not None else ""
    manifest = {
        item.get("id", ""): (item.get("href", ""), item.get("media-type", ""), item.get("properties", ""))
        for item in package.iter(f"{_OPF}item")
    }
    blocks: list[str] = []
    notes: list[str] = []
    for itemref in package.iter(f"{_OPF}itemref"):
        href, media_type, properties = manifest.get(itemref.get("idref", ""), ("", "", ""))
        if media_type not in _HTML_TYPES or "nav" in properties.split():
            continue  # the EPUB 3 table of contents repeats the chapter titles
        member = posixpath.normpath(posixpath.join(base, unquote(href.split("#", 1)[0])))
        try:
            page_title, text = html_to_markdown(archive.read(member))
        except KeyError:
            notes.append(f"chapter {member} is listed but missing")
            continue
        except FormatSkip as skip:
            notes.append(f"chapter {member} skipped: {skip.reason}")
            continue
        if not text.strip():
            continue
        first = _FIRST_HEADING.search(text)
        if first is not None and text[: first.start()].strip() == "":
            blocks.append(demote(_promote_first(text), 1))
        else:
            chapter = page_title or posixpath.splitext(posixpath.basename(member))[0]
            blocks += [heading(2, chapter), demote(text, 2)]
    if not blocks:
        raise FormatSkip("EPUB without readable chapters")
    return Extracted(title=title or None, text=join_blocks(blocks), notes=tuple(notes))


def _promote_first(text: str) -> str:
    """``text`` shifted so that its first heading is level 1 (it becomes ``##`` once demoted)."""
    level = len(text) - len(text.lstrip("#"))
    if level <= 1:
        return text
    lines = []
    for line in text.split("\n"):
        match = re.match(r"^(#{1,6})( .*)$", line)
        lines.append("#" * max(1, len(match[1]) - (level - 1)) + match[2] if match else line)
    return "\n".join(lines)
