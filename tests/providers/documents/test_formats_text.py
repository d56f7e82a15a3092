"""Issue 29.1: EPUB, e-mail, notebooks, reStructuredText and AsciiDoc with their real structure.

Fixtures are built here (the EPUB as its zip, messages with the standard library's ``email``),
indexed into a real LanceDB in a temp dir and searched.
"""

from __future__ import annotations

import io
import json
import zipfile
from email.message import EmailMessage
from pathlib import Path

import docx
from simone.providers.documents._loaders import LoadedDocument, SkippedFile

from tests.providers.documents.formats_support import load_path, search_folder


def _epub(path: Path) -> Path:
    chapter = (
        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
        "<head><title>{title}</title></head><body>{body}</body></html>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        archive.writestr(
            "OEBPS/book.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Sailing basics</dc:title></metadata>'
            '<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
            '<item id="c1" href="text/one.xhtml" media-type="application/xhtml+xml"/>'
            '<item id="c2" href="text/two.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="nav"/><itemref idref="c1"/><itemref idref="c2"/></spine></package>',
        )
        archive.writestr("OEBPS/nav.xhtml", chapter.format(title="Contents", body="<ol><li>Knots</li></ol>"))
        archive.writestr(
            "OEBPS/text/one.xhtml",
            chapter.format(
                title="Knots",
                body="<h1>Knots</h1><p>The bowline makes a fixed loop.</p><h2>Practice</h2>"
                "<ul><li>Tie it ten times</li><li>Then blindfolded</li></ul>",
            ),
        )
        archive.writestr(
            "OEBPS/text/two.xhtml",
            chapter.format(
                title="Wind",
                body="<p>Beaufort scale:</p><table><tr><th>Force</th><th>Name</th></tr>"
                "<tr><td>4</td><td>Moderate breeze</td></tr></table>",
            ),
        )
    return path


def test_epub_chapters_are_sections_in_spine_order(tmp_path: Path) -> None:
    doc = load_path(_epub(tmp_path / "sailing.epub"))
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "epub" and doc.title == "Sailing basics"
    assert doc.text.startswith(
        "## Knots\n\nThe bowline makes a fixed loop.\n\n### Practice\n\n- Tie it ten times"
    )
    assert (
        "## Wind\n\nBeaufort scale:\n\n| Force | Name |\n| --- | --- |\n| 4 | Moderate breeze |" in doc.text
    )
    assert "Contents" not in doc.text, "the navigation document is not a chapter"

    docs = tmp_path / "docs"
    docs.mkdir()
    _epub(docs / "sailing.epub")
    _, evidence = search_folder(tmp_path, docs, "moderate breeze force")
    assert evidence[0].title == "Sailing basics — Wind"


def _message(subject: str, body: str, **attachments: bytes) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Ana Lima <ana@example.org>"
    message["To"] = "team@example.org"
    message["Subject"] = subject
    message["Date"] = "Tue, 01 Dec 2026 10:00:00 +0000"
    message.set_content(body)
    for name, data in attachments.items():
        maintype, subtype = ("text", "csv") if name.endswith(".csv") else ("application", "octet-stream")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name.replace("_", "."))
    return message


def test_eml_headers_body_and_readable_attachments(tmp_path: Path) -> None:
    report = docx.Document()
    report.add_heading("Incident report", level=1)
    report.add_paragraph("The backup job failed on Sunday night.")
    buffer = io.BytesIO()
    report.save(buffer)
    message = _message(
        "Backup failure",
        "Hi all,\nsee the attached report and the list of affected hosts.\n",
        report_docx=buffer.getvalue(),
        hosts_csv=b"host,status\ndb-1,failed\nweb-2,ok\n",
        photo_png=b"\x89PNG\r\n\x1a\n",
    )
    path = tmp_path / "failure.eml"
    path.write_bytes(message.as_bytes())
    doc = load_path(path)
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "email" and doc.title == "Backup failure"
    text = doc.text
    assert text.startswith(
        "# Backup failure\n\nFrom: Ana Lima <ana@example.org>\nTo: team@example.org\nDate: "
    )
    assert "see the attached report" in text
    assert (
        "## Attachment: report.docx\n\n### Incident report\n\nThe backup job failed on Sunday night." in text
    )
    assert "## Attachment: hosts.csv\n\n| host | status |\n| --- | --- |\n| db-1 | failed |" in text
    assert "## Other attachments\n\n- photo.png (not read: unsupported file type (.png))" in text

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "failure.eml").write_bytes(message.as_bytes())
    _, evidence = search_folder(tmp_path, docs, "db-1 failed")
    assert evidence[0].title == "Backup failure — Attachment: hosts.csv"


