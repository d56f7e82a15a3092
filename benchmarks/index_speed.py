"""Document-index speed: indexing SciFact end to end against bare ONNX embedding, re-index, query latency.

Usage: python benchmarks/index_speed.py [DATA_DIR] [--docs N] [--queries N] [--rows N] [--skip-100k]
                                       [--rounds N] [--engine-only]

DATA_DIR defaults to ../shared/data. In one run:

1. Index SciFact (``--docs`` abstracts, all 5,183 by default) from Markdown files into a fresh
   collection with the bundled all-MiniLM-L6-v2 and no embedding cache: seconds, chunks/s, and the
   ratio of that end-to-end time to the bare ONNX embedding time of the same chunk texts (the same
   session, one call). ``--rounds`` times (3), each on a fresh collection between two bare runs; the
   round with the median ratio is reported, every round is in the JSON. Target: overhead <= 15 %
   (ratio <= 1.15).
2. Re-index the unchanged corpus. Target: <= 3 s and 0 embeddings.
3. Query latency p50/p95 per mode (query embedding included) on that collection (~5k+ chunks).
4. A 100k-chunk collection synthesised from it (rows repeated with perturbed vectors and terms):
   latency with exact search, then for each ANN kind (IVF_FLAT, IVF_HNSW_SQ, both with refinement):
   build time, latency, and recall@10 against exact search. Targets: hybrid p95 <= 50 ms at 100k,
   recall@10 >= 0.95.
5. Against the engine underneath, on the 100k table with the default ANN index: simone's hybrid
   (both legs, calibrated votes, the relevance rule, card reads) beside LanceDB's own hybrid query
   (its vector search + its native FTS over the ``text`` column + ``RRFReranker``, same table, same
   query-embedding call, same k = 10 and nprobes), interleaved query by query (the order alternates);
   p50/p95 of each of simone's legs (query embedding, ANN search, lexical, row reads) from its trace;
   recall@10 of both against the same query with exact vector search. Targets: simone's hybrid p95 <=
   LanceDB's hybrid p95, and <= 1.1x its slowest leg.
6. Peak RSS.

``--engine-only`` runs only what step 5 needs (one indexing round, the default ANN kind) and keeps the
100k table in ``benchmarks/.cache/index-speed-engine`` for the next run; it writes
``benchmarks/results/index_speed_engine.json`` (another ``--rows N``: its own table in
``index-speed-engine-N`` and ``index_speed_engine_N.json``, e.g. the 1M comparison). Otherwise writes benchmarks/results/index_speed.json.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import lancedb
import numpy as np
import pyarrow as pa
from _index_common import CACHE, default_data_dir, load_jsonl, peak_rss_mb, percentile, save, write_corpus
from simone.providers.documents import DocumentIndex, DocumentIndexProvider
from simone.providers.documents._store import READ_COLUMNS, VECTOR_INDEX, AnnKind, build_where
from simone.runtime import (
    EmbeddingSettings,
    IndexSettings,
    RetrievalRequest,
    SearchMode,
    Settings,
    TrustedContext,
)

CONTEXT = TrustedContext(actor="benchmark")
ANN_KINDS: tuple[AnnKind, ...] = ("ivf_flat", "ivf_hnsw_sq")
TEXT_FTS = "text_fts_idx"
"""LanceDB's native FTS index on the ``text`` column, for its own hybrid query (step 5)."""


def settings(data_dir: Path, **index: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        embeddings=EmbeddingSettings(chain=["onnx"], cache=False),
        index=IndexSettings(**index),
    )


