"""reStructuredText and AsciiDoc with their real heading structure, line for line.

Both are rewritten in place so that every line keeps its number (locators point into the file as
it is): a section title becomes an ATX heading on the title's own line and its adornment lines
become blank. reStructuredText levels follow the order in which adornment styles first appear
(character, and over- and underline or underline only), as docutils assigns them. AsciiDoc
``= Title``, ``== Section``… become ``#``, ``##``…; nothing inside a delimited block (``----``,
``....``, ``====``, ``////``…) is taken for a title. Other lines that would read as Markdown
structure (``# comment`` in an indented code block, a stray fence) are escaped, the rest is kept.
"""

from __future__ import annotations

import re
import unicodedata

from simone.providers.documents._formats._common import escape_line, one_line

_ADORNMENT_CHARS = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ATX_LIKE = re.compile(r"^ {0,3}(#{1,6}([ \t]|$)|`{3,}|~{3,})")
_ADOC_TITLE = re.compile(r"^(={1,6})[ \t]+(\S.*?)[ \t]*$")
_ADOC_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\+{4,}|\*{4,}|_{4,}|/{4,}|`{3,}|--)[ \t]*$")


def _width(text: str) -> int:
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


def _adornment(line: str) -> str | None:
    stripped = line.rstrip()
    if len(stripped) >= 2 and stripped[0] in _ADORNMENT_CHARS and stripped == stripped[0] * len(stripped):
        return stripped
    return None


def _guard(line: str) -> str:
    """A line that is not a title, made unable to open a Markdown heading or fence."""
    if not _ATX_LIKE.match(line):
        return line
    return " " + line if line[:1] == " " else escape_line(line)  # indented code: one more space


def rst_to_markdown(text: str) -> tuple[str, str | None]:
    """``(text, title)``: RST section titles as ATX headings (same line count), and the first title."""
    lines = text.split("\n")
    out = list(lines)
    styles: list[tuple[str, bool]] = []
    title: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index].rstrip()
        starts_block = index == 0 or not lines[index - 1].strip()
        over = _adornment(line)
        if (
            starts_block
            and over is not None
            and index + 2 < len(lines)
            and lines[index + 1].strip()
            and _adornment(lines[index + 1]) is None
            and lines[index + 2].rstrip() == line
            and _width(lines[index + 1].strip()) <= len(line)
        ):
            level = _level(styles, (line[0], True))
            name = one_line(lines[index + 1])
            out[index], out[index + 1], out[index + 2] = "", "#" * level + " " + name, ""
            title = title or name
            index += 3
            continue
        if (
            starts_block
            and line
            and line[0] not in " \t"
            and over is None
            and index + 1 < len(lines)
            and (under := _adornment(lines[index + 1])) is not None
            and _width(line) <= len(under)
            and (
                index + 2 >= len(lines)
                or not lines[index + 2].strip()
                or _adornment(lines[index + 2]) is None
            )
        ):
            level = _level(styles, (under[0], False))
            name = one_line(line)
            out[index], out[index + 1] = "#" * level + " " + name, ""
            title = title or name
            index += 2
            continue
        out[index] = _guard(lines[index])
        index += 1
    return "\n".join(out), title


def _level(styles: list[tuple[str, bool]], style: tuple[str, bool]) -> int:
    if style not in styles:
        styles.append(style)
    return min(6, styles.index(style) + 1)


def asciidoc_to_markdown(text: str) -> tuple[str, str | None]:
    """``(text, title)``: AsciiDoc section titles as ATX headings (same line count), and the title."""
    out: list[str] = []
    block: str | None = None
    title: str | None = None
    for line in text.split("\n"):
        delimiter = _ADOC_DELIMITER.match(line)
        if block is not None:
            if delimiter and delimiter[1] == block:
                block = None
            out.append(_guard(line))
            continue
        if delimiter:
            block = delimiter[1]
            out.append(_guard(line))
            continue
        found = _ADOC_TITLE.match(line)
        if found:
            name = one_line(found[2])
            title = title or name
            out.append("#" * len(found[1]) + " " + name)
            continue
        out.append(line if line.startswith("#") and not line.startswith("#{") else _guard(line))
    return "\n".join(out), title
