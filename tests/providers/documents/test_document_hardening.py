"""Issue 15: one bad file never ends a run, odd file names, one writer per collection, duplicates.

Real LanceDB in temp dirs, real files and real processes; the hash embedder keeps it fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.providers.documents import (
    CollectionBusy,
    DocumentIndex,
    DocumentIndexProvider,
    DocumentStore,
    IndexReport,
    count_duplicates,
)
from simone.providers.testing import HashEmbedder
from simone.runtime import EmbeddingChain, IndexSettings, Router, SearchMode, TrustedContext

CONTEXT = TrustedContext(actor="tester")


def _index(store: Path, **settings: Any) -> DocumentIndex:
    return DocumentIndex(
        DocumentStore(store), EmbeddingChain([HashEmbedder(32)]), settings=IndexSettings(**settings)
    )


def _skipped(report: IndexReport) -> dict[str, str]:
    return {s.path: s.reason for s in report.skipped}


async def _lexical(index: DocumentIndex, query: str) -> Any:
    request = Router([]).request(query, mode=SearchMode.LEXICAL)
    return await DocumentIndexProvider(index).retrieve(request, CONTEXT)


# -- (1c) a file a loader cannot read is a skipped file, never the end of the run -----------------


def test_a_loader_raising_for_one_file_skips_that_file_and_indexes_the_rest(
    tmp_path: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "scan.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    monkeypatch.setitem(sys.modules, "pdfplumber", None)  # PDF support not installed: import raises

    async def go() -> None:
        async with _index(tmp_path / "index") as index:
            report = await index.index_paths([tree])
            assert report.files_indexed == 4 and report.chunks >= 4
            reason = _skipped(report)["scan.pdf"]
            assert "could not be loaded: ModuleNotFoundError" in reason, reason
            assert index.collection is not None
            paths = {
                Path(p).name for p in (await index.collection.rows(columns=["path"]))["path"].to_pylist()
            }
            assert paths == {"install.md", "faq.md", "billing.py", "notes.txt"}
            assert json.dumps(report.to_dict(), ensure_ascii=False)

    anyio.run(go)


def test_bad_files_of_every_kind_are_skipped_with_reasons_and_the_run_goes_on(
    tmp_path: Path, tree: Path
) -> None:
    (tree / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (tree / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R")
    (tree / "latin.txt").write_bytes("Café crème, déjà vu.\n".encode("cp1252"))
    (tree / "loop-a.md").symlink_to(tree / "loop-b.md")
    (tree / "loop-b.md").symlink_to(tree / "loop-a.md")
    (tree / "guides" / "again").symlink_to(tree)  # a folder loop
    (tree / "vanishing.md").write_text("# Soon gone\n\nThis file disappears mid-run.\n")
    locked = tree / "locked.md"
    locked.write_text("# Locked\n")
    locked.chmod(0)

    def progress(report: IndexReport) -> None:
        # The first call comes after the walk and before any file is read.
        if (tree / "vanishing.md").exists():
            (tree / "vanishing.md").unlink()

    async def go() -> None:
        async with _index(tmp_path / "index") as index:
            report = await index.index_paths([tree], progress=progress)
            skipped = _skipped(report)
            assert "binary" in skipped["blob.txt"]
            assert "PDF could not be read" in skipped["broken.pdf"]
            assert "cannot stat" in skipped["loop-a.md"] and "cannot stat" in skipped["loop-b.md"]
            assert "symlink loop" in skipped["guides/again/"]
            assert "unreadable" in skipped["vanishing.md"]
            if os.geteuid() != 0:  # root reads any file
                assert "unreadable" in skipped["locked.md"]
            assert report.files_indexed >= 5  # the tree's four files and latin.txt
            assert not report.failures

    try:
        anyio.run(go)
    finally:
        locked.chmod(0o644)


# -- (7) a file name that is not UTF-8 --------------------------------------------------------------


def test_a_non_utf8_file_name_is_skipped_with_its_reason_and_the_folder_is_indexed(
    tmp_path: Path, tree: Path
) -> None:
    root = os.fsencode(tree)
    with open(os.path.join(root, b"bad\xff.txt"), "wb") as handle:
        handle.write(b"A note whose name is not UTF-8.\n")
    os.mkdir(os.path.join(root, b"dir\xfe"))
    with open(os.path.join(root, b"dir\xfe", b"inside.md"), "wb") as handle:
        handle.write(b"# Inside\n\nA note in a folder whose name is not UTF-8.\n")

    async def go() -> None:
        async with _index(tmp_path / "index") as index:
            report = await index.index_paths([tree])
            skipped = _skipped(report)
            assert "not valid UTF-8" in skipped["bad\\xff.txt"]
            assert "not valid UTF-8" in skipped["dir\\xfe/"]
            assert report.files_indexed == 4
            json.dumps(report.to_dict(), ensure_ascii=False).encode("utf-8")  # printable, storable
            again = await index.index_paths([tree])
            assert again.files_unchanged == 4 and again.files_deleted == 0

    anyio.run(go)


# -- (8) one writer per collection, duplicates found and repaired -------------------------------------

WORKER = textwrap.dedent(
    """
    import sys, time, anyio
    from pathlib import Path
    from simone.providers.documents import CollectionBusy, DocumentIndex, DocumentStore
    from simone.providers.testing import HashEmbedder
    from simone.runtime import EmbeddingChain, IndexSettings

    async def main(root, store, go_file):
        index = DocumentIndex(
            DocumentStore(store), EmbeddingChain([HashEmbedder(32)]), settings=IndexSettings(write_batch_chunks=4)
        )
        def progress(report):
            if go_file != "-":
                print("started", flush=True)
                while not Path(go_file).exists():  # hold the run (and the lock) until told
                    time.sleep(0.05)
        async with index:
            try:
                report = await index.index_paths([root], progress=progress)
            except CollectionBusy as exc:
                print("busy", exc.message, flush=True)
                sys.exit(3)
        print("finished", report.files_indexed, flush=True)

    anyio.run(main, *sys.argv[1:4])
    """
)


def _worker(tmp_path: Path, tree: Path, go_file: str) -> subprocess.Popen[str]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return subprocess.Popen(
        [sys.executable, str(script), str(tree), str(tmp_path / "index"), go_file],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_started(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("started"), (line, process.stderr.read() if process.stderr else "")


def test_a_second_indexer_of_the_same_collection_is_refused_clearly(tmp_path: Path, tree: Path) -> None:
    go_file = tmp_path / "go"
    first = _worker(tmp_path, tree, str(go_file))
    try:
        _wait_started(first)  # it holds the collection now
        second = _worker(tmp_path, tree, "-")
        out, err = second.communicate(timeout=120)
        assert second.returncode == 3, (out, err)
        assert "being written by another process" in out and f"pid {first.pid}" in out
        go_file.touch()
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0 and "finished 4" in out, (out, err)
    finally:
        first.kill()

    async def check() -> None:
        async with _index(tmp_path / "index") as index:
            assert index.collection is not None
            assert await count_duplicates(index.collection) == 0

    anyio.run(check)


def test_a_killed_indexer_does_not_leave_the_collection_locked(tmp_path: Path, tree: Path) -> None:
    first = _worker(tmp_path, tree, str(tmp_path / "never"))
    try:
        _wait_started(first)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(60)
    finally:
        first.kill()
    assert (tmp_path / "index" / "documents.lock").exists()

    async def go() -> None:
        async with _index(tmp_path / "index") as index:
            report = await index.index_paths([tree])
            assert report.files_indexed == 4

    anyio.run(go)


def test_two_open_indexes_in_one_process_are_two_writers(tmp_path: Path, tree: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path / "index") as one, _index(tmp_path / "index") as two:
            started = anyio.Event()
            release = anyio.Event()

            def hold(report: IndexReport) -> None:
                started.set()

            async def first() -> None:
                await one.index_paths([tree], progress=hold)
                release.set()

            async with anyio.create_task_group() as group:
                group.start_soon(first)
                await started.wait()
                with pytest.raises(CollectionBusy, match="only one writer per collection"):
                    await two.index_paths([tree])
            await release.wait()
            assert (await two.index_paths([tree])).files_unchanged == 4

    anyio.run(go)


def test_duplicated_chunks_are_detected_searched_safely_and_repaired_by_a_rerun(
    tmp_path: Path, tree: Path
) -> None:
    async def go() -> None:
        async with _index(tmp_path / "index") as index:
            await index.index_paths([tree])
            collection = index.collection
            assert collection is not None
            rows = await collection.rows()
            # What two concurrent writers left behind: every chunk committed twice.
            await collection.table.add(rows)
            assert await count_duplicates(collection) == rows.num_rows
            result = await _lexical(index, "refund policy")
            ids = [e.id for e in result.evidence]
            assert ids and len(ids) == len(set(ids))

            report = await index.index_paths([tree])
            assert any("removed" in note and "duplicate" in note for note in report.maintenance)
            assert await count_duplicates(collection) == 0
            assert (await collection.rows()).num_rows == rows.num_rows
            assert (await collection.rows(columns=["vector"]))["vector"].null_count == 0
            assert (await index.index_paths([tree])).files_unchanged == 4
            again = await _lexical(index, "refund policy")
            assert [e.id for e in again.evidence] == ids

    anyio.run(go)


# -- (14) progress while a write batch is embedded -----------------------------------------------------


def test_progress_advances_while_one_large_write_batch_is_embedded(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for number in range(300):
        (root / f"n{number:03d}.md").write_text(f"# Note {number}\n\nTopic {number} about item{number}.\n")
    seen: list[tuple[int, int]] = []

    def progress(report: IndexReport) -> None:
        seen.append((report.embedded, report.chunks))

    async def go() -> None:
        async with _index(tmp_path / "index", write_batch_chunks=1000) as index:
            started = time.perf_counter()
            report = await index.index_paths([root], progress=progress)
            assert report.chunks == report.embedded == 300, time.perf_counter() - started

    anyio.run(go)
    while_embedding = {embedded for embedded, chunks in seen if chunks == 0 and embedded}
    assert len(while_embedding) >= 2, seen  # several steps before the batch is written
