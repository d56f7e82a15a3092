"""Document-index retrieval quality: lexical, semantic and hybrid side by side, and LanceDB's own hybrid.

Usage: python benchmarks/index_quality.py [DATA_DIR] [--xquad-queries N] [--langs en,de,...]
                                          [--no-scifact] [--no-xquad]

DATA_DIR defaults to ../shared/data.

* SciFact (train split, 809 queries, 5,183 abstracts written as Markdown files and indexed by
  ``DocumentIndex`` with the bundled all-MiniLM-L6-v2): nDCG@10 of our lexical leg (BM25 inside
  LanceDB over the analysed-terms column), our semantic leg, our hybrid (RRF inside the provider),
  and the peer: LanceDB's default hybrid — its built-in FTS (default tokenizer: English stemming,
  lower case, stop words) over the same chunk text, the *same vectors*, fused by its RRFReranker.
  LanceDB's FTS alone is listed too. Rankings are per document (a document's best chunk counts).
  Target (issue 4): our hybrid beats both of our single legs and LanceDB's default hybrid.
* XQuAD-R: questions in each language against the *English* corpus (240 paragraphs): nDCG@10 of the
  lexical and semantic legs, to show where the English-only bundled model stops.

The index lives in benchmarks/.cache/index-quality (with the persistent embedding cache), so a second
run embeds nothing. Writes benchmarks/results/index_quality.json.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import lancedb
import numpy as np
from _index_common import (
    CACHE,
    default_data_dir,
    load_jsonl,
    load_qrels,
    ndcg_at,
    save,
    unique_docs,
    write_corpus,
)
from lancedb.index import FTS
from lancedb.rerankers import RRFReranker
from simone.providers.documents import DocumentIndex, DocumentIndexProvider
from simone.runtime import (
    EmbeddingSettings,
    IndexSettings,
    RetrievalRequest,
    SearchMode,
    Settings,
    TrustedContext,
)
from simone.runtime.text import Analyzer

XQUAD_LANGS = ("ar", "de", "el", "en", "es", "hi", "ru", "th", "tr", "vi", "zh")
DEPTH = 50
"""Chunks asked for per query (then reduced to distinct documents for nDCG@10)."""
CONTEXT = TrustedContext(actor="benchmark")


def settings() -> Settings:
    return Settings(
        data_dir=CACHE / "index-quality",
        embeddings=EmbeddingSettings(chain=["onnx"]),
        index=IndexSettings(leg_candidates=DEPTH * 2),
    )


def collection_name(base: str) -> str:
    """``base`` plus the analysis signature: terms of another analysis version live in another table.

    (The index re-chunks a file when the chunker changes, not when the analysis does; a table per
    signature keeps the comparison honest, and the embedding cache means nothing is embedded twice.)
    """
    return f"{base}_{Analyzer.from_settings(settings().lexical).signature}"


async def run_modes(
    index: DocumentIndex,
    queries: list[tuple[str, str]],
    modes: list[SearchMode],
    skipped: dict[str, str] | None = None,
) -> dict[str, dict[str, list[str]]]:
    """Each mode's ranking of documents per query.

    A degraded answer stops the benchmark, except a semantic leg the provider skips because the model
    does not cover the question's script (when ``skipped`` is given): that query has no semantic
    ranking, and ``skipped`` keeps the provider's reason.
    """
    provider = DocumentIndexProvider(index)
    runs: dict[str, dict[str, list[str]]] = {mode.value: {} for mode in modes}
    for query_id, text in queries:
        for mode in modes:
            request = RetrievalRequest.create(text, limit=DEPTH, mode=mode)
            response = await provider.retrieve(request, CONTEXT)
            legs_skipped = response.details.get("skipped_legs") or {}
            if response.degraded and skipped is not None and mode is SearchMode.SEMANTIC and legs_skipped:
                skipped.setdefault(mode.value, "; ".join(sorted(set(legs_skipped.values()))))
                continue
            if response.degraded:
                raise SystemExit(f"degraded answer ({response.degraded}); the benchmark needs both legs")
            runs[mode.value][query_id] = unique_docs(e.metadata["path"] for e in response.evidence)
    return runs


def mean_ndcg(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]], query_ids: list[str]) -> float:
    return float(np.mean([ndcg_at(runs.get(q, []), qrels[q]) for q in query_ids]))


async def lancedb_peer(
    index: DocumentIndex, queries: list[tuple[str, str]]
) -> dict[str, dict[str, list[str]]]:
    """LanceDB's default hybrid over the same chunks and vectors, in a table of its own."""
    collection = index.collection
    assert collection is not None
    rows = await collection.rows(columns=["id", "path", "title", "text", "vector"])
    titles = rows["title"].to_pylist()
    texts = rows["text"].to_pylist()
    combined = [
        t if x.startswith("# ") else f"{title}\n{x}" for title, x, t in zip(titles, texts, texts, strict=True)
    ]
    import pyarrow as pa

    table_data = pa.table(
        {"id": rows["id"], "path": rows["path"], "text": pa.array(combined), "vector": rows["vector"]}
    )
    db = await lancedb.connect_async(str(CACHE / "index-quality" / "peer"))
    table = await db.create_table("scifact_peer", data=table_data, mode="overwrite")
    await table.create_index("text", config=FTS())
    runs: dict[str, dict[str, list[str]]] = {"lancedb-fts": {}, "lancedb-hybrid": {}}
    for query_id, text in queries:
        vector = (await index.chain.embed([text], space=collection.space, kind="query"))[0]
        fts = (
            await table.query()
            .nearest_to_text(text, columns="text")
            .select(["path", "_score"])
            .limit(DEPTH)
            .to_arrow()
        )
        runs["lancedb-fts"][query_id] = unique_docs(fts["path"].to_pylist())
        hybrid = await (
            table.query()
            .nearest_to_text(text, columns="text")
            .nearest_to(vector)
            .column("vector")
            .distance_type("cosine")
            .rerank(RRFReranker())
            .select(["path"])
            .limit(DEPTH)
            .to_arrow()
        )
        runs["lancedb-hybrid"][query_id] = unique_docs(hybrid["path"].to_pylist())
    return runs


