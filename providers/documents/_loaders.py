"""Finding and reading documents: Markdown, plain text, source code, HTML, PDF and office formats.

:func:`discover` walks the given paths (symlink-loop safe, ``.gitignore``-style excludes, size
limits) and :func:`load_file` turns one file into a :class:`LoadedDocument` or a :class:`SkippedFile`
that says why it was left out. Both are blocking; the index runs them in worker threads.

* text encodings are detected (UTF-8 first, then ``charset-normalizer``); a file whose bytes
  look binary (NUL bytes, no plausible encoding) is skipped, never decoded into garbage;
* HTML goes through trafilatura favouring precision (main text only, Markdown headings kept);
* PDF (pdfplumber: tables, columns, pages), DOCX, PPTX, XLSX/ODS/CSV/TSV, ODT, EPUB, e-mail,
  notebooks, reStructuredText and AsciiDoc go through the readers in ``_formats`` (see its
  docstring), which turn them into Markdown-like text with headings and pipe tables; a PDF without
  a text layer (a scanned image) is skipped with a reason instead of being indexed as empty;
* a title is the first heading outside code (Markdown ATX/setext/``<h1>``, front matter,
  reStructuredText section titles, HTML ``<title>``/``<h1>``), else the file name; the search
  for it is bounded (the first :data:`TITLE_SCAN_LINES` lines, each cut to
  :data:`TITLE_LINE_CHARS`; patterns that run in linear time).
"""

from __future__ import annotations

import hashlib
import html
import logging
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import charset_normalizer
import pathspec
from simone.providers.documents._formats._registry import (
    FORMAT_KINDS,
    FORMAT_SUFFIXES,
    TEXT_FORMAT_SUFFIXES,
    AttachmentReader,
)

DocumentKind = Literal[
    "markdown", "text", "code", "html", "pdf",
    "docx", "pptx", "spreadsheet", "odt", "epub", "email", "notebook", "rst", "asciidoc",
]  # fmt: skip

MARKDOWN_KINDS = frozenset({"markdown", "html", *FORMAT_KINDS})
"""Kinds whose text is Markdown-like (the chunker sections it at its ``#`` headings)."""

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".mkd"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ".org", ".tex"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".java": "java", ".kt": "kotlin",
    ".kts": "kotlin", ".scala": "scala", ".go": "go", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".cs": "csharp", ".rb": "ruby",
    ".php": "php", ".swift": "swift", ".m": "objective-c", ".mm": "objective-c", ".dart": "dart",
    ".lua": "lua", ".pl": "perl", ".pm": "perl", ".r": "r", ".jl": "julia", ".ex": "elixir",
    ".exs": "elixir", ".erl": "erlang", ".hs": "haskell", ".ml": "ocaml", ".clj": "clojure",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".fish": "shell", ".ps1": "powershell",
    ".sql": "sql", ".css": "css", ".scss": "scss", ".less": "less", ".vue": "vue", ".svelte": "svelte",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini", ".cfg": "ini", ".json": "json",
    ".xml": "xml", ".proto": "protobuf", ".graphql": "graphql", ".tf": "terraform", ".nix": "nix",
    ".zig": "zig", ".vim": "vim", ".el": "elisp",
}  # fmt: skip
"""Source-code file extensions and the language recorded for them."""

CODE_FILENAMES: dict[str, str] = {
    "Makefile": "make", "makefile": "make", "Dockerfile": "dockerfile", "Containerfile": "dockerfile",
    "CMakeLists.txt": "cmake", "Justfile": "just", "Rakefile": "ruby", "Gemfile": "ruby",
}  # fmt: skip
TEXT_FILENAMES = frozenset(
    {"README", "LICENSE", "LICENCE", "COPYING", "NOTICE", "CHANGELOG", "AUTHORS", "CONTRIBUTORS", "TODO"}
)

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".*",
    ".git/", ".hg/", ".svn/", "node_modules/", "__pycache__/", ".venv/", "venv/", ".tox/", ".nox/",
    ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".hypothesis/", ".simone/", "*.egg-info/",
    ".DS_Store",
)  # fmt: skip
"""Excluded unless re-included (``!.github/``): hidden files and folders (``.env`` holds secrets),
version-control metadata, virtual environments and tool caches."""

BINARY_SNIFF_BYTES = 8192
"""How much of a file is looked at for NUL bytes before decoding (binary files have them early)."""

_logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file found by :func:`discover`.

    Attributes:
        path: the absolute path (symlinks inside the tree are kept as found, not resolved).
        root: the root it was found under (for relative display and vanished-file deletes).
        kind: how it will be read.
        language: the programming language for source code, else ``""``.
        size: its size in bytes when it was found.
    """

    path: Path
    root: Path
    kind: DocumentKind
    language: str
    size: int

    @property
    def display(self) -> str:
        r"""The path relative to its root (POSIX), for messages (undecodable bytes as ``\xff``)."""
        return shown_text(_rel(self.path, self.root))


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file that was found but not indexed, and why.

    ``stale`` is true when the file's old chunks must go (it no longer qualifies: excluded, too
    big, binary…); false when the problem may be passing (unreadable), so old chunks are kept.
    """

    path: str
    reason: str
    stale: bool = True


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    r"""The text of one file, ready for chunking.

    Attributes:
        path: absolute POSIX path.
        kind: markdown / text / code / html, or a format reader's kind (pdf, docx, pptx, spreadsheet,
            odt, epub, email, notebook, rst, asciidoc); HTML and those formats are Markdown-like text.
        title: the document title (see :func:`document_title`; HTML/PDF metadata; else the file name).
        text: the decoded text with ``\n`` line ends; line numbers refer to it.
        digest: sha256 of the file's bytes (unchanged digest → nothing to do).
        language: the source language for code.
        encoding: the detected text encoding (``utf-8``, ``cp1252``…; ``pdf`` for PDFs).
        notes: harmless oddities worth reporting (e.g. "decoded as cp1252").
    """

    path: str
    kind: DocumentKind
    title: str
    text: str
    digest: str
    language: str = ""
    encoding: str = "utf-8"
    notes: tuple[str, ...] = field(default_factory=tuple)


def classify(path: Path) -> tuple[DocumentKind, str] | None:
    """The document kind and code language of ``path`` from its name, or ``None`` if unsupported."""
    name = path.name
    suffix = path.suffix.lower()
    if name in CODE_FILENAMES:
        return "code", CODE_FILENAMES[name]
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown", ""
    if suffix in TEXT_SUFFIXES:
        return "text", ""
    if suffix in HTML_SUFFIXES:
        return "html", ""
    if suffix in FORMAT_SUFFIXES:
        return FORMAT_SUFFIXES[suffix], ""
    if suffix in CODE_LANGUAGES:
        return "code", CODE_LANGUAGES[suffix]
    if not suffix and name.upper() in TEXT_FILENAMES:
        return "text", ""
    return None


def build_excludes(
    root: Path, patterns: Sequence[str], *, use_gitignore: bool = True
) -> pathspec.GitIgnoreSpec:
    """The exclude spec for ``root``: defaults, the configured patterns, and ``root/.gitignore``."""
    lines = list(DEFAULT_EXCLUDES) + list(patterns)
    gitignore = root / ".gitignore"
    if use_gitignore:
        try:
            if gitignore.is_file():
                lines += gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            _logger.warning("cannot read %s: %s", gitignore, exc)
    return pathspec.GitIgnoreSpec.from_lines(lines)


def discover(
    paths: Iterable[str | os.PathLike[str]],
    *,
    excludes: Sequence[str] = (),
    max_file_bytes: int,
    use_gitignore: bool = True,
    prune: Callable[[str], str | None] | None = None,
) -> Iterator[SourceFile | SkippedFile]:
    """Walk ``paths`` (files or folders) and yield the files to index, or why one is skipped.

    Excluded files are not reported (they were never meant to be indexed). ``prune`` is asked
    about each folder below a given one (its path relative to it, ending in ``/``): a reason skips
    the folder whole, unwalked, reported once as a :class:`SkippedFile` whose path ends in ``/``. Directory symlinks are
    followed once: a directory already visited (same device and inode) is not entered again, so a
    symlink loop ends the walk of that branch instead of recursing forever. A file or folder whose
    name is not valid UTF-8 is skipped with that reason (the index stores paths as UTF-8 text, and
    a lossy stand-in could not be opened again or told apart from a real name).

    Raises:
        FileNotFoundError: when a given path does not exist.
    """
    for given in paths:
        start = Path(os.path.abspath(os.fspath(given)))
        try:
            if not start.exists():
                raise FileNotFoundError(f"{start} does not exist")
            is_file = start.is_file()
        except FileNotFoundError:
            raise
        except OSError as exc:  # e.g. inside a folder this user may not search
            yield SkippedFile(shown_text(start.as_posix()), f"cannot read: {exc.strerror or exc}", False)
            continue
        if is_file:
            yield from _check_file(start, start.parent, max_file_bytes)
            continue
        spec = build_excludes(start, excludes, use_gitignore=use_gitignore)
        yield from _walk(start, spec, max_file_bytes, prune)