async def bare_onnx(onnx: Any, texts: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of embedding ``texts`` with the bare ONNX session in one call."""
    started, cpu = time.perf_counter(), time.process_time()
    await anyio.to_thread.run_sync(onnx.embed_sync, texts)
    return time.perf_counter() - started, time.process_time() - cpu


def time_embedding(index: DocumentIndex) -> list[float]:
    """Seconds the index's chain spends embedding from now on (a one-element list, kept current)."""
    chain = index.chain
    embed = chain.embed
    spent = [0.0]

    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await embed(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    chain.embed = timed  # type: ignore[method-assign]
    return spent


async def latencies(index: DocumentIndex, queries: list[str], mode: SearchMode) -> dict[str, float]:
    provider = DocumentIndexProvider(index)
    times = []
    for text in queries:
        request = RetrievalRequest.create(text, limit=10, mode=mode)
        started = time.perf_counter()
        response = await provider.retrieve(request, CONTEXT)
        times.append((time.perf_counter() - started) * 1000)
        if response.degraded:
            raise SystemExit(f"degraded answer: {response.degraded}")
    return {"p50_ms": round(percentile(times, 0.5), 2), "p95_ms": round(percentile(times, 0.95), 2)}


async def synthesise(index: DocumentIndex, source: Any, target_rows: int) -> Any:
    """A collection of ``target_rows`` chunks: the source rows repeated with perturbation."""
    collection = await index.store.create_collection("synthetic", source.space)
    rows = await source.rows()
    rng = np.random.default_rng(7)
    vectors = np.stack(rows["vector"].to_numpy(zero_copy_only=False)).astype(np.float32)
    terms = rows["terms"].to_pylist()
    copies = -(-target_rows // rows.num_rows)
    written = 0
    for copy in range(copies):
        take = min(rows.num_rows, target_rows - written)
        if take <= 0:
            break
        if copy == 0:
            batch = rows.slice(0, take)
        else:
            noisy = vectors[:take] + rng.normal(0, 0.03, size=(take, vectors.shape[1])).astype(np.float32)
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            kept = [" ".join(w for w in t.split() if rng.random() > 0.15) for t in terms[:take]]
            ids = [hashlib.sha256(f"{i}:{copy}".encode()).hexdigest() for i in rows["id"].to_pylist()[:take]]
            paths = [f"{p}.copy{copy}" for p in rows["path"].to_pylist()[:take]]
            batch = rows.slice(0, take)
            for name, values in (("id", ids), ("path", paths), ("terms", kept)):
                batch = batch.set_column(batch.schema.get_field_index(name), name, pa.array(values))
            flat = pa.array(noisy.reshape(-1), type=pa.float32())
            vector = pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])
            batch = batch.set_column(
                batch.schema.get_field_index("vector"), collection.schema.field("vector"), vector
            )
        await collection.table.add(batch.cast(collection.schema))
        written += take
    await collection.maintain(ann_min_rows=10**9, ann_kind="ivf_flat")
    return collection


async def recall_at_10(collection: Any, vectors: np.ndarray, nprobes: int, refine: int) -> float:
    where = build_where([""], {})
    hits = []
    for vector in vectors:
        exact = {h.id for h in await collection.search_vector(vector, where, 10, exact=True)}
        approx = {
            h.id
            for h in await collection.search_vector(vector, where, 10, nprobes=nprobes, refine_factor=refine)
        }
        hits.append(len(exact & approx) / 10)
    return float(np.mean(hits))


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 0.5), 2), "p95_ms": round(percentile(values, 0.95), 2)}


async def lancedb_hybrid(
    collection: Any, vector: np.ndarray, text: str, nprobes: int, *, exact: bool = False, depth: int = 10
) -> list[str]:
    """LanceDB's own hybrid query: its vector search + its FTS on ``text`` + RRFReranker, top 10.

    ``depth`` is how many candidates each of its two searches takes (its ``limit``); the fused list is
    cut to 10. At ``depth=10`` this is LanceDB's hybrid as a user writes it; at simone's
    ``leg_candidates`` (50) it does the engine work simone's legs do.
    """
    from lancedb.rerankers import RRFReranker

    query = (
        collection.table.query()
        .nearest_to(vector.astype(np.float32))
        .column("vector")
        .distance_type("cosine")
        .nearest_to_text(text, columns="text")
        .rerank(RRFReranker())
        .select(list(READ_COLUMNS))
        .limit(depth)
    )
    query = query.bypass_vector_index() if exact else query.nprobes(nprobes)
    table = await query.to_arrow()
    return [str(i) for i in table.column("id").to_pylist()][:10]


async def ensure_text_fts(collection: Any) -> float:
    """LanceDB's native FTS index on the ``text`` column (what its hybrid query searches); seconds."""
    from lancedb.index import FTS

    if TEXT_FTS in await collection.index_names():
        return 0.0
    started = time.perf_counter()
    await collection.table.create_index("text", config=FTS(with_position=False), name=TEXT_FTS)
    return time.perf_counter() - started