def test_mbox_messages_are_sections_and_from_quoting_is_undone(tmp_path: Path) -> None:
    first = _message("Lunch on Friday", "Pizza at noon.\nFrom now on, every Friday.\n")
    second = _message("Parking", "The garage closes at 8 pm.\n")
    raw = b""
    for message in (first, second):
        body = message.as_bytes().replace(b"\nFrom now", b"\n>From now")
        raw += b"From ana@example.org Tue Dec  1 10:00:00 2026\n" + body + b"\n"
    path = tmp_path / "inbox.mbox"
    path.write_bytes(raw)
    doc = load_path(path)
    assert isinstance(doc, LoadedDocument), doc
    assert "## Lunch on Friday" in doc.text and "## Parking" in doc.text
    assert "\nFrom now on, every Friday." in doc.text
    bad = tmp_path / "bad.mbox"
    bad.write_bytes(b"no from line here\n")
    skipped = load_path(bad)
    assert isinstance(skipped, SkippedFile) and "mbox" in skipped.reason


def test_notebook_cells_and_outputs(tmp_path: Path) -> None:
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Churn analysis\n", "\n", "Monthly churn."]},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "source": "rate = lost / total\nprint(round(rate, 3))",
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["0.042\n"]},
                    {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                     "traceback": ["\x1b[31m..."]},
                ],
            },
            {"cell_type": "markdown", "metadata": {}, "source": "## Next steps\n\nCall the lost customers."},
        ],
    }  # fmt: skip
    path = tmp_path / "churn.ipynb"
    path.write_text(json.dumps(notebook))
    doc = load_path(path)
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "notebook" and doc.title == "Churn analysis"
    assert "```python\nrate = lost / total\nprint(round(rate, 3))\n```" in doc.text
    assert "```output\n0.042\nZeroDivisionError: division by zero\n```" in doc.text
    assert "## Next steps" in doc.text
    (tmp_path / "broken.ipynb").write_text("{not json")
    skipped = load_path(tmp_path / "broken.ipynb")
    assert isinstance(skipped, SkippedFile) and "not valid JSON" in skipped.reason


RST = """\
=============
Release guide
=============

How we ship.

Preparing
=========

Run the checks::

   # not a heading
   make check

Tagging
-------

Tag the commit.

Announcing
==========

Write to the list.
"""

ADOC = """\
= Operations manual
:toc:

Intro text.

== Backups

Nightly at two.

----
# a shell comment, not a heading
== not a section either
----

=== Restores

Ask the on-call engineer.
"""


def test_rst_and_asciidoc_keep_their_heading_structure_and_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "release.rst").write_text(RST)
    rst = load_path(tmp_path / "release.rst")
    assert isinstance(rst, LoadedDocument), rst
    assert rst.kind == "rst" and rst.title == "Release guide"
    lines = rst.text.split("\n")
    assert len(lines) == len(RST.split("\n")), "every line keeps its number"
    assert lines[1] == "# Release guide" and lines[6] == "## Preparing" and lines[14] == "### Tagging"
    assert lines[19] == "## Announcing"
    assert lines[11] == "    # not a heading", "code keeps its text, indented out of heading syntax"

    (tmp_path / "ops.adoc").write_text(ADOC)
    adoc = load_path(tmp_path / "ops.adoc")
    assert isinstance(adoc, LoadedDocument), adoc
    assert adoc.kind == "asciidoc" and adoc.title == "Operations manual"
    assert adoc.text.split("\n")[0] == "# Operations manual"
    assert "## Backups" in adoc.text and "### Restores" in adoc.text
    assert "\n== not a section either\n" in adoc.text

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "release.rst").write_text(RST)
    (docs / "ops.adoc").write_text(ADOC)
    _, evidence = search_folder(tmp_path, docs, "tag the commit")
    assert evidence[0].title == "Release guide — Tagging"
    assert evidence[0].locator.endswith("release.rst#L15-L18"), evidence[0].locator
    _, restores = search_folder(tmp_path / "again", docs, "on-call engineer restores")
    assert restores[0].title == "Operations manual — Restores"
