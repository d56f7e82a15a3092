"""Issue 29.3: what the heading path adds — nDCG@10 with and without it, in each leg.

Usage: python benchmarks/heading_path.py [DATA_DIR] [--sets scifact,xquad,docs-qa]
                                         [--scifact-queries N] [--xquad-queries N] [--langs en,de]
                                         [--docs-cache DIR]

Every chunk carries its heading path (document title › section › subsection; sheet, slide or page)
and both legs use it: the lexical terms are the title's (×``TITLE_WEIGHT``), the heading path's,
then the body's (``FilePreparer.terms``), and the embedded text starts with a context line of the
title and headings (``Chunker._contexts``, at most ``CONTEXT_MAX_TOKENS``). Each set is indexed twice,
into two collections of one LanceDB under ``benchmarks/.cache/heading-path``:

* **with** — as shipped;
* **without** — the lexical terms are the body's alone, and nothing is embedded before a chunk's
  text (the chunk then has the context line's room for text). Subclasses defined here only.

Each leg is measured on its own (lexical mode shows the lexical field, semantic mode the embedded
prefix) and fused (hybrid), so one run gives both legs' effect and the sum. Sets:

* **SciFact** train: 5,183 abstracts (``# title`` then the abstract), 809 claims (``--scifact-queries``
  for fewer); the heading path is the title only;
* **XQuAD-R**: the English corpus (240 Wikipedia paragraphs under their article titles), the first
  ``--xquad-queries`` questions of each language in ``--langs``; ``--sets xquad-mono`` (with
  ``--langs``): each language's own corpus with its own questions, written to
  ``heading_path_monolingual.json``;
* **docs-QA**, the structured set: the docs folders of attrs and click (Markdown and RST with real
  section structure, from the sdists ``benchmarks/answer_quality.py`` downloads into
  ``--docs-cache``), 30 questions, each written for one file: that file is the relevant document.
  Skipped with the reason when the sdists are not there.

The embedding cache of ``benchmarks/.cache/index-quality`` is shared (same model, same space), so only
texts that differ between the two variants are embedded. The target (issue 29): no regression beyond
0.002 — with ≥ without − 0.002 in every mode. Writes ``benchmarks/results/heading_path.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
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
from simone.providers.documents import Chunk, Chunker, DocumentIndex, DocumentIndexProvider
from simone.providers.documents._index import FilePreparer
from simone.runtime import (
    EmbeddingSettings,
    IndexSettings,
    RetrievalRequest,
    SearchMode,
    Settings,
    TrustedContext,
)

NAME = "heading_path"
DEPTH = 50
"""Chunks asked for per query (then reduced to distinct documents for nDCG@10)."""
MODES = (SearchMode.LEXICAL, SearchMode.SEMANTIC, SearchMode.HYBRID)
TOLERANCE = 0.002
"""The issue's bound: the heading path may cost at most this much nDCG@10 in any mode."""
DOCS_PROJECTS = {"attrs": "25.3.0", "click": "8.1.8"}
"""The docs-QA projects and versions (as benchmarks/answer_quality.py pins them)."""
DOCS_QA = Path(__file__).resolve().parent / "data" / "docs_qa"
CONTEXT = TrustedContext(actor="benchmark")


# -- the variant without the heading path (benchmark-only subclasses) -----------------------------


class _NoContextChunker(Chunker):
    """Chunks embedded as their text alone: no title › headings line before them."""

    @property
    def signature(self) -> str:
        return super().signature + ":no-context"

    def _contexts(self, title: str, sections: list[Any]) -> tuple[list[str], list[int]]:
        return [""] * len(sections), [0] * len(sections)


@dataclasses.dataclass(frozen=True, slots=True)
class _BodyTermsPreparer(FilePreparer):
    """Lexical terms of the chunk's text alone (no weighted title, no heading path)."""

    def terms(self, chunk: Chunk) -> str:
        return " ".join(self.analyzer.terms(chunk.text))