async def scifact(data_dir: Path, max_docs: int | None) -> dict[str, Any]:
    folder = data_dir / "scifact"
    corpus = load_jsonl(folder / "corpus.jsonl")
    qrels = load_qrels(folder / "qrels" / "train.tsv")
    queries = [(q["_id"], q["text"]) for q in load_jsonl(folder / "queries-train.jsonl") if q["_id"] in qrels]
    if max_docs and max_docs < len(corpus):
        # Every judged document, then the others in id order up to max_docs (a smaller haystack,
        # the same for every system; the default is the whole corpus).
        judged = {doc for rel in qrels.values() for doc in rel}
        ordered = sorted(corpus, key=lambda d: (d["_id"] not in judged, d["_id"]))
        corpus = sorted(ordered[:max_docs], key=lambda d: d["_id"])
        docs = write_corpus(corpus, CACHE / f"scifact-docs-judged+{max_docs}")
    else:
        docs = write_corpus(corpus, CACHE / "scifact-docs")
    collection = collection_name("scifact" if not max_docs else f"scifact_{max_docs}")
    async with DocumentIndex.open(settings(), collection=collection) as index:
        started = time.perf_counter()

        def progress(report: Any) -> None:
            if report.files_done % 500 == 0 and report.files_done:
                print(
                    f"  scifact: {report.files_done}/{report.files_total} files, {report.embedded} embedded",
                    file=sys.stderr,
                )

        report = await index.index_paths([docs], progress=progress)
        print(
            f"  scifact indexed in {time.perf_counter() - started:.1f} s: {report.files_indexed} new files, "
            f"{report.embedded} embedded, {report.cached} from cache",
            file=sys.stderr,
        )
        info = await index.info()
        assert info is not None
        started = time.perf_counter()
        ours = await run_modes(index, queries, list(SearchMode))
        ours_s = time.perf_counter() - started
        started = time.perf_counter()
        peer = await lancedb_peer(index, queries)
        peer_s = time.perf_counter() - started
    query_ids = [q for q, _ in queries]
    scores = {name: mean_ndcg(run, qrels, query_ids) for name, run in {**ours, **peer}.items()}
    return {
        "dataset": "scifact-train"
        if not max_docs
        else f"scifact-train (every judged doc + others: {len(corpus)} docs)",
        "docs": len(corpus),
        "chunks": info.rows,
        "analysis": Analyzer.from_settings(settings().lexical).signature,
        "queries": len(queries),
        "ndcg@10": {k: round(v, 4) for k, v in scores.items()},
        "eval_seconds": {"ours_3_modes": round(ours_s, 1), "lancedb_2_modes": round(peer_s, 1)},
        "targets": {
            "hybrid_beats_lexical": scores["hybrid"] > scores["lexical"],
            "hybrid_beats_semantic": scores["hybrid"] > scores["semantic"],
            "hybrid_beats_lancedb_hybrid": scores["hybrid"] > scores["lancedb-hybrid"],
        },
    }


