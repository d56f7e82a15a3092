"""PDF text, tables and layout through pdfplumber (MIT; pdfminer.six underneath, pure Python).

Each page becomes a section ``## Page N`` (so every chunk's locator can say ``file.pdf#page=N``):

1. **tables** are found from the page's ruling lines (pdfplumber's ``lines`` strategy) and written as
   pipe tables, rows and cells in reading order; a "table" of one column or one row, or with a
   "cell" of a dozen lines, is a layout box, not a table (its text is read as text), and a table that
   holds others gives way to them; columns ruled but rows not (:func:`_partly_ruled`) and words in
   aligned columns outside the ruled tables (:func:`_unruled`) are tables too when they pass
   :func:`_grid_ok` (prose in columns does not);
2. **text** outside the tables is read word by word, grouped into lines and paragraphs;
3. **columns**: vertical gutters that most lines leave empty make the page two or more columns
   (:func:`_gutters`); each stretch between full-width lines or tables is read column by column;
4. **running headers and footers**: a line in the top or bottom margin of a page whose text (digits
   ignored, so "Page 3 of 9" matches "Page 4 of 9") recurs at that edge on at least half of the
   pages (two at least) is dropped (:func:`_running_lines`);
5. a page without any text (a scanned image) is left out and named in a note: run OCR to index it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from simone.providers.documents._formats._common import (
    MAX_CELL_CHARS,
    Extracted,
    FormatSkip,
    cell_text,
    escape_line,
    heading,
    join_blocks,
    markdown_table,
    one_line,
)

EDGE_MARGIN = 0.12
"""Share of the page height at the top and the bottom where running headers and footers live."""

EDGE_LINES = 2
"""How many lines from each edge of a page may be running headers or footers."""

GUTTER_MIN_WIDTH = 8.0
"""Points of empty vertical strip between two columns (a word space is ~3 points)."""

GUTTER_MAX_CROSSING = 0.1
"""Share of a page's lines that may cross a gutter (titles, full-width lines) and it is still one."""

MAX_CELL_LINES = 12
"""A ruled "cell" of this many lines or more (or over ``MAX_CELL_CHARS``) is a box around text, not a cell."""

LINE_TOLERANCE = 3.0
"""Points by which the tops of two words may differ and the words still share a line."""

PARAGRAPH_GAP = 0.6
"""A vertical gap over this many line heights between two lines starts a new paragraph."""


_Word = tuple[float, float, str]
"""A word's left and right x and its text."""


@dataclass(slots=True)
class _Item:
    """A line of text (its words) or a table (its Markdown lines), placed on the page."""

    x0: float
    x1: float
    top: float
    bottom: float
    lines: list[str]
    words: list[_Word]
    table: bool = False
    side: int = -1
    """The column (0 the leftmost) once the page is split into columns; ``-1``: across them."""


def read_pdf(data: bytes) -> Extracted:
    """A PDF (see the module docstring).

    Raises:
        FormatSkip: encrypted, damaged, or without any text layer.
    """
    import pdfplumber
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect

    encrypted = (PDFPasswordIncorrect, PDFEncryptionError)
    try:
        pdf = pdfplumber.open(BytesIO(data))
    except Exception as exc:
        cause = exc.args[0] if exc.args else None  # pdfplumber wraps pdfminer's errors
        if isinstance(exc, encrypted) or isinstance(cause, encrypted):
            raise FormatSkip("encrypted PDF (a password is needed)") from exc
        raise FormatSkip(f"PDF could not be read: {type(exc).__name__}: {exc}") from exc
    with pdf:
        try:
            pages = [_page_items(page) for page in pdf.pages]
            meta = pdf.metadata.get("Title") if isinstance(pdf.metadata, dict) else None
        except Exception as exc:
            cause = exc.args[0] if exc.args else None
            if isinstance(exc, encrypted) or isinstance(cause, encrypted):
                raise FormatSkip("encrypted PDF (a password is needed)") from exc
            raise FormatSkip(f"PDF could not be read: {type(exc).__name__}: {exc}") from exc
    running = _running_lines(pages)
    blocks: list[str] = []
    empty: list[int] = []
    first_line = ""
    for number, (items, height) in enumerate(pages, start=1):
        kept = [item for item in items if not (item.table is False and _is_running(item, height, running))]
        page_blocks = _page_blocks(kept)
        if not page_blocks:
            if not items:
                empty.append(number)
            continue
        first_line = first_line or next((i.lines[0] for i in kept if not i.table and i.lines), "")
        blocks += [heading(2, f"Page {number}"), *page_blocks]
    if not pages:
        raise FormatSkip("PDF without pages")
    if not blocks:
        raise FormatSkip(
            f"PDF has no text layer ({len(pages)} page(s), likely scanned images); run OCR to index it"
        )
    notes = [f"{len(pages)} page(s)"]
    if empty:
        shown = ", ".join(str(n) for n in empty[:20]) + (" …" if len(empty) > 20 else "")
        notes.append(f"page(s) {shown} skipped: no text layer (scanned images?); run OCR to index them")
    title = one_line(_text(meta)) or one_line(first_line)[:120].lstrip("\\") or None
    return Extracted(title=title, text=join_blocks(blocks), notes=tuple(notes))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        try:
            return (
                value.decode("utf-16")
                if value.startswith((b"\xfe\xff", b"\xff\xfe"))
                else value.decode("latin-1")
            )
        except UnicodeDecodeError:
            return ""
    return value if isinstance(value, str) else ""


