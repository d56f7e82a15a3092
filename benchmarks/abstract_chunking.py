"""Issue 30.3: does keeping an abstract whole lift SciFact? Each variant cross-validated by fold.

Usage: python benchmarks/abstract_chunking.py [DATA_DIR] [--variants shipped,window512,section-terms,…]
                                              [--folds 5] [--queries N] [--label L]

SciFact's abstracts are longer than the bundled model's 256-token window (median 316 tokens with the
title; 29 % fit 256, 91 % fit 512), so the shipped chunker cuts most of them in two or three. Variants,
each indexed into its own collection (and embedding cache: a 512-token window embeds other vectors
for the same text) under ``benchmarks/.cache/abstract-chunking``:

* **shipped** — as shipped (256-token chunks, the title ×3 in the lexical terms, a context line);
* **window512** — the chunker and the ONNX model read 512 tokens (the model has 512 positions, it
  was trained on shorter texts): 91 % of the abstracts stay one chunk in both legs;
* **section-terms** — chunks and vectors as shipped, but each chunk's lexical terms are its whole
  section's (the abstract), so BM25 scores the abstract whole while the vectors stay in the window;
* **title1**, **title2**, **title5** — title weighting: the title's terms repeated 1, 2 or 5 times in
  the lexical terms (shipped: ``TITLE_WEIGHT`` = 3), chunks and vectors as shipped.

Every SciFact train claim (809) is asked in lexical, semantic and hybrid mode (50 chunks, reduced to
documents in first-seen order). The claims are split into ``--folds`` folds by a hash of their id;
the table shows each fold's nDCG@10 per variant, and the cross-validated choice: for each fold, the
variant best on the other folds, scored on the held-out fold. Writes
``benchmarks/results/abstract_chunking.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import platform
import statistics
import sys
import time
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
from simone.providers.documents import Chunk, DocumentIndex, DocumentIndexProvider
from simone.providers.documents._index import TITLE_WEIGHT, FilePreparer, _Prepared
from simone.providers.embeddings import _onnx
from simone.runtime import (
    EmbeddingSettings,
    IndexSettings,
    RetrievalRequest,
    SearchMode,
    Settings,
    TrustedContext,
)

NAME = "abstract_chunking"
DEPTH = 50
MODES = (SearchMode.LEXICAL, SearchMode.SEMANTIC, SearchMode.HYBRID)
CONTEXT = TrustedContext(actor="benchmark")
ROOT = CACHE / "abstract-chunking"


@dataclasses.dataclass(frozen=True)  # no slots: zero-argument super() needs the class it was written in
class _SectionTermsPreparer(FilePreparer):
    """Each chunk's lexical terms are its whole section's: the title (weighted), headings, every chunk's body."""

    def prepare(self, source: Any, existing: dict[str, str], project: str) -> _Prepared:
        prepared = super().prepare(source, existing, project)
        if not prepared.chunks:
            return prepared
        bodies: dict[tuple[str, ...], list[str]] = {}
        for chunk in prepared.chunks:
            bodies.setdefault(chunk.heading, []).append(chunk.text)
        terms = [self._section_terms(chunk, bodies[chunk.heading]) for chunk in prepared.chunks]
        return dataclasses.replace(prepared, terms=terms)

    def _section_terms(self, chunk: Chunk, texts: list[str]) -> str:
        one = self.terms(chunk)
        body = self.analyzer.terms(chunk.text)
        head = one.split()[: len(one.split()) - len(body)]
        section = [term for text in texts for term in self.analyzer.terms(text)]
        return " ".join([*head, *section])


class _SectionTermsIndex(DocumentIndex):
    @property
    def preparer(self) -> FilePreparer:
        return _SectionTermsPreparer(self.settings, self.chunker, self.analyzer, self._locators)