async def xquad(data_dir: Path, langs: list[str], per_lang: int) -> list[dict[str, Any]]:
    root = data_dir / "xquad-r" / "beir-paragraph"
    corpus = load_jsonl(root / "en" / "corpus.jsonl")
    docs = write_corpus(corpus, CACHE / "xquad-en-docs")
    out = []
    async with DocumentIndex.open(settings(), collection=collection_name("xquad_en")) as index:
        await index.index_paths([docs])
        for lang in langs:
            qrels = (
                load_qrels(root / lang / "qrels" / "test.tsv")
                if (root / lang / "qrels" / "test.tsv").exists()
                else load_qrels(next((root / lang / "qrels").glob("*.tsv")))
            )
            queries = sorted(
                (
                    (q["_id"], q["text"])
                    for q in load_jsonl(root / lang / "queries.jsonl")
                    if q["_id"] in qrels
                ),
                key=lambda item: item[0],
            )[:per_lang]
            skipped: dict[str, str] = {}
            runs = await run_modes(index, queries, [SearchMode.LEXICAL, SearchMode.SEMANTIC], skipped)
            ids = [q for q, _ in queries]
            semantic_ids = [q for q in ids if q in runs["semantic"]]
            row: dict[str, Any] = {
                "query_language": lang,
                "corpus_language": "en",
                "queries": len(queries),
                "lexical": round(mean_ndcg(runs["lexical"], qrels, ids), 4),
                # nDCG over the questions the semantic leg answered; None when it skipped them all
                "semantic": round(mean_ndcg(runs["semantic"], qrels, semantic_ids), 4)
                if semantic_ids
                else None,
                "semantic_queries": len(semantic_ids),
            }
            if skipped:
                row["semantic_skipped"] = skipped["semantic"]
            print(
                f"  xquad-r {lang}→en: lexical {row['lexical']:.3f} semantic {row['semantic']}",
                file=sys.stderr,
            )
            out.append(row)
    return out


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--xquad-queries", type=int, default=300, help="questions per language (of 1,190)")
    parser.add_argument("--langs", default=",".join(XQUAD_LANGS))
    parser.add_argument(
        "--max-docs",
        type=int,
        default=None,
        help="index every judged SciFact doc plus others up to N (default: all)",
    )
    parser.add_argument("--no-scifact", action="store_true")
    parser.add_argument("--no-xquad", action="store_true")
    args = parser.parse_args()
    if not Path(args.data_dir).is_dir():
        raise SystemExit(f"{args.data_dir} does not exist; pass DATA_DIR (the shared data folder)")
    return args


