"""Issue 19: indexing on Ray vs locally — equality, throughput, overhead and peak memory, in one run.

The same SciFact abstracts (``<id>.md`` files) are indexed, interleaved in one process, into fresh
collections: locally (the bundled int8 MiniLM in this process) and with ``RayExecutor`` on a local
Ray cluster (``ray.init(num_cpus=2)``) with 1 and 2 embedding workers. The persistent embedding cache
is off, so every chunk is embedded. Printed and saved to ``benchmarks/results/ray_index.json``:

* **equality** of the local collection and the 2-worker Ray collection: ids, digests, chunk texts
  and terms identical, the largest vector difference, and the top-10 hybrid and semantic results of
  SciFact queries identical; a second Ray run over the unchanged corpus ships 0 files and embeds 0;
* **throughput**: chunks/s of each, Ray's own overhead per 1,000 chunks (the 1-worker Ray run's
  time minus the local run's, per 1,000 chunks; the cluster start and the workers' model load are
  reported apart), and the peak RSS of the driver and of each worker (``/proc``: VmHWM of the
  actors, sampled RSS of the driver and of all ``ray::`` processes);
* **10 workers, extrapolated**: the 1-worker chunks/s × 10 — plainly a multiplication, labelled so.

Ray starts its workers at nice 15 by default; here ``RAY_worker_niceness=0`` so that they compete
for the cores on the same terms as the local run (the machine may be shared: the figures are ratios
in one run, not absolutes).

Usage::

    python benchmarks/ray_index.py [DATA_DIR] [--docs 500] [--queries 30] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_worker_niceness", "0")

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _index_common import CACHE, default_data_dir, load_jsonl, save, write_corpus
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, RayExecutor
from simone.runtime import RetrievalRequest, SearchMode, Settings, TrustedContext

CONTEXT = TrustedContext(actor="benchmark")
COLUMNS = ("id", "path", "digest", "file_digest", "text", "context", "terms", "ordinal", "tokens")


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _ray_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(b"ray::"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


class Sampler:
    """Peak RSS of this process and of all ``ray::`` processes together, every 0.25 s."""

    def __init__(self) -> None:
        self.driver_kb = 0
        self.ray_total_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.driver_kb = max(self.driver_kb, _rss_kb(os.getpid()))
            self.ray_total_kb = max(self.ray_total_kb, sum(_rss_kb(pid) for pid in _ray_pids()))
            self._stop.wait(0.25)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def settings_for(root: Path, name: str) -> Settings:
    return Settings(
        data_dir=str(root / name),
        embeddings={"cache": False, "chain": ["onnx"]},
        index={"uri": str(root / name / "index")},
    )


async def rows_of(index: DocumentIndex) -> dict[str, Any]:
    assert index.collection is not None
    table = (await index.collection.table.query().to_arrow()).sort_by("id")
    out: dict[str, Any] = {column: table.column(column).to_pylist() for column in COLUMNS}
    out["vector"] = np.stack(table.column("vector").to_numpy(zero_copy_only=False)).astype(np.float32)
    return out


async def results_of(index: DocumentIndex, queries: list[str]) -> dict[str, list[list[str]]]:
    provider = DocumentIndexProvider(index)
    out: dict[str, list[list[str]]] = {}
    for mode in (SearchMode.HYBRID, SearchMode.SEMANTIC):
        runs = []
        for text in queries:
            response = await provider.retrieve(RetrievalRequest.create(text, limit=10, mode=mode), CONTEXT)
            runs.append([str(e.metadata["chunk_id"]) for e in response.evidence])
        out[mode.value] = runs
    return out


async def run_local(root: Path, docs: Path) -> dict[str, Any]:
    settings = settings_for(root, "local")
    with Sampler() as sampler:
        async with DocumentIndex.open(settings) as index:
            started = time.perf_counter()
            report = await index.index_paths([docs])
            elapsed = time.perf_counter() - started
            rows = await rows_of(index)
    return {
        "name": "local",
        "settings": settings,
        "chunks": report.chunks,
        "embedded": report.embedded,
        "seconds": elapsed,
        "chunks_per_s": report.chunks / elapsed,
        "driver_peak_mb": sampler.driver_kb / 1024,
        "rows": rows,
    }


async def run_ray(root: Path, docs: Path, workers: int, *, rerun: bool) -> dict[str, Any]:
    settings = settings_for(root, f"ray{workers}")
    with Sampler() as sampler:
        started = time.perf_counter()
        async with RayExecutor.from_settings(settings, workers=workers) as executor:
            ready_s = time.perf_counter() - started
            async with DocumentIndex.open(settings) as index:
                started = time.perf_counter()
                report = await index.index_paths([docs], executor=executor)
                elapsed = time.perf_counter() - started
                worker_peaks = [_rss_kb(pid, "VmHWM") / 1024 for pid in executor.stats.worker_pids]
                stats = executor.stats
                entry: dict[str, Any] = {
                    "name": f"ray, {workers} worker(s)",
                    "workers": workers,
                    "settings": settings,
                    "chunks": report.chunks,
                    "embedded": report.embedded,
                    "failures": report.failures,
                    "seconds": elapsed,
                    "chunks_per_s": report.chunks / elapsed,
                    "workers_ready_s": ready_s,
                    "embedding_calls": stats.calls,
                    "files_shipped": stats.files_shipped,
                    "worker_peak_mb": worker_peaks,
                    "rows": await rows_of(index),
                }
                if rerun:
                    before = (stats.files_shipped, stats.texts)
                    again = await index.index_paths([docs], executor=executor)
                    entry["rerun"] = {
                        "embedded": again.embedded,
                        "files_unchanged": again.files_unchanged,
                        "files_shipped": stats.files_shipped - before[0],
                        "texts_sent": stats.texts - before[1],
                        "seconds": again.elapsed_s,
                    }
    entry["driver_peak_mb"] = sampler.driver_kb / 1024
    entry["ray_processes_peak_mb"] = sampler.ray_total_kb / 1024
    return entry


async def search_results(settings: Settings, queries: list[str]) -> dict[str, list[list[str]]]:
    async with DocumentIndex.open(settings) as index:
        return await results_of(index, queries)


def compare(local: dict[str, Any], ray_entry: dict[str, Any]) -> dict[str, Any]:
    a, b = local["rows"], ray_entry["rows"]
    same = {column: a[column] == b[column] for column in COLUMNS}
    diff = float(np.abs(a["vector"] - b["vector"]).max()) if len(a["id"]) == len(b["id"]) else float("inf")
    return {"rows": len(a["id"]), "columns_identical": same, "max_vector_diff": diff}


async def main(args: argparse.Namespace) -> None:
    import ray

    data = Path(args.data_dir)
    corpus = load_jsonl(data / "scifact" / "corpus.jsonl")[: args.docs]
    queries = [q["text"] for q in load_jsonl(data / "scifact" / "queries-train.jsonl")[: args.queries]]
    docs = write_corpus(corpus, CACHE / f"scifact-ray-{args.docs}")
    root = Path(tempfile.mkdtemp(prefix="ray-index-"))
    try:
        started = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        cluster_start_s = time.perf_counter() - started
        runs: list[dict[str, Any]] = []
        local = await run_local(root, docs)
        runs.append(local)
        for workers in args.workers:
            runs.append(await run_ray(root, docs, workers, rerun=workers == max(args.workers)))
        widest = runs[-1]
        equality = compare(local, widest)
        local_results = await search_results(local["settings"], queries)
        ray_results = await search_results(widest["settings"], queries)
        equality["search_identical"] = {
            mode: local_results[mode] == ray_results[mode] for mode in local_results
        }
        equality["queries"] = len(queries)
        equality["rerun"] = widest["rerun"]
    finally:
        ray.shutdown()
        shutil.rmtree(root, ignore_errors=True)

    one = next(run for run in runs if run.get("workers") == 1) if 1 in args.workers else None
    overhead = (one["seconds"] - local["seconds"]) / local["chunks"] * 1000 if one else None
    extrapolated = one["chunks_per_s"] * 10 if one else None

    print(f"\nSciFact {len(corpus)} abstracts → {local['chunks']:,} chunks; machine: 2 CPU cores SHARED with other "
          "sessions (figures are ratios within this run)")  # fmt: skip
    print(f"Ray local cluster start: {cluster_start_s:.1f} s (num_cpus=2)\n")
    print(f"  {'run':<18} {'seconds':>8} {'chunks/s':>9} {'vs local':>9} {'workers ready s':>16} "
          f"{'driver peak MB':>15} {'worker peak MB':>15}")  # fmt: skip
    for run in runs:
        ratio = run["chunks_per_s"] / local["chunks_per_s"]
        ready = f"{run['workers_ready_s']:.1f}" if "workers_ready_s" in run else "-"
        peaks = "/".join(f"{mb:.0f}" for mb in run.get("worker_peak_mb", [])) or "-"
        print(f"  {run['name']:<18} {run['seconds']:>8.1f} {run['chunks_per_s']:>9.2f} {ratio:>9.2f} "
              f"{ready:>16} {run['driver_peak_mb']:>15.0f} {peaks:>15}")  # fmt: skip
    if overhead is not None and extrapolated is not None:
        print(f"\n  Ray's own overhead: {overhead:+.1f} s per 1,000 chunks (1-worker Ray time − local time)")
        print(f"  10 workers, EXTRAPOLATED (1-worker rate × 10, one worker per node like this one, driver "
              f"writes not the bottleneck): {extrapolated:.0f} chunks/s")  # fmt: skip
    print(f"\n  equality, local vs {widest['name']}: {equality['rows']:,} rows; columns identical: "
          f"{all(equality['columns_identical'].values())}; max |Δvector| = {equality['max_vector_diff']:.2e}; "
          f"top-10 identical over {len(queries)} queries: {equality['search_identical']}")  # fmt: skip
    rerun = equality["rerun"]
    print(f"  re-run with --ray on the unchanged corpus: {rerun['files_shipped']} files shipped, "
          f"{rerun['embedded']} chunks embedded, {rerun['files_unchanged']} files unchanged, "
          f"{rerun['seconds']:.1f} s")  # fmt: skip

    payload: dict[str, Any] = {
        "docs": len(corpus),
        "chunks": local["chunks"],
        "machine": "2 CPU cores shared with other sessions",
        "ray_cluster_start_s": round(cluster_start_s, 2),
        "runs": [
            {
                key: (round(value, 3) if isinstance(value, float) else value)
                for key, value in run.items()
                if key not in ("rows", "settings")
            }
            for run in runs
        ],  # fmt: skip
        "ray_overhead_s_per_1000_chunks": round(overhead, 2) if overhead is not None else None,
        "extrapolated_10_workers_chunks_per_s": round(extrapolated, 1) if extrapolated is not None else None,
        "equality": equality,
    }
    payload["summary"] = report_rows(payload, local, runs)
    print(f"wrote {save('ray_index', payload)}")


def report_rows(
    payload: dict[str, Any], local: dict[str, Any], runs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Report rows (benchmarks/_report.py's generic shape): each Ray run's chunks/s beside the local run's."""
    rows = [
        {
            "section": "Speed — distributed indexing",
            "metric": f"{run['name']}: chunks/s indexing {payload['chunks']:,} SciFact chunks",
            "ours": round(run["chunks_per_s"], 2),
            "peer_name": "local indexing, same run",
            "peer": round(local["chunks_per_s"], 2),
            "better": "higher",
            "note": "local 2-CPU Ray cluster on a shared 2-core machine",
        }
        for run in runs
        if run is not local
    ]
    equality = payload["equality"]
    rows.append(
        {
            "section": "Speed — distributed indexing",
            "metric": "largest |vector difference|, local vs Ray (2 workers)",
            "ours": equality["max_vector_diff"],
            "peer_name": "issue 19 bound",
            "peer": 1e-5,
            "better": "lower",
            "note": f"rows identical: {all(equality['columns_identical'].values())}; "
            f"search identical: {equality['search_identical']}",
        }
    )
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--docs", type=int, default=500, help="SciFact abstracts to index")
    parser.add_argument("--queries", type=int, default=30, help="SciFact queries whose results are compared")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Ray worker counts to run")
    return parser.parse_args()


if __name__ == "__main__":
    anyio.run(main, parse_args())