def _page_items(page: Any) -> tuple[list[_Item], float]:
    """The page's tables and text lines, placed; and the page height."""
    items: list[_Item] = []
    boxes: list[tuple[float, float, float, float]] = []
    ruled: list[_Grid] = []
    for table in _tables(page):
        cells = table.extract()
        if any(_box_not_cell(cell) for row in cells for cell in row):
            continue  # a ruled box around running text or an unruled table: read as text lines
        ruled.append(_Grid(tuple(table.bbox), cells, []))
    found = _partly_ruled(page, ruled) if page.edges else ruled
    found = sorted([*found, *_unruled(page, found)], key=lambda grid: (grid.bbox[1], grid.bbox[0]))
    for grid in found:
        rows = markdown_table([[cell_text(cell) for cell in row] for row in grid.cells])
        if rows:
            x0, top, x1, bottom = grid.bbox
            items.append(_Item(x0, x1, top, bottom, rows, [], table=True))
            boxes.append(grid.bbox)
    seen: set[tuple[Any, ...]] = set()

    def keep(obj: dict[str, Any]) -> bool:
        """Characters outside the tables, each once (bold is often drawn as the same glyph twice)."""
        if obj.get("object_type") != "char":
            return True
        key = (obj["text"], round(obj["x0"]), round(obj["top"]))
        if key in seen:
            return False
        seen.add(key)
        cx, cy = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
        return not any(x0 <= cx <= x1 and top <= cy <= bottom for x0, top, x1, bottom in boxes)

    text_page = page.filter(keep)
    words = text_page.extract_words(keep_blank_chars=False, use_text_flow=False, extra_attrs=[])
    items += _lines(words)
    return items, float(page.height)


def _box_not_cell(cell: str | None) -> bool:
    """Whether a "cell" holds more text than a table cell does: then the table is a layout box."""
    return cell is not None and (cell.count("\n") >= MAX_CELL_LINES or len(cell) > MAX_CELL_CHARS)


def _tables(page: Any) -> list[Any]:
    found = [
        table
        for table in page.find_tables()
        if len(table.rows) >= 2 and max((len(row.cells) for row in table.rows), default=0) >= 2
    ]

    def inside(inner: Any, outer: Any) -> bool:
        a, b = inner.bbox, outer.bbox
        return (
            inner is not outer
            and a[0] >= b[0] - 1
            and a[1] >= b[1] - 1
            and a[2] <= b[2] + 1
            and a[3] <= b[3] + 1
        )

    return [table for table in found if not any(inside(other, table) for other in found)]


@dataclass(slots=True)
class _Grid:
    """A table found on the page: its box and its cells, row by row."""

    bbox: tuple[float, float, float, float]
    cells: list[list[str | None]]
    edges: list[float]
    """The x of each column's left edge."""

    @classmethod
    def of(cls, table: Any) -> _Grid:
        """A table found from the words' alignment: its box, cells and column edges.

        Empty rows (the text strategy makes one between each two lines) are dropped, and so are rows
        of one filled cell at its top and bottom (a title or a caption caught at the table's edge);
        the box shrinks to the rows kept, so their text is read as text.
        """
        rows = [
            (row.bbox, cells)
            for row, cells in zip(table.rows, table.extract(), strict=True)
            if any((cell or "").strip() for cell in cells)
        ]
        while rows and sum(1 for cell in rows[0][1] if (cell or "").strip()) < 2:
            rows.pop(0)
        while rows and sum(1 for cell in rows[-1][1] if (cell or "").strip()) < 2:
            rows.pop()
        edges = sorted({float(cell[0]) for cell in table.cells})
        if not rows:
            return cls(tuple(table.bbox), [], edges)
        box = (
            min(bbox[0] for bbox, _ in rows),
            min(bbox[1] for bbox, _ in rows),
            max(bbox[2] for bbox, _ in rows),
            max(bbox[3] for bbox, _ in rows),
        )
        return cls(box, [cells for _, cells in rows], edges)


