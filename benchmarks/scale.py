"""Document index at scale: 1M chunks through the real indexing pipeline, then query latency and recall.

Usage: python benchmarks/scale.py [DATA_DIR] [--chunks N] [--peer-chunks M] [--queries Q]
                                  [--recall-queries R] [--write-batch B] [--hnsw] [--skip-index] [--quick]

DATA_DIR defaults to ../shared/data (SciFact: corpus.jsonl and queries-train.jsonl). In one run, for
two sizes side by side (``--peer-chunks``, default N/10, then ``--chunks``, default 1,000,000):

1. **Corpus.** Markdown files generated from the 5,183 SciFact abstracts under
   ``benchmarks/.cache/scale/corpus-N/part-XX/`` (10 folders, 50 sections a file). Each section is
   ``## [d<doc id> c<copy>] <title>`` then the abstract cut to fit one 256-token chunk; copy 0 is the
   abstract as is, copy c >= 1 has its sentences shuffled and 10 % of its words dropped (seeded), so
   every chunk is distinct and one section is one chunk. Kept between runs; its generation is not timed.
2. **Indexing** (a child process, so its peak RSS is the indexing's alone): the real
   ``DocumentIndex.index_paths`` pipeline — discover, load, chunk with the model's real tokenizer,
   analyse terms, embed, write ``merge_insert`` batches of ``--write-batch`` chunks, build the FTS
   index — then ``Collection.maintain`` builds the IVF_FLAT vector index (timed on its own). The
   embedding cache is off. **Embeddings are replayed, not computed**: embedding 1M chunks with the
   real model takes hours on 2 cores, so the collection is in a benchmark-only space
   ``bench:minilm-replay:384`` whose embedder returns, for each chunk, the real all-MiniLM-L6-v2
   vector of its source abstract (embedded once with the bundled int8 model, ``base-vectors.npz``)
   plus Gaussian noise (sigma ``REPLAY_SIGMA`` per dimension, seeded by the text), renormalised.
   The real model's throughput is measured in the same run on ``--sample`` real chunk texts and the
   embedding time for N chunks is **extrapolated** from it (labelled so). Peak RSS is the child's
   ``ru_maxrss``; disk is the table folder's size.
3. **Queries** (this process): ``--queries`` SciFact training claims through the provider's
   ``retrieve`` in lexical, semantic and hybrid modes, without a filter, with ``path_prefix`` (one
   folder of ten: ~10 % of rows) and with ``kind = markdown`` (every row: the filter's cost alone).
   The query embedding is **included**: the replay embedder hands ``kind="query"`` to the real
   bundled ONNX model (gated int8 variant) — the same model family as the replayed vectors, so the
   neighbours are meaningful. Recall@10 of the ANN semantic leg (the provider's nprobes and refine
   factor) against exact search (``search_vector(exact=True)``) on ``--recall-queries`` queries,
   without and with the path filter; the exact search's latency is the peer. ``--hnsw`` also builds
   IVF_HNSW_SQ on the largest size, measures it, and restores IVF_FLAT.
4. **Against the engine underneath** (each size): simone's hybrid beside LanceDB's own hybrid query
   (its vector search + its native FTS over ``text`` + ``RRFReranker``, same table, same
   query-embedding call, k = 10, the nprobes simone uses), interleaved query by query on the
   ``--recall-queries`` sample, with p50/p95 of simone's legs from its trace and recall@10 of both
   against exact vector search (``engine_comparison`` of ``benchmarks/index_speed.py``; the FTS
   index on ``text`` is built once and kept).

The machine is shared (2 cores, other engineers' jobs): latencies are p50/p95 of at least 200
queries by default, with the 1-minute load average recorded before and after each block.

Writes benchmarks/results/scale.json (top-level ``summary`` rows for benchmarks/run_all.py).
``--skip-index`` reuses the tables already built under ``benchmarks/.cache/scale`` (and their
indexing figures). Use ``--chunks 50000 --peer-chunks 0`` while developing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import lancedb
import numpy as np
import numpy.typing as npt
from _index_common import CACHE, default_data_dir, load_jsonl, percentile, save
from index_speed import engine_comparison, ensure_text_fts
from simone.providers.documents import DocumentIndex, DocumentIndexProvider
from simone.providers.documents._store import VECTOR_INDEX, Collection, DocumentStore, build_where
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.runtime import (
    EmbeddingChain,
    EmbeddingKind,
    EmbeddingSpace,
    IndexSettings,
    InvalidRequest,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)

HERE = Path(__file__).resolve().parent
WORK = CACHE / "scale"
MODELS = WORK / "models"
COLLECTION = "scale"
CONTEXT = TrustedContext(actor="benchmark")

BENCH_SPACE = EmbeddingSpace(provider="bench", model="minilm-replay", dimension=384, normalized=True)
"""The benchmark-only space of the replayed vectors (never the real model's space)."""

REPLAY_SIGMA = 0.02
"""Noise per dimension added to a source vector (norm ~0.39 before renormalising: cosine ~0.93)."""

SECTIONS_PER_FILE = 50
PARTS = 10
"""Files are spread over this many folders; a ``path_prefix`` filter on one selects ~1/PARTS of rows."""

BODY_TOKENS = 200
"""A section (heading line + body) is cut to this many tokens, so with its context line it is one chunk."""

MARKER = re.compile(r"\[d([^\s\]]+) c(\d+)\]")
FILTERS: dict[str, dict[str, str]] = {"none": {}, "path_prefix": {}, "kind": {"kind": "markdown"}}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_mb() -> float:
    """The current resident set size of this process."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def load1() -> float:
    return round(os.getloadavg()[0], 2)


# -- the replay embedder ---------------------------------------------------------------------------


class ReplayEmbedder:
    """Documents: the source abstract's real vector plus seeded noise; queries: the real model.

    Args:
        real: the bundled ONNX embedder (started and closed with this one).
        base: doc id → the real all-MiniLM-L6-v2 vector of that abstract.
        sigma: Gaussian noise per dimension before renormalising.
    """

    def __init__(
        self, real: OnnxMiniLMEmbedder, base: dict[str, npt.NDArray[np.float32]], sigma: float
    ) -> None:
        self.real = real
        self.base = base
        self.sigma = sigma
        self.replayed = 0

    @property
    def space(self) -> EmbeddingSpace:
        """The benchmark-only space."""
        return BENCH_SPACE

    @property
    def tokenizer(self) -> Any:
        """The real model's tokenizer (the chunker sizes chunks with it)."""
        return self.real.tokenizer

    async def __aenter__(self) -> ReplayEmbedder:
        await self.real.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.real.close()

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Replay document vectors; embed queries with the real model."""
        if kind == "query":
            return await self.real.embed(texts, kind="query")
        out = np.empty((len(texts), BENCH_SPACE.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            match = MARKER.search(text)
            if match is None or match[1] not in self.base:
                raise InvalidRequest(
                    f"the replay embedder found no known [d<id> c<copy>] marker in {text[:80]!r}; "
                    "it only embeds the generated scale corpus (delete benchmarks/.cache/scale and rerun)"
                )
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            noise = np.random.default_rng(seed).normal(0.0, self.sigma, BENCH_SPACE.dimension)
            vector = self.base[match[1]] + noise.astype(np.float32)
            out[row] = vector / np.linalg.norm(vector)
        self.replayed += len(texts)
        return out


def real_embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(variant="auto", models_dir=MODELS, intra_op_threads=2)


# -- corpus and base vectors -----------------------------------------------------------------------


def cut_docs(corpus: list[dict[str, Any]], tokenizer: Any) -> list[tuple[str, str, list[str]]]:
    """(doc id, title, sentences) per abstract, the body cut so heading + body <= BODY_TOKENS tokens."""
    out = []
    for doc in corpus:
        title = " ".join(str(doc.get("title") or "").split())
        heading = f"## [d{doc['_id']} c000] {title}"
        body = " ".join(str(doc.get("text") or "").split())
        budget = BODY_TOKENS - len(tokenizer.encode(heading, add_special_tokens=False).ids)
        encoding = tokenizer.encode(body, add_special_tokens=False)
        if len(encoding.ids) > budget > 0:
            body = body[: encoding.offsets[budget][0]].rstrip()
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", body) if s]
        if sentences:
            out.append((str(doc["_id"]), title, sentences))
    return out


def perturb(sentences: list[str], copy: int, rng: random.Random) -> str:
    if copy == 0:
        return " ".join(sentences)
    order = sentences[:]
    rng.shuffle(order)
    words = " ".join(order).split()
    kept = [w for w in words if rng.random() >= 0.10] or words[:1]
    return " ".join(kept)


def write_corpus(docs: list[tuple[str, str, list[str]]], chunks: int) -> Path:
    """``chunks`` sections (one chunk each) in Markdown files; kept between runs."""
    folder = WORK / f"corpus-{chunks}"
    marker = folder / ".complete"
    if marker.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    rng = random.Random(chunks)
    started = time.perf_counter()
    sections: list[str] = []
    written = 0
    for index in range(chunks):
        copy, position = divmod(index, len(docs))
        doc_id, title, sentences = docs[position]
        sections.append(f"## [d{doc_id} c{copy:03d}] {title}\n\n{perturb(sentences, copy, rng)}\n")
        if len(sections) == SECTIONS_PER_FILE or index == chunks - 1:
            number = written
            path = folder / f"part-{number % PARTS:02d}" / f"s{number:06d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# S{number:06d}\n\n" + "\n".join(sections), encoding="utf-8")
            written += 1
            sections = []
    marker.write_text(json.dumps({"sections": chunks, "files": written}))
    log(
        f"corpus of {chunks:,} sections in {written:,} files written in {time.perf_counter() - started:.0f} s"
    )
    return folder


async def base_vectors(docs: list[tuple[str, str, list[str]]], real: OnnxMiniLMEmbedder) -> dict[str, Any]:
    """The real model's vector of every abstract (as the first copy's chunk is embedded); cached."""
    path = WORK / "base-vectors.npz"
    ids = [d[0] for d in docs]
    if path.exists():
        stored = np.load(path)
        if [str(x) for x in stored["ids"]] == ids:
            return {"ids": ids, "vectors": stored["vectors"], "seconds": None}
    texts = [f"S000000 › [d{i} c000] {t}\n## [d{i} c000] {t}\n\n{' '.join(s)}" for i, t, s in docs]
    started = time.perf_counter()
    vectors = await real.embed(texts, kind="document")
    seconds = time.perf_counter() - started
    np.savez(path, ids=np.array(ids), vectors=vectors)
    log(f"embedded {len(texts):,} source abstracts with the real model in {seconds:.0f} s")
    return {"ids": ids, "vectors": vectors, "seconds": round(seconds, 1)}


def load_base() -> dict[str, npt.NDArray[np.float32]]:
    stored = np.load(WORK / "base-vectors.npz")
    return {str(i): v.astype(np.float32) for i, v in zip(stored["ids"], stored["vectors"], strict=True)}


# -- indexing (child process) ----------------------------------------------------------------------


def settings_for(args: argparse.Namespace) -> IndexSettings:
    # The ANN index is built by the explicit maintain() after index_paths (timed on its own): same call.
    return IndexSettings(collection=COLLECTION, write_batch_chunks=args.write_batch, ann_min_rows=10**9)


async def index_phase(args: argparse.Namespace) -> None:
    """Index corpus-N into a fresh table and write the figures to index-N.json (run as a child)."""
    folder = WORK / f"corpus-{args.chunks}"
    target = WORK / f"index-{args.chunks}"
    shutil.rmtree(target, ignore_errors=True)
    replay = ReplayEmbedder(real_embedder(), load_base(), REPLAY_SIGMA)
    chain = EmbeddingChain([replay])
    timeline: list[dict[str, float]] = []
    started = time.perf_counter()
    step = max(args.chunks // 20, 1)

    def progress(report: Any) -> None:
        if report.chunks >= (len(timeline) + 1) * step:
            timeline.append(
                {
                    "chunks": report.chunks,
                    "elapsed_s": round(time.perf_counter() - started, 1),
                    "rss_mb": round(rss_mb()),
                }
            )
            log(
                f"  {report.chunks:>9,} chunks  {timeline[-1]['elapsed_s']:>7.1f} s  RSS {timeline[-1]['rss_mb']:,} MB"
            )

    async with chain, DocumentStore(target) as store:
        index = DocumentIndex(store, chain, settings=settings_for(args), collection=COLLECTION)
        async with index:
            started = time.perf_counter()
            cpu = time.process_time()
            report = await index.index_paths([folder], progress=progress)
            index_s, index_cpu = time.perf_counter() - started, time.process_time() - cpu
            rss_after_index = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            collection = index.collection
            assert collection is not None
            log(f"indexed {report.chunks:,} chunks in {index_s:.0f} s; building IVF_FLAT …")
            started = time.perf_counter()
            done = await collection.maintain(ann_min_rows=1, ann_kind="ivf_flat")
            ann_s = time.perf_counter() - started
            rows = await collection.count()
            indexes = sorted(f"{i.name}:{i.index_type}" for i in await collection.table.list_indices())
            version = await collection.table.version()
    if report.failures or report.pending_left:
        raise SystemExit(f"indexing failed: {report.failures} (pending {report.pending_left})")
    result = {
        "chunks": report.chunks,
        "rows": rows,
        "files": report.files_indexed,
        "replayed_vectors": replay.replayed,
        "index_paths_s": round(index_s, 1),
        "index_paths_cpu_s": round(index_cpu, 1),
        "chunks_per_s": round(report.chunks / index_s, 1),
        "maintenance_in_index_paths": report.maintenance,
        "ann_build_s": round(ann_s, 1),
        "ann_build": done,
        "ann_kind": "ivf_flat",
        "ann_partitions": int(rows**0.5),
        "total_s": round(index_s + ann_s, 1),
        "peak_rss_mb_index_paths": round(rss_after_index),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "disk_mb": round(folder_bytes(target) / 2**20, 1),
        "table_version": version,
        "indexes": indexes,
        "write_batch_chunks": args.write_batch,
        "timeline": timeline,
        "load1_end": load1(),
    }
    (WORK / f"index-{args.chunks}.json").write_text(json.dumps(result, indent=2))
    log(
        f"done: {report.chunks:,} chunks, index_paths {index_s:.0f} s, IVF_FLAT {ann_s:.0f} s, "
        f"peak RSS {result['peak_rss_mb']:,} MB, disk {result['disk_mb']:,} MB"
    )


def run_index_child(args: argparse.Namespace, chunks: int) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        str(args.data_dir),
        "--phase",
        "index",
        "--chunks",
        str(chunks),
        "--write-batch",
        str(args.write_batch),
    ]
    log(f"indexing {chunks:,} chunks in a child process …")
    completed = subprocess.run(command, check=False)
    if completed.returncode != 0:
        raise SystemExit(
            f"the indexing child for {chunks:,} chunks failed with exit code {completed.returncode}"
        )
    return dict(json.loads((WORK / f"index-{chunks}.json").read_text()))


# -- queries ---------------------------------------------------------------------------------------


def stats(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 0.5), 2),
        "p95_ms": round(percentile(values, 0.95), 2),
        "n": len(values),
    }


async def latencies(
    provider: Any, queries: list[str], mode: SearchMode, filters: dict[str, str]
) -> dict[str, Any]:
    times: list[float] = []
    cpu: list[float] = []
    parts: dict[str, list[float]] = {}
    for text in queries:
        request = RetrievalRequest.create(text, limit=10, mode=mode, filters=filters)
        started, cpu_started = time.perf_counter(), time.process_time()
        response = await provider.retrieve(request, CONTEXT)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
        if response.degraded:
            raise SystemExit(f"degraded answer: {response.degraded}")
        for key, value in response.details.items():
            if key.endswith("_ms") and isinstance(value, int | float):
                parts.setdefault(key, []).append(float(value))
    out: dict[str, Any] = stats(times)
    # CPU time of this process (all its threads: ONNX, LanceDB) per query: less sensitive to neighbours
    out["cpu_p50_ms"] = round(percentile(cpu, 0.5), 2)
    out["cpu_p95_ms"] = round(percentile(cpu, 0.95), 2)
    # the provider's own timings per stage (embed_ms, lexical_ms, semantic_ms, …), medians
    out["stages_p50_ms"] = {key: round(percentile(values, 0.5), 2) for key, values in sorted(parts.items())}
    return out


async def recall(
    collection: Collection,
    real: OnnxMiniLMEmbedder,
    queries: list[str],
    where: str,
    nprobes: Sequence[int],
) -> dict[str, Any]:
    """Recall@10 of the ANN leg vs exact search for each ``nprobes``; all timed with the query embedding.

    IVF_FLAT stores full vectors, so the only loss is partitions not probed (the store applies a
    refine factor only to quantised indexes).
    """
    exact_ms: list[float] = []
    truths: list[set[str]] = []
    vectors = []
    for text in queries:
        started = time.perf_counter()
        vector = (await real.embed([text], kind="query"))[0]
        embed_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        exact = await collection.search_vector(vector, where, 10, exact=True)
        exact_ms.append(embed_ms + (time.perf_counter() - started) * 1000)
        truths.append({h.id for h in exact})
        vectors.append((vector, embed_ms))
    out: dict[str, Any] = {"exact": stats(exact_ms), "queries": len(queries), "by_nprobes": {}}
    for probes in nprobes:
        ann_ms: list[float] = []
        hits: list[float] = []
        for (vector, embed_ms), truth in zip(vectors, truths, strict=True):
            started = time.perf_counter()
            approx = await collection.search_vector(vector, where, 10, nprobes=probes)
            ann_ms.append(embed_ms + (time.perf_counter() - started) * 1000)
            hits.append(len(truth & {h.id for h in approx}) / max(1, len(truth)))
        out["by_nprobes"][str(probes)] = {
            "recall@10": round(float(np.mean(hits)), 4),
            "min_recall@10": round(float(np.min(hits)), 2),
            "ann": stats(ann_ms),
        }
    return out


async def query_phase(
    args: argparse.Namespace, chunks: int, queries: list[str], *, hnsw: bool = False
) -> dict[str, Any]:
    target = WORK / f"index-{chunks}"
    replay = ReplayEmbedder(real_embedder(), {}, REPLAY_SIGMA)
    chain = EmbeddingChain([replay])
    settings = settings_for(args)
    out: dict[str, Any] = {}
    async with chain, DocumentStore(target) as store:
        index = DocumentIndex(store, chain, settings=settings, collection=COLLECTION)
        async with index:
            collection = index.collection
            if collection is None:
                raise SystemExit(f"no table under {target}; run without --skip-index first")
            out["rows"] = await collection.count()
            out["onnx_variant"] = replay.real.variant
            provider = DocumentIndexProvider(index)
            prefix = (WORK / f"corpus-{chunks}" / "part-03").as_posix() + "/"
            filters = {**FILTERS, "path_prefix": {"path_prefix": prefix}}
            out["filter_rows"] = {
                name: await collection.count(build_where([""], f) if f else None)
                for name, f in filters.items()
            }
            for text in queries[:10]:  # warm-up: session, caches, index files
                await latencies(provider, [text], SearchMode.HYBRID, {})
            # Every mode without a filter and with the selective path filter; the non-selective kind
            # filter (every row matches: the filter's own cost) in hybrid mode only.
            plan = [(mode, name) for name in ("none", "path_prefix") for mode in SearchMode]
            plan.append((SearchMode.HYBRID, "kind"))
            if args.core:
                plan = [(mode, "none") for mode in SearchMode] + [(SearchMode.HYBRID, "path_prefix")]
            blocks: dict[str, Any] = {}
            for mode, name in plan:
                before = load1()
                result = await latencies(provider, queries, mode, filters[name])
                result["load1"] = [before, load1()]
                blocks[f"{mode.value}/{name}"] = result
                log(
                    f"  {chunks:>9,} {mode.value:<9} filter={name:<12} p50 {result['p50_ms']:>7.1f} ms  "
                    f"p95 {result['p95_ms']:>7.1f} ms  stages {result['stages_p50_ms']}  (load {result['load1']})"
                )
            out["latency"] = blocks
            sample = queries[: args.recall_queries]
            # What the provider probes: ann_nprobes, raised to ann_probe_share of the partitions.
            index_info = await collection.vector_index()
            partitions = index_info[1] if index_info is not None else 0
            effective = max(settings.ann_nprobes, math.ceil(settings.ann_probe_share * partitions))
            # simone's hybrid vs LanceDB's own hybrid (vector + its FTS on text + RRFReranker), same
            # table, same query-embedding call, k=10, the nprobes simone uses; interleaved query by
            # query, recall@10 of both against exact vector search (benchmarks/index_speed.py step 5).
            fts_s = await ensure_text_fts(collection)
            exact = settings.model_copy(
                update={"ann_nprobes": 10_000, "ann_probe_share": 0.0, "ann_refine_factor": 0}
            )
            async with DocumentIndex(store, chain, settings=exact, collection=COLLECTION) as exact_index:
                engine = await engine_comparison(index, exact_index, sample, effective)
            out["engine"] = {"text_fts_build_s": round(fts_s, 1), **engine}
            log(
                f"  {chunks:>9,} hybrid p95: simone {engine['simone_hybrid']['p95_ms']:.1f} ms, LanceDB's "
                f"own {engine['lancedb_hybrid']['p95_ms']:.1f} ms; recall@10 vs exact "
                f"{engine['recall@10_vs_exact']}; legs p95 "
                + ", ".join(f"{k} {v['p95_ms']:.1f}" for k, v in engine["legs"].items())
            )
            out["nprobes_default"] = effective
            sweep = sorted({settings.ann_nprobes, effective, *args.nprobes})
            out["recall"] = {
                name: await recall(collection, replay.real, sample, build_where([""], filters[name]), sweep)
                for name in ("none", "path_prefix")
            }
            for name, entry in out["recall"].items():
                for probes, figures in entry["by_nprobes"].items():
                    log(
                        f"  {chunks:>9,} recall@10 filter={name:<12} nprobes {probes:>4} "
                        f"{figures['recall@10']:.4f}  ANN p95 {figures['ann']['p95_ms']:.1f} ms vs exact p95 "
                        f"{entry['exact']['p95_ms']:.1f} ms"
                    )
            # The smallest nprobes of the sweep that reaches recall 0.95 with and without the filter;
            # the hybrid blocks again with it when it is not the default.
            reaching = [
                p
                for p in sweep
                if all(out["recall"][n]["by_nprobes"][str(p)]["recall@10"] >= 0.95 for n in out["recall"])
            ]
            out["nprobes_for_0.95"] = reaching[0] if reaching else None
            if reaching and reaching[0] != effective:
                tuned = settings.model_copy(update={"ann_nprobes": reaching[0], "ann_probe_share": 0.0})
                async with DocumentIndex(store, chain, settings=tuned, collection=COLLECTION) as tuned_index:
                    tuned_provider = DocumentIndexProvider(tuned_index)
                    for name in ("none", "path_prefix"):
                        before = load1()
                        result = await latencies(tuned_provider, queries, SearchMode.HYBRID, filters[name])
                        result["load1"] = [before, load1()]
                        result["nprobes"] = reaching[0]
                        blocks[f"hybrid/{name}/nprobes={reaching[0]}"] = result
                        log(
                            f"  {chunks:>9,} hybrid    filter={name:<12} nprobes {reaching[0]}: p50 "
                            f"{result['p50_ms']:>7.1f} ms  p95 {result['p95_ms']:>7.1f} ms"
                        )
            out["write_probe"] = await write_probe(collection)
            log(f"  {chunks:>9,} per-batch write costs: {out['write_probe']}")
            if hnsw:
                out["ivf_hnsw_sq"] = await hnsw_block(
                    collection, provider, replay.real, queries, sample, settings
                )
    return out


async def write_probe(collection: Collection, batch: int = 512) -> dict[str, float]:
    """What one more write batch costs at this size (index_paths pays it for every batch).

    Times the reuse lookup (``vectors_for`` of ``batch`` digests), the run's start-up read of the file
    states, and one ``replace_files`` upsert of a file's own rows (same content: the table keeps its
    rows). Medians of three, in ms; run after the latency blocks since the upsert adds a version.
    """
    sample = await collection.table.query().select(["digest", "path"]).limit(batch).to_arrow()
    digests = sample.column("digest").to_pylist()
    path = str(sample.column("path")[0].as_py())

    async def timed(action: Any) -> float:
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            await action()
            runs.append((time.perf_counter() - started) * 1000)
        return round(sorted(runs)[1], 1)

    rows = (await collection.rows(f"path = '{path}'")).cast(collection.schema)
    return {
        f"vectors_for_{batch}_ms": await timed(lambda: collection.vectors_for(digests)),
        "file_states_ms": await timed(lambda: collection.file_states("")),
        f"replace_files_{rows.num_rows}_rows_ms": await timed(
            lambda: collection.replace_files("", [path], rows)
        ),
    }


async def hnsw_block(
    collection: Collection,
    provider: Any,
    real: OnnxMiniLMEmbedder,
    queries: list[str],
    sample: list[str],
    settings: IndexSettings,
) -> dict[str, Any]:
    """Build IVF_HNSW_SQ in place of IVF_FLAT, measure it, then rebuild IVF_FLAT."""
    rows = await collection.count()
    log("building IVF_HNSW_SQ …")
    started = time.perf_counter()
    await collection.build_ann("ivf_hnsw_sq", rows)
    entry: dict[str, Any] = {"build_s": round(time.perf_counter() - started, 1)}
    entry["hybrid/none"] = await latencies(provider, queries, SearchMode.HYBRID, {})
    entry["semantic/none"] = await latencies(provider, queries, SearchMode.SEMANTIC, {})
    entry["recall"] = await recall(collection, real, sample, build_where([""], {}), [settings.ann_nprobes])
    entry["recall@10"] = entry["recall"]["by_nprobes"][str(settings.ann_nprobes)]["recall@10"]
    log(
        f"  IVF_HNSW_SQ build {entry['build_s']} s, hybrid p95 {entry['hybrid/none']['p95_ms']} ms, "
        f"recall@10 {entry['recall@10']}"
    )
    await collection.table.drop_index(VECTOR_INDEX)
    await collection.build_ann("ivf_flat", rows)
    return entry


# -- the report ------------------------------------------------------------------------------------


def row(
    metric: str,
    ours: float | None,
    peer_name: str,
    peer: float | None,
    target: str,
    met: bool | None,
    note: str,
    unit: str = "",
    better: str = "lower",
) -> dict[str, Any]:
    ratio = round(ours / peer, 3) if ours is not None and peer else None
    return {
        "metric": metric,
        "ours": ours,
        "peer_name": peer_name,
        "peer": peer,
        "ratio": ratio,
        "target": target,
        "met": met,
        "note": note,
        "unit": unit,
        "better": better,
    }


def label(chunks: int) -> str:
    return f"{chunks // 1_000_000}M" if chunks % 1_000_000 == 0 else f"{chunks // 1000}k"


def summarise(payload: dict[str, Any], big: int, small: int | None) -> list[dict[str, Any]]:
    sizes = payload["sizes"]
    top = sizes[str(big)]
    peer = sizes.get(str(small)) if small else None
    name = label(big)
    peer_label = f"same at {label(small)}" if small else ""
    replay = "document vectors replayed (bench space), query embedded by the real int8 model"
    rows = []

    def peer_of(path: Sequence[str]) -> float | None:
        if peer is None:
            return None
        value: Any = peer
        for key in path:
            value = value[key]
        return float(value)

    hybrid = top["latency"]["hybrid/none"]["p95_ms"]
    rows.append(
        row(
            f"hybrid p95 at {name} chunks (ms)",
            hybrid,
            peer_label,
            peer_of(["latency", "hybrid/none", "p95_ms"]),
            "<= 100 ms",
            hybrid <= 100,
            f"query embedding included; {replay}",
            "ms",
        )
    )
    for mode in ("lexical", "semantic"):
        value = top["latency"][f"{mode}/none"]["p95_ms"]
        rows.append(
            row(
                f"{mode} p95 at {name} chunks (ms)",
                value,
                peer_label,
                peer_of(["latency", f"{mode}/none", "p95_ms"]),
                "",
                None,
                "query embedding included",
                "ms",
            )
        )
    for filt in ("path_prefix", "kind"):
        if f"hybrid/{filt}" not in top["latency"]:
            continue
        value = top["latency"][f"hybrid/{filt}"]["p95_ms"]
        rows.append(
            row(
                f"hybrid p95 at {name} chunks, filter {filt} (ms)",
                value,
                "no filter",
                hybrid,
                "",
                None,
                f"{top['filter_rows'][filt]:,} of {top['rows']:,} rows match",
                "ms",
            )
        )
    default = str(top.get("nprobes_default", payload["ann"]["nprobes"]))
    rec = top["recall"]["none"]
    ann = rec["by_nprobes"][default]
    rec_f = top["recall"]["path_prefix"]["by_nprobes"][default]
    ann_note = f"IVF_FLAT, {top['indexing']['ann_partitions']} partitions, {rec['queries']} queries"
    for label_, figures, peer_name, peer_value in (
        ("", ann, peer_label, peer_of(["recall", "none", "by_nprobes", default, "recall@10"])),
        (", filter path_prefix", rec_f, "no filter", ann["recall@10"]),
    ):
        rows.append(
            row(
                f"recall@10 ANN vs exact at {name}{label_}, nprobes {default} (default)",
                figures["recall@10"],
                peer_name,
                peer_value,
                ">= 0.95",
                figures["recall@10"] >= 0.95,
                ann_note,
                better="higher",
            )
        )
    tuned = top.get("nprobes_for_0.95")
    if tuned is not None and str(tuned) != default:
        for filt in ("none", "path_prefix"):
            figures = top["recall"][filt]["by_nprobes"][str(tuned)]
            block = top["latency"][f"hybrid/{filt}/nprobes={tuned}"]
            where = "" if filt == "none" else ", filter path_prefix"
            rows.append(
                row(
                    f"recall@10 ANN vs exact at {name}{where}, nprobes {tuned}",
                    figures["recall@10"],
                    f"nprobes {default}",
                    top["recall"][filt]["by_nprobes"][default]["recall@10"],
                    ">= 0.95",
                    figures["recall@10"] >= 0.95,
                    f"{ann_note}; the smallest nprobes of the sweep reaching 0.95",
                    better="higher",
                )
            )
            rows.append(
                row(
                    f"hybrid p95 at {name} chunks{where}, nprobes {tuned} (ms)",
                    block["p95_ms"],
                    f"nprobes {default}",
                    top["latency"][f"hybrid/{filt}"]["p95_ms"],
                    "<= 100 ms",
                    block["p95_ms"] <= 100,
                    "query embedding included",
                    "ms",
                )
            )
    rows.append(
        row(
            f"semantic leg p95 at {name}: ANN vs exact search (ms)",
            ann["ann"]["p95_ms"],
            "exact search",
            rec["exact"]["p95_ms"],
            "",
            None,
            f"search_vector alone, nprobes {default}, query embedding included",
            "ms",
        )
    )
    idx = top["indexing"]
    rss_gb = round(idx["peak_rss_mb"] / 1024, 2)
    rows.append(
        row(
            f"indexing peak RSS at {name} (GB)",
            rss_gb,
            peer_label,
            round(peer["indexing"]["peak_rss_mb"] / 1024, 2) if peer else None,
            "<= 6 GB",
            rss_gb <= 6,
            "child process ru_maxrss: index_paths + IVF_FLAT build; embeddings replayed",
            "GB",
        )
    )
    rows.append(
        row(
            f"index_paths at {name} (chunks/s)",
            idx["chunks_per_s"],
            peer_label,
            peer["indexing"]["chunks_per_s"] if peer else None,
            "",
            None,
            f"{idx['index_paths_s']} s wall; write batch {idx['write_batch_chunks']}; embeddings replayed",
            "chunks/s",
            "higher",
        )
    )
    rows.append(
        row(
            f"IVF_FLAT build at {name} (s)",
            idx["ann_build_s"],
            peer_label,
            peer["indexing"]["ann_build_s"] if peer else None,
            "",
            None,
            f"{idx['ann_partitions']} partitions",
            "s",
        )
    )
    rows.append(
        row(
            f"index on disk at {name} (MB)",
            idx["disk_mb"],
            peer_label,
            peer["indexing"]["disk_mb"] if peer else None,
            "",
            None,
            "table folder incl. FTS and vector index",
            "MB",
        )
    )
    real = payload["real_model"]
    rows.append(
        row(
            f"real-model embedding of {name} chunks, extrapolated (h)",
            real["projected_hours"],
            "",
            None,
            "",
            None,
            f"EXTRAPOLATED from {real['sample']:,} chunks at {real['texts_per_s']} texts/s ({real['variant']})",
            "h",
        )
    )
    if "ivf_hnsw_sq" in top:
        entry = top["ivf_hnsw_sq"]
        rows.append(
            row(
                f"IVF_HNSW_SQ at {name}: hybrid p95 (ms)",
                entry["hybrid/none"]["p95_ms"],
                "IVF_FLAT",
                hybrid,
                "<= 100 ms",
                entry["hybrid/none"]["p95_ms"] <= 100,
                f"build {entry['build_s']} s (IVF_FLAT {idx['ann_build_s']} s); recall@10 "
                f"{entry['recall@10']}",
                "ms",
            )
        )
    return rows


def print_table(payload: dict[str, Any]) -> None:
    print(f"\n{'metric':<58} {'ours':>10} {'peer':>10} {'ratio':>7}  target      met  peer")
    for item in payload["summary"]:
        ours = "-" if item["ours"] is None else f"{item['ours']:,.4g}"
        peer = "-" if item["peer"] is None else f"{item['peer']:,.4g}"
        ratio = "-" if item["ratio"] is None else f"{item['ratio']:.2f}x"
        met = {True: "yes", False: "NO", None: ""}[item["met"]]
        print(
            f"{item['metric']:<58} {ours:>10} {peer:>10} {ratio:>7}  {item['target']:<11} {met:<4} {item['peer_name']}"
        )
    print("\nper size (wall p50 / p95 ms, query embedding included; CPU ms of this process):")
    for size, entry in payload["sizes"].items():
        for key, value in entry["latency"].items():
            print(
                f"  {int(size):>9,} {key:<34} {value['p50_ms']:>8.1f} {value['p95_ms']:>8.1f}   "
                f"CPU p50 {value['cpu_p50_ms']:>7.1f}   load {value['load1']}"
            )


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir)
    WORK.mkdir(parents=True, exist_ok=True)
    corpus = load_jsonl(data_dir / "scifact" / "corpus.jsonl")
    queries = [q["text"] for q in load_jsonl(data_dir / "scifact" / "queries-train.jsonl")][: args.queries]
    sizes = [s for s in (args.peer_chunks, args.chunks) if s]
    payload: dict[str, Any] = {
        "python": platform.python_version(),
        "lancedb": lancedb.__version__,
        "git_commit": (await anyio.run_process(["git", "rev-parse", "HEAD"], check=False, cwd=HERE))
        .stdout.decode()
        .strip(),
        "method": {
            "corpus": f"SciFact abstracts as Markdown sections, {SECTIONS_PER_FILE} a file, {PARTS} folders; "
            "copies with shuffled sentences and 10% word dropout; one section = one chunk",
            "embeddings": f"replayed in space {BENCH_SPACE.key}: real all-MiniLM-L6-v2 vector of the source "
            f"abstract + N(0, {REPLAY_SIGMA}) per dimension, renormalised; queries embedded by the real "
            "bundled model (gated int8 variant); embedding cache off",
            "indexing": "child process: DocumentIndex.index_paths (FTS built inside), then "
            "Collection.maintain builds IVF_FLAT; peak RSS = child's ru_maxrss",
            "latency": "provider.retrieve, limit 10, query embedding included; p50/p95 over the queries",
            "recall": "ANN search_vector (provider's nprobes/refine) vs search_vector(exact=True), top 10",
        },
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "queries": len(queries),
        "cpus": os.cpu_count(),
        "load1_start": load1(),
    }
    settings = settings_for(args)
    payload["ann"] = {
        "kind": "ivf_flat",
        "partitions": "sqrt(rows)",
        "nprobes": settings.ann_nprobes,
        "probe_share": settings.ann_probe_share,
        "refine_factor": settings.ann_refine_factor,
    }
    real = real_embedder()
    async with real:
        docs = cut_docs(corpus, real.tokenizer)
        base = await base_vectors(docs, real)
        payload["base_vectors"] = {"docs": len(docs), "embed_s": base["seconds"], "variant": real.variant}
        for size in sizes:
            write_corpus(docs, size)
    payload["sizes"] = {}
    for size in sizes:
        entry: dict[str, Any] = {}
        saved = WORK / f"index-{size}.json"
        if args.skip_index and saved.exists() and (WORK / f"index-{size}").is_dir():
            entry["indexing"] = json.loads(saved.read_text())
            entry["indexing"]["reused"] = True
        else:
            entry["indexing"] = run_index_child(args, size)
        log(f"queries at {size:,} chunks …")
        entry.update(await query_phase(args, size, queries, hnsw=args.hnsw and size == args.chunks))
        payload["sizes"][str(size)] = entry
    # The real model's throughput, same run, on real chunk texts of the largest table.
    async with real, DocumentStore(WORK / f"index-{args.chunks}") as store:
        collection = await store.open_collection(COLLECTION)
        assert collection is not None
        rows = await collection.table.query().select(["context", "text"]).limit(args.sample).to_arrow()
        texts = [
            f"{c}\n{t}" if c else t
            for c, t in zip(rows["context"].to_pylist(), rows["text"].to_pylist(), strict=True)
        ]
        await real.embed(texts[:32])
        started = time.perf_counter()
        await real.embed(texts)
        seconds = time.perf_counter() - started
        rate = len(texts) / seconds
        payload["real_model"] = {
            "variant": real.variant,
            "sample": len(texts),
            "seconds": round(seconds, 1),
            "texts_per_s": round(rate, 1),
            "projected_hours": round(args.chunks / rate / 3600, 2),
            "projected_for_chunks": args.chunks,
            "note": "EXTRAPOLATED: the scale tables hold replayed vectors; this is what embedding them for real would take",
        }
        log(
            f"real model: {rate:.0f} texts/s → {args.chunks:,} chunks ≈ {args.chunks / rate / 3600:.1f} h (extrapolated)"
        )
    payload["load1_end"] = load1()
    (WORK / "payload.json").write_text(json.dumps(payload, indent=2))
    finish(payload, args)


def finish(payload: dict[str, Any], args: argparse.Namespace) -> None:
    """Summarise, print and save (also ``--report-only`` from the last run's raw figures)."""
    payload["summary"] = summarise(payload, args.chunks, args.peer_chunks or None)
    print_table(payload)
    print(f"\nwrote {save('scale', payload)}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--chunks", type=int, default=1_000_000, help="chunks of the large table")
    parser.add_argument("--peer-chunks", type=int, default=None, help="the side-by-side size (N/10; 0: none)")
    parser.add_argument("--queries", type=int, default=200, help="queries per latency block")
    parser.add_argument(
        "--recall-queries", type=int, default=50, help="queries for recall (exact search is slow)"
    )
    parser.add_argument("--sample", type=int, default=200, help="chunks for the real model's throughput")
    parser.add_argument("--write-batch", type=int, default=IndexSettings().write_batch_chunks)
    parser.add_argument(
        "--nprobes",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[20, 40, 80],
        help="nprobes values of the recall sweep (the setting's own is always included)",
    )
    parser.add_argument("--hnsw", action="store_true", help="also measure IVF_HNSW_SQ on the large table")
    parser.add_argument(
        "--skip-index",
        action="store_true",
        help="reuse the tables already built (sizes not built yet are built)",
    )
    parser.add_argument(
        "--core",
        action="store_true",
        help="fewer latency blocks: every mode without a filter, hybrid with path_prefix",
    )
    parser.add_argument("--report-only", action="store_true", help="re-summarise the last run's figures")
    parser.add_argument("--quick", action="store_true", help="20k chunks, no peer size, 50 queries")
    parser.add_argument("--phase", choices=("all", "index", "corpus"), default="all", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.peer_chunks, args.queries, args.recall_queries = 20_000, 0, 50, 30
    if args.peer_chunks is None:
        args.peer_chunks = args.chunks // 10 if args.chunks >= 100_000 else 0
    if not Path(args.data_dir).is_dir():
        raise SystemExit(f"{args.data_dir} does not exist; pass DATA_DIR (the shared data folder)")
    return args


async def corpus_phase(args: argparse.Namespace) -> None:
    """Only write the corpus of ``--chunks`` sections (and the base vectors)."""
    WORK.mkdir(parents=True, exist_ok=True)
    corpus = load_jsonl(Path(args.data_dir) / "scifact" / "corpus.jsonl")
    real = real_embedder()
    docs = cut_docs(corpus, real.tokenizer)
    if not (WORK / "base-vectors.npz").exists():
        async with real:
            await base_vectors(docs, real)
    write_corpus(docs, args.chunks)


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.report_only:
        finish(json.loads((WORK / "payload.json").read_text()), arguments)
    else:
        phases = {"index": index_phase, "corpus": corpus_phase, "all": main}
        anyio.run(phases[arguments.phase], arguments)
