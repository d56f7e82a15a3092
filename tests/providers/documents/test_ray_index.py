"""Issue 19 (1): ``simone index --ray`` — the index a Ray cluster writes is the index local indexing writes.

One local Ray cluster (``num_cpus=2``, loopback, no dashboard) serves the module and is shut down
after it. The bundled ONNX model embeds on both sides (so vectors are compared for real); the
embedding cache is off so that every chunk is embedded by the side under test.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
import ray
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, RayExecutor
from simone.runtime import RetrievalRequest, SearchMode, Settings, TrustedContext

from tests.servers_s3 import S3Index

# Each test starts Ray work (worker processes import the package): slow on a loaded 2-core machine.
pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

COLUMNS = ("id", "path", "digest", "file_digest", "text", "context", "terms", "heading", "ordinal", "tokens")
CONTEXT = TrustedContext(actor="tester")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local two-CPU Ray cluster on loopback for the module."""
    with warnings.catch_warnings():  # lancedb warns about the fork of Ray's processes (fork + exec)
        warnings.simplefilter("ignore", RuntimeWarning)
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    try:
        yield
    finally:
        ray.shutdown()


TOPICS = (
    ("white matter", "Diffusion imaging maps how cerebral white matter develops in newborn infants."),
    ("insulin", "Insulin resistance in muscle precedes type two diabetes by several years."),
    ("malaria", "Artemisinin combination therapy clears malaria parasites within three days."),
    ("telomeres", "Telomere length shortens with each division of human fibroblasts."),
    ("microbiome", "The gut microbiome shifts after a course of broad spectrum antibiotics."),
    ("vaccines", "Adjuvants raise the antibody response to seasonal influenza vaccines."),
)


