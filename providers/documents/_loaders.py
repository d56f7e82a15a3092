"""Finding and reading documents: Markdown, plain text, source code, HTML and PDF.

:func:`discover` walks the given paths (symlink-loop safe, ``.gitignore``-style excludes, size
limits) and :func:`load_file` turns one file into a :class:`LoadedDocument` or a :class:`SkippedFile`
that says why it was left out. Both are blocking; the index runs them in worker threads.

* text encodings are detected (UTF-8 first, then ``charset-normalizer``); a file whose bytes
  look binary (NUL bytes, no plausible encoding) is skipped, never decoded into garbage;
* HTML goes through trafilatura favouring precision (main text only, Markdown headings kept);
* PDF goes through pypdf (pure Python, BSD, actively maintained); a PDF without a text layer
  (a scanned image) is skipped with a reason instead of being indexed as empty.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Literal

import charset_normalizer
import pathspec

DocumentKind = Literal["markdown", "text", "code", "html", "pdf"]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".mkd"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ".rst", ".adoc", ".asciidoc", ".org", ".tex", ".csv", ".tsv"})
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
        kind: markdown / text / code / html / pdf (HTML is converted to Markdown-like text).
        title: the document title (first heading, HTML/PDF metadata, else the file name).
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
    if suffix in PDF_SUFFIXES:
        return "pdf", ""
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
) -> Iterator[SourceFile | SkippedFile]:
    """Walk ``paths`` (files or folders) and yield the files to index, or why one is skipped.

    Excluded files are not reported (they were never meant to be indexed). Directory symlinks are
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
        yield from _walk(start, spec, max_file_bytes)


def _walk(
    root: Path, spec: pathspec.GitIgnoreSpec, max_file_bytes: int
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
    if source.kind == "pdf":
        return _load_pdf(source, data, digest)
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
    title = _markdown_title(text) if source.kind == "markdown" else None
    return LoadedDocument(
        path=path,
        kind=source.kind,
        title=title or source.path.name,
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


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FRONT_TITLE = re.compile(r"^title:\s*[\"']?(.+?)[\"']?\s*$", re.MULTILINE)


def _markdown_title(text: str) -> str | None:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end > 0:
            found = _FRONT_TITLE.search(text[4:end])
            if found:
                return found.group(1).strip()
    for line in text.split("\n", 200)[:200]:
        match = _ATX.match(line)
        if match and len(match.group(1)) == 1:
            return match.group(2).strip()
    return None


def _load_html(
    source: SourceFile, html: str, digest: str, encoding: str, notes: tuple[str, ...]
) -> LoadedDocument | SkippedFile:
    import trafilatura

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
    body = getattr(extracted, "text", None) if extracted is not None else None
    if not body or not body.strip():
        return SkippedFile(source.display, "HTML without main text (trafilatura found nothing to keep)")
    title = valid_text(str(getattr(extracted, "title", None) or source.path.name))
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


def _load_pdf(source: SourceFile, data: bytes, digest: str) -> LoadedDocument | SkippedFile:
    import pypdf

    try:
        reader = pypdf.PdfReader(BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return SkippedFile(source.display, "encrypted PDF (a password is needed)")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = reader.metadata.title if reader.metadata else None
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types on malformed files
        return SkippedFile(source.display, f"PDF could not be read: {type(exc).__name__}: {exc}")
    text = valid_text(_normalise_newlines("\n\n".join(page.strip("\n") for page in pages)))
    if not text.strip():
        return SkippedFile(
            source.display,
            f"PDF has no text layer ({len(pages)} page(s), likely scanned images); run OCR to index it",
        )
    first_line = next((line.strip() for line in text.split("\n") if line.strip()), "")
    title = valid_text(
        (str(meta_title).strip() if meta_title else "") or first_line[:120] or source.path.name
    )
    return LoadedDocument(
        path=source.path.as_posix(),
        kind="pdf",
        title=title,
        text=text,
        digest=digest,
        encoding="pdf",
        notes=(f"{len(pages)} page(s)",),
    )
