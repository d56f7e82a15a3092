"""Issue 29.3: a table is chunked by rows with its header repeated, never split mid-row.

Real tables: a Markdown file, an XLSX written with openpyxl and a CSV, read by the format readers,
chunked with the real all-MiniLM-L6-v2 tokenizer, indexed into a real LanceDB and searched; the
answer units of a later chunk are rows under their header.
"""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
from hypothesis import given, settings, strategies as st
from simone.agents._synthesis import split_units
from simone.providers.documents import Chunk, Chunker, HFTokenCounter, LoadedDocument
from simone.providers.documents._chunker import CHUNKER_VERSION, TABLE_HEADER_MAX_SHARE
from simone.providers.embeddings import load_tokenizer

from tests.providers.documents.formats_support import load_path, search_folder

TOKENIZER = load_tokenizer(max_tokens=None, pad=False)
COUNTER = HFTokenCounter(TOKENIZER)
_RULE = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")


def _model_tokens(text: str) -> int:
    return len(TOKENIZER.encode(text, add_special_tokens=True).ids)


def _doc(text: str, kind: str = "markdown", title: str = "Doc") -> LoadedDocument:
    return LoadedDocument(path="/p/doc.md", kind=kind, title=title, text=text, digest="d" * 64)  # type: ignore[arg-type]


def _table_at(lines: list[str], header: str) -> tuple[int, list[int]]:
    """The 0-based line of ``header`` and the lines of its table's rows."""
    start = lines.index(header)
    assert _RULE.match(lines[start + 1])
    rows = []
    index = start + 2
    while index < len(lines) and lines[index].startswith("|"):
        rows.append(index)
        index += 1
    return start, rows


def _check_table_chunks(doc: LoadedDocument, chunks: list[Chunk], header: str, window: int) -> None:
    """Each chunk holding rows of the table starts from its header (or holds it), rows whole, once each."""
    lines = doc.text.split("\n")
    start, rows = _table_at(lines, header)
    rule = lines[start + 1]
    seen: list[int] = []
    holding = [c for c in chunks if any(c.line_start - 1 <= row <= c.line_end - 1 for row in rows)]
    assert len(holding) > 1, "the table must need more than one chunk for this test"
    for chunk in holding:
        assert chunk.tokens == _model_tokens(chunk.embed_text) <= window
        span = lines[chunk.line_start - 1 : chunk.line_end]
        if chunk.line_start - 1 > start:  # a later chunk: the header and rule, then exactly its lines
            assert chunk.text.split("\n")[:2] == [header, rule], chunk.text
            assert chunk.text.split("\n")[2:] == span
        else:
            assert chunk.text == "\n".join(span).strip("\n")
            assert header in chunk.text.split("\n")
        held = [row for row in rows if chunk.line_start - 1 <= row <= chunk.line_end - 1]
        for row in held:
            assert lines[row] in chunk.text.split("\n"), "a row is never cut"
        seen.extend(held)
    assert seen == rows, "every row once, in order (rows are not overlapped)"


def _markdown_table(rows: int) -> tuple[str, str]:
    header = "| Service | Port | Owner | Notes |"
    body = [
        f"| service-{i} | {8000 + i} | team {chr(65 + i % 26)} | restarts nightly, pager rota {i % 7} |"
        for i in range(rows)
    ]
    text = "# Services\n\nThe ports we run.\n\n" + "\n".join([header, "| --- | --- | --- | --- |", *body])
    return header, text + "\n\nThat is all.\n"


def test_a_markdown_table_is_cut_between_rows_with_its_header_in_every_chunk() -> None:
    header, text = _markdown_table(60)
    doc = _doc(text, title="Services")
    chunks = Chunker(COUNTER, max_tokens=128, overlap_tokens=16).chunk(doc)
    _check_table_chunks(doc, chunks, header, 128)
    assert CHUNKER_VERSION >= 5


def test_counts_with_a_repeated_header_match_tokenising_every_chunk() -> None:
    class Recounting:
        special_tokens = COUNTER.special_tokens
        count_many = staticmethod(COUNTER.count_many)
        split = staticmethod(COUNTER.split)

        def token_starts(self, text: str) -> None:
            return None

    _, text = _markdown_table(40)
    doc = _doc(text, title="Services")
    assert Chunker(COUNTER, max_tokens=96).chunk(doc) == Chunker(Recounting(), max_tokens=96).chunk(doc)


def test_a_later_chunk_answers_with_rows_under_their_header() -> None:
    header, text = _markdown_table(60)
    chunks = Chunker(COUNTER, max_tokens=128).chunk(_doc(text, title="Services"))
    last = next(c for c in chunks if "service-59" in c.text)
    units = [u for u in split_units(last.text) if u.kind == "row"]
    assert units, last.text
    assert all(u.text.startswith(header + "\n| --- | --- | --- | --- |\n") for u in units)
    assert units[-1].text.endswith("| service-59 | 8059 | team H | restarts nightly, pager rota 3 |")