def _walk(
    root: Path,
    spec: pathspec.GitIgnoreSpec,
    max_file_bytes: int,
    prune: Callable[[str], str | None] | None = None,
) -> Iterator[SourceFile | SkippedFile]:
    visited: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            info = folder.stat()
        except OSError as exc:
            shown = shown_text(_rel(folder, root))
            yield SkippedFile(shown + "/", f"cannot read folder: {exc.strerror or exc}", False)
            continue
        key = (info.st_dev, info.st_ino)
        if key in visited:
            yield SkippedFile(shown_text(_rel(folder, root)) + "/", "symlink loop or folder already visited")
            continue
        visited.add(key)
        try:
            with os.scandir(folder) as entries:
                children = sorted(entries, key=lambda entry: entry.name)
        except OSError as exc:
            shown = shown_text(_rel(folder, root))
            yield SkippedFile(shown + "/", f"cannot list folder: {exc.strerror or exc}", False)
            continue
        subfolders: list[Path] = []
        for entry in children:
            path = Path(entry.path)
            relative = _rel(path, root)
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
                if spec.match_file(relative + "/"):
                    continue
                if not is_utf8(entry.path):
                    yield SkippedFile(
                        shown_text(relative) + "/", NOT_UTF8 + "; rename the folder to index it"
                    )
                    continue
                reason = prune(relative + "/") if prune is not None else None
                if reason is not None:
                    yield SkippedFile(relative + "/", reason)
                    continue
                subfolders.append(path)
                continue
            if spec.match_file(relative):
                continue
            yield from _check_file(path, root, max_file_bytes)
        stack.extend(reversed(subfolders))


NOT_UTF8 = "the name is not valid UTF-8 (the index stores paths as UTF-8)"


