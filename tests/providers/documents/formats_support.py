"""What the format tests share: index a folder into a real LanceDB and search it; load one file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore, IndexReport
from simone.providers.documents._loaders import LoadedDocument, SkippedFile, SourceFile, classify, load_file
from simone.providers.testing import HashEmbedder
from simone.runtime import EmbeddingChain, Evidence, IndexSettings, Router, SearchMode, TrustedContext

CONTEXT = TrustedContext(actor="tester")


def search_folder(tmp_path: Path, folder: Path, query: str) -> tuple[IndexReport, list[Evidence]]:
    """Index ``folder`` into a fresh LanceDB under ``tmp_path``; the lexical hits for ``query``."""

    async def go() -> tuple[IndexReport, list[Evidence]]:
        index = DocumentIndex(
            DocumentStore(tmp_path / "index"), EmbeddingChain([HashEmbedder(32)]), settings=IndexSettings()
        )
        async with index:
            report = await index.index_paths([folder])
            request = Router([]).request(query, mode=SearchMode.LEXICAL)
            outcome: Any = await DocumentIndexProvider(index).retrieve(request, CONTEXT)
            return report, list(outcome.evidence)

    return anyio.run(go)


def load_path(path: Path) -> LoadedDocument | SkippedFile:
    """``path`` through the loader, as indexing reads it (classified by its suffix)."""
    kind = classify(path)
    assert kind is not None, path
    source = SourceFile(path=path, root=path.parent, kind=kind[0], language=kind[1], size=path.stat().st_size)
    return load_file(source, 10_000_000)
