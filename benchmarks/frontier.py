"""The depth frontier: nDCG@10 on SciFact against p95 latency, simone's hybrid and LanceDB's, per depth.

Usage: python benchmarks/frontier.py [DATA_DIR] [--rows N] [--runs N] [--queries N] [--depths 10,20,30,50]
                                     [--quick] [--quality-from JSON]

DATA_DIR defaults to ../shared/data. The depth ``d`` is how many candidates each search takes before
fusion: simone's ``IndexSettings(leg_candidates=d)``, LanceDB's per-search ``limit`` (its hybrid
query: its vector search + its native FTS on ``text`` + ``RRFReranker``, the fused list cut to 10).
Depth is a quality knob, so the comparison is a curve, not one point. For each depth:

* **Quality** — nDCG@10 on SciFact train (809 claims, the 5,183-abstract collection the synthetic
  table is made from, exact search there): 10 chunks asked for by either system, their documents in
  first-seen order. The claims are also split in two folds by a hash of their id (``fold_a`` /
  ``fold_b``), so a depth chosen on one fold is checked on the other.
* **Latency** — p50/p95 on the ``--rows`` synthetic table (``index_speed.py --engine-only`` keeps it in
  ``benchmarks/.cache/index-speed-engine[-N]``; built here when missing) with the default ANN index:
  :func:`index_speed.engine_comparison` at that depth, both systems interleaved query by query, query
  embedding included on both sides; recall@10 of each against its own query with exact vector search
  at the same depth. ``--runs`` passes over the depths (their order rotated); the rows report the
  median p95 and every run's.

Writes ``benchmarks/results/frontier.json`` and ``frontier.png`` (another ``--rows N``:
``frontier_N.json``, ``frontier_N.png``): one row per depth,
``{"depth", "ours": {"ndcg@10", "p95_ms", ...}, "lancedb": {...}}``, and the plot of nDCG@10 against
p95, one curve per system. The quality side does not depend on ``--rows``: ``--quality-from
benchmarks/results/frontier.json`` takes it from the 100k run instead of measuring it again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import lancedb
import numpy as np
import pyarrow as pa
from _index_common import RESULTS, default_data_dir, load_jsonl, load_qrels, ndcg_at, save, unique_docs
from index_speed import (
    CONTEXT,
    engine_comparison,
    engine_settings,
    engine_table,
    ensure_text_fts,
    lancedb_hybrid,
)
from simone.providers.documents import DocumentIndex, DocumentIndexProvider
from simone.runtime import IndexSettings, RetrievalRequest, SearchMode

DEPTHS = (10, 20, 30, 50)
PEER_TABLE = "scifact_peer"
K = 10
"""Chunks asked for per query, by either system (then reduced to documents for nDCG@10)."""


def fold_of(query_id: str) -> str:
    """``fold_a`` or ``fold_b``: a fixed split of the claims by a hash of their id."""
    return "fold_a" if hashlib.sha256(query_id.encode()).digest()[0] % 2 == 0 else "fold_b"


def at_depth(index: DocumentIndex, settings: IndexSettings, depth: int, collection: str) -> DocumentIndex:
    """Another handle on ``collection`` of ``index``'s store whose legs take ``depth`` candidates."""
    return DocumentIndex(
        index.store,
        index.chain,
        analyzer=index.analyzer,
        settings=settings.model_copy(update={"leg_candidates": depth}),
        collection=collection,
    )


async def peer_table(index: DocumentIndex) -> SimpleNamespace:
    """LanceDB's side of the quality runs: the SciFact chunks with their title in ``text``, FTS on it.

    As in benchmarks/index_quality.py's peer: a chunk's ``text`` holds its title only in the first
    chunk of an abstract (the others carry it in ``context`` and ``terms``), so LanceDB's FTS over
    ``text`` gets the title prepended where it is missing. Same ids, paths and vectors as ours; the
    table lives beside ours in the same store (``scifact_peer``, rebuilt each run).
    """
    collection = index.collection
    assert collection is not None
    rows = await collection.rows()
    texts = rows["text"].to_pylist()
    combined = [
        text if text.startswith("# ") else f"{title}\n{text}"
        for title, text in zip(rows["title"].to_pylist(), texts, strict=True)
    ]
    rows = rows.set_column(rows.schema.get_field_index("text"), "text", pa.array(combined))
    table = await index.store.db.create_table(PEER_TABLE, data=rows, mode="overwrite")
    peer = SimpleNamespace(table=table, index_names=lambda: _index_names(table))
    await ensure_text_fts(peer)
    return peer


