"""The fusion constants chosen by 5-fold cross-validation on SciFact train (issue 30, item 3).

Usage: python benchmarks/fusion_cv.py [DATA_DIR] [--folds 5] [--seed 0]

Records every SciFact train claim once through the document-index provider in hybrid mode (the
recording subclass of ``benchmarks/fusion_tuning.py``; cached in benchmarks/.cache/fusion-cv), then
replays the fusion from the recorded legs with the runtime's own rules (``HeadThenConsensus`` over
``Pinned`` over ``WeightedRRF``, or ``PlainRRF``). The keep rule does not depend on the fusion's
constants, so the provider's kept candidates are replayed as a set and the answer is the fused order
filtered by it; the replay checks itself against the provider's answers (``replay_mismatches``).

For each of the seeded folds over queries, the constants (sharpness, pin, head size, RRF k) are
chosen on the other folds by grid search (mean nDCG@10) and reported on the held-out fold, beside
plain RRF and the code's constants. Writes benchmarks/results/fusion_cv.json.
"""

from __future__ import annotations

import argparse
import itertools
import math
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
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
from fusion_tuning import Recording
from simone.providers.documents import DocumentIndex
from simone.providers.documents._provider import _on_topic
from simone.runtime import RetrievalRequest, SearchMode, TrustedContext
from simone.runtime.ranking import (
    FUSION_HEAD,
    LEXICAL_PIN,
    LEXICAL_VOTE,
    RRF_K,
    VOTE_SHARPNESS,
    HeadThenConsensus,
    Pinned,
    PlainRRF,
    WeightedRRF,
    lexical_standout,
    vote_for,
)

CONTEXT = TrustedContext(actor="benchmark")
SHARPNESS = (0.5, 1.0, 1.5, 2.0, 3.0)
PINS: tuple[float | None, ...] = (None, 0.0, 1.0, 2.0, 3.0)
HEADS = (0, 3, 5, 10, 20)
KS = (20, 60, 100)
Constants = tuple[float, float | None, int, int]
"""(sharpness, pin, head, k)."""


class CVRecording(Recording):
    """Also keeps the question-level topic decision and each leg's log-odds (as ``_votes`` has them)."""

    async def _evidence(self, search: Any, legs: Any, judged: Any) -> Any:
        word_share = self._word_share()
        self.topic = _on_topic(search, legs, judged.verdicts, word_share)
        query = set(search.query_terms)
        coverage = len(query & search.top_terms) / len(query) if query else 0.0
        self.log_odds = {}
        for leg, hits in legs.items():
            if not hits:
                continue
            if leg == "lexical":
                self.log_odds[leg] = LEXICAL_VOTE.log_odds(
                    *lexical_standout([h.score for h in hits], coverage)
                )
            else:
                self.log_odds[leg] = vote_for(
                    dict((n, t.space.key) for n, t in search.semantic)[leg]
                ).log_odds(judged.verdicts[leg][hits[0].id].margin)
        return await super()._evidence(search, legs, judged)


async def record(data_dir: Path) -> list[dict[str, Any]]:
    import index_quality

    cached = CACHE / "fusion-cv" / "scifact-train.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    folder = data_dir / "scifact"
    qrels = load_qrels(folder / "qrels" / "train.tsv")
    queries = [(q["_id"], q["text"]) for q in load_jsonl(folder / "queries-train.jsonl") if q["_id"] in qrels]
    docs = write_corpus(load_jsonl(folder / "corpus.jsonl"), CACHE / "scifact-docs")
    entries = []
    async with DocumentIndex.open(
        index_quality.settings(), collection=index_quality.collection_name("scifact")
    ) as index:
        await index.index_paths([docs])
        assert index.collection is not None
        rows = await index.collection.rows(columns=["id", "terms", "path"])
        ids = rows["id"].to_pylist()
        terms_of = dict(zip(ids, (set(t.split()) for t in rows["terms"].to_pylist()), strict=True))
        doc_of = dict(zip(ids, (Path(p).stem for p in rows["path"].to_pylist()), strict=True))
        provider = CVRecording(index)
        started = time.perf_counter()
        for n, (query_id, text) in enumerate(queries):
            response = await provider.retrieve(
                RetrievalRequest.create(text, limit=index_quality.DEPTH, mode=SearchMode.HYBRID), CONTEXT
            )
            entry = provider.last
            terms = entry["terms"]
            candidates = {cid for hits in entry["legs"].values() for cid, _ in hits}
            keep = set()
            for cid in candidates:
                matched = len(terms & terms_of[cid])
                share = matched / len(terms) if terms else 0.0
                by_words = not entry["relevant"] or (matched > 0 and share >= entry["word_share"])
                by_meaning = any(v.get(cid, False) for v in entry["relevant"].values())
                if by_words or by_meaning or provider.topic:
                    keep.add(cid)
            entries.append(
                {
                    "legs": {leg: [cid for cid, _ in hits] for leg, hits in entry["legs"].items() if hits},
                    "log_odds": dict(provider.log_odds),
                    "keep": keep,
                    "limit": entry["limit"],
                    "answer": unique_docs(str(e.metadata["path"]) for e in response.evidence),
                    "doc_of": {cid: doc_of[cid] for cid in candidates},
                    "qrels": qrels[query_id],
                    "id": query_id,
                }
            )
            if n % 100 == 0:
                print(f"  {n}/{len(queries)} {time.perf_counter() - started:.0f} s", file=sys.stderr)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(entries))
    return entries