def _check_file(path: Path, root: Path, max_file_bytes: int) -> Iterator[SourceFile | SkippedFile]:
    shown = shown_text(_rel(path, root))
    if not is_utf8(path.as_posix()):
        yield SkippedFile(shown, NOT_UTF8 + "; rename the file to index it")
        return
    try:
        info = path.stat()
    except FileNotFoundError:
        yield SkippedFile(shown, "broken symlink or file vanished while walking")
        return
    except OSError as exc:
        yield SkippedFile(shown, f"cannot stat: {exc.strerror or exc}", False)
        return
    if not stat.S_ISREG(info.st_mode):
        yield SkippedFile(shown, "not a regular file (device, socket or pipe)")
        return
    kind = classify(path)
    if kind is None:
        yield SkippedFile(shown, f"unsupported file type ({path.suffix or 'no extension'})")
        return
    if info.st_size > max_file_bytes:
        yield SkippedFile(
            shown,
            f"{info.st_size:,} bytes is over the {max_file_bytes:,}-byte limit "
            "(raise index.max_file_bytes to include it)",
        )
        return
    yield SourceFile(path=path, root=root, kind=kind[0], language=kind[1], size=info.st_size)


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 (a file name of undecodable bytes holds lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_text(text: str) -> str:
    r"""``text`` safe to print and store: undecodable file-name bytes as ``\xff``, other lone surrogates as ``\udcxx``."""
    if is_utf8(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def valid_text(text: str) -> str:
    """``text`` with any lone surrogate (broken PDF text maps) replaced by U+FFFD."""
    if is_utf8(text):
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or path.name
    except ValueError:
        return path.as_posix()


def file_digest(data: bytes) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(data).hexdigest()


def read_bytes(source: SourceFile, max_file_bytes: int) -> bytes | SkippedFile:
    """The file's bytes, or why they cannot be read (the size is checked again: files grow)."""
    try:
        with source.path.open("rb") as handle:
            data = handle.read(max_file_bytes + 1)
    except OSError as exc:
        return SkippedFile(source.display, f"unreadable: {exc.strerror or exc}", stale=False)
    if len(data) > max_file_bytes:
        return SkippedFile(source.display, f"grew past the {max_file_bytes:,}-byte limit while reading")
    return data


def load_file(source: SourceFile, max_file_bytes: int) -> LoadedDocument | SkippedFile:
    """Read and decode one file (blocking). Never raises for bad content: it returns a skip."""
    data = read_bytes(source, max_file_bytes)
    if isinstance(data, SkippedFile):
        return data
    return load_bytes(source, data)


def load_bytes(source: SourceFile, data: bytes) -> LoadedDocument | SkippedFile:
    """Turn the bytes of ``source`` into a document, or say why not."""
    digest = file_digest(data)
    path = source.path.as_posix()
    if source.kind in FORMAT_KINDS:
        return _load_format(source, data, digest)
    decoded = decode_text(data)
    if isinstance(decoded, str):
        return SkippedFile(source.display, decoded)
    text, encoding = decoded
    notes = () if encoding in ("utf-8", "ascii") else (f"decoded as {encoding}",)
    if source.kind == "html":
        return _load_html(source, text, digest, encoding, notes)
    text = _normalise_newlines(text)
    if not text.strip():
        return SkippedFile(source.display, "empty file (nothing to index)")
    title = document_title(text, source)
    return LoadedDocument(
        path=path,
        kind=source.kind,
        title=title,
        text=text,
        digest=digest,
        language=source.language,
        encoding=encoding,
        notes=notes,
    )


def decode_text(data: bytes) -> tuple[str, str] | str:
    """``(text, encoding)``, or a reason string when the bytes are binary or undecodable."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\x00" in data[:BINARY_SNIFF_BYTES] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "binary file (NUL bytes); not text"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None or best.encoding is None:
        return "binary or unknown encoding (not valid UTF-8 and no plausible charset)"
    encoding = best.encoding
    if encoding in _LATIN_CODE_PAGES:
        # Short Western texts fit several Latin code pages about equally well; windows-1252 is by
        # far the most common of them (WHATWG even reads "latin-1" as windows-1252).
        for match in matches:
            if match.encoding == "cp1252" and match.chaos <= best.chaos + CP1252_CHAOS_MARGIN:
                encoding = "cp1252"
                break
    try:
        return data.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError):
        return f"cannot decode as {encoding}"


_LATIN_CODE_PAGES = frozenset(
    {"cp1250", "cp1252", "cp1254", "cp1257", "latin_1", "iso8859_2", "iso8859_4", "iso8859_10",
     "iso8859_13", "iso8859_15", "mac_latin2", "mac_roman"}
)  # fmt: skip
CP1252_CHAOS_MARGIN = 0.15
"""How much worse (charset-normalizer "chaos") windows-1252 may fit and still be preferred."""


def document_title(text: str, source: SourceFile) -> str:
    """The title of a Markdown or text file's ``text``, else ``source``'s file name.

    Markdown: front matter ``title:``, else the first level-1 heading outside code (see
    :func:`_markdown_title`). reStructuredText, ``.txt`` and suffix-less text files (``README``):
    the first section title (see :func:`_rst_title`). Source code and other text: the file name.
    """
    title: str | None = None
    if source.kind == "markdown":
        title = _markdown_title(text)
    elif source.kind == "text" and (
        source.path.suffix.lower() in RST_TITLE_SUFFIXES or not source.path.suffix
    ):
        title = _rst_title(text)
    return title or source.path.name


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


TITLE_SCAN_LINES = 1000
"""How many lines from the top are searched for a title (a title further down is not one)."""

TITLE_LINE_CHARS = 1000
"""A line longer than this is never a title or an underline (only its start is looked at)."""

TITLE_MAX_CHARS = 200
"""A title is cut (at a word, with an ellipsis) to at most this many characters."""

HTML_TITLE_SCAN_CHARS = 1_000_000
"""How much of an HTML page is searched for ``<title>`` and ``<h1>`` when trafilatura found none."""

RST_TITLE_SUFFIXES = frozenset({".rst", ".rest", ".txt", ".text"})
"""Text files whose titles are reStructuredText section titles (suffix-less ``README`` & co. too)."""

_FENCE_OPEN = re.compile(r"[ \t]*+(`{3,}+|~{3,}+)(.*)")
_CONTAINERS = re.compile(r"(?:[ \t]*+(?:>[ \t]?|(?:[-+*]|\d{1,9}[.)])(?:[ \t]++|$)))*+")
_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)")
_ATX_ATTRIBUTES = re.compile(r"\{[ \t]*[#.:][^{}]*\}$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_THEMATIC_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_HTML_H1_LINE = re.compile(r" {0,3}<h1(?=[\s/>]|$)", re.IGNORECASE)
_HTML_MARK = re.compile(r"<!--|<(script|style|template|svg|title|h1)(?=[\s/>])", re.IGNORECASE)
_HTML_CLOSE = {
    name: re.compile(rf"</{name}\s*>", re.IGNORECASE)
    for name in ("script", "style", "template", "svg", "title", "h1")
}
_IMG_ALT = re.compile(r"""<img\b[^<>]*?\balt\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)')""", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*+(?:\s[^<>]*)?>")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_IMAGE = re.compile(r"!\[([^\[\]]*)\]\([^()]*\)")
_LINK = re.compile(r"\[([^\[\]]*)\](?:\([^()]*\)|\[[^\[\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^<>\s]*)>")
_EMPHASIS = (  # the text between two delimiters holds none of their character: linear time
    re.compile(r"\*\*(?!\s)([^*]+?)(?<!\s)\*\*"),
    re.compile(r"(?<!\w)__(?!\s)([^_]+?)(?<!\s)__(?!\w)"),
    re.compile(r"~~(?!\s)([^~]+?)(?<!\s)~~"),
    re.compile(r"\*(?!\s)([^*]+?)(?<!\s)\*"),
    re.compile(r"(?<!\w)_(?!\s)([^_]+?)(?<!\s)_(?!\w)"),
)
_RST_ROLE = re.compile(r":[\w.+-]+:`([^`]*)`")
_RST_TARGET = re.compile(r"`([^`<]*)<[^<>`]*>`_{0,2}")
_RST_REFERENCE = re.compile(r"`([^`]+)`_{1,2}(?!\w)")
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u2060\ue000-\ue07f\ufeff]")
_ADORNMENT_CHARS = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_PRIVATE_BASE = 0xE000  # escaped ASCII punctuation travels as U+E000 + its code while markup is reduced