async def _index_names(table: Any) -> dict[str, Any]:
    return {i.name: i for i in await table.list_indices()}


async def quality(
    index: DocumentIndex, settings: IndexSettings, depths: list[int], data_dir: Path
) -> dict[int, dict[str, dict[str, float]]]:
    """nDCG@10 on SciFact train of both systems at each depth (all claims and each fold)."""
    folder = data_dir / "scifact"
    qrels = load_qrels(folder / "qrels" / "train.tsv")
    queries = [(q["_id"], q["text"]) for q in load_jsonl(folder / "queries-train.jsonl") if q["_id"] in qrels]
    collection = index.collection
    assert collection is not None
    peer = await peer_table(index)
    rows = await collection.rows(columns=["id", "path"])
    path_of = dict(zip(rows["id"].to_pylist(), rows["path"].to_pylist(), strict=True))
    vectors = await index.chain.embed([text for _, text in queries], space=collection.space, kind="query")
    scores: dict[int, dict[str, dict[str, float]]] = {}
    for depth in depths:
        handle = await at_depth(index, settings, depth, collection.name).__aenter__()
        provider = DocumentIndexProvider(handle)
        ranked: dict[str, dict[str, list[str]]] = {"ours": {}, "lancedb": {}}
        started = time.perf_counter()
        for (query_id, text), vector in zip(queries, vectors, strict=True):
            request = RetrievalRequest.create(text, limit=K, mode=SearchMode.HYBRID)
            response = await provider.retrieve(request, CONTEXT)
            if response.degraded:
                raise SystemExit(f"degraded answer ({response.degraded}); the benchmark needs both legs")
            ranked["ours"][query_id] = unique_docs(str(e.metadata["path"]) for e in response.evidence)
            ids = await lancedb_hybrid(peer, vector, text, 1, exact=True, depth=depth)
            ranked["lancedb"][query_id] = unique_docs(path_of[i] for i in ids)
        scores[depth] = {}
        per_system: dict[str, np.ndarray] = {}
        for system, runs in ranked.items():
            per_query = {q: ndcg_at(runs[q], qrels[q]) for q, _ in queries}
            per_system[system] = np.array(list(per_query.values()))
            entry = {"ndcg@10": round(float(np.mean(per_system[system])), 4)}
            for fold in ("fold_a", "fold_b"):
                values = [v for q, v in per_query.items() if fold_of(q) == fold]
                entry[f"ndcg@10_{fold}"] = round(float(np.mean(values)), 4)
            scores[depth][system] = entry
        # ours - LanceDB, claim by claim: the mean and its standard error (is a gap more than noise?)
        diff = per_system["ours"] - per_system["lancedb"]
        scores[depth]["paired"] = {
            "mean": round(float(diff.mean()), 4),
            "se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 4),
        }
        print(
            f"  depth {depth}: nDCG@10 ours {scores[depth]['ours']['ndcg@10']:.4f}, LanceDB "
            f"{scores[depth]['lancedb']['ndcg@10']:.4f} ({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
    return scores


def earlier_quality(path: Path, depths: list[int]) -> dict[int, dict[str, dict[str, float]]]:
    """The quality side of an earlier results file (it does not depend on ``--rows``), for ``depths``."""
    rows = {row["depth"]: row for row in json.loads(path.read_text(encoding="utf-8"))["rows"]}
    missing = [d for d in depths if d not in rows]
    if missing:
        raise SystemExit(f"{path} has no quality figures for depth(s) {missing}")
    scores: dict[int, dict[str, dict[str, float]]] = {}
    for depth in depths:
        row = rows[depth]
        scores[depth] = {
            system: {k: v for k, v in row[system].items() if k.startswith("ndcg@10")}
            for system in ("ours", "lancedb")
        }
        if "ndcg@10_ours_minus_lancedb" in row:
            scores[depth]["paired"] = row["ndcg@10_ours_minus_lancedb"]
    return scores


async def latency(
    index: DocumentIndex, settings: IndexSettings, depths: list[int], queries: list[str], runs: int
) -> dict[int, list[dict[str, Any]]]:
    """Each depth's :func:`engine_comparison` results on the synthetic table, one per run."""
    exact = settings.model_copy(update={"ann_nprobes": 10_000, "ann_refine_factor": 0})
    results: dict[int, list[dict[str, Any]]] = {depth: [] for depth in depths}
    for run in range(runs):
        order = depths[run % len(depths) :] + depths[: run % len(depths)]
        for depth in order:
            big = await at_depth(index, settings, depth, "synthetic").__aenter__()
            exact_index = await at_depth(index, exact, depth, "synthetic").__aenter__()
            result = await engine_comparison(
                big, exact_index, queries, settings.ann_nprobes, depth=depth, at_our_depth=False
            )
            results[depth].append(result)
            print(
                f"  run {run + 1}/{runs}, depth {depth}: p95 ours {result['simone_hybrid']['p95_ms']:.1f} ms, "
                f"LanceDB {result['lancedb_hybrid']['p95_ms']:.1f} ms",
                file=sys.stderr,
            )
    return results


def frontier_rows(
    scores: dict[int, dict[str, dict[str, float]]], timings: dict[int, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """One row per depth: both systems' nDCG@10, p50/p95 (median over runs) and recall@10."""
    rows = []
    for depth in sorted(scores):
        runs = timings[depth]
        row: dict[str, Any] = {"depth": depth}
        for system, key in (("ours", "simone_hybrid"), ("lancedb", "lancedb_hybrid")):
            p95s = [r[key]["p95_ms"] for r in runs]
            row[system] = {
                **scores[depth][system],
                "p50_ms": round(statistics.median(r[key]["p50_ms"] for r in runs), 2),
                "p95_ms": round(statistics.median(p95s), 2),
                "p95_runs_ms": p95s,
                "recall@10_vs_exact": round(statistics.fmean(r["recall@10_vs_exact"][key] for r in runs), 4),
            }
        row["ours"]["legs"] = {
            name: {
                stat: round(statistics.median(r["legs"][name][stat] for r in runs), 2)
                for stat in ("p50_ms", "p95_ms")
            }
            for name in runs[0]["legs"]
        }
        if "paired" in scores[depth]:
            row["ndcg@10_ours_minus_lancedb"] = scores[depth]["paired"]
        ratios = [r["simone_hybrid"]["p95_ms"] / r["lancedb_hybrid"]["p95_ms"] for r in runs]
        row["p95_ratio_ours_over_lancedb"] = round(statistics.median(ratios), 3)
        row["p95_ratio_runs"] = [round(x, 3) for x in ratios]
        ours, theirs = row["ours"], row["lancedb"]
        row["ours_dominates"] = {
            "ndcg@10": ours["ndcg@10"] >= theirs["ndcg@10"],
            "recall@10_vs_exact": ours["recall@10_vs_exact"] >= theirs["recall@10_vs_exact"],
            "p95": row["p95_ratio_ours_over_lancedb"] <= 1.0,
        }
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]], chunks: int, queries: int, runs: int) -> None:
    print(
        f"\ndepth frontier: nDCG@10 on SciFact train (809 claims), latency at {chunks:,} chunks "
        f"({queries} queries × {runs} runs, interleaved, query embedding included)"
    )
    header = (
        f"  {'depth':>5} | {'ours nDCG':>9} {'p50':>6} {'p95':>6} {'recall':>6} | "
        f"{'LanceDB nDCG':>12} {'p50':>6} {'p95':>6} {'recall':>6} | {'p95 ratio':>9}"
    )
    print(header)
    for row in rows:
        ours, theirs = row["ours"], row["lancedb"]
        print(
            f"  {row['depth']:>5} | {ours['ndcg@10']:>9.4f} {ours['p50_ms']:>6.1f} {ours['p95_ms']:>6.1f} "
            f"{ours['recall@10_vs_exact']:>6.3f} | {theirs['ndcg@10']:>12.4f} {theirs['p50_ms']:>6.1f} "
            f"{theirs['p95_ms']:>6.1f} {theirs['recall@10_vs_exact']:>6.3f} | "
            f"{row['p95_ratio_ours_over_lancedb']:>8.3f}x"
        )
    print("  our legs (median of runs, p95 ms):")
    for row in rows:
        legs = ", ".join(f"{name} {stats['p95_ms']:.1f}" for name, stats in row["ours"]["legs"].items())
        print(f"    depth {row['depth']}: {legs}")