def answer(entry: dict[str, Any], c: Constants | None) -> list[str]:
    """The replayed answer (doc ids); ``None``: plain RRF of the same legs."""
    legs = entry["legs"]
    if not legs:
        return []
    if len(legs) == 1:
        order = next(iter(legs.values()))
    else:
        if c is None:
            rule: Any = PlainRRF()
        else:
            sharpness, pin, head, k = c
            lo = entry["log_odds"]
            pinned = legs["lexical"][0] if pin is not None and lo.get("lexical", -math.inf) >= pin else None
            rule = HeadThenConsensus(
                Pinned(WeightedRRF.from_confidence(lo, sharpness=sharpness, k=k), pinned), head, k
            )
        order = [cid for cid, _ in rule.fuse(legs)]
    kept = [cid for cid in order if cid in entry["keep"]][: entry["limit"]]
    return unique_docs(entry["doc_of"][cid] for cid in kept)


def score(entries: list[dict[str, Any]], c: Constants | None) -> float:
    return statistics.fmean(ndcg_at(answer(e, c), e["qrels"]) for e in entries) if entries else math.nan


def main(args: argparse.Namespace) -> None:
    entries = anyio.run(record, Path(args.data_dir))
    code: Constants = (VOTE_SHARPNESS, LEXICAL_PIN, FUSION_HEAD, RRF_K)
    mismatches = sum(answer(e, code) != e["answer"] for e in entries)
    print(f"replay with the code's constants: {mismatches} of {len(entries)} answers differ")
    grid: list[Constants] = list(itertools.product(SHARPNESS, PINS, HEADS, KS))
    per_query = {c: np.array([ndcg_at(answer(e, c), e["qrels"]) for e in entries]) for c in grid}
    per_query_code = np.array([ndcg_at(answer(e, code), e["qrels"]) for e in entries])
    plain = np.array([ndcg_at(answer(e, None), e["qrels"]) for e in entries])
    rng = np.random.default_rng(args.seed)
    fold_of = rng.permutation(len(entries)) % args.folds
    rows = []
    print(
        f"{'fold':>4} {'plain tr':>9} {'plain ho':>9} {'code tr':>8} {'code ho':>8} {'cv tr':>8} {'cv ho':>8}  chosen (sharpness, pin, head, k)"
    )
    for f in range(args.folds):
        tr, ho = fold_of != f, fold_of == f
        chosen = max(grid, key=lambda c: (per_query[c][tr].mean(), c == code))
        row = {
            "fold": f,
            "held_out_questions": int(ho.sum()),
            "plain_rrf": {
                "train": round(float(plain[tr].mean()), 4),
                "held_out": round(float(plain[ho].mean()), 4),
            },
            "hybrid_code": {
                "train": round(float(per_query_code[tr].mean()), 4),
                "held_out": round(float(per_query_code[ho].mean()), 4),
            },
            "hybrid_cv": {
                "train": round(float(per_query[chosen][tr].mean()), 4),
                "held_out": round(float(per_query[chosen][ho].mean()), 4),
            },
            "chosen": list(chosen),
        }
        rows.append(row)
        print(
            f"{f:>4} {row['plain_rrf']['train']:>9.4f} {row['plain_rrf']['held_out']:>9.4f} {row['hybrid_code']['train']:>8.4f} "
            f"{row['hybrid_code']['held_out']:>8.4f} {row['hybrid_cv']['train']:>8.4f} {row['hybrid_cv']['held_out']:>8.4f}  {chosen}"
        )
    summary = {
        name: {
            "held_out_mean": round(statistics.fmean(r[name]["held_out"] for r in rows), 4),
            "held_out_sd": round(statistics.stdev(r[name]["held_out"] for r in rows), 4),
        }
        for name in ("plain_rrf", "hybrid_code", "hybrid_cv")
    }
    print(summary)
    save(
        "fusion_cv",
        {
            "questions": len(entries),
            "folds": args.folds,
            "seed": args.seed,
            "replay_mismatches": mismatches,
            "code_constants": list(code),
            "grid": {"sharpness": SHARPNESS, "pin": PINS, "head": HEADS, "k": KS},
            "all_questions": {
                "plain_rrf": round(float(plain.mean()), 4),
                "hybrid_code": round(float(per_query_code.mean()), 4),
            },
            "per_fold": rows,
            "summary": summary,
        },
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