def test_a_row_longer_than_a_chunk_is_cut_by_sentences_and_the_others_keep_the_header() -> None:
    header = "| Step | Detail |"
    long_row = "| 3 | " + " ".join(f"Sentence {i} says what the third step does." for i in range(40)) + " |"
    rows = [f"| {i} | a short step number {i} |" for i in range(30)]
    rows.insert(3, long_row)
    text = "\n".join([header, "| --- | --- |", *rows])
    doc = _doc(text, title="Steps")
    chunks = Chunker(COUNTER, max_tokens=96).chunk(doc)
    lines = text.split("\n")
    long_line = lines.index(long_row) + 1
    pieces = [c for c in chunks if c.line_start == c.line_end == long_line]
    assert len(pieces) > 1, "the long row is cut, as any long line"
    assert all(p.text in long_row and not p.text.startswith(header) for p in pieces)
    others = [c for c in chunks if c.line_start > long_line]
    assert others and all(c.text.startswith(header + "\n| --- | --- |\n") for c in others)
    for chunk in chunks:
        assert chunk.tokens == _model_tokens(chunk.embed_text) <= 96


def test_a_header_too_wide_to_repeat_leaves_its_rows_whole_without_it() -> None:
    columns = [f"column number {i} with a long name" for i in range(12)]
    header = "| " + " | ".join(columns) + " |"
    rule = "| " + " | ".join(["---"] * 12) + " |"
    rows = ["| " + " | ".join(str(i * 12 + j) for j in range(12)) + " |" for i in range(40)]
    text = "\n".join([header, rule, *rows])
    chunker = Chunker(COUNTER, max_tokens=128)
    assert COUNTER.count_many([header + "\n" + rule])[0] > (128 - 2) * TABLE_HEADER_MAX_SHARE
    chunks = chunker.chunk(_doc(text, title="Wide"))
    lines = text.split("\n")
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        assert chunk.tokens == _model_tokens(chunk.embed_text) <= 128
    assert not any(c.text.startswith(header) for c in chunks[1:])


@settings(max_examples=30, deadline=None)
@given(
    st.integers(min_value=1, max_value=6),
    st.lists(
        st.lists(
            st.sampled_from(["x", "naïve cell", "1.5", "日本語", "a b c d e f", ""]), min_size=1, max_size=6
        ),
        min_size=2,
        max_size=50,
    ),
    st.sampled_from([48, 64, 96]),
)
def test_any_table_keeps_its_rows_whole_and_its_header_first(
    width: int, cells: list[list[str]], window: int
) -> None:
    header = "| " + " | ".join(f"h{i}" for i in range(width)) + " |"
    rule = "| " + " | ".join(["---"] * width) + " |"
    rows = ["| " + " | ".join((row * width)[:width]) + " |" for row in cells]
    text = "Intro.\n" + "\n".join([header, rule, *rows]) + "\nOutro."
    doc = _doc(text)
    chunks = Chunker(COUNTER, max_tokens=window, overlap_tokens=4).chunk(doc)
    lines = text.split("\n")
    for chunk in chunks:
        assert chunk.tokens == _model_tokens(chunk.embed_text) <= window
        span = "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        if chunk.text not in span:
            assert chunk.text == f"{header}\n{rule}\n{span}"
            assert chunk.line_start > 3  # after the header and the rule
    covered = {line for c in chunks for line in range(c.line_start, c.line_end + 1)}
    assert set(range(1, len(lines) + 1)) <= covered


def test_an_xlsx_sheet_is_chunked_by_rows_with_its_header_and_searched(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Inventory"
    sheet.append(["Part number", "Description", "Warehouse", "Quantity"])
    for i in range(200):
        sheet.append([f"P-{i:04d}", f"bracket type {i} for shelving unit", f"hall {i % 5}", i * 3])
    workbook.save(str(docs / "parts.xlsx"))
    doc = load_path(docs / "parts.xlsx")
    assert isinstance(doc, LoadedDocument), doc
    header = "| Part number | Description | Warehouse | Quantity |"
    chunks = Chunker(COUNTER).chunk(doc)
    _check_table_chunks(doc, chunks, header, 256)
    report, evidence = search_folder(tmp_path, docs, "P-0187 bracket")
    assert report.files_indexed == 1, report.skipped
    top = evidence[0]
    assert "| P-0187 | bracket type 187 for shelving unit | hall 2 | 561 |" in top.content
    assert top.content.startswith(header + "\n| --- | --- | --- | --- |\n")


def test_a_csv_is_chunked_by_rows_with_its_header(tmp_path: Path) -> None:
    path = tmp_path / "readings.csv"
    lines = ["station,date,reading,comment"]
    lines += [f"S{i % 9},2026-01-{1 + i % 28:02d},{i * 0.25},calibrated by crew {i % 4}" for i in range(150)]
    path.write_text("\n".join(lines) + "\n")
    doc = load_path(path)
    assert isinstance(doc, LoadedDocument), doc
    chunks = Chunker(COUNTER, max_tokens=128).chunk(doc)
    _check_table_chunks(doc, chunks, "| station | date | reading | comment |", 128)