class _WithoutPathIndex(DocumentIndex):
    """A document index whose rows carry no heading path in either leg."""

    @property
    def chunker(self) -> Chunker:
        if self._chunker is None:
            base = super().chunker
            self._chunker = _NoContextChunker(
                base.counter,
                max_tokens=base.max_tokens,
                overlap_tokens=base.overlap_tokens,
                terms_signature=base.terms_signature,
            )
        return self._chunker

    @property
    def preparer(self) -> FilePreparer:
        return _BodyTermsPreparer(self.settings, self.chunker, self.analyzer, self._locators)


VARIANTS: dict[str, type[DocumentIndex]] = {"with": DocumentIndex, "without": _WithoutPathIndex}


def settings() -> Settings:
    """The index-quality data folder (its embedding cache and model), this benchmark's own LanceDB."""
    return Settings(
        data_dir=CACHE / "index-quality",
        embeddings=EmbeddingSettings(chain=["onnx"]),
        index=IndexSettings(
            leg_candidates=DEPTH * 2, use_git=False, uri=str(CACHE / "heading-path" / "index")
        ),
    )


# -- measuring --------------------------------------------------------------------------------------


Ranker = Any
"""Turns a response's evidence into a ranked list of document ids."""


def _stems(evidence: Iterable[Any]) -> list[str]:
    return unique_docs(e.metadata["path"] for e in evidence)


async def _rankings(
    index: DocumentIndex, queries: Sequence[tuple[str, str]], rank: Ranker = _stems
) -> dict[str, dict[str, list[str]]]:
    """Per mode, each query's ranked document ids; a degraded answer stops the benchmark."""
    provider = DocumentIndexProvider(index)
    runs: dict[str, dict[str, list[str]]] = {mode.value: {} for mode in MODES}
    for query_id, text in queries:
        for mode in MODES:
            response = await provider.retrieve(RetrievalRequest.create(text, limit=DEPTH, mode=mode), CONTEXT)
            if response.degraded:
                raise SystemExit(f"degraded answer ({response.degraded}); the benchmark needs both legs")
            if mode is SearchMode.SEMANTIC and response.skipped_legs:
                continue  # the model does not cover the question's language: no semantic ranking
            runs[mode.value][query_id] = rank(response.evidence)
    return runs


def _mean_ndcg(
    run: dict[str, list[str]], qrels: dict[str, dict[str, int]], ids: Sequence[str]
) -> float | None:
    answered = [q for q in ids if q in run]
    if not answered:
        return None
    return sum(ndcg_at(run[q], qrels.get(q, {})) for q in answered) / len(answered)


async def measure(
    label: str,
    folder: Path,
    queries: Sequence[tuple[str, str]],
    qrels: dict[str, dict[str, int]],
    rank: Ranker = _stems,
) -> dict[str, Any]:
    """``folder`` indexed with and without the heading path; nDCG@10 of each mode in each."""
    out: dict[str, Any] = {"set": label, "queries": len(queries), "ndcg@10": {}, "indexing": {}}
    ids = [q for q, _ in queries]
    for variant, cls in VARIANTS.items():
        collection = f"{label.replace('-', '_')}_{variant}"
        async with cls.open(settings(), collection=collection) as index:
            started = time.perf_counter()
            report = await index.index_paths([folder])
            info = await index.info()
            out["indexing"][variant] = {
                "seconds": round(time.perf_counter() - started, 1),
                "files": report.files_total,
                "chunks": info.rows if info is not None else None,
                "embedded_now": report.embedded,
                "from_cache": report.cached,
            }
            started = time.perf_counter()
            runs = await _rankings(index, queries, rank)
            scores = {mode: _mean_ndcg(run, qrels, ids) for mode, run in runs.items()}
            out["ndcg@10"][variant] = {
                mode: round(s, 4) if s is not None else None for mode, s in scores.items()
            }
            out["indexing"][variant]["eval_seconds"] = round(time.perf_counter() - started, 1)
            out.setdefault("answered", {})[variant] = {mode: len(run) for mode, run in runs.items()}
        print(f"  {label} {variant}: {out['ndcg@10'][variant]}", file=sys.stderr)
    delta: dict[str, float | None] = {}
    for mode in (m.value for m in MODES):
        a, b = out["ndcg@10"]["with"][mode], out["ndcg@10"]["without"][mode]
        delta[mode] = round(a - b, 4) if a is not None and b is not None else None
    out["with_minus_without"] = delta
    out["no_regression_beyond_0.002"] = all(d is None or d >= -TOLERANCE for d in delta.values())
    return out


