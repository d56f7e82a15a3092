"""Word documents (python-docx) and slide decks (python-pptx).

Both are MIT-licensed, pure Python over lxml, and the libraries whose own test files the benchmark
reads. DOCX: the body in document order — headings at their outline level (``Title`` one above
``Heading 1``), list items with their nesting and numbering, tables as tables (merged cells once),
then the headers and footers (each distinct one once) and the comments with their authors. PPTX:
one section per slide (``## Slide 3: Title``), its shapes top to bottom then left to right (groups
opened), tables as tables, charts as a table of their series, then the speaker notes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from io import BytesIO
from typing import Any

from simone.providers.documents._formats._common import (
    MAX_TABLE_CELLS,
    Extracted,
    FormatSkip,
    demote,
    encrypted_office,
    escape_text,
    heading,
    join_blocks,
    markdown_table,
    one_line,
    open_zip,
)

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def read_docx(data: bytes) -> Extracted:
    """A ``.docx`` file (see the module docstring).

    Raises:
        FormatSkip: not a Word document, or damaged.
    """
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    if encrypted_office(data):
        raise FormatSkip("encrypted DOCX (a password is needed), or a legacy binary .doc renamed")
    open_zip(data, "DOCX")
    try:
        document = docx.Document(BytesIO(data))
    except (KeyError, ValueError) as exc:  # no main document part, or the wrong content type
        raise FormatSkip(f"not a Word document (DOCX): {type(exc).__name__}: {exc}") from exc
    items = list(document.iter_inner_content())
    has_title = any(isinstance(item, Paragraph) and _style_name(item) == "title" for item in items)
    numbering = _Numbering(document)
    blocks: list[str] = []
    title: str | None = None
    list_lines: list[str] = []
    budget = _CellBudget()
    for item in items:
        if isinstance(item, Paragraph):
            text = one_line(item.text)
            if not text:
                continue
            level = _heading_level(item, has_title)
            marker = numbering.marker(item) if level is None else None
            if marker is not None:
                list_lines.append(marker + escape_text(text))
                continue
            if list_lines:
                blocks.append("\n".join(list_lines))
                list_lines = []
            if level is not None:
                title = title or text
                blocks.append(heading(level, text))
            else:
                blocks.append(escape_text(text))
        elif isinstance(item, Table):
            if list_lines:
                blocks.append("\n".join(list_lines))
                list_lines = []
            blocks.append("\n".join(markdown_table(budget.take(_docx_rows(item)))))
    if list_lines:
        blocks.append("\n".join(list_lines))
    blocks.extend(_headers_and_footers(document))
    blocks.extend(_comments(document))
    notes = (budget.note,) if budget.note else ()
    meta = one_line(document.core_properties.title or "")
    return Extracted(title=meta or title, text=join_blocks(blocks), notes=notes)


def _style_name(paragraph: Any) -> str:
    try:
        style = paragraph.style
    except (KeyError, ValueError, AttributeError):  # a style id the styles part does not define
        return ""
    return str(style.name or "").lower() if style is not None else ""


def _heading_level(paragraph: Any, has_title: bool) -> int | None:
    """The paragraph's heading level (its style, or a style it is based on), else ``None``."""
    try:
        style = paragraph.style
    except (KeyError, ValueError, AttributeError):
        return None
    for _ in range(8):  # custom heading styles are based on "Heading N"; chains are short
        if style is None:
            return None
        name = str(style.name or "")
        if name.lower() == "title":
            return 1
        found = _HEADING_STYLE.match(name)
        if found:
            return min(6, int(found[1]) + (1 if has_title else 0))
        style = getattr(style, "base_style", None)
    return None


