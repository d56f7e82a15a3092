"""Issue 29.2: PDF tables as tables, columns in reading order, running headers dropped, page locators.

The PDFs are written here with fpdf2 (pure Python), indexed into a real LanceDB in a temp dir and
searched through the document-index provider.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fpdf import FPDF
from simone.providers.documents._formats._common import FormatSkip
from simone.providers.documents._formats._pdf import read_pdf

from tests.providers.documents.formats_support import search_folder

PRICES = [
    ("SKU", "Product", "Price"),
    ("A-100", "Blue widget", "4.50 EUR"),
    ("B-200", "Red gadget", "12.00 EUR"),
    ("C-300", "Green gizmo", "7.25 EUR"),
]


class _Handbook(FPDF):
    """Pages with a running header and a numbered footer, as most reports have."""

    running = True

    def header(self) -> None:
        if self.running:
            self.set_font("helvetica", size=9)
            self.cell(0, 8, "Acme Corp - Internal handbook", align="C")
            self.ln(12)

    def footer(self) -> None:
        if self.running:
            self.set_y(-15)
            self.set_font("helvetica", size=9)
            self.cell(0, 10, f"Page {self.page_no()} of 3", align="C")


def _handbook(path: Path, *, blank_page: bool = False) -> Path:
    pdf = _Handbook()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 6, "Warehouse price list. The table below lists every product we stock.")
    with pdf.table(col_widths=(30, 60, 30)) as table:
        for values in PRICES:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.add_page()
    columns = pdf.text_columns(ncols=2, gutter=10)
    columns.write(" ".join(f"Apples sentence {n} in the left column." for n in range(14)))
    columns.new_column()
    columns.write(" ".join(f"Oranges sentence {n} in the right column." for n in range(14)))
    columns.render()
    if blank_page:
        pdf.running = False
        pdf.add_page()  # no text layer at all: what a scanned page looks like to a text extractor
    else:
        pdf.add_page()
        pdf.multi_cell(0, 6, "Returns are accepted within thirty days of delivery.")
    pdf.output(str(path))
    return path


def test_a_pdf_table_is_a_table_and_its_chunk_says_its_page(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _handbook(docs / "prices.pdf")
    report, evidence = search_folder(tmp_path, docs, "Red gadget price")
    assert report.files_indexed == 1, report.skipped
    top = evidence[0]
    assert top.locator.endswith("prices.pdf#page=1"), top.locator
    assert "| SKU | Product | Price |\n| --- | --- | --- |" in top.content
    assert "| B-200 | Red gadget | 12.00 EUR |" in top.content, "cells of one row stay in one line, in order"
    rows = [line for line in top.content.split("\n") if line.startswith("| ") and "---" not in line]
    assert rows == ["| " + " | ".join(values) + " |" for values in PRICES]

    _, later = search_folder(tmp_path / "again", docs, "returns thirty days")
    assert later[0].locator.endswith("prices.pdf#page=3"), later[0].locator


def test_two_columns_are_read_column_by_column_and_running_lines_are_dropped(tmp_path: Path) -> None:
    extracted = read_pdf(_handbook(tmp_path / "handbook.pdf").read_bytes())
    text = extracted.text
    page2 = text[text.index("## Page 2") : text.index("## Page 3")]
    assert "Apples sentence 13" in page2 and "Oranges sentence 0" in page2
    assert page2.index("Apples sentence 13") < page2.index("Oranges sentence 0"), "left column first"
    assert all("Oranges" not in line or "Apples" not in line for line in page2.split("\n")), "no mixed lines"
    assert "Internal handbook" not in text, "the running header is dropped"
    assert "of 3" not in text, "the numbered footer is dropped"
    assert "Warehouse price list" in text


def test_a_page_without_a_text_layer_is_named_in_the_notes(tmp_path: Path) -> None:
    extracted = read_pdf(_handbook(tmp_path / "handbook.pdf", blank_page=True).read_bytes())
    assert "## Page 3" not in extracted.text
    assert any("page(s) 3 skipped: no text layer" in note and "OCR" in note for note in extracted.notes)


def test_the_index_report_says_which_pages_were_not_read(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _handbook(docs / "handbook.pdf", blank_page=True)
    report, _ = search_folder(tmp_path, docs, "holidays")
    assert report.files_indexed == 1 and not report.skipped
    assert [(p.path.rsplit("/", 1)[-1], "page(s) 3 skipped" in p.reason) for p in report.read_in_part] == [
        ("handbook.pdf", True)
    ]
    assert report.to_dict()["read_in_part"][0]["reason"].startswith("page(s) 3 skipped")


def test_a_pdf_of_scans_only_and_a_broken_pdf_are_skipped_with_reasons(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    blank = FPDF()
    blank.add_page()
    blank.add_page()
    blank.output(str(docs / "scan.pdf"))
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog\n")
    (docs / "zero.pdf").write_bytes(b"")
    (docs / "note.md").write_text("# Note\n\nA real note about apples.\n")
    report, evidence = search_folder(tmp_path, docs, "apples")
    reasons = {skip.path: skip.reason for skip in report.skipped}
    assert "no text layer (2 page(s)" in reasons["scan.pdf"] and "OCR" in reasons["scan.pdf"]
    assert reasons["broken.pdf"].startswith("PDF could not be read")
    assert "zero.pdf" in reasons
    assert report.files_indexed == 1 and evidence[0].locator.endswith("note.md#L1-L3")


def test_an_encrypted_pdf_is_skipped_as_encrypted(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.cell(0, 10, "Salaries for next year")
    path = tmp_path / "locked.pdf"
    pdf.output(str(path))
    with pytest.raises(FormatSkip, match="encrypted PDF"):
        read_pdf(path.read_bytes())


def test_a_table_inside_a_layout_box_comes_out_alone(tmp_path: Path) -> None:
    """A ruled box around a whole section (a one-column 'table') gives way to the table inside it."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    pdf.add_page()
    pdf.rect(8, 8, 194, 80)  # the box
    pdf.set_xy(12, 12)
    pdf.cell(0, 6, "Order summary")
    pdf.set_xy(12, 24)
    with pdf.table(col_widths=(40, 40), width=120, align="LEFT") as table:
        for values in (("Item", "Quantity"), ("Dark chocolate", "415"), ("Almonds", "560")):
            row = table.row()
            for value in values:
                row.cell(value)
    path = tmp_path / "order.pdf"
    pdf.output(str(path))
    text = read_pdf(path.read_bytes()).text
    assert "| Item | Quantity |" in text and "| Almonds | 560 |" in text
    assert "Order summary" in text


