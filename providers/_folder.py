"""An in-memory lexical provider over the text files of a folder (no index on disk).

It reads every text file under a root once (in a worker thread), splits each into paragraph
sections with line ranges, and ranks sections by BM25. Meant for small folders and for the
``simone search QUERY PATH`` command; the document index is the persistent, hybrid one.
"""

from __future__ import annotations

import math
import re
from collections import Counter
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

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".text"})
MAX_FILE_BYTES = 2 * 1024 * 1024
_WORD = re.compile(r"\w+", re.UNICODE)


def _simple_terms(text: str) -> list[str]:
    return [word.casefold() for word in _WORD.findall(text)]


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
    """

    K1 = 1.2
    """BM25 term-frequency saturation."""
    B = 0.75
    """BM25 length normalisation."""

    def __init__(self, root: str | Path, *, name: str = "folder") -> None:
        self.root = Path(root).resolve()
        self._name = name
        self.sections: list[Section] = []
        self.skipped: list[Skipped] = []
        self._tf: list[Counter[str]] = []
        self._df: Counter[str] = Counter()
        self._avg_len = 0.0

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
        self.sections, self.skipped = read_sections(self.root)
        self._tf = [Counter(_simple_terms(s.title) * 3 + _simple_terms(s.text)) for s in self.sections]
        self._df = Counter(term for tf in self._tf for term in tf)
        self._avg_len = sum(sum(tf.values()) for tf in self._tf) / len(self._tf) if self._tf else 0.0

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Rank sections by BM25; a section sharing no term with the query is not returned."""
        query = list(dict.fromkeys(_simple_terms(request.query)))
        n = len(self._tf)
        scored: list[tuple[float, str, int]] = []
        for index, tf in enumerate(self._tf):
            length = sum(tf.values())
            score = 0.0
            for term in query:
                freq = tf.get(term, 0)
                if not freq:
                    continue
                idf = math.log(1 + (n - self._df[term] + 0.5) / (self._df[term] + 0.5))
                norm = freq + self.K1 * (1 - self.B + self.B * length / (self._avg_len or 1.0))
                score += idf * freq * (self.K1 + 1) / norm
            if score > 0:
                scored.append((score, self.sections[index].locator, index))
        scored.sort(key=lambda item: (-item[0], item[1]))
        evidence = [
            Evidence.create(
                provider=self.kind,
                provider_name=self.name,
                locator=self.sections[index].locator,
                content=self.sections[index].text,
                title=self.sections[index].title,
                score=score,
                metadata={"search": "lexical", "path": self.sections[index].path},
            )
            for score, _, index in scored[: max(request.limit * 3, request.limit)]
        ]
        return ProviderResponse(
            evidence=evidence,
            details={"sections": n, "skipped": [f"{s.path}: {s.reason}" for s in self.skipped]},
        )
