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
  **The relevance rule's cost** (issue 21), side by side in the same run: semantic mode (the rule
  applied) against the semantic leg without the rule (``min_similarity=-1``: every candidate of the
  exact search counts), target >= the leg - 0.01; hybrid nDCG@10 (target >= 0.7212) and recall@100
  against a plain RRF of the same two legs (the lexical leg and the rule-free semantic leg, 100
  candidates each), target >= plain RRF; the documents each mode returns per claim.
* Absent topics: SciFact train claims (the first 300, as benchmarks/multilingual.py takes them)
  against the XQuAD-R English corpus (Wikipedia paragraphs, MiniLM only): the share that return
  nothing (``no_results``) in semantic and hybrid mode — what the relevance rule exists for.
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
from simone.runtime.ranking import PlainRRF
from simone.runtime.text import Analyzer

XQUAD_LANGS = ("ar", "de", "el", "en", "es", "hi", "ru", "th", "tr", "vi", "zh")
DEPTH = 50
"""Chunks asked for per query (then reduced to distinct documents for nDCG@10)."""
RECALL_AT = 100
"""Results (chunks, then their documents) counted for recall, hybrid vs plain RRF alike; each leg
brings ``DEPTH * 2`` candidates."""
ABSENT_CLAIMS = 300
"""SciFact claims asked against the XQuAD-R English corpus (absent topics)."""
HYBRID_FLOOR = 0.7212
"""SciFact hybrid nDCG@10 before issue 21 (results/fusion_tuning.json): the relevance rule may not cost it."""
NO_RULE = "semantic-leg"
"""The semantic leg without the relevance rule (``min_similarity=-1``: every candidate counts)."""
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

    A degraded answer stops the benchmark. A semantic leg the provider skips because the model does
    not cover the question (when ``skipped`` is given) leaves that query without a semantic ranking,
    and ``skipped`` keeps the provider's reason.
    """
    provider = DocumentIndexProvider(index)
    runs: dict[str, dict[str, list[str]]] = {mode.value: {} for mode in modes}
    for query_id, text in queries:
        for mode in modes:
            request = RetrievalRequest.create(text, limit=DEPTH, mode=mode)
            response = await provider.retrieve(request, CONTEXT)
            legs_skipped = response.skipped_legs
            if skipped is not None and mode is SearchMode.SEMANTIC and legs_skipped:
                skipped.setdefault(mode.value, "; ".join(sorted(set(legs_skipped.values()))))
                continue
            if response.degraded:
                raise SystemExit(f"degraded answer ({response.degraded}); the benchmark needs both legs")
            runs[mode.value][query_id] = unique_docs(e.metadata["path"] for e in response.evidence)
    return runs


async def relevance_runs(
    index: DocumentIndex, queries: list[tuple[str, str]]
) -> dict[str, dict[str, list[str]]]:
    """Per query, the documents of: each mode, the semantic leg without the rule, plain RRF of the legs.

    Every request asks for :data:`RECALL_AT` chunks (each leg brings ``DEPTH * 2`` candidates either
    way, so the fused order and its top ten are the ones a ``DEPTH`` request gets). Plain RRF fuses
    the lexical mode's chunks (the lexical leg: nothing is dropped lexically) with the rule-free
    semantic leg's, equal weights, no relevance rule, cut at the same :data:`RECALL_AT` chunks.
    """
    provider = DocumentIndexProvider(index)
    names = ["lexical", "semantic", NO_RULE, "hybrid", "plain-rrf"]
    runs: dict[str, dict[str, list[str]]] = {name: {} for name in names}
    for query_id, text in queries:
        chunks: dict[str, list[str]] = {}
        paths: dict[str, str] = {}
        for name, mode, floor in (
            ("lexical", SearchMode.LEXICAL, None),
            ("semantic", SearchMode.SEMANTIC, None),
            (NO_RULE, SearchMode.SEMANTIC, -1.0),
            ("hybrid", SearchMode.HYBRID, None),
        ):
            request = RetrievalRequest.create(text, limit=RECALL_AT, mode=mode, min_similarity=floor)
            response = await provider.retrieve(request, CONTEXT)
            if response.degraded:
                raise SystemExit(f"degraded answer ({response.degraded}); the benchmark needs both legs")
            chunks[name] = [str(e.metadata["chunk_id"]) for e in response.evidence]
            paths.update((str(e.metadata["chunk_id"]), str(e.metadata["path"])) for e in response.evidence)
            runs[name][query_id] = unique_docs(str(e.metadata["path"]) for e in response.evidence)
        fused = PlainRRF().fuse({"lexical": chunks["lexical"], "semantic": chunks[NO_RULE]})
        # the same depth as the modes: the first RECALL_AT chunks, then their documents
        runs["plain-rrf"][query_id] = unique_docs(paths[chunk] for chunk, _ in fused[:RECALL_AT])
    return runs


def mean_recall(
    runs: dict[str, list[str]], qrels: dict[str, dict[str, int]], query_ids: list[str], k: int
) -> float:
    """Mean share of each query's relevant documents among its first ``k`` documents."""
    return float(np.mean([len(set(runs.get(q, [])[:k]) & set(qrels[q])) / len(qrels[q]) for q in query_ids]))


