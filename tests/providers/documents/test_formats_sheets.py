"""Issue 29.1: spreadsheets (XLSX, ODS, CSV, TSV) as sheets of tables with their header row.

The XLSX is written with openpyxl, the ODS as the zip of XML that the format is; indexed into a real
LanceDB in a temp dir and searched.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest
from simone.providers.documents._formats import _common
from simone.providers.documents._loaders import LoadedDocument

from tests.providers.documents.formats_support import load_path, search_folder


def _workbook(path: Path) -> Path:
    workbook = openpyxl.Workbook()
    prices = workbook.active
    assert prices is not None
    prices.title = "Prices"
    for row in [("Product", "Unit price", "Stock"), ("Blue widget", 4.5, 120), ("Red gadget", 12.0, 8)]:
        prices.append(row)
    prices["E1"] = None  # an empty column is dropped
    staff = workbook.create_sheet("Staff")
    staff.append(["Name", "Team"])
    staff.append(["Ines", "Support"])
    staff["A5"] = "Noor"  # empty rows in between are dropped
    staff["B5"] = "Platform"
    workbook.create_sheet("Empty")
    workbook.save(str(path))
    return path


def test_xlsx_sheets_are_sections_each_a_table_with_its_header(tmp_path: Path) -> None:
    doc = load_path(_workbook(tmp_path / "stock.xlsx"))
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "spreadsheet"
    assert (
        "## Sheet: Prices\n\n| Product | Unit price | Stock |\n| --- | --- | --- |\n"
        "| Blue widget | 4.5 | 120 |\n| Red gadget | 12 | 8 |"
    ) in doc.text
    assert (
        "## Sheet: Staff\n\n| Name | Team |\n| --- | --- |\n| Ines | Support |\n| Noor | Platform |"
        in doc.text
    )
    assert "Empty" not in doc.text


def test_xlsx_is_searched_with_its_sheet_and_header(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _workbook(docs / "stock.xlsx")
    report, evidence = search_folder(tmp_path, docs, "Noor platform team")
    assert report.files_indexed == 1, report.skipped
    top = evidence[0]
    assert top.title == "stock.xlsx — Sheet: Staff"
    assert "| Name | Team |" in top.content and "| Noor | Platform |" in top.content


def test_csv_and_tsv_are_tables_with_their_header(tmp_path: Path) -> None:
    csv_path = tmp_path / "cities.csv"
    csv_path.write_text('city;population;note\nLisbon;545000;"capital; coastal"\nPorto;232000;"two\nlines"\n')
    doc = load_path(csv_path)
    assert isinstance(doc, LoadedDocument), doc
    assert doc.text.split("\n") == [
        "| city | population | note |",
        "| --- | --- | --- |",
        "| Lisbon | 545000 | capital; coastal |",
        "| Porto | 232000 | two lines |",
    ]
    tsv_path = tmp_path / "codes.tsv"
    tsv_path.write_bytes("code\tmeaning\nE1\tcaf\xe9 closed\n".encode("cp1252"))
    tsv = load_path(tsv_path)
    assert isinstance(tsv, LoadedDocument), tsv
    assert "| E1 | café closed |" in tsv.text and any(
        note.startswith("decoded as cp125") for note in tsv.notes
    )


_ODS_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3">
 <office:body><office:spreadsheet>
  <table:table table:name="Rooms">
   <table:table-row><table:table-cell><text:p>Room</text:p></table:table-cell>
    <table:table-cell><text:p>Seats</text:p></table:table-cell><table:table-cell table:number-columns-repeated="16000"/></table:table-row>
   <table:table-row><table:table-cell><text:p>Aurora</text:p></table:table-cell>
    <table:table-cell><text:p>12</text:p></table:table-cell></table:table-row>
   <table:table-row table:number-rows-repeated="1048000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>
  </table:table>
 </office:spreadsheet></office:body>
</office:document-content>
"""


def test_ods_sheets_with_repeated_empty_cells_stay_small(tmp_path: Path) -> None:
    path = tmp_path / "rooms.ods"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("content.xml", _ODS_CONTENT)
    doc = load_path(path)
    assert isinstance(doc, LoadedDocument), doc
    assert doc.text == "## Sheet: Rooms\n\n| Room | Seats |\n| --- | --- |\n| Aurora | 12 |"


def test_bad_spreadsheets_are_skipped_with_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "MAX_UNPACKED_BYTES", 64 * 1024)  # a small bomb stands for a big one
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "broken.xlsx").write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    (docs / "binary.csv").write_bytes(b"\x00\x01\x02garbage\x00")
    (docs / "blank.csv").write_text(",,\n,,\n")
    with zipfile.ZipFile(docs / "bomb.ods", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("content.xml", b" " * (1024 * 1024))
    (docs / "ok.csv").write_text("name,role\nIda,editor\n")
    report, evidence = search_folder(tmp_path, docs, "Ida editor")
    reasons = {skip.path: skip.reason for skip in report.skipped}
    assert "XLSX" in reasons["broken.xlsx"]
    assert "binary" in reasons["binary.csv"]
    assert "without any cell text" in reasons["blank.csv"]
    assert "zip bomb" in reasons["bomb.ods"]
    assert report.files_indexed == 1 and "| Ida | editor |" in evidence[0].content