STAFF = [
    ("Name", "Team", "Room"),
    ("Alice", "Billing", "B12"),
    ("Bruno", "Support", "C07"),
    ("Chen", "Research", "A03"),
    ("Dana", "Legal", "D21"),
]


def test_an_unruled_table_is_a_table(tmp_path: Path) -> None:
    """Words in aligned columns, no ruling lines at all: pdfplumber's text strategy, checked."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.set_xy(10, 12)
    pdf.cell(0, 6, "Who sits where.")
    for number, values in enumerate(STAFF):
        for column, value in enumerate(values):
            pdf.text(20 + 50 * column, 40 + 8 * number, value)
    path = tmp_path / "staff.pdf"
    pdf.output(str(path))
    text = read_pdf(path.read_bytes()).text
    rows = [line for line in text.split("\n") if line.startswith("| ") and "---" not in line]
    assert rows == ["| " + " | ".join(values) + " |" for values in STAFF], text
    assert "Who sits where." in text


def test_a_table_with_ruled_columns_only_is_a_table(tmp_path: Path) -> None:
    """Vertical rules between the columns and none between the rows (a partly ruled table)."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    for column in range(4):
        pdf.line(15 + 50 * column, 32, 15 + 50 * column, 34 + 8 * len(STAFF))
    for number, values in enumerate(STAFF):
        for column, value in enumerate(values):
            pdf.text(20 + 50 * column, 40 + 8 * number, value)
    path = tmp_path / "staff.pdf"
    pdf.output(str(path))
    text = read_pdf(path.read_bytes()).text
    rows = [line for line in text.split("\n") if line.startswith("| ") and "---" not in line]
    assert rows == ["| " + " | ".join(values) + " |" for values in STAFF], text