async def absent_topics(data_dir: Path) -> dict[str, Any]:
    """SciFact claims against the XQuAD-R English corpus: the share with no results, per mode."""
    corpus = load_jsonl(data_dir / "xquad-r" / "beir-paragraph" / "en" / "corpus.jsonl")
    docs = write_corpus(corpus, CACHE / "xquad-en-docs")
    claims = [q["text"] for q in load_jsonl(data_dir / "scifact" / "queries-train.jsonl")][:ABSENT_CLAIMS]
    empty = {SearchMode.SEMANTIC.value: 0, SearchMode.HYBRID.value: 0}
    async with DocumentIndex.open(settings(), collection=collection_name("xquad_en")) as index:
        await index.index_paths([docs])
        provider = DocumentIndexProvider(index)
        for text in claims:
            for mode in (SearchMode.SEMANTIC, SearchMode.HYBRID):
                response = await provider.retrieve(
                    RetrievalRequest.create(text, limit=10, mode=mode), CONTEXT
                )
                if response.degraded:
                    raise SystemExit(f"degraded answer ({response.degraded})")
                empty[mode.value] += not response.evidence
    return {
        "claims": len(claims),
        "corpus": f"xquad-r en ({len(corpus)} paragraphs)",
        "no_results": {mode: round(count / len(claims), 4) for mode, count in empty.items()},
    }


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
        ours = await relevance_runs(index, queries)
        ours_s = time.perf_counter() - started
        started = time.perf_counter()
        peer = await lancedb_peer(index, queries)
        peer_s = time.perf_counter() - started
    query_ids = [q for q, _ in queries]
    scores = {name: mean_ndcg(run, qrels, query_ids) for name, run in {**ours, **peer}.items()}
    recall = {name: mean_recall(ours[name], qrels, query_ids, RECALL_AT) for name in ("hybrid", "plain-rrf")}
    returned = {
        name: float(np.mean([len(ours[name].get(q, [])) for q in query_ids]))
        for name in ("semantic", NO_RULE)
    }
    return {
        "dataset": "scifact-train"
        if not max_docs
        else f"scifact-train (every judged doc + others: {len(corpus)} docs)",
        "docs": len(corpus),
        "chunks": info.rows,
        "analysis": Analyzer.from_settings(settings().lexical).signature,
        "queries": len(queries),
        "ndcg@10": {k: round(v, 4) for k, v in scores.items()},
        f"recall@{RECALL_AT}": {k: round(v, 4) for k, v in recall.items()},
        f"docs_per_query@{RECALL_AT}": {k: round(v, 2) for k, v in returned.items()},
        "eval_seconds": {"ours_4_requests": round(ours_s, 1), "lancedb_2_modes": round(peer_s, 1)},
        "targets": {
            "hybrid_beats_lexical": scores["hybrid"] > scores["lexical"],
            "hybrid_beats_semantic": scores["hybrid"] > scores["semantic"],
            "hybrid_beats_lancedb_hybrid": scores["hybrid"] > scores["lancedb-hybrid"],
            "semantic_within_0.01_of_leg": scores["semantic"] >= scores[NO_RULE] - 0.01,
            "hybrid_at_least_0.7212": scores["hybrid"] >= HYBRID_FLOOR,
            "hybrid_recall_at_least_plain_rrf": recall["hybrid"] >= recall["plain-rrf"],
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
    parser.add_argument("--no-absent", action="store_true", help="skip the absent-topic check")
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
    if "scifact" in payload:
        result = payload["scifact"]
        scores, recall = result["ndcg@10"], result[f"recall@{RECALL_AT}"]
        where = f"SciFact train, {result['docs']:,} docs, {result['queries']} queries"
        rows.append(
            {
                "metric": "scifact semantic mode nDCG@10 (relevance rule applied)",
                "ours": scores["semantic"],
                "peer_name": "the semantic leg without the rule (exact)",
                "peer": scores[NO_RULE],
                "ratio": round(scores["semantic"] / scores[NO_RULE], 4),
                "target": {
                    "on": "ours",
                    "op": ">=",
                    "value": round(scores[NO_RULE] - 0.01, 4),
                    "label": ">= the leg - 0.01",
                },
                "met": scores["semantic"] >= scores[NO_RULE] - 0.01,
                "note": f"{where}; documents per claim {result[f'docs_per_query@{RECALL_AT}']}",
            }
        )
        rows.append(
            {
                "metric": f"scifact hybrid recall@{RECALL_AT}",
                "ours": recall["hybrid"],
                "peer_name": "plain RRF of the same two legs, no rule",
                "peer": recall["plain-rrf"],
                "ratio": round(recall["hybrid"] / recall["plain-rrf"], 4),
                "target": ">= peer",
                "met": recall["hybrid"] >= recall["plain-rrf"],
                "note": f"{where}; hybrid nDCG@10 {scores['hybrid']} (must stay >= {HYBRID_FLOOR})",
            }
        )
    if "absent_topics" in payload:
        absent = payload["absent_topics"]
        rows.append(
            {
                "metric": "absent topics: no_results share, semantic mode",
                "ours": absent["no_results"]["semantic"],
                "peer_name": "hybrid mode",
                "peer": absent["no_results"]["hybrid"],
                "ratio": None,
                "target": None,
                "met": None,
                "note": f"{absent['claims']} SciFact claims against {absent['corpus']}, MiniLM",
            }
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
        recall, returned = result[f"recall@{RECALL_AT}"], result[f"docs_per_query@{RECALL_AT}"]
        print(
            f"\nthe relevance rule's cost, same run: {'':<14} {'nDCG@10':>8} {'recall@100':>11} {'docs/claim':>11}"
        )
        for key, label in (
            (NO_RULE, "semantic leg without the rule (exact)"),
            ("semantic", "semantic mode (the rule)"),
            ("plain-rrf", "plain RRF of lexical + semantic leg"),
            ("hybrid", "hybrid mode (weighted head, consensus tail)"),
        ):
            print(
                f"{label:<49} {scores[key]:>8.4f} {recall.get(key, float('nan')):>11.4f} "
                f"{returned.get(key, float('nan')):>11.2f}"
            )
        print("targets:", ", ".join(f"{k}={v}" for k, v in result["targets"].items()))
    if not args.no_absent:
        absent = await absent_topics(data_dir)
        payload["absent_topics"] = absent
        print(
            f"\nabsent topics: {absent['claims']} SciFact claims against {absent['corpus']}, share with no results: "
            + ", ".join(f"{mode} {share:.4f}" for mode, share in absent["no_results"].items())
        )
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