def _head_lines(text: str, start: int = 0) -> list[str]:
    """The first :data:`TITLE_SCAN_LINES` lines from ``start``, each cut to just over :data:`TITLE_LINE_CHARS`."""
    lines: list[str] = []
    position = start
    while position <= len(text) and len(lines) < TITLE_SCAN_LINES:
        end = text.find("\n", position)
        if end < 0:
            end = len(text)
        lines.append(text[position : min(end, position + TITLE_LINE_CHARS + 1)])
        position = end + 1
    return lines


def _container_end(line: str) -> int:
    """Where ``line``'s text starts after block-quote (``>``) and list-item (``-``, ``1.``) markers."""
    found = _CONTAINERS.match(line)
    return found.end() if found else 0


def _too_long(line: str) -> bool:
    return len(line) > TITLE_LINE_CHARS


def clean_title(raw: str, *, markup: Literal["markdown", "rst", "plain"] = "markdown") -> str | None:
    """``raw`` as a title: inline markup reduced to its text, entities decoded, one line, cut short.

    ``markdown`` reduces ``**x**``, ``*x*``, ``_x_``, ``~~x~~``, `` `x` ``, ``[x](y)``, ``![x](y)``,
    ``<tags>`` and backslash escapes; ``rst`` first reduces ``:role:`x```, ```x <url>`_`` and
    ```x`_``; ``plain`` (front matter, HTML text) only decodes entities and tidies. ``None`` when
    nothing with a letter or digit is left.
    """
    if not any(character.isalnum() for character in raw[: TITLE_LINE_CHARS * 4]):
        return None  # reducing markup never adds a letter or digit
    text = _UNPRINTABLE.sub(" ", valid_text(raw[: TITLE_LINE_CHARS * 4]))
    if markup != "plain":
        if markup == "rst":
            text = _RST_ROLE.sub(lambda m: f"`{m[1]}`", text)
            text = _RST_TARGET.sub(lambda m: m[1].rstrip(), text)
            text = _RST_REFERENCE.sub(lambda m: m[1], text)
        text = _reduce_markdown(text)
    text = html.unescape(text) if "&" in text else text
    text = " ".join(_UNPRINTABLE.sub(" ", text).split()).rstrip("¶§ ").strip()
    if not any(character.isalnum() for character in text):
        return None
    if len(text) > TITLE_MAX_CHARS:
        cut = text[: TITLE_MAX_CHARS - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > TITLE_MAX_CHARS // 2 else cut).rstrip() + "…"
    return text


def _reduce_markdown(text: str) -> str:
    text = _ESCAPE.sub(lambda m: chr(_PRIVATE_BASE + ord(m[1])), text)
    pieces: list[str] = []
    position = 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(_reduce_inline(text[position : span.start()]))
        code = span[2]
        pieces.append(code[1:-1] if len(code) > 2 and code[0] == code[-1] == " " else code)
        position = span.end()
    pieces.append(_reduce_inline(text[position:]))
    joined = "".join(pieces)
    return "".join(
        chr(ord(ch) - _PRIVATE_BASE) if _PRIVATE_BASE <= ord(ch) < _PRIVATE_BASE + 0x80 else ch
        for ch in joined
    )


def _reduce_inline(text: str) -> str:
    text = _IMAGE.sub(lambda m: m[1], text)
    text = _LINK.sub(lambda m: m[1], text)
    text = _AUTOLINK.sub(lambda m: m[1], text)
    text = _TAG.sub(" ", text)
    for _ in range(3):  # nested emphasis (``**a *b* c**``) comes apart from the inside out
        reduced = text
        for pattern in _EMPHASIS:
            reduced = pattern.sub(lambda m: m[1], reduced)
        if reduced == text:
            break
        text = reduced
    return text


def _front_matter(text: str) -> tuple[str | None, int]:
    """The front matter's ``title`` (YAML ``---`` or TOML ``+++``) and where the body starts."""
    marker = "---" if text.startswith("---\n") else "+++" if text.startswith("+++\n") else None
    if marker is None:
        return None, 0
    closers = ("---", "...") if marker == "---" else ("+++",)
    lines = _head_lines(text, 4)
    end = next((n for n, line in enumerate(lines) if line.rstrip() in closers), None)
    if end is None:
        return None, 0  # not front matter: a thematic break
    body_start = 4
    for _ in range(end + 1):
        body_start = text.find("\n", body_start) + 1 or len(text)
    separator = ":" if marker == "---" else "="
    for number, line in enumerate(lines[:end]):
        key, found, value = line.partition(separator)
        if not found or key.strip() != "title" or key[:1] in (" ", "\t") or _too_long(line):
            continue
        value = value.strip()
        if value in ("", "|", ">", "|-", ">-", "|+", ">+"):  # a YAML block scalar on the next lines
            block = []
            for following in lines[number + 1 : end]:
                if following[:1] not in (" ", "\t"):
                    break
                block.append(following.strip())
            value = " ".join(block)
        elif value[:1] in ("'", '"'):
            quote = value[0]
            closing = value.rfind(quote)
            value = value[1:closing] if closing > 0 else value[1:]
            if quote == "'":
                value = value.replace("''", "'")
            else:
                value = value.replace('\\"', '"').replace("\\\\", "\\")
        else:
            value = value.split(" #", 1)[0]
        return clean_title(value, markup="plain"), body_start
    return None, body_start


def _markdown_title(text: str) -> str | None:
    """A Markdown file's title: front matter ``title:``, else its first level-1 heading.

    Headings count only outside fenced code (```` ``` ```` and ``~~~`` of any length, also inside
    list items and block quotes), indented code and HTML comments: ATX (``# x``), setext (``x``
    over ``===``) and a raw ``<h1>``. A file without a level-1 heading that opens with a heading
    of another level (``## x``, ``x`` over ``---``) takes that one. Only the first
    :data:`TITLE_SCAN_LINES` lines are looked at; an unclosed fence runs to their end.
    """
    front, start = _front_matter(text)
    if front:
        return front
    lines = _head_lines(text, start)
    fence: tuple[str, int, bool] | None = None  # character, length, opened in a list item or quote
    comment = False
    opening: str | None = None  # the first heading, when nothing came before it
    seen_content = False
    paragraph: str | None = None  # the current paragraph's only line so far (a setext candidate)
    in_paragraph = False
    paragraph_opens = False  # whether the current paragraph is the file's first content
    for number, line in enumerate(lines):
        body = line[_container_end(line) :]
        if fence is not None:
            closing = (body if fence[2] else line).strip()  # any indent: list items nest fences deeply
            if closing.startswith(fence[0] * fence[1]) and not closing.strip(fence[0]):
                fence = None
            continue
        if comment:
            comment = "-->" not in line
            continue
        stripped = line.strip()
        if not stripped:
            paragraph, in_paragraph = None, False
            continue
        opened = _FENCE_OPEN.fullmatch(body)
        if opened and not (opened[1][0] == "`" and "`" in opened[2]):
            fence = (opened[1][0], len(opened[1]), len(body) < len(line))
            paragraph, in_paragraph, seen_content = None, False, True
            continue
        if stripped.startswith("<!--") and not in_paragraph:
            comment = "-->" not in stripped[4:]
            continue
        found = None if _too_long(line) else _markdown_heading(line, lines, number, paragraph, in_paragraph)
        if found is not None:
            level, title = found
            if title is not None and level == 1:
                return title
            setext = in_paragraph and _SETEXT.fullmatch(line) is not None
            if title is not None and opening is None and (paragraph_opens if setext else not seen_content):
                opening = title
            paragraph, in_paragraph, seen_content = None, False, True
            continue
        if not in_paragraph:
            paragraph_opens = not seen_content
        seen_content = True
        if not in_paragraph and (_indent(line) >= 4 or _THEMATIC_BREAK.fullmatch(line)):
            continue  # indented code, or a thematic break
        plain = len(body) == len(line) and not _too_long(line)
        paragraph = stripped if not in_paragraph and plain else None
        in_paragraph = True
    return opening


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _markdown_heading(
    line: str, lines: list[str], number: int, paragraph: str | None, in_paragraph: bool
) -> tuple[int, str | None] | None:
    """``(level, title)`` when ``line`` is a heading (its title ``None`` if it holds no text)."""
    atx = _ATX_OPEN.match(line)
    if atx:
        content = line[atx.end() :].rstrip()
        closing = content.rstrip("#")
        if not closing or closing[-1] in " \t":
            content = closing.rstrip()
        attributes = _ATX_ATTRIBUTES.search(content)
        if attributes:  # ``# Title {#anchor .class}`` (Pandoc, MkDocs attribute lists)
            content = content[: attributes.start()].rstrip()
        return len(atx[1]), clean_title(content)
    setext = _SETEXT.fullmatch(line)
    if setext and in_paragraph:
        if paragraph is None:  # a paragraph of several lines: a heading, but not a title
            return 2, None
        return (1 if setext[1][0] == "=" else 2), clean_title(paragraph)
    if _HTML_H1_LINE.match(line) and not in_paragraph:
        block = [line]
        for following in lines[number + 1 : number + 20]:
            if re.search(r"</h1\s*>", block[-1], re.IGNORECASE):
                break
            block.append(following)
        return 1, _html_text("\n".join(block))
    return None


def _html_text(fragment: str) -> str | None:
    """The text of an HTML fragment (tags dropped, entities decoded), else its first image's alt."""
    bounded = fragment[: TITLE_LINE_CHARS * 4]
    title = clean_title(_TAG.sub(" ", bounded), markup="plain")
    if title is None:
        alt = _IMG_ALT.search(bounded)
        if alt:
            title = clean_title(alt[1] if alt[1] is not None else alt[2], markup="plain")
    return title


def _rst_title(text: str) -> str | None:
    """A reStructuredText file's title: its first section title.

    That is a line of text under-lined, or over- and under-lined alike, with one punctuation
    character repeated at least as far as the text is wide (East Asian wide characters count two),
    in column one, after a blank line or at the top. Indented lines (literal blocks, directive
    bodies) are never titles.
    """
    lines = [line.rstrip() for line in _head_lines(text)]
    for number, line in enumerate(lines):
        if number and lines[number - 1]:
            continue  # a title starts a block
        over = _adornment(line)
        if over is not None and number + 2 < len(lines):
            inner, under = lines[number + 1], lines[number + 2]
            if inner.strip() and under == line and _width(inner.strip()) <= len(line):
                title = clean_title(inner.strip(), markup="rst")
                if title:
                    return title
            continue
        if not line or line[0] in " \t" or over is not None or number + 1 >= len(lines):
            continue
        under_line = lines[number + 1]
        if _adornment(under_line) is not None and _width(line) <= len(under_line):
            title = clean_title(line, markup="rst")
            if title:
                return title
    return None


def _adornment(line: str) -> str | None:
    if 2 <= len(line) <= TITLE_LINE_CHARS and line[0] in _ADORNMENT_CHARS and line == line[0] * len(line):
        return line
    return None


def _width(text: str) -> int:
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


def _html_title(html_text: str) -> str | None:
    """The page's ``<title>``, else its first ``<h1>`` with text, else ``None``.

    Comments, scripts, styles and inline SVG are skipped; only the first
    :data:`HTML_TITLE_SCAN_CHARS` characters are searched, and every step moves forward, so
    broken markup costs linear time.
    """
    scan = html_text[:HTML_TITLE_SCAN_CHARS]
    first_h1: str | None = None
    position = 0
    while (mark := _HTML_MARK.search(scan, position)) is not None:
        if mark[0] == "<!--":
            end = scan.find("-->", mark.end())
            if end < 0:
                break
            position = end + 3
            continue
        name = mark[1].lower()
        close = _HTML_CLOSE[name].search(scan, mark.end())
        if close is None:
            break
        position = close.end()
        if name not in ("title", "h1"):
            continue
        opened = scan.find(">", mark.end(), close.start())
        if opened < 0:
            continue
        text = _html_text(scan[opened + 1 : close.start()])
        if text is None:
            continue
        if name == "title":
            return text
        if first_h1 is None:
            first_h1 = text
    return first_h1


def _load_html(
    source: SourceFile, html: str, digest: str, encoding: str, notes: tuple[str, ...]
) -> LoadedDocument | SkippedFile:
    import trafilatura
    from trafilatura.settings import Document

    try:
        extracted = trafilatura.bare_extraction(
            html,
            favor_precision=True,
            include_comments=False,
            include_tables=True,
            include_formatting=True,
            output_format="python",
            with_metadata=True,
        )
    except Exception as exc:  # noqa: BLE001  # lxml/trafilatura raise many types on broken markup
        return SkippedFile(source.display, f"HTML could not be parsed: {type(exc).__name__}: {exc}")
    # a result that is no Document (older trafilatura versions answer a dict) has no main text here
    body = extracted.text if isinstance(extracted, Document) else None
    if not isinstance(extracted, Document) or not body or not body.strip():
        return SkippedFile(source.display, "HTML without main text (trafilatura found nothing to keep)")
    title = clean_title(str(extracted.title or ""), markup="plain") or _html_title(html) or source.path.name
    text = valid_text(_normalise_newlines(body))
    if not text.lstrip().startswith("#"):
        text = f"# {title}\n\n{text}"
    return LoadedDocument(
        path=source.path.as_posix(),
        kind="html",
        title=str(title),
        text=text,
        digest=digest,
        encoding=encoding,
        notes=(*notes, "main text extracted by trafilatura; line numbers refer to the extracted text"),
    )


def _load_format(source: SourceFile, data: bytes, digest: str) -> LoadedDocument | SkippedFile:
    """A file read by a format reader (``_formats``): its Markdown-like text, or why it was skipped."""
    from simone.providers.documents._formats._common import FormatSkip
    from simone.providers.documents._formats._registry import read_format

    suffix = source.path.suffix.lower()
    try:
        extracted = read_format(suffix, data, decode=decode_text, attachment=_attachment_reader(0))
    except FormatSkip as skip:
        return SkippedFile(source.display, skip.reason)
    except (MemoryError, RecursionError) as exc:
        return SkippedFile(source.display, f"too large or too deeply nested to read ({type(exc).__name__})")
    text = valid_text(extracted.text)
    markup: Literal["markdown", "rst", "plain"] = "rst" if source.kind == "rst" else "markdown"
    title = clean_title(valid_text(extracted.title), markup=markup) if extracted.title else None
    return LoadedDocument(
        path=source.path.as_posix(),
        kind=source.kind,
        title=title or source.path.name,
        text=text,
        digest=digest,
        encoding=source.kind if suffix not in TEXT_FORMAT_SUFFIXES else "utf-8",
        notes=extracted.notes,
    )


MAX_ATTACHMENT_DEPTH = 2
"""How deep attachments are opened (a message attached to a message attached to a message…)."""


def _attachment_reader(depth: int) -> AttachmentReader:
    """Reads an e-mail attachment by its file name the way a file of that name would be read."""
    from simone.providers.documents._formats._common import Extracted, FormatSkip, escape_text, fenced
    from simone.providers.documents._formats._html import html_to_markdown
    from simone.providers.documents._formats._registry import read_format

    def read(name: str, data: bytes) -> Extracted | str:
        kind = classify(Path(name))
        if kind is None:
            return f"not read: unsupported file type ({Path(name).suffix or 'no extension'})"
        if kind[0] in FORMAT_KINDS:
            if depth >= MAX_ATTACHMENT_DEPTH:
                return "not read: attachments nested too deeply"
            try:
                return read_format(
                    Path(name).suffix.lower(),
                    data,
                    decode=decode_text,
                    attachment=_attachment_reader(depth + 1),
                )
            except FormatSkip as skip:
                return f"not read: {skip.reason}"
        decoded = decode_text(data)
        if isinstance(decoded, str):
            return f"not read: {decoded}"
        text = valid_text(_normalise_newlines(decoded[0]))
        if kind[0] == "html":
            try:
                text = html_to_markdown(text)[1]
            except FormatSkip as skip:
                return f"not read: {skip.reason}"
        elif kind[0] == "code":
            text = fenced(text, kind[1])
        elif kind[0] == "text":
            text = escape_text(text)
        return Extracted(title=None, text=text) if text.strip() else "not read: empty"

    return read
