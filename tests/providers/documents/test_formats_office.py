"""Issue 29.1: Word, PowerPoint and OpenDocument text files, indexed into a real LanceDB and searched.

The fixtures are written here with python-docx and python-pptx (the readers' own libraries) and,
for ODT, as the zip of XML that the format is.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import pptx
from pptx.util import Inches
from simone.providers.documents._loaders import LoadedDocument

from tests.providers.documents.formats_support import load_path, search_folder


def _handbook_docx(path: Path) -> Path:
    document = docx.Document()
    document.core_properties.title = "Employee handbook"
    document.add_heading("Employee handbook", level=0)
    document.add_heading("Holidays", level=1)
    document.add_paragraph("Every employee has twenty-five days of paid leave a year.")
    document.add_paragraph("Ask your manager first", style="List Bullet")
    document.add_paragraph("Book it in the calendar", style="List Bullet")
    document.add_heading("Carry-over rules", level=2)
    paragraph = document.add_paragraph("Unused days expire at the end of March.")
    document.add_comment(paragraph.runs, text="Check this with legal", author="Dana")
    document.add_heading("Allowances", level=1)
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(
        table.rows,
        [("Grade", "Travel", "Meals"), ("Junior", "200 EUR", "15 EUR"), ("Senior", "400 EUR", "25 EUR")],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    section = document.sections[0]
    section.header.paragraphs[0].text = "Confidential - Acme Corp"
    section.footer.paragraphs[0].text = "Human resources, revised 2026"
    document.save(str(path))
    return path


def test_docx_headings_lists_tables_headers_and_comments(tmp_path: Path) -> None:
    doc = load_path(_handbook_docx(tmp_path / "handbook.docx"))
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "docx" and doc.title == "Employee handbook"
    text = doc.text
    assert "# Employee handbook" in text and "## Holidays" in text and "### Carry-over rules" in text
    assert "- Ask your manager first\n- Book it in the calendar" in text
    assert "| Grade | Travel | Meals |\n| --- | --- | --- |\n| Junior | 200 EUR | 15 EUR |" in text
    assert "Confidential - Acme Corp" in text and "Human resources, revised 2026" in text
    assert "- Dana: Check this with legal" in text


def test_docx_is_searched_with_its_heading_path_and_table_header(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _handbook_docx(docs / "handbook.docx")
    report, evidence = search_folder(tmp_path, docs, "senior travel allowance")
    assert report.files_indexed == 1, report.skipped
    top = evidence[0]
    assert top.title == "Employee handbook — Allowances"
    assert "| Grade | Travel | Meals |" in top.content and "| Senior | 400 EUR | 25 EUR |" in top.content
    assert top.locator.split("#")[0].endswith("handbook.docx")
    _, holidays = search_folder(tmp_path / "again", docs, "unused days expire March")
    assert holidays[0].title == "Employee handbook — Carry-over rules"


def _deck(path: Path) -> Path:
    deck = pptx.Presentation()
    deck.core_properties.title = "Quarterly review"
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Revenue"
    body = slide.placeholders[1].text_frame
    body.text = "Revenue grew in every region"
    point = body.add_paragraph()
    point.text = "Fastest growth in the Nordics"
    point.level = 1
    slide.notes_slide.notes_text_frame.text = "Mention the new Oslo office."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Headcount"
    shape = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2))
    for row, values in zip(
        shape.table.rows, [("Team", "People"), ("Support", "14"), ("Engineering", "31")], strict=True
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    deck.save(str(path))
    return path


def test_pptx_slides_are_sections_with_tables_and_speaker_notes(tmp_path: Path) -> None:
    doc = load_path(_deck(tmp_path / "review.pptx"))
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "pptx" and doc.title == "Quarterly review"
    assert "## Slide 1: Revenue" in doc.text and "## Slide 2: Headcount" in doc.text
    assert "Revenue grew in every region\n  - Fastest growth in the Nordics" in doc.text
    assert "### Speaker notes\n\nMention the new Oslo office." in doc.text

    docs = tmp_path / "docs"
    docs.mkdir()
    _deck(docs / "review.pptx")
    _, evidence = search_folder(tmp_path, docs, "engineering people")
    top = evidence[0]
    assert top.locator.endswith("review.pptx#slide=2"), top.locator
    assert "| Team | People |\n| --- | --- |" in top.content and "| Engineering | 31 |" in top.content
    _, notes = search_folder(tmp_path / "again", docs, "Oslo office")
    assert notes[0].locator.endswith("review.pptx#slide=1")


_ODT_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
  xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3">
 <office:body><office:text>
  <text:h text:outline-level="1">Field guide</text:h>
  <text:p>Birds of the<text:s/>northern coast.</text:p>
  <text:h text:outline-level="2">Gulls</text:h>
  <text:list><text:list-item><text:p>Herring gull</text:p>
    <text:list><text:list-item><text:p>Grey back</text:p></text:list-item></text:list>
  </text:list-item></text:list>
  <text:p>Seen all year.<office:annotation><dc:creator>Ana</dc:creator><text:p>Not in July</text:p></office:annotation></text:p>
  <table:table table:name="Counts">
   <table:table-row><table:table-cell><text:p>Species</text:p></table:table-cell><table:table-cell><text:p>Count</text:p></table:table-cell></table:table-row>
   <table:table-row><table:table-cell><text:p>Herring gull</text:p></table:table-cell><table:table-cell><text:p>120</text:p></table:table-cell></table:table-row>
  </table:table>
 </office:text></office:body>
</office:document-content>
"""


def test_odt_headings_lists_tables_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "guide.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", _ODT_CONTENT)
    doc = load_path(path)
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "odt" and doc.title == "Field guide"
    assert "# Field guide\n\nBirds of the northern coast.\n\n## Gulls" in doc.text
    assert "- Herring gull\n  - Grey back" in doc.text
    assert "| Species | Count |\n| --- | --- |\n| Herring gull | 120 |" in doc.text
    assert "- Ana: Not in July" in doc.text and "Seen all year." in doc.text


def test_broken_office_files_are_skipped_with_reasons_and_the_rest_indexed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "corrupt.docx").write_bytes(b"PK\x03\x04 this is not really a zip")
    (docs / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512)
    with zipfile.ZipFile(docs / "other.pptx", "w") as archive:
        archive.writestr("hello.txt", "a zip, but no presentation in it")
    (docs / "empty.docx").write_bytes(b"")
    empty_deck = pptx.Presentation()
    empty_deck.save(str(docs / "blank.pptx"))
    _handbook_docx(docs / "handbook.docx")
    report, evidence = search_folder(tmp_path, docs, "paid leave")
    reasons = {skip.path: skip.reason for skip in report.skipped}
    assert "not a readable zip container" in reasons["corrupt.docx"]
    assert reasons["locked.docx"].startswith("encrypted DOCX (a password is needed)")
    assert "PPTX" in reasons["other.pptx"]
    assert "empty.docx" in reasons
    assert "without slides" in reasons["blank.pptx"]
    assert report.files_indexed == 1 and evidence[0].locator.split("#")[0].endswith("handbook.docx")
