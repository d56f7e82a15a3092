"""What object storage costs per query: one collection in a local folder and on an S3 server, one run.

Usage: python benchmarks/object_storage.py [DATA_DIR] [--docs N] [--rows N] [--queries N] [--ann]
                                           [--modes hybrid,...] [--endpoint URL --bucket NAME]

DATA_DIR defaults to ../shared/data. In one run:

1. Index SciFact (``--docs`` abstracts, all 5,183 by default) into a local folder with the bundled
   all-MiniLM-L6-v2 and a persistent embedding cache under ``benchmarks/.cache/`` (the first run
   embeds, later runs replay the cached vectors), then grow it to ``--rows`` chunks (20,000 by
   default) with perturbed copies of those rows (as benchmarks/index_speed.py does).
2. Copy exactly those rows into the same collection name on S3 — moto's standalone server started
   here on a free loopback port (``moto[server]``), or ``--endpoint``/``--bucket`` for another
   S3-compatible server (credentials from the environment) — and build the same indexes on both
   (the production rules: the ANN index from ``[index] ann_min_rows``, 50k; ``--ann`` builds
   IVF_FLAT on both regardless).
3. Query both through the document provider (query embedding included): per mode, p50/p95 from the
   local folder and from S3, side by side, with the ratio; plus the first (cold) query on a freshly
   opened S3 store.

Writes benchmarks/results/object_storage.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import lancedb
from _index_common import CACHE, default_data_dir, load_jsonl, peak_rss_mb, percentile, save, write_corpus
from index_speed import synthesise
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore
from simone.runtime import (
    EmbeddingSettings,
    IndexSettings,
    RetrievalRequest,
    SearchMode,
    Settings,
    TrustedContext,
)

CONTEXT = TrustedContext(actor="benchmark")
MOTO_CAVEAT = (
    "; moto loads the whole object for every ranged GET, so its cost grows with the data file "
    "(one ~235 MB file at 100k chunks after compaction): an emulator's figure, not S3's "
    "(--endpoint/--bucket measures a real server)"
)
COLLECTION = "bench"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto(log: Path, bucket: str) -> tuple[subprocess.Popen[bytes], str]:
    """moto's S3 server on a free loopback port, answering, with ``bucket`` created."""
    port = _free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"moto's server exited: {log.read_text()[-1000:]}")
        try:
            httpx.get(endpoint, timeout=1)
        except httpx.HTTPError:
            time.sleep(0.2)
            continue
        httpx.put(f"{endpoint}/{bucket}", timeout=10).raise_for_status()
        return process, endpoint
    process.kill()
    raise SystemExit(f"moto's server did not answer on {endpoint}")


