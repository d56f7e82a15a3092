"""The rerank stage: the time it adds at N = 20/50/100 candidates, and what each failure produces.

Usage: python benchmarks/rerank.py [DATA_DIR] [--runs N] [--quick]

One provider answers with 120 distinct passages of ~60 words (~100 tokens each); the router fuses them,
the stage reranks the first N and the request keeps 10. For each backend and N, ``stage`` is the
stage's own time from the trace (``trace.rerank.elapsed_ms``: documents built, the reranker asked, the
answer checked, the order applied) and ``added`` the difference in ``retrieve()`` time between the same
request with the stage and with ``rerank=False`` on the same router (p50 of each).

Backends:
* the loopback rerank server (``simone.providers.testing.LoopbackRerankServer``, real HTTP on 127.0.0.1)
  speaking the Cohere-style ``results`` shape, Voyage's ``data`` shape and TEI's bare list: the client's
  and the wire's cost (the server's scoring is word overlap, a few microseconds);
* the tiny ONNX cross-encoder the tests build (``write_tiny_cross_encoder``): tokenisation and
  onnxruntime's fixed cost;
* a MiniLM-L6-sized cross-encoder: the bundled all-MiniLM-L6-v2 encoder (int8) with a linear head on
  [CLS] — the architecture of ms-marco-MiniLM-L-6-v2, so the cost of a real small cross-encoder on this
  machine (its scores are meaningless; quality is the model's, see docs/rerank.md).

Then the failure cases against the loopback server: each one's status, failure kind, Retry-After and the
limitation the result carries. Results: ``benchmarks/results/rerank.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from simone.providers.rerank import HttpReranker, OnnxCrossEncoder
from simone.providers.testing import (
    LoopbackRerankServer,
    StaticProvider,
    make_evidence,
    write_tiny_cross_encoder,
)
from simone.runtime import Reranker, RerankOptions, RetrievalResult, Router, TrustedContext

HERE = Path(__file__).resolve().parent
CTX = TrustedContext(actor="bench", token_budget=100_000)
TOPIC = "solar panels roof energy battery grid storage".split()
QUERY = "solar panels roof battery storage"
SIZES = (20, 50, 100)


def vocabulary() -> list[str]:
    """Common whole words of the bundled vocabulary (one token each), so a passage is ~60 words ≈ 70 tokens."""
    from simone.providers.embeddings import load_tokenizer

    vocab = load_tokenizer().get_vocab()
    words = sorted(w for w, i in vocab.items() if 2000 <= i < 12000 and w.isalpha() and len(w) >= 4)
    return words + TOPIC


def passages(n: int = 120) -> list[str]:
    rng = random.Random(7)
    words = vocabulary()
    return [f"passage {i}: " + " ".join(rng.choice(words) for _ in range(60)) + "." for i in range(n)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def minilm_cross_encoder(folder: Path) -> Path:
    """The bundled all-MiniLM-L6-v2 graph with a linear head on [CLS]: a MiniLM-L6 cross-encoder's cost."""
    import onnx
    from onnx import helper, numpy_helper
    from simone.providers.embeddings.minilm import TOKENIZER_FILE, packaged_model_path

    model = onnx.load(str(packaged_model_path()))
    graph = model.graph
    head = np.random.default_rng(0).standard_normal((384, 1)).astype(np.float32)
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.asarray(0, dtype=np.int64), "cls_index"),
            numpy_helper.from_array(head, "head"),
        ]
    )
    graph.node.extend(
        [
            helper.make_node("Gather", ["last_hidden_state", "cls_index"], ["cls"], axis=1),
            helper.make_node("MatMul", ["cls", "head"], ["logits"]),
        ]
    )
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, ["batch", 1]))
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    (folder / "tokenizer.json").write_bytes(TOKENIZER_FILE.read_bytes())
    return folder


async def timed(router: Router, *, rerank: bool | None) -> tuple[float, RetrievalResult]:
    started = time.perf_counter()
    result = await router.retrieve(router.request(QUERY, limit=10, rerank=rerank), CTX)
    return (time.perf_counter() - started) * 1000, result


async def measure(
    reranker: Reranker, size: int, runs: int, evidence: list[Any], timeout_s: float, *, warm: int = 3
) -> dict[str, Any]:
    router = Router(
        [StaticProvider("docs", evidence)],
        reranker=reranker,
        rerank=RerankOptions(candidates=size, timeout_s=timeout_s),
    )
    for _ in range(warm):  # warm: connections, the session's first runs
        await timed(router, rerank=True)
    stage: list[float] = []
    on: list[float] = []
    off: list[float] = []
    statuses: set[str] = set()
    for _ in range(runs):
        took, result = await timed(router, rerank=True)
        on.append(took)
        assert result.trace.rerank is not None
        statuses.add(result.trace.rerank.status)
        stage.append(result.trace.rerank.elapsed_ms)
        off.append((await timed(router, rerank=False))[0])
    return {
        "n": size,
        "runs": runs,
        "stage_p50_ms": round(statistics.median(stage), 2),
        "stage_p95_ms": round(percentile(stage, 0.95), 2),
        "added_p50_ms": round(statistics.median(on) - statistics.median(off), 2),
        "retrieve_p50_ms_with": round(statistics.median(on), 2),
        "retrieve_p50_ms_without": round(statistics.median(off), 2),
        "statuses": sorted(statuses),
    }


