"""kill -9 in the middle of an index run, then run again: the index is consistent and complete."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import anyio
import pytest
from simone.providers.documents import DocumentIndex, DocumentStore, SourceFile, discover, load_file
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.runtime import EmbeddingChain, IndexSettings

SETTINGS = IndexSettings(write_batch_chunks=4)

WORKER = textwrap.dedent(
    """
    import sys, anyio
    from simone.providers.documents import DocumentIndex, DocumentStore
    from simone.providers.embeddings import OnnxMiniLMEmbedder
    from simone.runtime import EmbeddingChain, IndexSettings

    async def main(root, store):
        chain = EmbeddingChain([OnnxMiniLMEmbedder(intra_op_threads=1)])
        async with chain:
            index = DocumentIndex(DocumentStore(store), chain, settings=IndexSettings(write_batch_chunks=4))
            async with index:
                def progress(report):
                    print("written", report.files_indexed, flush=True)
                await index.index_paths([root], progress=progress)
        print("finished", flush=True)

    anyio.run(main, sys.argv[1], sys.argv[2])
    """
)


def _write_tree(root: Path, files: int) -> None:
    root.mkdir()
    for number in range(files):
        paragraphs = "\n\n".join(
            f"Section {number}.{part}: notes about topic {number * 7 + part} and its many details."
            for part in range(6)
        )
        (root / f"doc{number:03d}.md").write_text(f"# Document {number}\n\n{paragraphs}\n")


@pytest.mark.slow
def test_kill_9_mid_run_then_rerun_leaves_a_consistent_complete_index(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    root = tmp_path / "tree"
    store = tmp_path / "index"
    _write_tree(root, 120)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    process = subprocess.Popen(
        [sys.executable, str(script), str(root), str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    killed_after = 0
    for line in process.stdout:
        if line.startswith("written") and int(line.split()[1]) >= 12:
            killed_after = int(line.split()[1])
            os.kill(process.pid, signal.SIGKILL)
            break
    process.wait(60)
    assert process.returncode == -signal.SIGKILL, "the worker finished before it could be killed"
    assert 12 <= killed_after < 120

    async def go() -> None:
        index = DocumentIndex(DocumentStore(store), EmbeddingChain([onnx]), settings=SETTINGS)
        async with index:
            collection = index.collection
            assert collection is not None, "the killed run had committed batches"
            partial = await collection.rows(columns=["path"])
            assert 0 < len(set(partial["path"].to_pylist())) < 120
            report = await index.index_paths([root])
            assert report.files_unchanged + report.files_indexed == 120
            assert report.files_unchanged >= killed_after
            assert report.pending_left == 0 and not report.failures
            rows = await collection.rows(columns=["id", "path", "vector"])
            ids = rows["id"].to_pylist()
            assert len(ids) == len(set(ids)), "no duplicated chunks"
            assert rows["vector"].null_count == 0
            expected: dict[str, set[str]] = {}
            for source in discover([root], max_file_bytes=10**6):
                assert isinstance(source, SourceFile)
                document = load_file(source, 10**6)
                expected[source.path.as_posix()] = {c.id for c in index.chunker.chunk(document)}  # type: ignore[arg-type]
            actual: dict[str, set[str]] = {}
            for chunk_id, path in zip(ids, rows["path"].to_pylist(), strict=True):
                actual.setdefault(path, set()).add(chunk_id)
            assert actual == expected
            again = await index.index_paths([root])
            assert again.embedded == 0 and again.files_unchanged == 120
            assert Counter(rows["path"].to_pylist()) == Counter({p: len(c) for p, c in expected.items()})

    anyio.run(go)