async def latencies(index: DocumentIndex, queries: list[str], mode: SearchMode) -> list[float]:
    provider = DocumentIndexProvider(index)
    times = []
    for text in queries:
        request = RetrievalRequest.create(text, limit=10, mode=mode)
        started = time.perf_counter()
        response = await provider.retrieve(request, CONTEXT)
        times.append((time.perf_counter() - started) * 1000)
        if response.degraded:
            raise SystemExit(f"degraded answer: {response.degraded}")
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(times, 0.5), 2), "p95_ms": round(percentile(times, 0.95), 2)}


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir)
    corpus = load_jsonl(data_dir / "scifact" / "corpus.jsonl")[: args.docs]
    queries = [q["text"] for q in load_jsonl(data_dir / "scifact" / "queries-train.jsonl")][: args.queries]
    folder = write_corpus(corpus, CACHE / f"scifact-docs-{len(corpus)}")
    work = CACHE / "object-storage"
    shutil.rmtree(work / "index", ignore_errors=True)  # the embedding cache (work/) is kept
    index_settings = IndexSettings(ann_min_rows=256 if args.ann else IndexSettings().ann_min_rows)
    local = Settings(
        data_dir=work, embeddings=EmbeddingSettings(chain=["onnx"], cache=True), index=index_settings
    )
    moto: subprocess.Popen[bytes] | None = None
    if args.endpoint:
        endpoint, bucket = args.endpoint, args.bucket
    else:
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "benchmark")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "benchmark")
        work.mkdir(parents=True, exist_ok=True)
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        moto, endpoint = start_moto(work / "moto.log", bucket)
    options = {
        "endpoint": endpoint,
        "region": args.region,
        "allow_http": str(endpoint.startswith("http:")).lower(),
    }
    remote_settings = local.model_copy(
        update={
            "index": index_settings.model_copy(
                update={"uri": f"s3://{bucket}/index", "storage_options": options}
            )
        }
    )
    payload: dict[str, Any] = {
        "python": platform.python_version(),
        "lancedb": lancedb.__version__,
        "docs": len(corpus),
        "queries": len(queries),
        "s3": "moto (loopback)" if moto is not None else endpoint,
    }
    try:
        async with DocumentIndex.open(local, collection="scifact") as index:
            started = time.perf_counter()
            report = await index.index_paths([folder])
            print(
                f"indexed {report.chunks:,} SciFact chunks locally in {time.perf_counter() - started:.1f} s "
                f"({report.embedded:,} embedded, {report.cached:,} from the embedding cache)",
                file=sys.stderr,
            )
            assert index.collection is not None
            started = time.perf_counter()
            big = await synthesise(index, index.collection, args.rows)
            if COLLECTION in await index.store.collection_names():
                await index.store.drop_collection(COLLECTION)
            rows = await big.rows()
            await index.store.drop_collection("synthetic")
            source = await index.store.create_collection(COLLECTION, big.space)
            await source.table.add(rows)
            print(f"  {rows.num_rows:,} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            async with DocumentStore(f"s3://{bucket}/index", options) as store:
                remote = await store.create_collection(COLLECTION, big.space)
                started = time.perf_counter()
                for start in range(0, rows.num_rows, 5000):
                    await remote.table.add(rows.slice(start, 5000))
                copy_s = time.perf_counter() - started
                print(f"  copied to S3 in {copy_s:.1f} s", file=sys.stderr)
                steps = {}
                for name, table in (("local", source), ("s3", remote)):
                    started = time.perf_counter()
                    done = await table.maintain(
                        ann_min_rows=index_settings.ann_min_rows, ann_kind=index_settings.ann_index
                    )
                    steps[name] = {"s": round(time.perf_counter() - started, 1), "done": done}
                    print(f"  {name}: indexes in {steps[name]['s']} s: {'; '.join(done)}", file=sys.stderr)
            payload["rows"] = rows.num_rows
            payload["copy_to_s3_s"] = round(copy_s, 1)
            payload["maintenance"] = steps
        results: dict[str, dict[str, Any]] = {}
        async with (
            DocumentIndex.open(local, collection=COLLECTION) as on_disk,
            DocumentIndex.open(remote_settings, collection=COLLECTION, chain=on_disk.chain) as on_s3,
        ):
            started = time.perf_counter()
            await latencies(on_s3, queries[:1], SearchMode.HYBRID)
            payload["s3_first_query_ms"] = round((time.perf_counter() - started) * 1000, 1)
            for mode in args.modes:
                print(f"  querying: {mode.value}", file=sys.stderr)
                for index in (on_disk, on_s3):  # warm-up: open files, load the indexes' caches
                    await latencies(index, queries[:10], mode)
                # Interleaved in blocks, so a noisy neighbour hurts both sides alike.
                local_times: list[float] = []
                s3_times: list[float] = []
                for start in range(0, len(queries), 25):
                    block = queries[start : start + 25]
                    local_times += await latencies(on_disk, block, mode)
                    s3_times += await latencies(on_s3, block, mode)
                entry = {"local": summary(local_times), "s3": summary(s3_times)}
                entry["p50_ratio"] = round(entry["s3"]["p50_ms"] / entry["local"]["p50_ms"], 2)
                entry["p95_ratio"] = round(entry["s3"]["p95_ms"] / entry["local"]["p95_ms"], 2)
                results[mode.value] = entry
    finally:
        if moto is not None:
            moto.terminate()
            moto.wait(10)
    payload["latency"] = results
    print(
        f"\n{payload['rows']:,} chunks (SciFact {len(corpus):,} abstracts + perturbed copies), "
        f"{len(queries)} queries, query embedding included; S3 = {payload['s3']}"
    )
    print(
        f"  {'mode':<9} {'local p50':>10} {'local p95':>10} {'S3 p50':>9} {'S3 p95':>9} {'p50 x':>6} {'p95 x':>6}"
    )
    for mode, entry in results.items():
        print(
            f"  {mode:<9} {entry['local']['p50_ms']:>10.2f} {entry['local']['p95_ms']:>10.2f} "
            f"{entry['s3']['p50_ms']:>9.2f} {entry['s3']['p95_ms']:>9.2f} {entry['p50_ratio']:>6.2f} "
            f"{entry['p95_ratio']:>6.2f}"
        )
    print(f"  first hybrid query on a freshly opened S3 store: {payload['s3_first_query_ms']} ms")
    payload["peak_rss_mb"] = round(peak_rss_mb(), 1)
    payload["summary"] = report_rows(payload)
    print(f"wrote {save('object_storage', payload)}")


def report_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Report rows (benchmarks/_report.py's generic shape): each mode's S3 p50/p95 beside the local folder's."""
    rows = []
    for mode, entry in payload["latency"].items():
        for stat in ("p50", "p95"):
            rows.append(
                {
                    "section": "Speed — object storage",
                    "metric": f"{mode} query {stat} from S3 at {payload['rows']:,} chunks (ms)",
                    "ours": entry["s3"][f"{stat}_ms"],
                    "peer_name": "the same collection in a local folder",
                    "peer": entry["local"][f"{stat}_ms"],
                    "better": "lower",
                    "note": f"S3 = {payload['s3']}; query embedding included"
                    + (MOTO_CAVEAT if payload["s3"].startswith("moto") else ""),
                }
            )
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--docs", type=int, default=5183, help="SciFact abstracts to index (all by default)")
    parser.add_argument("--rows", type=int, default=20_000, help="chunks of the measured collection")
    parser.add_argument("--queries", type=int, default=200, help="queries per mode and side")
    parser.add_argument(
        "--ann", action="store_true", help="build the IVF_FLAT index on both (below 50k rows too)"
    )
    parser.add_argument(
        "--modes",
        type=lambda text: [SearchMode(part.strip()) for part in text.split(",")],
        default=list(SearchMode),
        help="comma-separated search modes to time (all by default): lexical,semantic,hybrid",
    )
    parser.add_argument("--endpoint", help="an S3-compatible endpoint instead of moto (needs --bucket)")
    parser.add_argument("--bucket", help="an existing bucket at --endpoint")
    parser.add_argument("--region", default="us-east-1")
    args = parser.parse_args()
    if args.endpoint and not args.bucket:
        parser.error("--endpoint needs --bucket")
    if not Path(args.data_dir).is_dir():
        raise SystemExit(f"{args.data_dir} does not exist; pass DATA_DIR (the shared data folder)")
    return args


if __name__ == "__main__":
    anyio.run(main, parse_args())
