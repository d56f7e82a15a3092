"""End to end: `simone ask` latency (cold, warm) and 50 concurrent asks against one runtime.

    python benchmarks/end_to_end.py [DATA_DIR] [--concurrency 50] [--docs PATH]

DATA_DIR is accepted for symmetry with the other benchmarks (default ../shared/data) but not needed:
the questions run over the bundled sample docs (docs/) and a per-actor memory note, offline.

Measured, each next to its peer in the same run:

* cold start — a fresh `simone ask` process on an empty data dir (indexes the sample docs, answers),
  against a warm process (the index exists) — the ratio is what the first run costs;
* warm in-process ask latency (p50/p95) against bare routed retrieval of the same questions (the
  order alternates so neither always meets a warm query cache), and the extractive synthesis alone —
  the ratios are the orchestration and synthesis overhead over the router (on a shared machine the
  two latencies are within noise of each other: an ask is one retrieval plus a few milliseconds);
* N concurrent asks on one runtime (each by its own actor, each with its own private memory note):
  throughput, p95, errors, and cross-talk (an answer that cites another actor's note), against the
  same asks run one after another.

Results are printed as a table and written to benchmarks/results/end_to_end.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from simone.agents import Answer, ExtractiveModel, Runtime, bundled_docs
from simone.runtime import Settings

QUESTIONS = [
    "How are the rankings of several providers fused?",
    "What happens when a provider times out?",
    "How are duplicates dropped across providers?",
    "What does the budget report contain?",
    "Which callers may use web search?",
    "How is the evidence packed into the token budget?",
    "What statuses can a retrieval result have?",
    "Where are the index, memory and caches stored?",
]

CODEWORDS = [
    "amber",
    "basalt",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def run_cli(data_dir: Path, question: str, docs: Path) -> tuple[float, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "simone.agents.cli",
            "--data-dir",
            str(data_dir),
            "ask",
            "--json",
            "--docs",
            str(docs),
            question,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 3):
        raise SystemExit(f"simone ask failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, json.loads(done.stdout)


def codeword(actor_index: int) -> str:
    return f"{CODEWORDS[actor_index % len(CODEWORDS)]}{actor_index}"


async def in_process(data_dir: Path, concurrency: int, rounds: int) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir)
    out: dict[str, Any] = {}
    async with Runtime.open(settings, web=False) as runtime:
        # -- warm sequential asks vs bare retrieval of the same questions ---------------------
        ask_ms: list[float] = []
        retrieve_ms: list[float] = []
        compose_ms: list[float] = []
        extractive = ExtractiveModel()
        for round_ in range(rounds):
            for position, question in enumerate(QUESTIONS):
                context = runtime.admit({"actor": "bench"})
                # alternate which goes first, so neither always meets a warm query-embedding cache
                for kind in ("retrieve", "ask") if (round_ + position) % 2 == 0 else ("ask", "retrieve"):
                    started = time.perf_counter()
                    if kind == "retrieve":
                        found = await runtime.retrieve(context, question)
                        retrieve_ms.append((time.perf_counter() - started) * 1000)
                        started = time.perf_counter()
                        extractive.compose(question, list(enumerate(found.evidence, start=1)))
                        compose_ms.append((time.perf_counter() - started) * 1000)
                    else:
                        await runtime.ask(context, question)
                        ask_ms.append((time.perf_counter() - started) * 1000)
        out["warm_ask_ms"] = {"p50": pct(ask_ms, 0.5), "p95": pct(ask_ms, 0.95), "n": len(ask_ms)}
        out["warm_retrieve_ms"] = {
            "p50": pct(retrieve_ms, 0.5),
            "p95": pct(retrieve_ms, 0.95),
            "n": len(retrieve_ms),
        }
        out["extractive_compose_ms"] = {
            "p50": pct(compose_ms, 0.5),
            "p95": pct(compose_ms, 0.95),
            "n": len(compose_ms),
        }

        # -- private notes, one per actor -------------------------------------------------------
        note_owner: dict[str, int] = {}
        for index in range(concurrency):
            session = runtime.session(runtime.admit({"actor": f"user{index}"}))
            made = await session.call(
                "create_note",
                {"title": "My project codename", "body": f"My project codename is {codeword(index)}."},
            )
            record_id = made.model_dump()["data"]["record"]["id"]
            note_owner[record_id] = index

        def check(index: int, answer: Answer) -> list[str]:
            problems: list[str] = []
            for cite in answer.citations:
                if cite.provider.value != "memory":
                    continue
                owner = next((o for rid, o in note_owner.items() if rid in cite.locator), None)
                if owner is not None and owner != index:
                    problems.append(f"user{index} was shown user{owner}'s note {cite.locator}")
            for other in range(concurrency):
                if other != index and codeword(other) in answer.text.split():
                    problems.append(f"user{index}'s answer mentions {codeword(other)}")
            return problems

        async def one(
            index: int, latencies: list[float], answers: dict[int, Answer], errors: list[str]
        ) -> None:
            started = time.perf_counter()
            try:
                answers[index] = await runtime.ask({"actor": f"user{index}"}, "What is my project codename?")
            except Exception as exc:  # noqa: BLE001 -- counted and reported
                errors.append(f"user{index}: {type(exc).__name__}: {exc}")
            latencies.append((time.perf_counter() - started) * 1000)

        def summary(
            latencies: list[float], answers: dict[int, Answer], errors: list[str], wall: float
        ) -> dict[str, Any]:
            crosstalk = [p for i, a in answers.items() for p in check(i, a)]
            own = sum(1 for i, a in answers.items() if codeword(i) in a.text)
            return {
                "asks": concurrency,
                "wall_s": wall,
                "throughput_per_s": concurrency / wall,
                "p50_ms": pct(latencies, 0.5),
                "p95_ms": pct(latencies, 0.95),
                "errors": len(errors),
                "error_samples": errors[:3],
                "crosstalk": len(crosstalk),
                "crosstalk_samples": crosstalk[:3],
                "answers_with_own_codeword": own,
            }

        # sequential peer
        latencies: list[float] = []
        answers: dict[int, Answer] = {}
        errors: list[str] = []
        started = time.perf_counter()
        for index in range(concurrency):
            await one(index, latencies, answers, errors)
        out["sequential"] = summary(latencies, answers, errors, time.perf_counter() - started)

        # concurrent
        latencies, answers, errors = [], {}, []
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for index in range(concurrency):
                group.start_soon(one, index, latencies, answers, errors)
        out["concurrent"] = summary(latencies, answers, errors, time.perf_counter() - started)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "data_dir", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the warm sequential questions")
    parser.add_argument("--docs", default=None, help="documents to ask about (default: the bundled docs/)")
    args = parser.parse_args()
    docs = Path(args.docs) if args.docs else bundled_docs()
    if docs is None:
        raise SystemExit("no sample docs found; pass --docs PATH")

    with tempfile.TemporaryDirectory(prefix="simone-e2e-") as tmp:
        data_dir = Path(tmp) / "data"
        cold_s, cold_answer = run_cli(data_dir, QUESTIONS[0], docs)
        warm_process = [run_cli(data_dir, q, docs)[0] for q in QUESTIONS[:3]]
        warm_s = statistics.median(warm_process)
        measured = anyio.run(in_process, data_dir, args.concurrency, args.rounds)

    result = {
        "docs": str(docs),
        "cold_process_s": cold_s,
        "cold_answer_status": cold_answer["status"],
        "cold_answer_citations": len(cold_answer["citations"]),
        "warm_process_s": warm_s,
        **measured,
    }
    conc, seq = measured["concurrent"], measured["sequential"]
    ask, ret = measured["warm_ask_ms"], measured["warm_retrieve_ms"]
    rows = [
        (
            "simone ask, cold process (indexes docs)",
            f"{cold_s:.2f} s",
            "warm process",
            f"{warm_s:.2f} s",
            cold_s / warm_s,
        ),
        (
            "warm in-process ask p50",
            f"{ask['p50']:.1f} ms",
            "bare retrieve p50",
            f"{ret['p50']:.1f} ms",
            ask["p50"] / ret["p50"],
        ),
        (
            "warm in-process ask p95",
            f"{ask['p95']:.1f} ms",
            "bare retrieve p95",
            f"{ret['p95']:.1f} ms",
            ask["p95"] / ret["p95"],
        ),
        (
            "extractive synthesis p50 (of an answer)",
            f"{measured['extractive_compose_ms']['p50']:.1f} ms",
            "bare retrieve p50",
            f"{ret['p50']:.1f} ms",
            measured["extractive_compose_ms"]["p50"] / ret["p50"],
        ),
        (
            f"{args.concurrency} concurrent asks: throughput",
            f"{conc['throughput_per_s']:.1f}/s",
            "sequential",
            f"{seq['throughput_per_s']:.1f}/s",
            conc["throughput_per_s"] / seq["throughput_per_s"],
        ),
        (
            f"{args.concurrency} concurrent asks: p95",
            f"{conc['p95_ms']:.0f} ms",
            "sequential p95",
            f"{seq['p95_ms']:.0f} ms",
            conc["p95_ms"] / seq["p95_ms"],
        ),
        (
            "errors / cross-talk (concurrent)",
            f"{conc['errors']} / {conc['crosstalk']}",
            "sequential",
            f"{seq['errors']} / {seq['crosstalk']}",
            float("nan"),
        ),
        (
            "answers naming their own codeword",
            f"{conc['answers_with_own_codeword']}/{args.concurrency}",
            "sequential",
            f"{seq['answers_with_own_codeword']}/{args.concurrency}",
            float("nan"),
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'simone':>14}  {'peer':<20} {'peer value':>12}  {'ratio':>6}")
    for name, value, peer, peer_value, ratio in rows:
        shown = "" if ratio != ratio else f"{ratio:.2f}x"
        print(f"{name:<{width}}  {value:>14}  {peer:<20} {peer_value:>12}  {shown:>6}")
    out = Path(__file__).resolve().parent / "results" / "end_to_end.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwritten {out}")
    if conc["errors"] or conc["crosstalk"]:
        raise SystemExit("errors or cross-talk under concurrency")


if __name__ == "__main__":
    main()