class _Numbering:
    """List markers: ``-`` for bullets, ``1.`` for numbered levels, indented by nesting level."""

    def __init__(self, document: Any) -> None:
        self._formats: dict[tuple[str, str], str] = {}
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError, AttributeError):  # no numbering part: bullets only
            return
        abstract: dict[str, dict[str, str]] = {}
        for node in root.iter(f"{_W}abstractNum"):
            levels = abstract.setdefault(node.get(f"{_W}abstractNumId", ""), {})
            for lvl in node.iter(f"{_W}lvl"):
                fmt = lvl.find(f"{_W}numFmt")
                levels[lvl.get(f"{_W}ilvl", "0")] = fmt.get(f"{_W}val", "") if fmt is not None else ""
        for num in root.iter(f"{_W}num"):
            ref = num.find(f"{_W}abstractNumId")
            if ref is None:
                continue
            for ilvl, fmt in abstract.get(ref.get(f"{_W}val", ""), {}).items():
                self._formats[(num.get(f"{_W}numId", ""), ilvl)] = fmt

    def marker(self, paragraph: Any) -> str | None:
        ppr = paragraph._p.pPr
        num_pr = ppr.numPr if ppr is not None else None
        name = _style_name(paragraph)
        if num_pr is None:
            if name.startswith("list number"):
                return "1. "
            if name.startswith("list bullet") or name == "list paragraph":
                return "- "
            return None
        num_id = num_pr.numId.val if num_pr.numId is not None else None
        if num_id is None or str(num_id) == "0":  # numId 0 switches numbering off
            return None
        level = int(num_pr.ilvl.val) if num_pr.ilvl is not None else 0
        fmt = self._formats.get((str(num_id), str(level)), "bullet" if "number" not in name else "decimal")
        return "  " * level + ("- " if fmt in ("bullet", "none", "") else "1. ")


def _docx_rows(table: Any) -> Iterator[list[str]]:
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:  # a merged cell: its text once, the columns it spans kept empty
                cells.append("")
                continue
            seen.add(id(cell._tc))
            cells.append(_cell_text(cell))
        yield cells


def _cell_text(cell: Any) -> str:
    parts = [paragraph.text for paragraph in cell.paragraphs]
    for nested in cell.tables:  # a table inside a cell: its rows, cells separated by ";"
        parts.extend("; ".join(cells) for cells in _docx_rows(nested))
    return one_line(" ".join(parts))


def _headers_and_footers(document: Any) -> list[str]:
    seen: set[str] = set()
    found: dict[str, list[str]] = {"Header": [], "Footer": []}
    for section in document.sections:
        for label, parts in (
            ("Header", ("header", "first_page_header", "even_page_header")),
            ("Footer", ("footer", "first_page_footer", "even_page_footer")),
        ):
            for attribute in parts:
                try:
                    part = getattr(section, attribute)
                    if part.is_linked_to_previous:
                        continue
                    lines = [one_line(p.text) for p in part.paragraphs]
                    lines += ["; ".join(cells) for table in part.tables for cells in _docx_rows(table)]
                except (KeyError, ValueError, AttributeError):
                    continue
                text = " / ".join(line for line in lines if line)
                if text and text not in seen:
                    seen.add(text)
                    found[label].append(escape_text(text))
    blocks: list[str] = []
    for label, texts in found.items():
        if texts:
            blocks += [heading(2, f"{label}s" if len(texts) > 1 else label), "\n\n".join(texts)]
    return blocks


def _comments(document: Any) -> list[str]:
    try:
        comments = list(document.comments)
    except (KeyError, ValueError, AttributeError, NotImplementedError):
        return []
    lines: list[str] = []
    for comment in comments:
        text = one_line(" ".join(p.text for p in comment.paragraphs))
        if text:
            author = one_line(comment.author or "") or "unknown"
            lines.append(f"- {author}: {escape_text(text)}")
    return [heading(2, "Comments"), "\n".join(lines)] if lines else []


class _CellBudget:
    """Stops reading tables after :data:`MAX_TABLE_CELLS` cells, with a note saying so."""

    def __init__(self) -> None:
        self.left = MAX_TABLE_CELLS
        self.note = ""

    def take(self, rows: Iterator[list[Any]]) -> Iterator[list[Any]]:
        for row in rows:
            if self.left <= 0:
                self.note = f"tables cut after {MAX_TABLE_CELLS:,} cells"
                return
            self.left -= max(1, len(row))
            yield row


