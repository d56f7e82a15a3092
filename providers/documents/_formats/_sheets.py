"""Spreadsheets: XLSX (openpyxl), ODS (its ``content.xml`` through lxml) and CSV/TSV (stdlib csv).

Every sheet becomes a section (``## Sheet: Prices``) holding one table: its first row with text is
the header, the rows follow in order, empty rows and columns are dropped. openpyxl (MIT, pure
Python) reads cached values (``data_only``: what a formula last computed, as the user saw it) in
read-only streaming mode; ODS needs no library beyond lxml, which the project already has (odfpy,
the usual one, has had no release since 2020). A CSV's delimiter is sniffed (``,``, ``;``, tab or
``|``); a TSV's is a tab.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from io import BytesIO, StringIO
from typing import Any

from simone.providers.documents._formats._common import (
    MAX_TABLE_CELLS,
    Extracted,
    FormatSkip,
    encrypted_office,
    heading,
    join_blocks,
    markdown_table,
    open_zip,
)

MAX_EMPTY_RUN = 1_000
"""Consecutive empty rows after which a sheet is taken to have ended (formatting to row 1,048,576)."""


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_TABLE_CELLS
        self.cut = False

    def rows(self, rows: Iterator[list[Any]]) -> Iterator[list[Any]]:
        empty = 0
        for row in rows:
            if self.left <= 0:
                self.cut = True
                return
            if not any(value not in (None, "") for value in row):
                empty += 1
                if empty > MAX_EMPTY_RUN:
                    return
                continue
            empty = 0
            self.left -= max(1, len(row))
            yield row


def _sheets_text(sheets: list[tuple[str, list[str]]], budget: _Budget, what: str) -> Extracted:
    blocks: list[str] = []
    for name, table in sheets:
        if table:
            blocks += [heading(2, f"Sheet: {name}"), "\n".join(table)]
    if not blocks:
        raise FormatSkip(f"{what} without any cell text ({len(sheets)} sheet(s))")
    notes = (f"cells after the first {MAX_TABLE_CELLS:,} left out",) if budget.cut else ()
    return Extracted(title=None, text=join_blocks(blocks), notes=notes)


def read_xlsx(data: bytes) -> Extracted:
    """An ``.xlsx``/``.xlsm`` workbook, one section and table per worksheet (charts and images left out).

    Raises:
        FormatSkip: encrypted, not a workbook, or damaged.
    """
    import openpyxl

    if encrypted_office(data):
        raise FormatSkip("encrypted XLSX (a password is needed) or a legacy .xls file")
    open_zip(data, "XLSX")
    try:
        workbook = openpyxl.load_workbook(BytesIO(data), read_only=True, data_only=True)
    except (KeyError, ValueError, TypeError) as exc:
        raise FormatSkip(f"not an Excel workbook (XLSX): {type(exc).__name__}: {exc}") from exc
    budget = _Budget()
    try:
        sheets = [
            (
                str(sheet.title),
                markdown_table(budget.rows(list(row) for row in sheet.iter_rows(values_only=True))),
            )
            for sheet in workbook.worksheets
        ]
        title = workbook.properties.title if workbook.properties else None
    finally:
        workbook.close()
    result = _sheets_text(sheets, budget, "XLSX")
    return Extracted(title=title or None, text=result.text, notes=result.notes)


_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"


def read_ods(data: bytes) -> Extracted:
    """An OpenDocument spreadsheet (``.ods``), one section and table per sheet.

    Raises:
        FormatSkip: encrypted, not a spreadsheet, or damaged.
    """
    from simone.providers.documents._formats._odf import odf_content, odf_text

    root = odf_content(data, "ODS")
    budget = _Budget()
    sheets: list[tuple[str, list[str]]] = []
    for table in root.iter(f"{_TABLE}table"):
        if table.getparent() is not None and table.getparent().tag != f"{_OFFICE}spreadsheet":
            continue  # a sub-table inside a cell is read as that cell's text
        sheets.append(
            (str(table.get(f"{_TABLE}name", "")), markdown_table(budget.rows(_ods_rows(table, odf_text))))
        )
    return _sheets_text(sheets, budget, "ODS")


def _ods_rows(table: Any, odf_text: Any) -> Iterator[list[Any]]:
    for row in table.iter(f"{_TABLE}table-row"):
        cells: list[str] = []
        pending_empty = 0
        for cell in row:
            if cell.tag not in (f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell"):
                continue
            repeat = min(int(cell.get(f"{_TABLE}number-columns-repeated", "1") or 1), 1024)
            text = " ".join(odf_text(p) for p in cell.iter(f"{_TEXT}p")).strip()
            if not text:
                pending_empty += repeat  # trailing empty cells are often "repeated" 16,000 times
                continue
            cells += [""] * pending_empty + [text] * repeat
            pending_empty = 0
        repeat_rows = min(int(row.get(f"{_TABLE}number-rows-repeated", "1") or 1), MAX_EMPTY_RUN + 1)
        for _ in range(repeat_rows if cells else 1):
            yield cells


def read_delimited(text: str, *, tab: bool) -> Extracted:
    """CSV or TSV ``text`` as one table (its first row the header).

    Raises:
        FormatSkip: no cell holds text.
    """
    if tab:
        dialect: Any = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    budget = _Budget()
    try:
        rows = markdown_table(budget.rows(iter(csv.reader(StringIO(text, newline=""), dialect))))
    except csv.Error as exc:
        raise FormatSkip(f"malformed {'TSV' if tab else 'CSV'}: {exc}") from exc
    if not rows:
        raise FormatSkip(f"{'TSV' if tab else 'CSV'} without any cell text")
    notes = (f"cells after the first {MAX_TABLE_CELLS:,} left out",) if budget.cut else ()
    return Extracted(title=None, text="\n".join(rows), notes=notes)
