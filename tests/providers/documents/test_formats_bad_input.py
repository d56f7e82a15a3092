"""Issue 29: damaged files of every format are skipped with a reason, never raised.

Each format's valid fixture (built here with the format's own library) is cut short at several
points and has bytes flipped; invalid UTF-8 goes to the text formats. The loader must answer a
document or a typed skip every time.
"""

from __future__ import annotations

import importlib.util
import io
import json
import random
from pathlib import Path
from types import ModuleType

import docx
import openpyxl
import pptx
import pytest
from fpdf import FPDF
from simone.providers.documents._loaders import LoadedDocument, SkippedFile

from tests.providers.documents.formats_support import load_path


def _sibling(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _docx() -> bytes:
    document = docx.Document()
    document.add_heading("Title", level=1)
    document.add_paragraph("Some text.")
    document.add_table(rows=2, cols=2).cell(0, 0).text = "cell"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pptx() -> bytes:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Slide title"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _xlsx() -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["a", "b"])
    sheet.append([1, 2])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _pdf() -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.cell(0, 10, "Hello PDF")
    return bytes(pdf.output())


def _epub(tmp_path: Path) -> bytes:
    return _sibling("test_formats_text")._epub(tmp_path / "book.epub").read_bytes()  # type: ignore[no-any-return]


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx", ".pdf", ".epub", ".odt", ".ods"])
def test_cut_and_flipped_containers_are_skipped_never_raised(tmp_path: Path, suffix: str) -> None:
    builders = {".docx": _docx, ".pptx": _pptx, ".xlsx": _xlsx, ".pdf": _pdf}
    valid = builders[suffix]() if suffix in builders else _epub(tmp_path) if suffix == ".epub" else _xlsx()
    rng = random.Random(29)
    variants = [valid[:cut] for cut in (0, 10, len(valid) // 3, len(valid) // 2, len(valid) - 20)]
    for _ in range(6):
        flipped = bytearray(valid)
        for _ in range(20):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        variants.append(bytes(flipped))
    variants.append(bytes(rng.randrange(256) for _ in range(4096)))
    for number, data in enumerate(variants):
        path = tmp_path / f"damaged-{number}{suffix}"
        path.write_bytes(data)
        result = load_path(path)
        assert isinstance(result, (LoadedDocument, SkippedFile)), result
        if isinstance(result, SkippedFile):
            assert result.reason


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".ipynb", ".rst", ".adoc", ".eml", ".mbox"])
def test_text_formats_with_bad_bytes_are_read_or_skipped(tmp_path: Path, suffix: str) -> None:
    samples = [
        b"\xff\xfe\x00\x00binary\x00\x00",
        b"caf\xe9 \x80\x81 not utf-8\nsecond line\n",
        json.dumps({"cells": [{"cell_type": "code", "source": 5, "outputs": "x"}, 7]}).encode(),
        b"{" * 100_000,
        b"From \n\nFrom x\n" + b"\xff" * 50,
        b"",
    ]
    for number, data in enumerate(samples):
        path = tmp_path / f"bad-{number}{suffix}"
        path.write_bytes(data)
        result = load_path(path)
        assert isinstance(result, (LoadedDocument, SkippedFile)), result
