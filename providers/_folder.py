"""An in-memory lexical provider over the text files of a folder (no index on disk).

It reads every text file under a root once (in a worker thread), splits each into paragraph
sections with line ranges, and ranks sections with the runtime's :class:`~simone.runtime.text.BM25Index`
(the shared text analysis: any language, stop words, synonyms). Meant for small folders and for the
``simone search QUERY PATH`` command; the document index is the persistent, hybrid one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import anyio
from simone.runtime import (
    ConfigError,
    Evidence,
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    TrustedContext,
)
from simone.runtime.text import (
    Analyzer,
    BM25Index,
)

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".text"})
MAX_FILE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Section:
    """A paragraph of a file with its 1-based line range."""

    path: str
    title: str
    text: str
    first_line: int
    last_line: int

    @property
    def locator(self) -> str:
        """``path#Lfirst-Llast``."""
        return f"{self.path}#L{self.first_line}-L{self.last_line}"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file that was not read, and why."""

    path: str
    reason: str


def read_sections(root: Path, *, max_file_bytes: int = MAX_FILE_BYTES) -> tuple[list[Section], list[Skipped]]:
    """Read the text files under ``root`` into paragraph sections; files that cannot be used are skipped."""
    if not root.exists():
        raise ConfigError(f"{root} does not exist; give a folder (or file) of text documents")
    files = (
        [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    )
    sections: list[Section] = []
    skipped: list[Skipped] = []
    base = root if root.is_dir() else root.parent
    for path in files:
        shown = path.relative_to(base).as_posix()
        if any(part.startswith(".") for part in path.relative_to(base).parts):
            continue
        if path.suffix.lower() not in TEXT_SUFFIXES:
            skipped.append(Skipped(shown, f"not a text document ({path.suffix or 'no suffix'})"))
            continue
        try:
            size = path.stat().st_size
            if size > max_file_bytes:
                skipped.append(Skipped(shown, f"{size:,} bytes is over the {max_file_bytes:,}-byte limit"))
                continue
            raw = path.read_bytes()
        except OSError as exc:
            skipped.append(Skipped(shown, f"unreadable: {exc.strerror or exc}"))
            continue
        if b"\x00" in raw[:8192]:
            skipped.append(Skipped(shown, "binary content"))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(Skipped(shown, "not valid UTF-8"))
            continue
        sections.extend(_split(shown, text))
    return sections, skipped


def _split(path: str, text: str) -> list[Section]:
    lines = text.splitlines()
    title = path
    for line in lines:
        if line.startswith("# "):
            title = line[2:].strip() or path
            break
    out: list[Section] = []
    start: int | None = None
    heading = title
    for number, line in enumerate([*lines, ""], start=1):
        if line.strip():
            if start is None:
                start = number
            if line.lstrip().startswith("#"):
                heading = line.lstrip("# ").strip() or heading
            continue
        if start is not None:
            body = "\n".join(lines[start - 1 : number - 1]).strip()
            if body:
                out.append(Section(path, heading, body, start, number - 1))
            start = None
    return out


class FolderProvider:
    """BM25 over the paragraphs of a folder's text files, loaded on :meth:`load`.

    Args:
        root: a folder (or one file) of text documents (.md, .txt, .rst).
        name: the provider instance name.
        analyzer: the text analysis (the default analyzer if omitted; pass
            ``Analyzer.from_settings(settings.lexical)`` for a project's synonyms and ignore list).
    """

    def __init__(self, root: str | Path, *, name: str = "folder", analyzer: Analyzer | None = None) -> None:
        self.root = Path(root).resolve()
        self._name = name
        self.sections: list[Section] = []
        self.skipped: list[Skipped] = []
        self._index = BM25Index(analyzer)

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """Documents from the local disk."""
        return ProviderKind.DOCUMENT_INDEX

    async def load(self) -> FolderProvider:
        """Read and analyse the folder in a worker thread."""
        await anyio.to_thread.run_sync(self._load_sync)
        return self

    def _load_sync(self) -> None:
        sections, skipped = read_sections(self.root)
        index = BM25Index(self._index.analyzer)
        for number, section in enumerate(sections):
            index.add(str(number), section.text, title=section.title, locator=section.locator)
        self.sections, self.skipped, self._index = sections, skipped, index

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Rank sections by BM25; a section sharing no term with the query is not returned."""
        hits = self._index.search(request.query, limit=request.limit * 3)
        evidence = [
            Evidence.create(
                provider=self.kind,
                provider_name=self.name,
                locator=hit.locator,
                content=self.sections[int(hit.id)].text,
                title=self.sections[int(hit.id)].title,
                score=hit.score,
                metadata={
                    "method": "lexical",
                    "path": self.sections[int(hit.id)].path,
                    "matched_words": list(hit.matched_words),
                    "coverage": hit.coverage,
                },
            )
            for hit in hits
        ]
        return ProviderResponse(
            evidence=evidence,
            details={
                "sections": len(self.sections),
                "skipped": [f"{s.path}: {s.reason}" for s in self.skipped],
            },
        )
