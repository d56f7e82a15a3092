"""``[index] locator_base``: locators a team can open, set at index time and stored in the index.

Real ONNX model, real LanceDB in a temp dir, real git for the URL form.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore, LocatorMap
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.runtime import EmbeddingChain, IndexSettings, InvalidRequest, Router, SearchMode, TrustedContext

CONTEXT = TrustedContext(actor="tester")
URL = "https://git.example.com/acme/handbook/blob/main"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A handbook folder: ``docs/deploy.md`` and ``docs/api/billing.md`` under ``handbook/``."""
    root = tmp_path / "home" / "ana" / "handbook"
    (root / "docs" / "api").mkdir(parents=True)
    (root / "docs" / "deploy.md").write_text(
        "# Deploying\n\nThe billing service is deployed on Tuesdays after the review.\n", encoding="utf-8"
    )
    (root / "docs" / "api" / "billing.md").write_text(
        "# Billing API\n\nInvoices are created with a POST to the invoices endpoint.\n", encoding="utf-8"
    )
    return root


def _index(tmp_path: Path, onnx: OnnxMiniLMEmbedder, **settings: Any) -> DocumentIndex:
    return DocumentIndex(
        DocumentStore(tmp_path / "index"), EmbeddingChain([onnx]), settings=IndexSettings(**settings)
    )


async def _locators(index: DocumentIndex, query: str) -> list[str]:
    request = Router([]).request(query, mode=SearchMode.HYBRID)
    result = await DocumentIndexProvider(index).retrieve(request, CONTEXT)
    assert result.evidence, query
    for item in result.evidence:
        assert item.metadata["path"] == item.locator.split("#")[0]
    return [item.locator for item in result.evidence]


def _stored_paths(rows: Any) -> set[str]:
    return set(rows["path"].to_pylist())


def test_a_root_path_stores_paths_relative_to_it(
    tmp_path: Path, repo: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    async def go() -> None:
        async with _index(tmp_path, onnx, locator_base=str(repo), use_git=False) as index:
            report = await index.index_paths([repo / "docs"])
            assert report.files_indexed == 2
            locators = await _locators(index, "when is the billing service deployed")
            assert locators[0].startswith("docs/deploy.md#L")
            assert not any(str(tmp_path) in loc or "/home/" in loc for loc in locators)
            stored = _stored_paths(await index.collection.rows(columns=["path"]))  # type: ignore[union-attr]
            assert stored == {"docs/deploy.md", "docs/api/billing.md"}

            # Incremental as before: nothing re-read as changed, a vanished file found under its locator.
            again = await index.index_paths([repo / "docs"])
            assert (again.files_unchanged, again.files_indexed, again.files_deleted) == (2, 0, 0)
            (repo / "docs" / "api" / "billing.md").unlink()
            gone = await index.index_paths([repo / "docs" / "api"])
            assert gone.files_deleted == 1
            stored = _stored_paths(await index.collection.rows(columns=["path"]))  # type: ignore[union-attr]
            assert stored == {"docs/deploy.md"}

    anyio.run(go)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_a_url_is_joined_with_the_path_inside_the_git_work_tree(
    tmp_path: Path, repo: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    subprocess.run(["git", "init", "-q", str(repo)], check=True)

    async def go() -> None:
        async with _index(tmp_path, onnx, locator_base=URL + "/") as index:
            await index.index_paths([repo / "docs" / "api"])  # a folder below the work tree's top
            (locator, *_) = await _locators(index, "how are invoices created")
            assert locator.startswith(f"{URL}/docs/api/billing.md#L")
            assert str(tmp_path) not in locator

    anyio.run(go)


def test_a_map_gives_each_root_its_url_or_prefix(
    tmp_path: Path, repo: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    notes = tmp_path / "home" / "ana" / "notes"
    notes.mkdir()
    (notes / "standup.md").write_text("# Standup\n\nThe standup moved to ten o'clock on Mondays.\n")

    async def go() -> None:
        mapping = {str(repo): URL, str(notes): "notes"}
        async with _index(tmp_path, onnx, locator_base=mapping, use_git=False) as index:
            await index.index_paths([repo, notes])
            stored = _stored_paths(await index.collection.rows(columns=["path"]))  # type: ignore[union-attr]
            assert stored == {f"{URL}/docs/deploy.md", f"{URL}/docs/api/billing.md", "notes/standup.md"}
            (locator, *_) = await _locators(index, "when is the standup")
            assert locator.startswith("notes/standup.md#L")

            outside = tmp_path / "elsewhere"
            outside.mkdir()
            with pytest.raises(InvalidRequest, match="not under any root of index.locator_base"):
                await index.index_paths([outside])

    anyio.run(go)


def test_switching_to_a_locator_base_replaces_the_absolute_rows(
    tmp_path: Path, repo: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    async def go() -> None:
        async with _index(tmp_path, onnx, use_git=False) as index:
            await index.index_paths([repo])
            stored = _stored_paths(await index.collection.rows(columns=["path"]))  # type: ignore[union-attr]
            assert all(path.startswith(repo.as_posix()) for path in stored)
        async with _index(tmp_path, onnx, locator_base=str(repo), use_git=False) as index:
            report = await index.index_paths([repo])
            assert (report.files_indexed, report.files_deleted) == (2, 2)
            stored = _stored_paths(await index.collection.rows(columns=["path"]))  # type: ignore[union-attr]
            assert stored == {"docs/deploy.md", "docs/api/billing.md"}
        async with _index(tmp_path, onnx, locator_base={str(repo): URL}, use_git=False) as index:
            report = await index.index_paths([repo])
            assert (report.files_indexed, report.files_deleted) == (2, 2)  # the old locators, recorded, go
            stored = _stored_paths(await index.collection.rows(columns=["path"]))  # type: ignore[union-attr]
            assert stored == {f"{URL}/docs/deploy.md", f"{URL}/docs/api/billing.md"}

    anyio.run(go)


def test_locator_map_round_trips_and_refuses_ambiguous_bare_roots(tmp_path: Path) -> None:
    from simone.providers.documents import locator_map

    a, b = (tmp_path / "a").as_posix(), (tmp_path / "b").as_posix()
    mapping = LocatorMap(((a, ""), (b, URL)))
    for local in (f"{a}/x/y.md", f"{b}/z.md"):
        assert mapping.local(mapping.locate(local)) == local
    assert mapping.locate(f"{b}/z.md") == f"{URL}/z.md"
    assert LocatorMap.from_json(mapping.to_json()) == mapping
    with pytest.raises(InvalidRequest, match="bare relative paths"):
        locator_map({a: "", b: ""}, [a])
    with pytest.raises(InvalidRequest, match="is not under"):
        locator_map(a, [b])
    assert locator_map(None, [a]) is None