MIXED_SETTINGS: dict[str, Any] = {
    "vertical_strategy": "lines",
    "horizontal_strategy": "text",
    "snap_tolerance": 8,
    "intersection_tolerance": 4,
}
"""Columns from ruling lines, rows from the text (pdfplumber's ``test_issue_466_mixed_strategy``)."""

TEXT_SETTINGS: dict[str, Any] = {"vertical_strategy": "text", "horizontal_strategy": "text"}
"""Columns and rows both from the words' alignment (pdfplumber's ``text`` strategy)."""

GRID_MIN_FILLED = 0.6
"""Share of an unruled table's cells that must hold text."""

GRID_MAX_WORDS = 4
"""Median words per filled cell above which an unruled "table" is prose cut into columns."""

GRID_MAX_CHARS = 24
"""Median characters per filled cell above which it is prose too (some PDFs draw no spaces)."""


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _partly_ruled(page: Any, ruled: list[_Grid]) -> list[_Grid]:
    """The ruled tables, with tables whose columns are ruled but whose rows are not (see below).

    pdfplumber's mixed strategy (:data:`MIXED_SETTINGS`) finds them. One that overlaps no ruled table
    is added when it reads as a table (:func:`_grid_ok`); one that overlaps a single ruled table with
    as many columns replaces it when that table's rows are several rows run together (every cell of
    such a row holds the same number of lines) and the mixed table holds one line per cell.
    """
    out = list(ruled)
    for table in page.find_tables(MIXED_SETTINGS):
        grid = _Grid.of(table)
        if not _grid_ok(page, grid):
            continue
        over = [other for other in out if _overlaps(other.bbox, grid.bbox)]
        if not over:
            out.append(grid)
        elif len(over) == 1 and _run_together(over[0], grid):
            out[out.index(over[0])] = grid
    return sorted(out, key=lambda grid: (grid.bbox[1], grid.bbox[0]))


def _run_together(ruled: _Grid, mixed: _Grid) -> bool:
    """Whether ``mixed`` splits the rows of ``ruled`` that hold several rows each (see above)."""
    if _width(ruled.cells) != _width(mixed.cells) or any("\n" in (c or "") for r in mixed.cells for c in r):
        return False
    extra = 0
    for row in ruled.cells:
        counts = {cell.count("\n") + 1 for cell in row if cell}
        if len(counts) != 1 or (counts != {1} and any(not cell for cell in row)):
            return False
        extra += counts.pop() - 1
    return extra > 0 and len(mixed.cells) == len(ruled.cells) + extra


def _unruled(page: Any, ruled: Sequence[_Grid] = ()) -> list[_Grid]:
    """Tables without ruling lines, beside the ``ruled`` ones found on the page already.

    pdfplumber's ``text`` strategy, run on the page without the characters inside ``ruled`` tables
    (their aligned cells would otherwise be taken again, or run into an unruled table next to them);
    each kept only when it reads as a table (:func:`_grid_ok`) and overlaps no ruled one.
    """
    boxes = [grid.bbox for grid in ruled]

    def outside(obj: dict[str, Any]) -> bool:
        if obj.get("object_type") != "char":
            return True
        cx, cy = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
        return not any(x0 <= cx <= x1 and top <= cy <= bottom for x0, top, x1, bottom in boxes)

    text_page = page.filter(outside) if boxes else page
    grids = [_Grid.of(table) for table in text_page.find_tables(TEXT_SETTINGS)]
    return [
        grid
        for grid in grids
        if not any(_overlaps(grid.bbox, box) for box in boxes) and _grid_ok(text_page, grid)
    ]


def _width(cells: list[list[str | None]]) -> int:
    return max((len(row) for row in cells), default=0)