async def engine_comparison(
    big_index: DocumentIndex,
    exact_index: DocumentIndex,
    queries: list[str],
    nprobes: int,
    *,
    depth: int = 10,
    at_our_depth: bool = True,
) -> dict[str, Any]:
    """simone's hybrid beside LanceDB's own hybrid, interleaved query by query (see step 5).

    LanceDB's query probes as many partitions as simone's vector leg does: ``nprobes`` raised to
    ``ann_probe_share`` of the index's partitions (60 of 1,000 at 1M rows), as ``search_vector`` does.
    ``depth`` is LanceDB's per-search limit (its hybrid as a user writes it at 10; recall@10 against
    its exact search at the same depth); ``at_our_depth`` also times it at simone's ``leg_candidates``
    (information only; benchmarks/frontier.py turns it off and sets ``depth`` instead).
    """
    collection = big_index.collection
    assert collection is not None
    index_info = await collection.vector_index()
    if index_info is not None:
        nprobes = max(nprobes, math.ceil(big_index.settings.ann_probe_share * index_info[1]))
    provider = DocumentIndexProvider(big_index)
    exact_provider = DocumentIndexProvider(exact_index)
    space = collection.space
    legs: dict[str, list[float]] = {
        "query embedding": [],
        "ANN search": [],
        "semantic leg": [],
        "lexical leg": [],
        "fusion, rows, evidence": [],
    }
    ours: list[float] = []
    theirs: list[float] = []
    theirs_deep: list[float] = []
    our_depth = big_index.settings.leg_candidates
    theirs_embed: list[float] = []
    recall_ours: list[float] = []
    recall_theirs: list[float] = []

    async def run_ours(text: str) -> list[str]:
        request = RetrievalRequest.create(text, limit=10, mode=SearchMode.HYBRID)
        started = time.perf_counter()
        response = await provider.retrieve(request, CONTEXT)
        ours.append((time.perf_counter() - started) * 1000)
        if response.degraded:
            raise SystemExit(f"degraded answer: {response.degraded}")
        details = response.details
        legs["query embedding"].append(float(details["semantic_embed_ms"]))
        legs["semantic leg"].append(float(details["semantic_ms"]))
        legs["ANN search"].append(float(details["semantic_ms"]) - float(details["semantic_embed_ms"]))
        legs["lexical leg"].append(float(details["lexical_ms"]))
        legs["fusion, rows, evidence"].append(float(details["evidence_ms"]))
        return [e.id for e in response.evidence]

    async def run_theirs(text: str) -> list[str]:
        started = time.perf_counter()
        vectors = await big_index.chain.embed([text], space=space, kind="query")
        embedded = time.perf_counter()
        ids = await lancedb_hybrid(collection, vectors[0], text, nprobes, depth=depth)
        theirs.append((time.perf_counter() - started) * 1000)
        theirs_embed.append((embedded - started) * 1000)
        return ids

    async def run_theirs_deep(text: str) -> None:
        if not at_our_depth:
            return
        started = time.perf_counter()
        vectors = await big_index.chain.embed([text], space=space, kind="query")
        await lancedb_hybrid(collection, vectors[0], text, nprobes, depth=our_depth)
        theirs_deep.append((time.perf_counter() - started) * 1000)

    for _ in range(3):  # warm-up: both paths, caches and the lazily opened indexes
        await run_ours(queries[0])
        await run_theirs(queries[0])
        await run_theirs_deep(queries[0])
    for name in legs:
        legs[name].clear()
    for values in (ours, theirs, theirs_embed, theirs_deep):
        values.clear()
    for number, text in enumerate(queries):
        if number % 2 == 0:
            mine = await run_ours(text)
            other = await run_theirs(text)
            await run_theirs_deep(text)
        else:
            await run_theirs_deep(text)
            other = await run_theirs(text)
            mine = await run_ours(text)
        # recall@10 against the same query with exact vector search (not timed)
        exact_mine = [
            e.id
            for e in (
                await exact_provider.retrieve(
                    RetrievalRequest.create(text, limit=10, mode=SearchMode.HYBRID), CONTEXT
                )
            ).evidence
        ]
        vectors = await big_index.chain.embed([text], space=space, kind="query")
        exact_other = await lancedb_hybrid(collection, vectors[0], text, nprobes, exact=True, depth=depth)
        recall_ours.append(len(set(mine) & set(exact_mine)) / max(1, len(exact_mine)))
        recall_theirs.append(len(set(other) & set(exact_other)) / max(1, len(exact_other)))
    per_leg = {name: _stats(values) for name, values in legs.items()}
    slowest = max(("semantic leg", "lexical leg"), key=lambda name: per_leg[name]["p95_ms"])
    result: dict[str, Any] = {
        "queries": len(queries),
        "nprobes": nprobes,
        "legs": per_leg,
        "slowest_leg": slowest,
        "simone_hybrid": {**_stats(ours), "candidates_per_leg": our_depth},
        **(
            {"lancedb_hybrid_at_our_depth": {**_stats(theirs_deep), "candidates_per_search": our_depth}}
            if at_our_depth
            else {}
        ),
        "lancedb_hybrid": {**_stats(theirs), "candidates_per_search": depth},
        "lancedb_query_embedding": _stats(theirs_embed),
        "recall@10_vs_exact": {
            "simone_hybrid": round(float(np.mean(recall_ours)), 4),
            "lancedb_hybrid": round(float(np.mean(recall_theirs)), 4),
        },
    }
    ours_p95 = result["simone_hybrid"]["p95_ms"]
    result["targets"] = {
        "hybrid_p95_le_lancedb_hybrid_p95": ours_p95 <= result["lancedb_hybrid"]["p95_ms"],
        "hybrid_p95_le_1.1x_slowest_leg": ours_p95 <= 1.1 * per_leg[slowest]["p95_ms"],
    }
    return result