def plot(rows: list[dict[str, Any]], chunks: int, path: Path, load: str) -> None:
    """nDCG@10 against p95, one curve per system, each point labelled with its depth."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for system, label, marker in (("ours", "simone hybrid", "o"), ("lancedb", "LanceDB hybrid (RRF)", "s")):
        xs = [row[system]["p95_ms"] for row in rows]
        ys = [row[system]["ndcg@10"] for row in rows]
        axes.plot(xs, ys, marker=marker, label=label)
        for row, x, y in zip(rows, xs, ys, strict=True):
            axes.annotate(f"d={row['depth']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    axes.set_xlabel(f"p95 latency at {chunks:,} chunks (ms, query embedding included)")
    axes.set_ylabel("nDCG@10, SciFact train (809 claims)")
    axes.set_title(f"Candidate depth frontier\n({load})", fontsize=8)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def summary(rows: list[dict[str, Any]], chunks: int) -> list[dict[str, Any]]:
    """The report rows: per depth, our p95 against LanceDB's and our nDCG@10 against LanceDB's."""
    out: list[dict[str, Any]] = []
    for row in rows:
        ours, theirs, depth = row["ours"], row["lancedb"], row["depth"]
        out.append(
            {
                "section": "Speed — query latency",
                "metric": f"hybrid p95 at {chunks:,} chunks, depth {depth} on both sides (ms)",
                "ours": ours["p95_ms"],
                "peer_name": f"LanceDB hybrid, limit {depth} per search",
                "peer": theirs["p95_ms"],
                "ratio": row["p95_ratio_ours_over_lancedb"],
                "better": "lower",
                "target": {"on": "ratio", "op": "<=", "value": 1.0},
            }
        )
        out.append(
            {
                "section": "Quality — SciFact",
                "metric": f"hybrid nDCG@10, depth {depth} on both sides",
                "ours": ours["ndcg@10"],
                "peer_name": f"LanceDB hybrid, limit {depth} per search",
                "peer": theirs["ndcg@10"],
                "ratio": round(ours["ndcg@10"] / theirs["ndcg@10"], 4) if theirs["ndcg@10"] else None,
                "better": "higher",
                "target": {"on": "ratio", "op": ">=", "value": 1.0},
            }
        )
    return out


def load_text() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} cores"


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir)
    depths = sorted({int(d) for d in args.depths.split(",")})
    queries = [q["text"] for q in load_jsonl(data_dir / "scifact" / "queries-train.jsonl")][: args.queries]
    config = engine_settings(args.rows)
    load_start = load_text()
    async with DocumentIndex.open(config, collection="scifact") as index:
        big = await engine_table(index, config, data_dir, args.rows, args.docs)
        chunks = await big.count()
        if args.quality_from:
            scores = earlier_quality(Path(args.quality_from), depths)
        else:
            print("quality (SciFact train) …", file=sys.stderr)
            scores = await quality(index, config.index, depths, data_dir)
        print(f"latency at {chunks:,} chunks …", file=sys.stderr)
        timings = await latency(index, config.index, depths, queries, args.runs)
    rows = frontier_rows(scores, timings)
    load = f"{load_start} at start, {load_text()} at end"
    print_table(rows, chunks, len(queries), args.runs)
    print(f"  {load}")
    name = "frontier" if args.rows == 100_000 else f"frontier_{args.rows}"
    payload: dict[str, Any] = {
        "python": platform.python_version(),
        "lancedb": lancedb.__version__,
        "chunks": chunks,
        "ann_index": config.index.ann_index,
        "latency_queries": len(queries),
        "runs": args.runs,
        "default_leg_candidates": IndexSettings().leg_candidates,
        "load_average": load,
        "quality_from": args.quality_from,
        "rows": rows,
        "summary": summary(rows, chunks),
    }
    print(f"wrote {save(name, payload)}")
    image = RESULTS / f"{name}.png"
    plot(rows, chunks, image, load)
    print(f"wrote {image}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--rows", type=int, default=100_000, help="chunks of the synthetic table")
    parser.add_argument("--runs", type=int, default=2, help="latency passes over the depths")
    parser.add_argument("--queries", type=int, default=200, help="claims timed per depth and run")
    parser.add_argument("--depths", default=",".join(map(str, DEPTHS)), help="comma-separated depths")
    parser.add_argument("--docs", type=int, default=5183, help="SciFact abstracts (all by default)")
    parser.add_argument("--quick", action="store_true", help="50 timed queries, one run")
    parser.add_argument(
        "--quality-from",
        metavar="JSON",
        help="take the nDCG figures from an earlier results file (e.g. the 100k run's) instead of measuring",
    )
    args = parser.parse_args()
    if args.quick:
        args.queries, args.runs = 50, 1
    if not Path(args.data_dir).is_dir():
        raise SystemExit(f"{args.data_dir} does not exist; pass DATA_DIR (the shared data folder)")
    return args


if __name__ == "__main__":
    anyio.run(main, parse_args())