def _title_weighted(weight: int) -> type[DocumentIndex]:
    """An index whose lexical terms repeat the title ``weight`` times (shipped: ``TITLE_WEIGHT``)."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Preparer(FilePreparer):
        def terms(self, chunk: Chunk) -> str:
            shipped = super(Preparer, self).terms(chunk).split()
            title = self.analyzer.terms(chunk.title)
            return " ".join([*(title * weight), *shipped[len(title) * TITLE_WEIGHT :]])

    class Index(DocumentIndex):
        @property
        def preparer(self) -> FilePreparer:
            return Preparer(self.settings, self.chunker, self.analyzer, self._locators)

    return Index


def settings(variant: str) -> Settings:
    return Settings(
        data_dir=ROOT / f"data-{'512' if variant == 'window512' else '256'}",
        embeddings=EmbeddingSettings(chain=["onnx"]),
        index=IndexSettings(
            leg_candidates=DEPTH * 2,
            use_git=False,
            uri=str(ROOT / "index"),
            chunk_tokens=512 if variant == "window512" else 256,
        ),
    )


VARIANTS: dict[str, type[DocumentIndex]] = {
    "shipped": DocumentIndex,
    "window512": DocumentIndex,
    "section-terms": _SectionTermsIndex,
    **{f"title{w}": _title_weighted(w) for w in (1, 2, 5) if w != TITLE_WEIGHT},
}


def fold_of(query_id: str, folds: int) -> int:
    return hashlib.sha256(query_id.encode()).digest()[0] % folds


async def measure(variant: str, folder: Path, queries: list[tuple[str, str]]) -> dict[str, Any]:
    defaults = _onnx.OnnxMiniLMEmbedder.__init__.__kwdefaults__
    saved = defaults["max_tokens"]
    defaults["max_tokens"] = 512 if variant == "window512" else saved
    try:
        async with VARIANTS[variant].open(settings(variant), collection=variant.replace("-", "_")) as index:
            started = time.perf_counter()
            await index.index_paths([folder])
            info = await index.info()
            seconds = time.perf_counter() - started
            provider = DocumentIndexProvider(index)
            runs: dict[str, dict[str, list[str]]] = {mode.value: {} for mode in MODES}
            for query_id, text in queries:
                for mode in MODES:
                    request = RetrievalRequest.create(text, limit=DEPTH, mode=mode)
                    response = await provider.retrieve(request, CONTEXT)
                    if response.degraded:
                        raise SystemExit(f"degraded answer ({response.degraded})")
                    runs[mode.value][query_id] = unique_docs(e.metadata["path"] for e in response.evidence)
    finally:
        defaults["max_tokens"] = saved
    return {"chunks": info.rows if info else None, "index_seconds": round(seconds, 1), "runs": runs}


def main(args: argparse.Namespace) -> None:
    folder = Path(args.data_dir) / "scifact"
    corpus = load_jsonl(folder / "corpus.jsonl")
    qrels = load_qrels(folder / "qrels" / "train.tsv")
    queries = [(q["_id"], q["text"]) for q in load_jsonl(folder / "queries-train.jsonl") if q["_id"] in qrels]
    queries = queries[: args.queries] if args.queries else queries
    docs = write_corpus(corpus, CACHE / "scifact-docs")
    variants = args.variants.split(",")
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    out: dict[str, Any] = {"python": platform.python_version(), "queries": len(queries), "folds": args.folds}
    out["variants"] = {}
    for variant in variants:
        result = anyio.run(measure, variant, docs, queries)
        per_query[variant] = {
            mode: {q: ndcg_at(run[q], qrels[q]) for q, _ in queries} for mode, run in result["runs"].items()
        }
        out["variants"][variant] = {
            "chunks": result["chunks"],
            "index_seconds": result["index_seconds"],
            "ndcg@10": {m: round(statistics.fmean(v.values()), 4) for m, v in per_query[variant].items()},
        }
        print(f"  {variant}: {out['variants'][variant]}", file=sys.stderr)
    folds = {q: fold_of(q, args.folds) for q, _ in queries}
    table: dict[str, Any] = {}
    for mode in (m.value for m in MODES):
        rows = []
        for fold in range(args.folds):
            held = [q for q in folds if folds[q] == fold]
            train = [q for q in folds if folds[q] != fold]
            score = {v: statistics.fmean(per_query[v][mode][q] for q in held) for v in variants}
            train_score = {v: statistics.fmean(per_query[v][mode][q] for q in train) for v in variants}
            chosen = max(variants, key=train_score.__getitem__)
            rows.append(
                {
                    "fold": fold,
                    "held_out_questions": len(held),
                    "held_out": {v: round(s, 4) for v, s in score.items()},
                    "train": {v: round(s, 4) for v, s in train_score.items()},
                    "chosen": chosen,
                    "chosen_held_out": round(score[chosen], 4),
                }
            )
        summary = {
            v: {
                "held_out_mean": round(statistics.fmean(r["held_out"][v] for r in rows), 4),
                "held_out_sd": round(statistics.stdev(r["held_out"][v] for r in rows), 4),
                "folds_above_shipped": sum(r["held_out"][v] > r["held_out"]["shipped"] for r in rows)
                if "shipped" in variants
                else None,
            }
            for v in variants
        }
        summary["cross_validated_choice"] = {
            "held_out_mean": round(statistics.fmean(r["chosen_held_out"] for r in rows), 4),
            "chosen": [r["chosen"] for r in rows],
        }
        table[mode] = {"per_fold": rows, "summary": summary}
    out["cross_validation"] = table
    for mode, entry in table.items():
        print(
            f"\n{mode}: variant | "
            + " | ".join(f"fold {r['fold']}" for r in entry["per_fold"])
            + " | mean ± sd"
        )
        for v in variants:
            cells = " | ".join(f"{r['held_out'][v]:.4f}" for r in entry["per_fold"])
            s = entry["summary"][v]
            print(f"  {v} | {cells} | {s['held_out_mean']:.4f} ± {s['held_out_sd']:.4f}")
        cv = entry["summary"]["cross_validated_choice"]
        print(f"  chosen on the other folds | {' | '.join(cv['chosen'])} | {cv['held_out_mean']:.4f}")
    print(f"wrote {save(f'{NAME}-{args.label}' if args.label else NAME, out)}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=0, help="first N claims (0: all 809)")
    parser.add_argument("--label", default="", help="write abstract_chunking-LABEL.json instead")
    args = parser.parse_args()
    unknown = set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; choose from {sorted(VARIANTS)}")
    return args


if __name__ == "__main__":
    main(parse_args())