def print_engine(result: dict[str, Any], rows: int) -> None:
    print(
        f"\nsimone's hybrid vs LanceDB's own hybrid at {rows:,} chunks, {result['queries']} queries, "
        f"interleaved, k=10, nprobes {result['nprobes']} (query embedding included in both)"
    )
    print(f"  {'what':<34} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}")
    for name, stats in result["legs"].items():
        print(f"  {'simone ' + name:<34} {stats['p50_ms']:>8.2f} {stats['p95_ms']:>8.2f} {'':>10}")
    recall = result["recall@10_vs_exact"]
    for name, key in (
        ("simone hybrid (whole query)", "simone_hybrid"),
        ("LanceDB hybrid (embed+query)", "lancedb_hybrid"),
    ):
        stats = result[key]
        print(f"  {name:<34} {stats['p50_ms']:>8.2f} {stats['p95_ms']:>8.2f} {recall[key]:>10.4f}")
    embed = result["lancedb_query_embedding"]
    print(f"  {'  of which LanceDB query embedding':<34} {embed['p50_ms']:>8.2f} {embed['p95_ms']:>8.2f}")
    deep = result.get("lancedb_hybrid_at_our_depth")
    if deep is not None:
        name = f"LanceDB hybrid, {deep['candidates_per_search']} per search"
        print(
            f"  {name:<34} {deep['p50_ms']:>8.2f} {deep['p95_ms']:>8.2f}   (our legs' depth; information only)"
        )
    ratio = result["simone_hybrid"]["p95_ms"] / result["lancedb_hybrid"]["p95_ms"]
    slowest = result["legs"][result["slowest_leg"]]["p95_ms"]
    print(
        f"  p95 simone / LanceDB: {ratio:.3f}x (target <= 1); simone hybrid / slowest leg "
        f"({result['slowest_leg']}): {result['simone_hybrid']['p95_ms'] / slowest:.3f}x (target <= 1.1)"
    )