def _grid_ok(page: Any, grid: _Grid) -> bool:
    """Whether cells found from the words' alignment are a table and not text cut into columns.

    At least three rows and two columns; :data:`GRID_MIN_FILLED` of the cells hold text, each of
    one line, with a median of at most :data:`GRID_MAX_WORDS` words and :data:`GRID_MAX_CHARS`
    characters (columns of prose hold more); and
    no word of the page crosses a column edge (text that merely lines up by chance is cut mid-word).
    """
    cells = grid.cells
    if len(cells) < 3 or _width(cells) < 2:
        return False
    flat = [cell or "" for row in cells for cell in row]
    filled = [cell for cell in flat if cell.strip()]
    if len(filled) < GRID_MIN_FILLED * len(flat) or any("\n" in cell for cell in filled):
        return False
    middle = len(filled) // 2
    if sorted(len(cell.split()) for cell in filled)[middle] > GRID_MAX_WORDS:
        return False
    if sorted(len(cell) for cell in filled)[middle] > GRID_MAX_CHARS:
        return False
    x0, top, x1, bottom = grid.bbox
    inner = [x for x in grid.edges if x0 + 1 < x < x1 - 1]
    for word in page.crop(grid.bbox, strict=False).extract_words():
        if any(float(word["x0"]) + 1 < x < float(word["x1"]) - 1 for x in inner):
            return False
    return True


def _lines(words: Sequence[dict[str, Any]]) -> list[_Item]:
    """Words grouped into lines: tops within a few points of the line's first word, then left to right."""
    groups: list[list[dict[str, Any]]] = []
    for word in sorted(words, key=lambda w: (float(w["top"]), float(w["x0"]))):
        first = groups[-1][0] if groups else None
        if first is not None and float(word["top"]) - float(first["top"]) <= LINE_TOLERANCE:
            groups[-1].append(word)
        else:
            groups.append([word])
    lines: list[_Item] = []
    for group in groups:
        group.sort(key=lambda w: float(w["x0"]))
        placed = [(float(w["x0"]), float(w["x1"]), str(w["text"])) for w in group]
        lines.append(
            _Item(
                placed[0][0],
                max(x1 for _, x1, _ in placed),
                min(float(w["top"]) for w in group),
                max(float(w["bottom"]) for w in group),
                [" ".join(text for _, _, text in placed)],
                placed,
            )
        )
    return lines


def _gutters(items: list[_Item]) -> list[float]:
    """The x of each gutter between text columns on the page (see the module docstring); ``[]`` for one.

    A gutter is a vertical strip at least :data:`GUTTER_MIN_WIDTH` wide, away from the text's outer
    edges, that at most :data:`GUTTER_MAX_CROSSING` of the lines cross. The columns it makes must each
    hold a fifth of the lines and read like prose (a median of three words or more per line piece):
    an unruled table has gutters too, but it is read row by row.
    """
    texts = [item for item in items if not item.table]
    if len(texts) < 6:
        return []
    left = min(item.x0 for item in texts)
    width = max(item.x1 for item in texts) - left
    if width < 4 * GUTTER_MIN_WIDTH:
        return []
    bins = [0] * (int(width) + 2)
    for item in texts:
        covered: set[int] = set()
        for x0, x1, _ in item.words:
            covered.update(range(int(x0 - left), min(len(bins), int(math.ceil(x1 - left)))))
        for x in covered:
            bins[x] += 1
    allowed = GUTTER_MAX_CROSSING * len(texts)
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for x, count in enumerate([*bins, len(texts) + 1]):
        if count <= allowed and 0.15 * width <= x <= 0.85 * width:
            start = x if start is None else start
            continue
        if start is not None and x - start >= GUTTER_MIN_WIDTH:
            runs.append((start, x))
        start = None
    candidates = [left + (a + b) / 2 for a, b in runs]
    for gutters in (candidates, *([g] for g in sorted(candidates, key=lambda g: -_run_width(runs, g, left)))):
        if gutters and _columns_hold(texts, gutters):
            return gutters
    return []


def _run_width(runs: list[tuple[int, int]], gutter: float, left: float) -> float:
    return next(b - a for a, b in runs if left + (a + b) / 2 == gutter)


