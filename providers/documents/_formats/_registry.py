"""Which reader reads which file, and the one call the loaders make: :func:`read_format`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from simone.providers.documents._formats._common import Extracted, FormatSkip

FormatKind = Literal[
    "pdf", "docx", "pptx", "spreadsheet", "odt", "epub", "email", "notebook", "rst", "asciidoc"
]

FORMAT_SUFFIXES: dict[str, FormatKind] = {
    ".pdf": "pdf",
    ".docx": "docx", ".docm": "docx",
    ".pptx": "pptx", ".pptm": "pptx",
    ".xlsx": "spreadsheet", ".xlsm": "spreadsheet", ".ods": "spreadsheet",
    ".csv": "spreadsheet", ".tsv": "spreadsheet", ".tab": "spreadsheet",
    ".odt": "odt",
    ".epub": "epub",
    ".eml": "email", ".mbox": "email",
    ".ipynb": "notebook",
    ".rst": "rst", ".rest": "rst",
    ".adoc": "asciidoc", ".asciidoc": "asciidoc", ".asc": "asciidoc",
}  # fmt: skip
"""File extensions read by a format reader, and the document kind recorded for them."""

FORMAT_KINDS: frozenset[str] = frozenset(FORMAT_SUFFIXES.values())
"""Document kinds whose text comes from a format reader (Markdown-like: sectioned at its headings)."""

TEXT_FORMAT_SUFFIXES = frozenset(
    {".csv", ".tsv", ".tab", ".ipynb", ".rst", ".rest", ".adoc", ".asciidoc", ".asc"}
)
"""Formats that are text: their bytes are decoded (encoding detected) before the reader sees them."""

Decoder = Callable[[bytes], "tuple[str, str] | str"]
"""Bytes to ``(text, encoding)``, or the reason they are not text (the loaders' ``decode_text``)."""

AttachmentReader = Callable[[str, bytes], "Extracted | str"]
"""An attachment's file name and bytes to its text, or the reason it was not read."""


def read_format(suffix: str, data: bytes, *, decode: Decoder, attachment: AttachmentReader) -> Extracted:
    """The text of a file with extension ``suffix`` (lower case, with the dot) and bytes ``data``.

    Raises:
        FormatSkip: the file cannot be read as its format (the reason says why); any other error a
            reader or its library raises on a damaged file is translated into one here.
        ImportError: the library the format needs is not installed.
    """
    notes: tuple[str, ...] = ()
    text = ""
    if suffix in TEXT_FORMAT_SUFFIXES:
        decoded = decode(data)
        if isinstance(decoded, str):
            raise FormatSkip(decoded)
        text, encoding = decoded
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not text.strip():
            raise FormatSkip("empty file (nothing to index)")
        notes = () if encoding in ("utf-8", "ascii") else (f"decoded as {encoding}",)
    try:
        extracted = _read(suffix, data, text, attachment)
    except (FormatSkip, ImportError, MemoryError, RecursionError):
        raise
    except Exception as exc:  # the libraries raise many types on damaged files: one place translates them
        name = suffix.lstrip(".").upper()
        raise FormatSkip(f"{name} could not be read: {type(exc).__name__}: {exc}"[:300]) from exc
    if not extracted.text.strip():
        raise FormatSkip(f"no text in this {suffix.lstrip('.').upper()} file")
    return Extracted(extracted.title, extracted.text, notes + extracted.notes) if notes else extracted


def _read(suffix: str, data: bytes, text: str, attachment: AttachmentReader) -> Extracted:
    kind = FORMAT_SUFFIXES[suffix]
    if kind == "pdf":
        from simone.providers.documents._formats._pdf import read_pdf

        return read_pdf(data)
    if kind == "docx":
        from simone.providers.documents._formats._office import read_docx

        return read_docx(data)
    if kind == "pptx":
        from simone.providers.documents._formats._office import read_pptx

        return read_pptx(data)
    if kind == "spreadsheet":
        from simone.providers.documents._formats import _sheets

        if suffix in (".csv", ".tsv", ".tab"):
            return _sheets.read_delimited(text, tab=suffix != ".csv")
        return _sheets.read_ods(data) if suffix == ".ods" else _sheets.read_xlsx(data)
    if kind == "odt":
        from simone.providers.documents._formats._odf import read_odt

        return read_odt(data)
    if kind == "epub":
        from simone.providers.documents._formats._epub import read_epub

        return read_epub(data)
    if kind == "email":
        from simone.providers.documents._formats import _mail

        return _mail.read_mbox(data, attachment) if suffix == ".mbox" else _mail.read_eml(data, attachment)
    if kind == "notebook":
        from simone.providers.documents._formats._notebook import read_notebook

        return read_notebook(text)
    from simone.providers.documents._formats._markup import asciidoc_to_markdown, rst_to_markdown

    converted, title = rst_to_markdown(text) if kind == "rst" else asciidoc_to_markdown(text)
    return Extracted(title=title, text=converted)