def engine_summary(result: dict[str, Any], rows: int) -> list[dict[str, Any]]:
    ours = result["simone_hybrid"]["p95_ms"]
    slowest = result["legs"][result["slowest_leg"]]["p95_ms"]
    return [
        {
            "section": "Speed — query latency",
            "metric": f"hybrid p95 at {rows:,} chunks vs LanceDB's own hybrid (ms)",
            "ours": ours,
            "peer_name": "LanceDB hybrid (vector + FTS + RRFReranker)",
            "peer": result["lancedb_hybrid"]["p95_ms"],
            "ratio": round(ours / result["lancedb_hybrid"]["p95_ms"], 3),
            "better": "lower",
            "target": {"on": "ratio", "op": "<=", "value": 1.0},
        },
        {
            "section": "Speed — query latency",
            "metric": f"hybrid p95 at {rows:,} chunks vs its slowest leg (ms)",
            "ours": ours,
            "peer_name": f"simone {result['slowest_leg']}",
            "peer": slowest,
            "ratio": round(ours / slowest, 3),
            "better": "lower",
            "target": {"on": "ratio", "op": "<=", "value": 1.1},
        },
        *(
            [
                {
                    "section": "Speed — query latency",
                    "metric": f"hybrid p95 at {rows:,} chunks vs LanceDB's hybrid at our legs' depth (ms)",
                    "ours": ours,
                    "peer_name": f"LanceDB hybrid, {deep['candidates_per_search']} candidates per search",
                    "peer": deep["p95_ms"],
                    "ratio": round(ours / deep["p95_ms"], 3),
                    "better": "lower",
                    "note": "information: the engine work our 50-candidate legs do, without our fusion rules",
                }
            ]
            if (deep := result.get("lancedb_hybrid_at_our_depth"))
            else []
        ),
    ]


def engine_settings(rows: int) -> Settings:
    """The settings of the kept engine table of ``rows`` chunks (``benchmarks/.cache/index-speed-engine[-N]``).

    The embedding cache is on here (only the query path is measured): a copy of another benchmark's
    cache (``embedding-cache.sqlite3`` in that folder) saves embedding the corpus again.
    """
    work = CACHE / ("index-speed-engine" if rows == 100_000 else f"index-speed-engine-{rows}")
    config = settings(work)
    return config.model_copy(update={"embeddings": config.embeddings.model_copy(update={"cache": True})})


