"""What every format reader shares: the result type, the skip, Markdown building blocks and guards.

A reader's text is Markdown-like, because the chunker sections Markdown at its headings:

* a heading is an ATX line (``## Sheet: Prices``), its level the document's own outline level;
* a table is a pipe table whose first row is its header (``| a | b |`` then ``| --- | --- |``), one
  line per row with the cells in reading order, so a table is never split inside a row;
* any other line that would read as Markdown structure (``# of items``, a ```` ``` ```` fence) is
  escaped, so extracted text never opens a heading or a code fence by accident.

Containers (DOCX, PPTX, XLSX, ODF, EPUB) are zip files: :func:`open_zip` refuses an encrypted or
corrupt archive and one that would unpack to more than :data:`MAX_UNPACKED_BYTES` (a zip bomb)
before any library reads it. XML is parsed with entity resolution and network access off.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from io import BytesIO
from typing import Any

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
"""A container whose members add up to more than this when unpacked is skipped (a zip bomb)."""

MAX_TABLE_CELLS = 200_000
"""Cells read from one workbook or document's tables; the rest is left out with a note."""

MAX_CELL_CHARS = 2_000
"""A longer cell is cut (with an ellipsis): a table row stays one readable line."""


class FormatSkip(Exception):
    """The file cannot be read as its format; ``reason`` says why, in words for the index report."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a reader got out of one file.

    Attributes:
        title: the document's own title (metadata, first heading), ``None`` to use the file name.
        text: Markdown-like text (see the module docstring); line numbers in locators refer to it.
        notes: harmless oddities worth reporting (pages without a text layer, cells left out…).
    """

    title: str | None
    text: str
    notes: tuple[str, ...] = field(default_factory=tuple)


_ATX_LIKE = re.compile(r"^( {0,3})(#{1,6}(?:[ \t]|$))")
_FENCE_LIKE = re.compile(r"^( {0,3})(`{3,}|~{3,})")


def escape_line(line: str) -> str:
    r"""``line`` with a leading ``#`` heading marker or code fence escaped (``\#``), else unchanged."""
    if "#" not in line[:10] and "`" not in line[:6] and "~" not in line[:6]:
        return line
    match = _ATX_LIKE.match(line) or _FENCE_LIKE.match(line)
    if match is None:
        return line
    return f"{match[1]}\\{line[len(match[1]) :]}"


def escape_text(text: str) -> str:
    """Every line of ``text`` through :func:`escape_line`."""
    return "\n".join(escape_line(line) for line in text.split("\n"))


def one_line(text: str) -> str:
    """``text`` on one line: runs of whitespace (newlines too) become one space."""
    return " ".join(text.split())


def heading(level: int, text: str) -> str:
    """An ATX heading line (level cut to 1…6), or ``""`` when ``text`` is blank."""
    text = one_line(text)
    return f"{'#' * max(1, min(level, 6))} {text}" if text else ""


def cell_text(value: Any) -> str:
    """A table cell's value as one line of text (numbers without a spurious ``.0``, dates ISO)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds").removesuffix(" 00:00:00")
    if isinstance(value, (date, time)):
        return value.isoformat()
    text = one_line(str(value))
    if len(text) > MAX_CELL_CHARS:
        text = text[: MAX_CELL_CHARS - 1] + "…"
    return text


def markdown_table(rows: Iterable[Sequence[Any]]) -> list[str]:
    """A pipe table of ``rows``, the first one its header; ``[]`` when no cell holds text.

    Rows are padded to the widest; rows and columns with no text at all are dropped; ``|`` in a cell
    is escaped. The delimiter row follows the header, so Markdown readers show a real table.
    """
    cells = [[cell_text(value).replace("|", "\\|") for value in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return []
    width = max(len(row) for row in cells)
    cells = [row + [""] * (width - len(row)) for row in cells]
    keep = [column for column in range(width) if any(row[column] for row in cells)]
    cells = [[row[column] for column in keep] for row in cells]
    lines = [_row(cells[0]), _row(["---"] * len(keep))]
    lines.extend(_row(row) for row in cells[1:])
    return lines


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def demote(markdown: str, levels: int) -> str:
    """``markdown`` with its ATX headings (outside fenced code) ``levels`` deeper (at most six ``#``)."""
    if levels <= 0:
        return markdown
    out: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opened = _FENCE_LIKE.match(line)
        if fence is not None:
            if opened and opened[2].startswith(fence):
                fence = None
            out.append(line)
            continue
        if opened:
            fence = opened[2][0] * 3
            out.append(line)
            continue
        atx = re.match(r"^ {0,3}(#{1,6})([ \t].*|$)", line)
        out.append("#" * min(6, len(atx[1]) + levels) + atx[2] if atx else line)
    return "\n".join(out)


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def join_blocks(blocks: Iterable[str]) -> str:
    """Non-empty blocks separated by one blank line (the chunker's paragraph boundary)."""
    return "\n\n".join(block.strip("\n") for block in blocks if block.strip())


def open_zip(data: bytes, what: str) -> zipfile.ZipFile:
    """``data`` as a zip archive, after the checks in the module docstring.

    Raises:
        FormatSkip: not a zip file, encrypted, or too large unpacked.
    """
    try:
        archive = zipfile.ZipFile(BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise FormatSkip(f"{what} is not a readable zip container (corrupt or truncated): {exc}") from exc
    if any(member.flag_bits & 0x1 for member in members):
        raise FormatSkip(f"encrypted {what} (a password is needed)")
    unpacked = sum(member.file_size for member in members)
    if unpacked > MAX_UNPACKED_BYTES:
        raise FormatSkip(
            f"{what} would unpack to {unpacked:,} bytes, over the {MAX_UNPACKED_BYTES:,}-byte limit "
            "(a zip bomb or an unusually large document)"
        )
    return archive


def parse_xml(data: bytes) -> Any:
    """The root element of XML ``data`` (lxml; no entities resolved, no network, no huge trees).

    Raises:
        FormatSkip: the XML is malformed.
    """
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=False)
    try:
        return etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as exc:
        raise FormatSkip(f"malformed XML: {exc}") from exc


def encrypted_office(data: bytes) -> bool:
    """Whether ``data`` is an OLE compound file (a password-protected OOXML document, or a legacy .doc)."""
    return data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