async def speed(runs: int, minilm_runs: int, work: Path) -> list[dict[str, Any]]:
    evidence = make_evidence("docs", passages())
    rows: list[dict[str, Any]] = []
    with LoopbackRerankServer() as server:
        for label, api in (
            ("loopback cohere (results)", "cohere"),
            ("loopback voyage (data)", "voyage"),
            ("loopback TEI (bare list)", "tei"),
        ):
            async with HttpReranker(server.url, api=api, model="bench") as reranker:  # type: ignore[arg-type]
                for size in SIZES:
                    rows.append({"backend": label, **await measure(reranker, size, runs, evidence, 10.0)})
    tiny = write_tiny_cross_encoder(work / "tiny", {"solar": 2.0, "panels": 1.0, "battery": 1.0})
    minilm = minilm_cross_encoder(work / "minilm")
    for label, folder, tokens, cell_runs in (
        ("onnx tiny graph", tiny, 512, runs),
        ("onnx MiniLM-L6-sized", minilm, 512, minilm_runs),
    ):
        async with OnnxCrossEncoder(folder, max_tokens=tokens, batch_size=16, threads=2) as reranker:
            for size in SIZES:
                row = await measure(reranker, size, cell_runs, evidence, 300.0, warm=1)
                rows.append({"backend": label, **row})
    return rows


async def failures() -> list[dict[str, Any]]:
    evidence = make_evidence("docs", passages(30))
    cases: list[dict[str, Any]] = []
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    with LoopbackRerankServer(retry_after="0.2", delay_s=5.0) as server:
        scenarios: list[tuple[str, str, list[str], str, float]] = [
            ("timeout (server hangs 5 s; stage timeout 0.5 s)", "slow", [], "0", 0.5),
            ("429, Retry-After 0.2 s (fits the deadline)", "ok", ["rate_limit"], "0.2", 2.0),
            ("429, Retry-After 30 s (past the deadline)", "rate_limit", [], "30", 2.0),
            ("malformed JSON", "malformed_json", [], "0", 2.0),
            ("index out of range", "wrong_index", [], "0", 2.0),
            ("same index twice", "duplicate_index", [], "0", 2.0),
            ("score NaN", "nan", [], "0", 2.0),
            ("HTTP 500 twice", "error500", [], "0", 2.0),
            ("server down (connection refused)", "ok", [], "0", 2.0),
        ]
        for label, mode, script, retry_after, timeout_s in scenarios:
            server.mode = mode  # type: ignore[assignment]
            server.script.clear()
            server.script.extend(script)  # type: ignore[arg-type]
            server.retry_after = retry_after
            url = f"http://127.0.0.1:{dead_port}/v1/rerank" if "down" in label else server.url
            before = len(server.requests)
            async with HttpReranker(url, max_retry_wait_s=1.0) as reranker:
                router = Router(
                    [StaticProvider("docs", evidence)],
                    reranker=reranker,
                    rerank=RerankOptions(candidates=20, timeout_s=timeout_s),
                )
                took, result = await timed(router, rerank=None)
            failure = result.failures[0] if result.failures else None
            trace = result.trace.rerank
            cases.append(
                {
                    "case": label,
                    "status": result.status.value,
                    "rerank": trace.status if trace else None,
                    "kind": failure.kind if failure else None,
                    "retry_after_s": failure.retry_after_s if failure else None,
                    "requests": len(server.requests) - before,
                    "retrieve_ms": round(took, 1),
                    "order_kept": [e.id for e in result.evidence] == [e.id for e in evidence[:10]],
                    "limitation": next((n for n in result.limitations if "reranker" in n), ""),
                }
            )
    return cases


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | N | stage p50 ms | stage p95 ms | added p50 ms | retrieve p50 with / without |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['n']} | {r['stage_p50_ms']} | {r['stage_p95_ms']} | {r['added_p50_ms']} | "
            f"{r['retrieve_p50_ms_with']} / {r['retrieve_p50_ms_without']} |"
        )
    return "\n".join(lines)


def failure_table(cases: list[dict[str, Any]]) -> str:
    lines = [
        "| case | status | rerank | kind | Retry-After | requests | fused order kept | retrieve ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        lines.append(
            f"| {c['case']} | {c['status']} | {c['rerank']} | {c['kind'] or '-'} | {c['retry_after_s'] if c['retry_after_s'] is not None else '-'} | "
            f"{c['requests']} | {c['order_kept']} | {c['retrieve_ms']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", help="a working folder (a temporary one by default)")
    parser.add_argument("--runs", type=int, default=40, help="requests per backend and N")
    parser.add_argument("--quick", action="store_true", help="10 requests per backend and N")
    args = parser.parse_args()
    runs = 10 if args.quick else args.runs
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(args.data_dir) / "rerank-bench" if args.data_dir else Path(scratch)
        rows = anyio.run(speed, runs, max(2, runs // 8), work)
    cases = anyio.run(failures)
    print(table(rows))
    print()
    print(failure_table(cases))
    for c in cases:
        if c["limitation"]:
            print(f"- {c['case']}: {c['limitation']}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    out = {
        "benchmark": "rerank",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_1m": load},
        "query": QUERY,
        "limit": 10,
        "rows": rows,
        "failures": cases,
    }
    target = HERE / "results" / "rerank.json"
    target.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {target}")


if __name__ == "__main__":
    main()
