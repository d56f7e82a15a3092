"""Loaders: kinds, encodings, excludes, size limits, binary files, symlink loops, HTML and PDF."""

from __future__ import annotations

import os
from pathlib import Path

import pypdf
import pytest
from simone.providers.documents import LoadedDocument, SkippedFile, SourceFile, discover, load_file
from simone.providers.documents._loaders import classify, decode_text

LIMIT = 1_000_000


def _found(*paths: Path, **kwargs: object) -> tuple[list[SourceFile], list[SkippedFile]]:
    items = list(discover(paths, max_file_bytes=kwargs.pop("max_file_bytes", LIMIT), **kwargs))  # type: ignore[arg-type]
    return (
        [i for i in items if isinstance(i, SourceFile)],
        [i for i in items if isinstance(i, SkippedFile)],
    )


def _load(path: Path) -> LoadedDocument | SkippedFile:
    sources, skipped = _found(path)
    assert not skipped, skipped
    return load_file(sources[0], LIMIT)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.md", ("markdown", "")),
        ("b.txt", ("text", "")),
        ("c.py", ("code", "python")),
        ("d.tsx", ("code", "typescript")),
        ("Makefile", ("code", "make")),
        ("README", ("text", "")),
        ("e.html", ("html", "")),
        ("f.pdf", ("pdf", "")),
        ("g.png", None),
        ("h.bin", None),
    ],
)
def test_kinds_come_from_the_file_name(name: str, expected: tuple[str, str] | None) -> None:
    assert classify(Path(name)) == expected


def test_markdown_title_and_exact_text(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_bytes(b"\xef\xbb\xbf# The Guide\r\n\r\nBody line.\r\n")
    doc = _load(path)
    assert isinstance(doc, LoadedDocument)
    assert doc.title == "The Guide"
    assert doc.text == "# The Guide\n\nBody line.\n"
    assert doc.kind == "markdown"
    assert len(doc.digest) == 64


def test_invalid_utf8_is_decoded_by_detection_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "legacy.txt"
    text = "Café crème, déjà vu, façade, naïve résumé — où est la gare? " * 8
    path.write_bytes(text.replace("—", "-").encode("cp1252"))
    doc = _load(path)
    assert isinstance(doc, LoadedDocument)
    assert "Café crème" in doc.text
    assert doc.encoding != "utf-8"
    assert any("decoded as" in note for note in doc.notes)


def test_binary_file_with_a_text_extension_is_skipped_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(256))
    result = _load(path)
    assert isinstance(result, SkippedFile)
    assert "binary" in result.reason


def test_random_bytes_are_never_decoded_into_garbage() -> None:
    reason = decode_text(bytes(range(1, 256)) * 4 + b"\x00")
    assert isinstance(reason, str)


def test_huge_and_unsupported_files_are_skipped_with_reasons(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_text("x" * 5000)
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    (tmp_path / "ok.md").write_text("# ok\n")
    sources, skipped = _found(tmp_path, max_file_bytes=1000)
    assert [s.path.name for s in sources] == ["ok.md"]
    reasons = {s.path: s.reason for s in skipped}
    assert "5,000 bytes is over the 1,000-byte limit" in reasons["big.md"]
    assert "unsupported file type (.jpg)" in reasons["photo.jpg"]


def test_gitignore_configured_and_default_excludes(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("build/\n*.log.md\n!keep.log.md\n")
    for name in [
        "a.md",
        "build/b.md",
        "x.log.md",
        "keep.log.md",
        ".git/c.md",
        "node_modules/d.md",
        "drafts/e.md",
    ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# t\n")
    sources, skipped = _found(tmp_path, excludes=["drafts/"])
    assert sorted(s.display for s in sources) == ["a.md", "keep.log.md"]
    assert skipped == []
    sources, _ = _found(tmp_path, excludes=[], use_gitignore=False)
    assert "build/b.md" in {s.display for s in sources}


def test_symlink_loops_end_and_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "doc.md").write_text("# doc\n")
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "a" / "self").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "dangling.md").symlink_to(tmp_path / "missing.md")
    sources, skipped = _found(tmp_path)
    assert [s.display for s in sources] == ["a/doc.md"]
    reasons = " | ".join(f"{s.path}: {s.reason}" for s in skipped)
    assert "symlink loop" in reasons
    assert "dangling.md: broken symlink" in reasons


def test_missing_path_raises() -> None:
    with pytest.raises(FileNotFoundError):
        list(discover(["/nonexistent/simone/path"], max_file_bytes=LIMIT))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_skipped_and_not_stale(tmp_path: Path) -> None:
    path = tmp_path / "secret.md"
    path.write_text("# secret\n")
    path.chmod(0)
    try:
        result = _load(path)
    finally:
        path.chmod(0o644)
    assert isinstance(result, SkippedFile)
    assert "unreadable" in result.reason
    assert result.stale is False


def test_unreadable_file_vanishing_between_walk_and_read(tmp_path: Path) -> None:
    path = tmp_path / "gone.md"
    path.write_text("# gone\n")
    sources, _ = _found(path)
    path.unlink()
    result = load_file(sources[0], LIMIT)
    assert isinstance(result, SkippedFile)
    assert "unreadable" in result.reason
    assert result.stale is False


def test_html_keeps_the_main_text_and_title(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    article = " ".join(["The refund window is thirty days from delivery for every order."] * 6)
    path.write_text(
        "<html><head><title>Refund policy</title></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/shop'>Shop</a> | Cookie settings</nav>"
        f"<article><h1>Refund policy</h1><p>{article}</p><h2>Exceptions</h2>"
        f"<p>{'Gift cards cannot be refunded once they have been activated by the buyer. ' * 4}</p></article>"
        "<footer>© 2026 Example Shop. All rights reserved. Subscribe to our newsletter.</footer>"
        "</body></html>",
        encoding="utf-8",
    )
    doc = _load(path)
    assert isinstance(doc, LoadedDocument)
    assert doc.kind == "html"
    assert doc.title == "Refund policy"
    assert "refund window is thirty days" in doc.text
    assert "Gift cards cannot be refunded" in doc.text
    assert "Subscribe to our newsletter" not in doc.text
    assert "Cookie settings" not in doc.text


def test_html_without_main_text_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "empty.html"
    path.write_text("<html><head><title>x</title><script>var a = 1;</script></head><body></body></html>")
    result = _load(path)
    assert isinstance(result, SkippedFile)
    assert "main text" in result.reason


def _text_pdf(path: Path, lines: list[str]) -> None:
    """A real one-page PDF with a text layer (Helvetica), written by hand."""
    content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
        "/Contents 5 0 R >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(out)


def test_pdf_text_layer_is_extracted(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    _text_pdf(path, ["Quarterly report", "Revenue grew by twelve percent.", "Costs were flat."])
    doc = _load(path)
    assert isinstance(doc, LoadedDocument), doc
    assert doc.kind == "pdf"
    assert "Revenue grew by twelve percent." in doc.text
    assert doc.title == "Quarterly report"


def test_pdf_that_is_only_an_image_is_skipped_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=612, height=792)
    with path.open("wb") as handle:
        writer.write(handle)
    result = _load(path)
    assert isinstance(result, SkippedFile)
    assert "no text layer" in result.reason
    assert "OCR" in result.reason


def test_broken_pdf_is_skipped_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\n this is not really a pdf")
    result = _load(path)
    assert isinstance(result, SkippedFile)
    assert "PDF" in result.reason