def _corpus(root: Path, count: int = 24) -> Path:
    """Abstract-like Markdown files (every fifth long enough for several chunks) and an unreadable PDF."""
    root.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        topic, sentence = TOPICS[number % len(TOPICS)]
        sentences = [f"{sentence} Cohort {number} was followed for {number + 2} years."]
        sentences += [f"Finding {k} of study {number} on {topic} held after adjustment." for k in range(4)]
        if number % 5 == 0:
            sentences += [
                f"Secondary analysis {k} of {topic} in cohort {number} confirmed it." for k in range(40)
            ]
        text = f"# Study {number}: {topic}\n\n" + " ".join(sentences) + "\n"
        (root / f"study-{number:03d}.md").write_text(text, encoding="utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    return root


def _settings(tmp: Path, name: str, **index: Any) -> Settings:
    return Settings(
        data_dir=str(tmp / name),
        embeddings={"cache": False, "chain": ["onnx"], "onnx_threads": 1, "onnx_batch_size": 8},
        index={"uri": str(tmp / name / "index"), **index},
    )


async def _rows(index: DocumentIndex) -> dict[str, Any]:
    assert index.collection is not None
    table = (await index.collection.table.query().to_arrow()).sort_by("id")
    out: dict[str, Any] = {column: table.column(column).to_pylist() for column in COLUMNS}
    out["vector"] = np.stack(table.column("vector").to_numpy(zero_copy_only=False))
    return out


async def _top(index: DocumentIndex, query: str) -> list[str]:
    request = RetrievalRequest.create(query, limit=5, mode=SearchMode.HYBRID)
    response = await DocumentIndexProvider(index).retrieve(request, CONTEXT)
    return [str(e.metadata["chunk_id"]) for e in response.evidence]


def _same(local: dict[str, Any], remote: dict[str, Any]) -> None:
    for column in COLUMNS:
        assert remote[column] == local[column], column
    assert float(np.abs(remote["vector"] - local["vector"]).max()) <= 1e-5


def test_ray_writes_the_local_index_and_reruns_ship_nothing(cluster: None, tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", count=12)

    async def go() -> None:
        local_settings, ray_settings = _settings(tmp_path, "local"), _settings(tmp_path, "ray")
        async with DocumentIndex.open(local_settings) as local:
            first_local = await local.index_paths([docs])
            local_rows = await _rows(local)
            local_top = await _top(local, "white matter development in newborns")
        async with (
            RayExecutor.from_settings(ray_settings, workers=2) as executor,
            DocumentIndex.open(ray_settings) as remote,
        ):
            seen: list[int] = []
            first = await remote.index_paths(
                [docs], executor=executor, progress=lambda r: seen.append(r.files_done)
            )
            assert first.chunks == first_local.chunks == first.embedded > 12
            assert [s.path for s in first.skipped] == [s.path for s in first_local.skipped]
            assert any("broken.pdf" in s.path for s in first.skipped), "a failing file is reported"
            assert seen[-1] == first.files_total, "the driver's progress reaches every file"
            assert executor.stats.files_shipped == first.files_total
            assert executor.stats.calls >= 1
            _same(local_rows, await _rows(remote))
            assert await _top(remote, "white matter development in newborns") == local_top

            shipped, texts = executor.stats.files_shipped, executor.stats.texts
            again = await remote.index_paths([docs], executor=executor)
            assert again.embedded == 0 and again.chunks == 0
            assert again.files_unchanged == again.files_total - 1
            # only the file that failed (it has no stored digest) is read again, as locally; nothing is embedded
            assert executor.stats.files_shipped == shipped + 1 and executor.stats.texts == texts
            shipped = executor.stats.files_shipped

            # a changed file and a vanished one, on both sides
            changed = sorted(docs.glob("*.md"))[3]
            changed.write_text(changed.read_text(encoding="utf-8") + "\nA new closing sentence.\n")
            sorted(docs.glob("*.md"))[7].unlink()
            update = await remote.index_paths([docs], executor=executor)
            assert executor.stats.files_shipped == shipped + 2, "only the changed (and the failing) file"
            assert update.files_indexed == 1 and update.files_deleted == 1
            assert 0 < update.embedded <= update.chunks
        async with DocumentIndex.open(local_settings) as local:
            await local.index_paths([docs])
            local_rows = await _rows(local)
        async with DocumentIndex.open(ray_settings) as remote:
            _same(local_rows, await _rows(remote))

    anyio.run(go)


def test_ray_stores_the_locator_base_paths_a_local_run_stores(cluster: None, tmp_path: Path) -> None:
    """``[index] locator_base``: the driver decides unchanged files by their stored (relative) paths."""
    docs = _corpus(tmp_path / "docs", count=6)

    async def go() -> None:
        base = {"locator_base": str(docs), "use_git": False}
        local_settings, ray_settings = (
            _settings(tmp_path, "local", **base),
            _settings(tmp_path, "ray", **base),
        )
        async with DocumentIndex.open(local_settings) as local:
            first_local = await local.index_paths([docs])
            local_rows = await _rows(local)
        assert all(not path.startswith("/") for path in local_rows["path"]), local_rows["path"]
        async with (
            RayExecutor.from_settings(ray_settings, workers=1) as executor,
            DocumentIndex.open(ray_settings) as remote,
        ):
            first = await remote.index_paths([docs], executor=executor)
            assert [s.path for s in first.skipped] == [s.path for s in first_local.skipped]
            _same(local_rows, await _rows(remote))
            shipped = executor.stats.files_shipped
            again = await remote.index_paths([docs], executor=executor)
            assert again.files_unchanged == again.files_total - 1 and again.chunks == 0
            assert executor.stats.files_shipped == shipped + 1, "only the failing file is read again"
            assert executor.stats.files_kept >= again.files_total - 1

    anyio.run(go)


def test_a_killed_worker_is_restarted_and_the_rows_are_complete(cluster: None, tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", count=8)

    async def go() -> None:
        settings = _settings(tmp_path, "ray", write_batch_chunks=8)
        async with RayExecutor.from_settings(settings, workers=2, batch_texts=4) as executor:
            victim = executor.stats.worker_pids[0]
            killed: list[int] = []

            def progress(report: Any) -> None:
                if report.embedded and not killed:
                    os.kill(victim, 9)  # the worker process dies mid-run
                    killed.append(victim)

            async with DocumentIndex.open(settings) as index:
                report = await index.index_paths([docs], executor=executor, progress=progress)
                assert killed
                assert report.failures == [] and report.pending_left == 0
                assert report.embedded == report.chunks
                rows = await _rows(index)
                assert len(set(rows["id"])) == len(rows["id"]) == report.chunks

    anyio.run(go)


def test_ray_indexes_straight_into_the_s3_index(cluster: None, tmp_path: Path, s3_index: S3Index) -> None:
    docs = _corpus(tmp_path / "docs", count=4)

    async def go() -> None:
        local_settings = _settings(tmp_path, "local")
        s3_settings = Settings(
            data_dir=str(tmp_path / "s3"),
            embeddings={"cache": False, "chain": ["onnx"], "onnx_threads": 1, "onnx_batch_size": 8},
            index={"uri": s3_index.uri, "storage_options": s3_index.storage_options},
        )
        async with DocumentIndex.open(local_settings) as local:
            await local.index_paths([docs])
            local_rows = await _rows(local)
        async with (
            RayExecutor.from_settings(s3_settings, workers=1) as executor,
            DocumentIndex.open(s3_settings) as remote,
        ):
            report = await remote.index_paths([docs], executor=executor)
            assert report.embedded == report.chunks > 0
            assert remote.store.location.remote
            _same(local_rows, await _rows(remote))

    anyio.run(go)


def test_without_the_ray_flag_ray_is_never_imported_and_without_ray_the_error_names_the_extra(
    tmp_path: Path,
) -> None:
    docs = _corpus(tmp_path / "docs", count=2)
    script = textwrap.dedent(
        f"""
        import sys, anyio
        from simone.agents.cli._main import main
        code = main(["index", {str(docs)!r}, "--json", "--no-embed"])
        assert code == 0, code
        print("RAY-IMPORTED" if "ray" in sys.modules else "RAY-NOT-IMPORTED")
        sys.modules["ray"] = None  # as if the extra were not installed
        from simone.providers.documents import RayExecutor
        from simone.runtime import ProviderNotConfigured
        try:
            RayExecutor.from_settings(__import__("simone.runtime").runtime.Settings())
        except ProviderNotConfigured as exc:
            print("ERROR:", exc.message)
        """
    )
    env = {**os.environ, "SIMONE_DATA_DIR": str(tmp_path / "data"), "SIMONE_EMBEDDINGS__CHAIN": '["onnx"]'}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "RAY-NOT-IMPORTED" in done.stdout
    assert "pip install 'simone[ray]'" in done.stdout


def test_the_cli_indexes_with_ray_and_refuses_a_path_taken_for_an_address(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", count=3)
    env = {
        **os.environ,
        "SIMONE_DATA_DIR": str(tmp_path / "data"),
        "SIMONE_EMBEDDINGS__CHAIN": '["onnx"]',
        "SIMONE_EMBEDDINGS__CACHE": "false",
    }
    cli = [sys.executable, "-m", "simone.agents.cli", "index"]
    wrong = subprocess.run([*cli, "--ray", str(docs)], capture_output=True, text=True, env=env, timeout=120)
    assert wrong.returncode != 0
    assert "not a Ray address" in wrong.stdout + wrong.stderr
    done = subprocess.run(
        [*cli, str(docs), "--ray", "--ray-workers", "1", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["embedded"] == report["chunks"] > 0 and report["pending_left"] == 0
    assert any("broken.pdf" in item["path"] for item in report["skipped"])