def _columns_hold(texts: list[_Item], gutters: list[float]) -> bool:
    words_per_piece: list[list[int]] = [[] for _ in range(len(gutters) + 1)]
    for item in texts:
        columns = Counter(_column(word, gutters) for word in item.words)
        for column, count in columns.items():
            if column >= 0:
                words_per_piece[column].append(count)
    return all(
        len(counts) >= 0.2 * len(texts) and sorted(counts)[len(counts) // 2] >= 3
        for counts in words_per_piece
    )


def _column(word: _Word, gutters: list[float]) -> int:
    """The column a word is in, or ``-1`` when it crosses a gutter."""
    for index, gutter in enumerate(gutters):
        if word[0] < gutter < word[1]:
            return -1
        if word[1] <= gutter:
            return index
    return len(gutters)


def _split(item: _Item, gutters: list[float]) -> list[_Item]:
    """A line cut at the gutters into one piece per column (whole when a word crosses a gutter)."""
    if item.table:
        ends = {
            _column((item.x0, item.x0 + 0.01, ""), gutters),
            _column((item.x1 - 0.01, item.x1, ""), gutters),
        }
        item.side = ends.pop() if len(ends) == 1 else -1
        return [item]
    columns = [_column(word, gutters) for word in item.words]
    if -1 in columns:
        item.side = -1
        return [item]
    pieces = []
    for column in sorted(set(columns)):
        words = [word for word, at in zip(item.words, columns, strict=True) if at == column]
        text = " ".join(text for _, _, text in words)
        pieces.append(_Item(words[0][0], words[-1][1], item.top, item.bottom, [text], words, side=column))
    return pieces


def _reading_order(items: list[_Item]) -> list[_Item]:
    """Items top to bottom; in columns, each stretch between full-width items column by column."""
    items = sorted(items, key=lambda item: (item.top, item.x0))
    gutters = _gutters(items)
    if not gutters:
        return items
    out: list[_Item] = []
    stretch: list[_Item] = []

    def flush() -> None:
        out.extend(sorted(stretch, key=lambda i: (i.side, i.top, i.x0)))
        stretch.clear()

    for item in (piece for line in items for piece in _split(line, gutters)):
        if item.side == -1:
            flush()
            out.append(item)
        else:
            stretch.append(item)
    flush()
    return out


def _page_blocks(items: list[_Item]) -> list[str]:
    """Paragraphs and tables of one page, in reading order."""
    blocks: list[str] = []
    paragraph: list[str] = []
    previous: _Item | None = None
    for item in _reading_order(items):
        if item.table:
            if paragraph:
                blocks.append("\n".join(paragraph))
                paragraph = []
            blocks.append("\n".join(item.lines))
            previous = None
            continue
        height = max(item.bottom - item.top, 1.0)
        if (
            previous is not None
            and paragraph
            and (
                item.side != previous.side
                or item.top - previous.bottom > PARAGRAPH_GAP * height
                or item.top < previous.top
            )
        ):
            blocks.append("\n".join(paragraph))
            paragraph = []
        paragraph.append(escape_line(item.lines[0]))
        previous = item
    if paragraph:
        blocks.append("\n".join(paragraph))
    return blocks


_DIGITS = re.compile(r"\d+")


def _edge_key(text: str) -> str:
    """A line as compared across pages: digits dropped (page numbers), case and spacing ignored."""
    return " ".join(_DIGITS.sub(" ", text.lower()).split())


def _edge_lines(items: list[_Item], height: float) -> list[tuple[str, str]]:
    lines = sorted((item for item in items if not item.table), key=lambda item: item.top)
    top = [("top", _edge_key(i.lines[0])) for i in lines[:EDGE_LINES] if i.bottom <= EDGE_MARGIN * height]
    bottom = [
        ("bottom", _edge_key(i.lines[0])) for i in lines[-EDGE_LINES:] if i.top >= (1 - EDGE_MARGIN) * height
    ]
    return top + bottom


def _running_lines(pages: list[tuple[list[_Item], float]]) -> set[tuple[str, str]]:
    """``(edge, key)`` of the lines that recur at a page edge (see the module docstring)."""
    with_text = [page for page in pages if page[0]]
    if len(with_text) < 2:
        return set()
    counts = Counter(key for items, height in with_text for key in set(_edge_lines(items, height)))
    needed = max(2, math.ceil(0.5 * len(with_text)))
    return {key for key, count in counts.items() if count >= needed}


def _is_running(item: _Item, height: float, running: set[tuple[str, str]]) -> bool:
    if not running:
        return False
    key = _edge_key(item.lines[0])
    if item.bottom <= EDGE_MARGIN * height and ("top", key) in running:
        return True
    return item.top >= (1 - EDGE_MARGIN) * height and ("bottom", key) in running