# -- the sets ---------------------------------------------------------------------------------------


async def scifact(data_dir: Path, limit: int) -> dict[str, Any]:
    folder = data_dir / "scifact"
    corpus = load_jsonl(folder / "corpus.jsonl")
    qrels = load_qrels(folder / "qrels" / "train.tsv")
    queries = [(q["_id"], q["text"]) for q in load_jsonl(folder / "queries-train.jsonl") if q["_id"] in qrels]
    queries = queries[:limit] if limit else queries
    docs = write_corpus(corpus, CACHE / "scifact-docs")  # the folder index_quality.py writes
    result = await measure("scifact-train", docs, queries, qrels)
    result["docs"] = len(corpus)
    return result


def _questions(root: Path, lang: str, limit: int) -> tuple[list[tuple[str, str]], dict[str, dict[str, int]]]:
    """The first ``limit`` questions of ``lang`` (by id) that have judgements, and the judgements."""
    qrels_file = root / lang / "qrels" / "test.tsv"
    qrels = load_qrels(qrels_file if qrels_file.exists() else next((root / lang / "qrels").glob("*.tsv")))
    queries = sorted(
        ((q["_id"], q["text"]) for q in load_jsonl(root / lang / "queries.jsonl") if q["_id"] in qrels),
        key=lambda item: item[0],
    )[:limit]
    return queries, qrels


async def xquad(data_dir: Path, langs: Sequence[str], limit: int) -> list[dict[str, Any]]:
    root = data_dir / "xquad-r" / "beir-paragraph"
    docs = write_corpus(load_jsonl(root / "en" / "corpus.jsonl"), CACHE / "xquad-en-docs")
    out = []
    for lang in langs:
        queries, qrels = _questions(root, lang, limit)
        result = await measure(f"xquad-r-{lang}", docs, queries, qrels)
        result["corpus"] = "xquad-r en (240 paragraphs)"
        out.append(result)
    return out


async def xquad_monolingual(data_dir: Path, langs: Sequence[str], limit: int) -> list[dict[str, Any]]:
    """Each language's own 240 paragraphs (their titles in that language) with its own questions."""
    root = data_dir / "xquad-r" / "beir-paragraph"
    out = []
    for lang in langs:
        docs = write_corpus(load_jsonl(root / lang / "corpus.jsonl"), CACHE / f"xquad-{lang}-docs")
        queries, qrels = _questions(root, lang, limit)
        result = await measure(f"xquad-r-{lang}-monolingual", docs, queries, qrels)
        result["corpus"] = f"xquad-r {lang} (240 paragraphs)"
        out.append(result)
    return out


def _docs_folder(project: str, version: str, cache: Path) -> Path | str:
    """The project's docs/ folder as benchmarks/answer_quality.py extracts it, or why it is missing."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import answer_quality

    try:
        return answer_quality._docs_folder(project, version, cache)
    except answer_quality.Skip as exc:
        return str(exc)


async def docs_qa(cache: Path) -> dict[str, Any]:
    """The docs of attrs and click in one folder each; a question's file is its relevant document."""
    results: dict[str, Any] = {"set": "docs-qa", "skipped": {}}
    per_project = []
    for project, version in DOCS_PROJECTS.items():
        found = _docs_folder(project, version, cache)
        if isinstance(found, str):
            results["skipped"][project] = found
            continue
        rows = load_jsonl(DOCS_QA / f"{project}.jsonl")
        queries = [(str(r["id"]), str(r["question"])) for r in rows]
        qrels = {str(r["id"]): {str(r["file"]): 1} for r in rows}
        root = found

        def rank(evidence: Iterable[Any], root: Path = root) -> list[str]:
            seen: dict[str, None] = {}
            for item in evidence:
                path = Path(str(item.metadata["path"]))
                seen.setdefault(
                    path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name, None
                )
            return list(seen)

        per_project.append(await measure(f"docs-qa-{project}", found, queries, qrels, rank))
    results["projects"] = per_project
    if per_project:  # pooled over the questions of both projects
        pooled: dict[str, dict[str, float | None]] = {}
        total = sum(p["queries"] for p in per_project)
        for variant in VARIANTS:
            pooled[variant] = {}
            for mode in (m.value for m in MODES):
                values = [(p["ndcg@10"][variant][mode], p["queries"]) for p in per_project]
                pooled[variant][mode] = (
                    round(sum(v * n for v, n in values) / total, 4)
                    if all(v is not None for v, _ in values)
                    else None
                )
        results["queries"] = total
        results["ndcg@10"] = pooled
        results["with_minus_without"] = {
            mode: round(pooled["with"][mode] - pooled["without"][mode], 4)  # type: ignore[operator]
            for mode in (m.value for m in MODES)
        }
    return results