async def engine_table(index: DocumentIndex, config: Settings, data_dir: Path, rows: int, docs: int) -> Any:
    """The kept ``synthetic`` table of ``rows`` chunks beside ``index``'s SciFact collection.

    Built once (the SciFact collection indexed first when missing, then synthesised, the default ANN
    kind built) and kept; LanceDB's FTS on ``text`` is added when missing.
    """
    big = await index.store.open_collection("synthetic")
    if big is None or await big.count() != rows or await big.vector_index() is None:
        if big is not None:
            await index.store.db.drop_table("synthetic")
        corpus = load_jsonl(data_dir / "scifact" / "corpus.jsonl")[:docs]
        folder = write_corpus(corpus, CACHE / f"scifact-docs-{len(corpus)}")
        if index.collection is None:
            print(f"indexing {len(corpus):,} docs …", file=sys.stderr)
            await index.index_paths([folder])
        source = index.collection
        assert source is not None
        print(f"synthesising {rows:,} chunks …", file=sys.stderr)
        big = await synthesise(index, source, rows)
        started = time.perf_counter()
        await big.build_ann(config.index.ann_index, rows)
        print(f"  {config.index.ann_index} built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    fts_s = await ensure_text_fts(big)
    if fts_s:
        print(f"  LanceDB FTS on text built in {fts_s:.1f} s", file=sys.stderr)
    return big


async def engine_only(args: argparse.Namespace) -> None:
    """Step 5 alone: the 100k table (built once, kept), then the comparison with LanceDB's hybrid."""
    data_dir = Path(args.data_dir)
    queries = [q["text"] for q in load_jsonl(data_dir / "scifact" / "queries-train.jsonl")][: args.queries]
    default = args.rows == 100_000
    config = engine_settings(args.rows)
    payload: dict[str, Any] = {"python": platform.python_version(), "lancedb": lancedb.__version__}
    async with DocumentIndex.open(config, collection="scifact") as index:
        big = await engine_table(index, config, data_dir, args.rows, args.docs)
        big_index = await DocumentIndex(
            index.store, index.chain, analyzer=index.analyzer, settings=config.index, collection="synthetic"
        ).__aenter__()
        exact_settings = config.index.model_copy(update={"ann_nprobes": 10_000, "ann_refine_factor": 0})
        exact_index = await DocumentIndex(
            index.store, index.chain, analyzer=index.analyzer, settings=exact_settings, collection="synthetic"
        ).__aenter__()
        rows = await big.count()
        result = await engine_comparison(big_index, exact_index, queries, config.index.ann_nprobes)
    payload["engine_100k"] = {"chunks": rows, "ann_index": config.index.ann_index, **result}
    print_engine(result, rows)
    payload["summary"] = engine_summary(result, rows)
    payload["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(f"wrote {save('index_speed_engine' if default else f'index_speed_engine_{args.rows}', payload)}")


async def main(args: argparse.Namespace) -> None:
    if args.engine_only:
        await engine_only(args)
        return
    data_dir = Path(args.data_dir)
    corpus = load_jsonl(data_dir / "scifact" / "corpus.jsonl")[: args.docs]
    queries = [q["text"] for q in load_jsonl(data_dir / "scifact" / "queries-train.jsonl")][: args.queries]
    folder = write_corpus(corpus, CACHE / f"scifact-docs-{len(corpus)}")
    work = CACHE / "index-speed"
    shutil.rmtree(work, ignore_errors=True)
    payload: dict[str, Any] = {
        "python": platform.python_version(),
        "lancedb": lancedb.__version__,
        "docs": len(corpus),
    }
    config = settings(work)
    # The machine is shared, and a single pair of timings moved the ratio by ±0.1 between runs. So the
    # indexing is timed in rounds, each on a fresh collection between two bare ONNX runs of the same
    # chunk texts (the same session, one call each), and the round with the median ratio is reported;
    # CPU seconds of this process are reported beside wall time (less sensitive to neighbours).
    rounds: list[dict[str, Any]] = []
    texts: list[str] = []
    for number in range(args.rounds):
        async with DocumentIndex.open(config, collection=f"scifact-{number}") as index:
            onnx = index.chain.embedders[0]
            await onnx.embed(["warm-up"], kind="query")  # the session is open before any clock starts
            bare_runs = [await bare_onnx(onnx, texts)] if texts else []
            inside = time_embedding(index)
            started, cpu = time.perf_counter(), time.process_time()
            report = await index.index_paths([folder])
            index_s, index_cpu = time.perf_counter() - started, time.process_time() - cpu
            if not texts:  # the first round learns what was embedded: each row's context line and text
                collection = index.collection
                assert collection is not None
                rows = await collection.rows(columns=["context", "text"])
                texts = [
                    f"{c}\n{t}" if c else t
                    for c, t in zip(rows["context"].to_pylist(), rows["text"].to_pylist(), strict=True)
                ]
                bare_runs.append(await bare_onnx(onnx, texts))
            bare_runs.append(await bare_onnx(onnx, texts))
            bare_s = statistics.fmean(w for w, _ in bare_runs)
            bare_cpu = statistics.fmean(c for _, c in bare_runs)
            rounds.append(
                {
                    "collection": f"scifact-{number}",
                    "files": report.files_indexed,
                    "chunks": report.chunks,
                    "embedded": report.embedded,
                    "end_to_end_s": round(index_s, 2),
                    "end_to_end_cpu_s": round(index_cpu, 2),
                    "bare_onnx_s": round(bare_s, 2),
                    "bare_onnx_runs_s": [round(w, 2) for w, _ in bare_runs],
                    "bare_onnx_cpu_s": round(bare_cpu, 2),
                    "ratio": round(index_s / bare_s, 3),
                    "cpu_ratio": round(index_cpu / bare_cpu, 3),
                    # The run split: seconds inside the chain's embed calls, and everything else
                    # (reading, chunking, analysis, LanceDB writes, indexes) — the pipeline's own cost.
                    "embedding_inside_s": round(inside[0], 2),
                    "rest_s": round(index_s - inside[0], 2),
                    "rest_share_of_bare": round((index_s - inside[0]) / bare_s, 3),
                }
            )
            print(
                f"round {number + 1}/{args.rounds}: indexing {index_s:.1f} s (embedding {inside[0]:.1f} s, "
                f"the rest {index_s - inside[0]:.1f} s) vs bare ONNX {bare_s:.1f} s "
                f"(runs {', '.join(f'{w:.1f}' for w, _ in bare_runs)}): ratio {index_s / bare_s:.3f}x; "
                f"CPU {index_cpu:.1f} vs {bare_cpu:.1f} s: {index_cpu / bare_cpu:.3f}x",
                file=sys.stderr,
            )
    median = sorted(rounds, key=lambda r: r["ratio"])[len(rounds) // 2]
    async with DocumentIndex.open(config, collection=median["collection"]) as index:
        collection = index.collection
        assert collection is not None
        started = time.perf_counter()
        again = await index.index_paths([folder])
        reindex_s = time.perf_counter() - started
        payload["indexing"] = {
            "files": median["files"],
            "chunks": median["chunks"],
            "embedded": median["embedded"],
            "rounds": rounds,
            "reported_round": median["collection"],
            "end_to_end_s": median["end_to_end_s"],
            "chunks_per_s": round(median["chunks"] / median["end_to_end_s"], 1),
            "bare_onnx_s": median["bare_onnx_s"],
            "bare_onnx_runs_s": median["bare_onnx_runs_s"],
            "ratio_end_to_end_vs_bare_onnx": median["ratio"],
            "end_to_end_cpu_s": median["end_to_end_cpu_s"],
            "bare_onnx_cpu_s": median["bare_onnx_cpu_s"],
            "cpu_ratio_end_to_end_vs_bare_onnx": median["cpu_ratio"],
            "rest_share_of_bare_onnx": median["rest_share_of_bare"],
            "reindex_unchanged_s": round(reindex_s, 3),
            "reindex_embedded": again.embedded,
            "targets": {
                "overhead_le_15pct": median["ratio"] <= 1.15,
                "cpu_overhead_le_15pct": median["cpu_ratio"] <= 1.15,
                "reindex_le_3s_0_embeddings": reindex_s <= 3 and again.embedded == 0,
            },
        }
        print(
            f"indexing {len(corpus):,} docs → {median['chunks']:,} chunks, median of {len(rounds)} rounds: "
            f"{median['end_to_end_s']:.1f} s end to end ({median['chunks'] / median['end_to_end_s']:.1f} "
            f"chunks/s); bare ONNX on the same chunks {median['bare_onnx_s']:.1f} s; ratio "
            f"{median['ratio']:.3f}x (target <= 1.15); CPU seconds {median['end_to_end_cpu_s']:.1f} vs "
            f"{median['bare_onnx_cpu_s']:.1f}, ratio {median['cpu_ratio']:.3f}x; all rounds: "
            + ", ".join(f"{r['ratio']:.3f}x" for r in rounds)
            + "; outside the embedding calls: "
            + ", ".join(f"{r['rest_s']:.1f} s ({r['rest_share_of_bare']:.1%} of bare)" for r in rounds)
        )
        print(f"re-index unchanged: {reindex_s:.2f} s, {again.embedded} embedded (target <= 3 s, 0)")
        small: dict[str, Any] = {"chunks": median["chunks"]}
        for mode in SearchMode:
            small[mode.value] = await latencies(index, queries, mode)
        payload["latency_small"] = small
        print(f"\nquery latency at {median['chunks']:,} chunks (exact search), {len(queries)} queries")
        for mode in SearchMode:
            print(
                f"  {mode.value:<9} p50 {small[mode.value]['p50_ms']:>7.2f} ms   p95 {small[mode.value]['p95_ms']:>7.2f} ms"
            )

        if not args.skip_100k:
            print(f"\nsynthesising {args.rows:,} chunks …", file=sys.stderr)
            started = time.perf_counter()
            big = await synthesise(index, collection, args.rows)
            print(f"  written and FTS-indexed in {time.perf_counter() - started:.1f} s", file=sys.stderr)

            async def fresh() -> DocumentIndex:
                # A new handle sees the table as it is now (an index built through another handle
                # is otherwise seen only after the connection's read-consistency interval).
                opened = DocumentIndex(
                    index.store,
                    index.chain,
                    analyzer=index.analyzer,
                    settings=config.index,
                    collection="synthetic",
                )
                return await opened.__aenter__()

            big_index = await fresh()
            query_vectors = await index.chain.embed(queries, space=big.space, kind="query")
            large: dict[str, Any] = {"chunks": await big.count(), "exact": {}}
            for mode in SearchMode:
                large["exact"][mode.value] = await latencies(big_index, queries, mode)
            for kind in ANN_KINDS:
                started = time.perf_counter()
                await big.build_ann(kind, large["chunks"])
                build_s = time.perf_counter() - started
                entry: dict[str, Any] = {"build_s": round(build_s, 1)}
                big_index = await fresh()
                for mode in (SearchMode.SEMANTIC, SearchMode.HYBRID):
                    entry[mode.value] = await latencies(big_index, queries, mode)
                entry["recall@10_vs_exact"] = round(
                    await recall_at_10(
                        big, query_vectors, config.index.ann_nprobes, config.index.ann_refine_factor
                    ),
                    4,
                )
                large[kind] = entry
                if kind == config.index.ann_index:
                    await ensure_text_fts(big)
                    exact_settings = config.index.model_copy(
                        update={"ann_nprobes": 10_000, "ann_refine_factor": 0}
                    )
                    exact_index = await DocumentIndex(
                        index.store,
                        index.chain,
                        analyzer=index.analyzer,
                        settings=exact_settings,
                        collection="synthetic",
                    ).__aenter__()
                    engine = await engine_comparison(
                        await fresh(), exact_index, queries, config.index.ann_nprobes
                    )
                    payload["engine_100k"] = {"chunks": large["chunks"], "ann_index": kind, **engine}
                await big.table.drop_index(VECTOR_INDEX)
            payload["latency_100k"] = large
            print(
                f"\nquery latency at {large['chunks']:,} chunks, {len(queries)} queries (query embedding included)"
            )
            print(
                f"  {'index':<12} {'mode':<9} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10} {'build s':>8} {'p95 vs exact':>13}"
            )
            for mode in SearchMode:
                stats = large["exact"][mode.value]
                print(
                    f"  {'exact':<12} {mode.value:<9} {stats['p50_ms']:>8.2f} {stats['p95_ms']:>8.2f} {'1.0':>10} {'-':>8} {'1.00x':>13}"
                )
            for kind in ANN_KINDS:
                entry = large[kind]
                for mode in (SearchMode.SEMANTIC, SearchMode.HYBRID):
                    stats = entry[mode.value]
                    ratio = stats["p95_ms"] / large["exact"][mode.value]["p95_ms"]
                    print(
                        f"  {kind:<12} {mode.value:<9} {stats['p50_ms']:>8.2f} {stats['p95_ms']:>8.2f} "
                        f"{entry['recall@10_vs_exact']:>10.4f} {entry['build_s']:>8.1f} {ratio:>12.2f}x"
                    )
            default = large[config.index.ann_index]
            if "engine_100k" in payload:
                print_engine(payload["engine_100k"], large["chunks"])
                # kept beside the registered report rows (a top-level "summary" would replace them)
                payload["engine_summary"] = engine_summary(payload["engine_100k"], large["chunks"])
            payload["targets_100k"] = {
                "default_ann": config.index.ann_index,
                "hybrid_p95_le_50ms": default["hybrid"]["p95_ms"] <= 50,
                "recall_ge_0.95": default["recall@10_vs_exact"] >= 0.95,
            }
    payload["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(f"\npeak RSS {payload['peak_rss_mb']:.0f} MB")
    print(f"wrote {save('index_speed', payload)}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--docs", type=int, default=5183, help="SciFact abstracts to index (all by default)")
    parser.add_argument("--queries", type=int, default=200, help="queries for the latency runs")
    parser.add_argument("--rows", type=int, default=100_000, help="chunks of the synthetic collection")
    parser.add_argument("--skip-100k", action="store_true")
    parser.add_argument(
        "--engine-only",
        action="store_true",
        help="only simone's hybrid vs LanceDB's own hybrid at --rows (table kept between runs)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="indexing rounds between bare ONNX runs (the median is reported)",
    )
    args = parser.parse_args()
    if not Path(args.data_dir).is_dir():
        raise SystemExit(f"{args.data_dir} does not exist; pass DATA_DIR (the shared data folder)")
    return args


if __name__ == "__main__":
    anyio.run(main, parse_args())