def read_pptx(data: bytes) -> Extracted:
    """A ``.pptx`` deck (see the module docstring).

    Raises:
        FormatSkip: not a PowerPoint deck, or damaged.
    """
    import pptx

    if encrypted_office(data):
        raise FormatSkip("encrypted PPTX (a password is needed), or a legacy binary .ppt renamed")
    open_zip(data, "PPTX")
    try:
        deck = pptx.Presentation(BytesIO(data))
    except (KeyError, ValueError) as exc:
        raise FormatSkip(f"not a PowerPoint deck (PPTX): {type(exc).__name__}: {exc}") from exc
    budget = _CellBudget()
    blocks: list[str] = []
    first_title: str | None = None
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        title = one_line(title_shape.text_frame.text) if title_shape is not None else ""
        first_title = first_title or title or None
        blocks.append(heading(2, f"Slide {number}: {title}" if title else f"Slide {number}"))
        for shape in _shapes_in_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            blocks.extend(_shape_blocks(shape, budget))
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = frame.text.strip() if frame is not None else ""
            if notes:
                blocks += [heading(3, "Speaker notes"), escape_text(notes)]
    if not any(block and not block.startswith("## Slide ") for block in blocks):
        count = len(deck.slides)
        raise FormatSkip(
            f"PPTX without text ({count} slide(s); pictures or media only)"
            if count
            else "PPTX without slides"
        )
    meta = one_line(deck.core_properties.title or "")
    notes_out = (budget.note,) if budget.note else ()
    return Extracted(title=meta or first_title, text=join_blocks(blocks), notes=notes_out)


def _shapes_in_order(shapes: Any) -> list[Any]:
    """Shapes top to bottom, then left to right, group shapes opened in place."""
    out: list[Any] = []
    for shape in sorted(shapes, key=lambda s: (s.top or 0, s.left or 0)):
        if hasattr(shape, "shapes"):  # a group shape
            out.extend(_shapes_in_order(shape.shapes))
        else:
            out.append(shape)
    return out


def _shape_blocks(shape: Any, budget: _CellBudget) -> list[str]:
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = ([one_line(cell.text) for cell in row.cells] for row in shape.table.rows)
        return ["\n".join(markdown_table(budget.take(rows)))]
    if getattr(shape, "has_chart", False) and shape.has_chart:
        return _chart_blocks(shape.chart)
    if _shape_type(shape) == 7:  # MSO_SHAPE_TYPE.EMBEDDED_OLE_OBJECT: an embedded workbook or document
        return _embedded_blocks(shape)
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    lines: list[str] = []
    for paragraph in shape.text_frame.paragraphs:
        text = one_line("".join(run.text for run in paragraph.runs) or paragraph.text)
        if text:
            lines.append("  " * paragraph.level + ("- " if paragraph.level else "") + escape_text(text))
    return ["\n".join(lines)] if lines else []


def _shape_type(shape: Any) -> int | None:
    try:
        kind = shape.shape_type
    except (NotImplementedError, KeyError, ValueError, AttributeError):  # a kind python-pptx does not know
        return None
    return int(kind) if kind is not None else None


_EMBEDDED_READERS = {"Excel.Sheet": "xlsx", "Word.Document": "docx"}


def _embedded_blocks(shape: Any) -> list[str]:
    """An embedded Excel workbook or Word document (OOXML), read with its own reader, headings demoted."""
    try:
        prog_id = str(shape.ole_format.prog_id or "")
        blob = shape.ole_format.blob
    except (AttributeError, KeyError, ValueError):
        return []
    kind = next((k for prefix, k in _EMBEDDED_READERS.items() if prog_id.startswith(prefix)), None)
    if kind is None or not blob or encrypted_office(blob):
        return []
    try:
        if kind == "xlsx":
            from simone.providers.documents._formats._sheets import read_xlsx

            extracted = read_xlsx(blob)
        else:
            extracted = read_docx(blob)
    except FormatSkip:
        return []
    return [f"Embedded {prog_id.split('.')[0]} object:", demote(extracted.text, 2)]


def _chart_blocks(chart: Any) -> list[str]:
    try:
        plot = chart.plots[0]
        categories = [str(c) for c in plot.categories]
        rows: list[list[Any]] = [["", *(series.name for series in plot.series)]]
        values = [list(series.values) for series in plot.series]
        rows += [
            [category, *(v[i] if i < len(v) else "" for v in values)] for i, category in enumerate(categories)
        ]
        title = one_line(chart.chart_title.text_frame.text) if chart.has_title else ""
    except Exception:  # noqa: BLE001 - python-pptx raises NotImplementedError and more on chart kinds it lacks
        return []
    table = "\n".join(markdown_table(rows))
    return [f"Chart: {escape_text(title)}" if title else "Chart:", table] if table else []