def summary(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows ``{metric, ours, peer_name, peer, ratio, target, met, note}`` for the report script."""
    rows: list[dict[str, Any]] = []
    if "scifact" in payload:
        result = payload["scifact"]
        scores = result["ndcg@10"]
        where = f"SciFact train, {result['docs']:,} docs, {result['queries']} queries"

        def row(metric: str, ours: str, peer: str, target: str | None, note: str) -> None:
            rows.append(
                {
                    "metric": metric,
                    "ours": scores[ours],
                    "peer_name": peer,
                    "peer": scores[peer],
                    "ratio": round(scores[ours] / scores[peer], 4),
                    "target": target,
                    "met": None if target is None else scores[ours] > scores[peer],
                    "note": f"{where}; {note}",
                }
            )

        row(
            "scifact hybrid nDCG@10",
            "hybrid",
            "lancedb-hybrid",
            "> peer",
            "LanceDB's default hybrid: its FTS (English stemming) + the same vectors + RRFReranker",
        )
        row("scifact hybrid nDCG@10 vs our lexical leg", "hybrid", "lexical", "> peer", "RRF of both legs")
        row("scifact hybrid nDCG@10 vs our semantic leg", "hybrid", "semantic", "> peer", "RRF of both legs")
        row(
            "scifact lexical nDCG@10",
            "lexical",
            "lancedb-fts",
            None,
            "BM25 inside LanceDB over simone's analysed terms vs LanceDB's default FTS tokenizer",
        )
    for item in payload.get("xquad_r_cross_lingual", []):
        lexical, semantic = item["lexical"], item["semantic"]
        note = (
            f"{item['queries']} questions in {item['query_language']} against the English corpus: where "
            "the English-only model stops"
        )
        if "semantic_skipped" in item:
            note += f"; semantic leg skipped by the provider for {item['queries'] - item['semantic_queries']}"
            note += f" questions ({item['semantic_skipped']})"
        rows.append(
            {
                "metric": f"xquad-r {item['query_language']}→en lexical nDCG@10",
                "ours": lexical,
                "peer_name": "simone semantic (bundled English MiniLM)",
                "peer": semantic,
                "ratio": round(lexical / semantic, 4) if semantic else None,
                "target": None,
                "met": None,
                "note": note,
            }
        )
    return rows


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir)
    payload: dict[str, Any] = {"python": platform.python_version(), "lancedb": lancedb.__version__}
    if not args.no_scifact:
        result = await scifact(data_dir, args.max_docs)
        payload["scifact"] = result
        scores = result["ndcg@10"]
        print(
            f"\nSciFact train: {result['docs']:,} docs → {result['chunks']:,} chunks, {result['queries']} queries"
        )
        print(f"{'system':<34} {'nDCG@10':>8} {'vs LanceDB hybrid':>18}")
        peer = scores["lancedb-hybrid"]
        labels = {
            "lexical": "simone lexical (terms + FTS)",
            "semantic": "simone semantic (MiniLM)",
            "hybrid": "simone hybrid (RRF)",
            "lancedb-fts": "LanceDB FTS (default tokenizer)",
            "lancedb-hybrid": "LanceDB hybrid (FTS+vec, RRF)",
        }
        for key, label in labels.items():
            print(f"{label:<34} {scores[key]:>8.4f} {scores[key] / peer:>17.3f}x")
        print("targets:", ", ".join(f"{k}={v}" for k, v in result["targets"].items()))
    if not args.no_xquad:
        langs = [lang for lang in args.langs.split(",") if lang]
        rows = await xquad(data_dir, langs, args.xquad_queries)
        payload["xquad_r_cross_lingual"] = rows
        print(
            f"\nXQuAD-R, questions in X against the English corpus ({args.xquad_queries} per language), nDCG@10"
        )
        print(f"{'X':<4} {'lexical':>8} {'semantic':>9} {'semantic/lexical':>17}")
        for row in rows:
            if row["semantic"] is None:
                print(
                    f"{row['query_language']:<4} {row['lexical']:>8.4f}   skipped ({row['semantic_skipped']})"
                )
                continue
            ratio = row["semantic"] / row["lexical"] if row["lexical"] else float("inf")
            partial = (
                ""
                if row["semantic_queries"] == row["queries"]
                else f"  (semantic on {row['semantic_queries']})"
            )
            print(
                f"{row['query_language']:<4} {row['lexical']:>8.4f} {row['semantic']:>9.4f} {ratio:>16.2f}x{partial}"
            )
    payload["summary"] = summary(payload)
    path = save("index_quality", payload)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    anyio.run(main, parse_args())