def _show(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| set | queries | mode | with heading path | without | with − without |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "ndcg@10" not in row:
            continue
        for mode in (m.value for m in MODES):
            a, b = row["ndcg@10"]["with"][mode], row["ndcg@10"]["without"][mode]
            d = row["with_minus_without"][mode]
            lines.append(
                f"| {row['set']} | {row['queries']} | {mode} | {_show(a)} | {_show(b)} | {'-' if d is None else f'{d:+.4f}'} |"
            )
    return lines


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--sets", default="scifact,xquad,docs-qa")
    parser.add_argument("--scifact-queries", type=int, default=0, help="claims (0: all 809)")
    parser.add_argument("--xquad-queries", type=int, default=300, help="questions per language (of 1,190)")
    parser.add_argument("--langs", default="en,de")
    parser.add_argument("--docs-cache", default=str(Path.home() / ".cache" / "simone-bench"))
    return parser.parse_args()


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir)
    sets = set(args.sets.split(","))
    payload: dict[str, Any] = {"python": platform.python_version(), "depth": DEPTH, "tolerance": TOLERANCE}
    rows: list[dict[str, Any]] = []
    if "scifact" in sets:
        payload["scifact"] = await scifact(data_dir, args.scifact_queries)
        rows.append(payload["scifact"])
    if "xquad" in sets:
        payload["xquad_r"] = await xquad(
            data_dir, [lang for lang in args.langs.split(",") if lang], args.xquad_queries
        )
        rows += payload["xquad_r"]
    if "xquad-mono" in sets:
        payload["xquad_r_monolingual"] = await xquad_monolingual(
            data_dir, [lang for lang in args.langs.split(",") if lang], args.xquad_queries
        )
        rows += payload["xquad_r_monolingual"]
    if "docs-qa" in sets:
        payload["docs_qa"] = await docs_qa(Path(args.docs_cache))
        rows += payload["docs_qa"].get("projects", [])
        if "ndcg@10" in payload["docs_qa"]:
            rows.append(payload["docs_qa"])
        for project, reason in payload["docs_qa"]["skipped"].items():
            print(f"docs-qa {project} skipped: {reason}", file=sys.stderr)
    print("\n".join(_table(rows)))
    checked = [row for row in rows if "with_minus_without" in row]
    payload["summary"] = [
        {
            "section": "Heading path",
            "metric": f"{row['set']} {mode} nDCG@10: with − without the heading path",
            "ours": row["with_minus_without"][mode],
            "better": "higher",
            "target": {"on": "ours", "op": ">=", "value": -TOLERANCE},
        }
        for row in checked
        if row["set"] in ("scifact-train", "xquad-r-en") or row["set"].endswith("-monolingual")
        for mode in (m.value for m in MODES)
        if row["with_minus_without"][mode] is not None
    ]
    name = f"{NAME}_monolingual" if sets == {"xquad-mono"} else NAME
    print(f"\nwrote {save(name, payload)}")


if __name__ == "__main__":
    anyio.run(main, parse_args())