def _ruled_prices(pdf: FPDF) -> None:
    pdf.multi_cell(0, 6, "Prices, in a ruled table.")
    with pdf.table(col_widths=(30, 60, 30)) as table:
        for values in PRICES:
            row = table.row()
            for value in values:
                row.cell(value)


def test_an_unruled_table_beside_a_ruled_one_is_a_table_too(tmp_path: Path) -> None:
    """A page with a ruled table still has its unruled ones found (outside the ruled table's box)."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    _ruled_prices(pdf)
    pdf.set_xy(10, 120)
    pdf.cell(0, 6, "Who sits where.")
    for number, values in enumerate(STAFF):
        for column, value in enumerate(values):
            pdf.text(20 + 50 * column, 140 + 8 * number, value)
    path = tmp_path / "both.pdf"
    pdf.output(str(path))
    text = read_pdf(path.read_bytes()).text
    rows = [line for line in text.split("\n") if line.startswith("| ") and "---" not in line]
    assert rows == ["| " + " | ".join(values) + " |" for values in [*PRICES, *STAFF]], text
    assert text.index("Prices, in a ruled table.") < text.index("| SKU |") < text.index("Who sits where.")
    assert text.index("Who sits where.") < text.index("| Name | Team | Room |")


def test_prose_in_columns_beside_a_ruled_table_stays_prose(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    _ruled_prices(pdf)
    pdf.set_y(90)
    columns = pdf.text_columns(ncols=2, gutter=10, text_align="LEFT")
    columns.write(" ".join(f"Pears sentence {n} on the left side of the page." for n in range(12)))
    columns.new_column()
    columns.write(" ".join(f"Plums sentence {n} on the right side of the page." for n in range(12)))
    columns.render()
    path = tmp_path / "prose.pdf"
    pdf.output(str(path))
    text = read_pdf(path.read_bytes()).text
    rows = [line for line in text.split("\n") if line.startswith("| ") and "---" not in line]
    assert rows == ["| " + " | ".join(values) + " |" for values in PRICES], text
    assert text.index("Pears sentence 11") < text.index("Plums sentence 0"), "left column first"


def test_two_columns_of_prose_are_not_a_table(tmp_path: Path) -> None:
    """Prose in two aligned columns lines up like a table's cells; it must still read as prose."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    columns = pdf.text_columns(ncols=2, gutter=10, text_align="LEFT")
    columns.write(" ".join(f"Pears sentence {n} on the left side of the page." for n in range(16)))
    columns.new_column()
    columns.write(" ".join(f"Plums sentence {n} on the right side of the page." for n in range(16)))
    columns.render()
    path = tmp_path / "prose.pdf"
    pdf.output(str(path))
    text = read_pdf(path.read_bytes()).text
    assert "| " not in text, text
    assert text.index("Pears sentence 15") < text.index("Plums sentence 0"), "left column first"
    assert all("Pears" not in line or "Plums" not in line for line in text.split("\n")), "no mixed lines"


def test_simone_index_says_which_pages_were_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from simone.agents.cli import main

    for key in [k for k in os.environ if k.startswith("SIMONE_") and k != "SIMONE_EMBEDDINGS__ONNX_VARIANT"]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SIMONE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    _handbook(docs / "handbook.pdf", blank_page=True)
    assert main(["index", str(docs)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "read in part" in out and "handbook.pdf: page(s) 3 skipped: no text layer" in out, out
