"""Run every benchmark of the project and write one report: benchmarks/results/report.md and report.json.

Usage:
    python benchmarks/run_all.py [DATA_DIR] [--quick] [--only NAME ...] [--skip NAME ...]
                                 [--args NAME="ARGS"] [--timeout-factor F] [--report-only] [--list]

DATA_DIR defaults to ../shared/data (BEIR SciFact, XQuAD-R, the 181 web pages). Each benchmark runs as
its own process (``sys.executable benchmarks/<name>.py DATA_DIR ...``), one after another — never in
parallel, since they time things — under a per-benchmark timeout; a failure or a timeout does not stop
the others and shows in the report as a red row with its exit code and last stderr lines. Each
benchmark writes its own ``benchmarks/results/<name>.json`` (running one overwrites it); the report
puts each figure beside its peer measured in the same run (bm25s, LanceDB's default hybrid, the
packaged embedder, bare ONNX, exact search, a cold cache …) with the ratio ours/peer and, where an
issue set a target, whether it is met — computed from the figures (see ``benchmarks/_report.py``),
plus the machine (CPU, cores, RAM, load average at start and end, OS, Python, library versions, git
commit, date) and each benchmark's wall time and exit status.

Options:
    --quick           pass each benchmark's own subset flags (see ``--list``) so the whole run takes
                      minutes; the report is marked QUICK — its figures are not the full ones. Do not
                      commit the results JSON of a quick run.
    --only / --skip   run only these benchmarks / all but these; the others keep their existing
                      results JSON and are shown as not run by this command.
    --args            extra arguments for one benchmark, e.g. ``--args index_speed="--docs 500"``.
    --report-only     run nothing: re-render the report from the results JSON already there
                      (``--results-dir DIR`` reads them from, and writes the report to, another folder).
    --list            print the benchmarks with their arguments and timeouts, and exit.

A benchmark script added to benchmarks/ is picked up without registration (its quick flag is
``--quick`` when the script mentions one); its JSON is read through a top-level ``summary`` list of
``{"metric", "ours", "peer_name", "peer", "ratio", "target", "met", "note"}`` objects.
Exit status: 0 when every benchmark that was run finished, 1 when one failed or timed out, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

from _report import (
    RunRecord,
    build_report,
    describe_machine,
    load_average,
    sha256_file,
    write_report,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
LOGS = HERE / ".cache" / "run_all"
STDERR_TAIL = 20
"""Lines of a benchmark's stderr kept for the report (the last five are shown in the Markdown)."""
KILL_GRACE_S = 10.0
"""Seconds a timed-out benchmark gets between SIGTERM and SIGKILL."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark script: its arguments in full and quick runs, its timeouts, its report section.

    Args:
        name: the script's stem; its results are ``results/<name>.json``.
        section: where its red row goes when it produced no figures.
        quick: its own subset flags for ``--quick`` (None: none known, so a quick run skips it).
        timeout_s: the limit of a full run; ``quick_timeout_s`` of a quick one.
        takes_data_dir: whether the script takes DATA_DIR as its first argument.
        quick_note: what a quick run leaves out, shown in the report.
        folder: where the script is (benchmarks/).
        script_name: the script's stem when it is not ``name`` (another run of the same script).
        args: its arguments in a full run.
    """

    name: str
    section: str
    quick: tuple[str, ...] | None
    timeout_s: float = 3600
    quick_timeout_s: float = 900
    takes_data_dir: bool = True
    quick_note: str = ""
    folder: Path = HERE
    script_name: str = ""
    args: tuple[str, ...] = ()

    @property
    def script(self) -> Path:
        """The script's path."""
        return self.folder / f"{self.script_name or self.name}.py"

    @property
    def results_file(self) -> str:
        """The file name of its results JSON in benchmarks/results/."""
        return f"{self.name}.json"


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("router_overhead", "Speed — router", ("--runs", "100"), 600, 300, takes_data_dir=False),
    Benchmark(
        "lexical_quality",
        "Quality — SciFact",
        ("--langs", "en,zh"),
        1800,
        600,
        quick_note="XQuAD-R en, zh only",
    ),
    Benchmark(
        "embedder_speed",
        "Speed — embedder",
        ("--sentences", "64", "--rounds", "3", "--ndcg-docs", "300"),
        7200,
        900,
        quick_note="64 sentences, 3 rounds, nDCG over the first 300 SciFact docs",
    ),
    Benchmark(
        "index_quality",
        "Quality — SciFact",
        ("--no-scifact", "--xquad-queries", "20", "--langs", "en,de,zh"),
        7200,
        900,
        quick_note="SciFact skipped (the script has no query subset: 809 queries × 5 systems); XQuAD-R en, de, zh × 20",
    ),
    Benchmark(
        "index_speed",
        "Speed — indexing",
        ("--docs", "100", "--queries", "20", "--rows", "20000"),
        7200,
        1200,
        quick_note="100 docs, 20 queries, 20k synthetic chunks instead of 100k",
    ),
    Benchmark(
        "index_speed_engine",
        "Speed — query latency",
        ("--engine-only", "--queries", "20"),
        3600,
        900,
        quick_note="20 queries",
        script_name="index_speed",
        args=("--engine-only", "--queries", "100"),
    ),
    Benchmark(
        "index_speed_engine_1000000",
        "Speed — query latency",
        None,  # builds a 1M-row table first (~15 min on 2 cores): not in a quick run
        5400,
        script_name="index_speed",
        args=("--engine-only", "--rows", "1000000", "--queries", "100"),
    ),
    Benchmark(
        "frontier",
        "Speed — query latency",
        ("--quick",),
        3600,
        900,
        quick_note="50 timed queries, one run (nDCG on all 809 claims)",
        # the 1M frontier is run by hand (benchmarks/README.md): a --quick of it would have to build the
        # 1M table first, and a registered run without subset flags gets --quick at 100k
        args=("--rows", "100000", "--runs", "2"),
    ),
    Benchmark(
        "memory_speed",
        "Speed — memory",
        ("--sizes", "1000,10000", "--queries", "50", "--per-op", "200"),
        3600,
        600,
        quick_note="1k and 10k records only (the 20 ms target is at 100k: not measured)",
    ),
    Benchmark(
        "web_research", "Speed — web research", ("--questions", "10"), 1800, 600, quick_note="10 questions"
    ),
    Benchmark(
        "end_to_end",
        "End to end",
        ("--concurrency", "10", "--rounds", "1"),
        1800,
        600,
        quick_note="10 concurrent asks, 1 warm round",
    ),
    Benchmark(
        "multilingual",
        "Quality — XQuAD-R",
        ("--queries", "20", "--langs", "en,de,zh", "--absent", "30", "--product-queries", "5"),
        7200,
        900,
        quick_note="XQuAD-R en, de, zh × 20 questions; 30 absent-topic questions per direction",
    ),
    Benchmark(
        "multilingual-held-out",
        "Quality — XQuAD-R",
        ("--split", "held-out", "--queries", "20", "--langs", "en,de,zh"),
        7200,
        900,
        quick_note="XQuAD-R en, de, zh × 20 held-out questions",
        script_name="multilingual",
        args=("--split", "held-out", "--queries", "0"),
    ),
    Benchmark("scale", "Speed — scale", None, 4 * 3600, 1800),
)
"""The registered benchmarks, in the order they run. Their quick flags are their own subset options."""


def discover() -> list[Benchmark]:
    """The registered benchmarks plus any other ``benchmarks/*.py`` script (not ``_*.py``, not this one)."""
    known = {b.name for b in BENCHMARKS}
    found = list(BENCHMARKS)
    for script in sorted(HERE.glob("*.py")):
        name = script.stem
        if name.startswith("_") or name == "run_all" or name in known:
            continue
        found.append(Benchmark(name, "Other", None, 3600, 900))
    return [_with_quick_flag(b) for b in found]


def _with_quick_flag(bench: Benchmark) -> Benchmark:
    """A benchmark with no registered subset flags gets ``--quick`` when its script defines that flag."""
    if bench.quick is not None or not bench.script.is_file():
        return bench
    if '"--quick"' in bench.script.read_text(encoding="utf-8", errors="replace"):
        return replace(bench, quick=("--quick",), quick_note=bench.quick_note or "its own --quick subset")
    return bench


def _pump(stream: IO[str], log: IO[str], echo: IO[str] | None, prefix: str, tail: deque[str] | None) -> None:
    """Copy a child's output line by line into its log (and our terminal), keeping the last lines."""
    for line in stream:
        log.write(line)
        log.flush()
        if tail is not None and line.strip(" \t\n^~"):  # not blank, not a traceback's carets
            tail.append(line.rstrip())
        if echo is not None:
            echo.write(f"{prefix}{line}")
            echo.flush()


def _stop(process: subprocess.Popen[str]) -> None:
    """End the benchmark's process group (it may have started servers or CLI processes of its own)."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def run_one(
    bench: Benchmark,
    *,
    data_dir: str,
    quick: bool,
    extra: Sequence[str] = (),
    timeout_factor: float = 1.0,
    results_dir: Path = RESULTS,
    logs_dir: Path = LOGS,
    echo: bool = True,
    python: str = sys.executable,
) -> RunRecord:
    """Run one benchmark as a subprocess under its timeout and say how it went.

    Its figures count only when its results JSON was written during this run: a benchmark that exits
    without writing one is ``failed`` even with exit status 0, and an old file is never shown as new.
    """
    record = RunRecord(
        name=bench.name,
        script=str(bench.script.relative_to(ROOT))
        if bench.script.is_relative_to(ROOT)
        else str(bench.script),
        section=bench.section,
        status="failed",
        quick=quick,
        results_file=bench.results_file,
        note=bench.quick_note if quick else "",
    )
    if not bench.script.is_file():
        record.note = f"script {bench.script} not found"
        return record
    args = list(bench.quick or ()) if quick else list(bench.args)
    command = [python, record.script, *([data_dir] if bench.takes_data_dir else []), *args, *extra]
    record.command = ["python", *command[1:]]
    record.timeout_s = round((bench.quick_timeout_s if quick else bench.timeout_s) * timeout_factor)
    results = results_dir / bench.results_file
    logs_dir.mkdir(parents=True, exist_ok=True)
    record.started_at = datetime.now(UTC).isoformat(timespec="seconds")
    record.load_start = _load1()
    started_ns = time.time_ns()
    started = time.perf_counter()
    tail: deque[str] = deque(maxlen=STDERR_TAIL)
    with (
        (logs_dir / f"{bench.name}.stdout.log").open("w", encoding="utf-8") as out_log,
        (logs_dir / f"{bench.name}.stderr.log").open("w", encoding="utf-8") as err_log,
    ):
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
        assert process.stdout is not None and process.stderr is not None
        prefix = f"[{bench.name}] "
        pumps = [
            threading.Thread(
                target=_pump, args=(process.stdout, out_log, sys.stdout if echo else None, prefix, None)
            ),
            threading.Thread(
                target=_pump, args=(process.stderr, err_log, sys.stderr if echo else None, prefix, tail)
            ),
        ]
        for pump in pumps:
            pump.start()
        timed_out = False
        try:
            process.wait(timeout=record.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _stop(process)  # on a timeout, and when run_all itself is interrupted
            for pump in pumps:
                pump.join()
    record.wall_s = round(time.perf_counter() - started, 2)
    record.load_end = _load1()
    record.exit_code = process.returncode
    record.stderr_tail = list(tail)
    fresh = results.is_file() and results.stat().st_mtime_ns >= started_ns
    record.results_sha256 = sha256_file(results) if fresh else None
    logs = f"logs: {_shown(logs_dir / bench.name)}.std{{out,err}}.log"
    if timed_out:
        record.status = "timeout"
    elif not fresh:
        record.status = "failed"
        problem = f"it wrote no {results.name}"
        record.note = "; ".join(x for x in (record.note, problem) if x)
    else:
        record.status = "ok" if process.returncode == 0 else "exit-nonzero"
    if record.status != "ok":
        record.note = "; ".join(x for x in (record.note, logs) if x)
    return record


def carried(
    bench: Benchmark, previous: dict[str, RunRecord], reason: str, results_dir: Path = RESULTS
) -> RunRecord:
    """The record of a benchmark not run now: the earlier run_all record when its results are unchanged."""
    path = results_dir / bench.results_file
    digest = sha256_file(path)
    earlier = previous.get(bench.name)
    ran = earlier is not None and earlier.status != "not-run" and earlier.started_at is not None
    if earlier is not None and ran and digest is not None and earlier.results_sha256 == digest:
        mark = f"carried from the run of {earlier.started_at}"
        if mark not in earlier.note:
            earlier.note = "; ".join(x for x in (earlier.note, mark) if x)
        return earlier
    note = reason
    if digest is not None:
        written = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
        note = f"{reason}; figures from {path.name} written {written}"
    return RunRecord(
        name=bench.name,
        script=f"benchmarks/{bench.script.name}",
        section=bench.section,
        status="not-run",
        results_file=bench.results_file,
        results_sha256=digest,
        note=note,
    )


def previous_report(results_dir: Path) -> dict[str, Any]:
    """The last report.json, or an empty dict when there is none (or it cannot be read)."""
    try:
        data = json.loads((results_dir / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load1() -> float | None:
    """The 1-minute load average now."""
    loads = load_average()
    return loads[0] if loads else None


def _shown(path: Path) -> str:
    """A path relative to the repository when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def parse_args(argv: Sequence[str] | None, names: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", nargs="?", default=str((ROOT.parent / "shared" / "data").resolve()))
    parser.add_argument("--quick", action="store_true", help="each benchmark's own subset flags (minutes)")
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", choices=names)
    parser.add_argument("--skip", nargs="+", default=[], metavar="NAME", choices=names)
    parser.add_argument(
        "--args", action="append", default=[], metavar='NAME="ARGS"', help="extra arguments for one benchmark"
    )
    parser.add_argument("--timeout-factor", type=float, default=1.0, help="multiply every timeout")
    parser.add_argument("--report-only", action="store_true", help="re-render from the existing results")
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS,
        help="with --report-only: read the results JSON from this folder and write the report there",
    )
    parser.add_argument("--list", action="store_true", help="print the benchmarks and exit")
    parser.add_argument("--quiet", action="store_true", help="do not echo the benchmarks' output")
    args = parser.parse_args(argv)
    extra: dict[str, list[str]] = {}
    for item in args.args:
        name, sep, value = item.partition("=")
        if not sep or name not in names:
            parser.error(f"--args takes NAME=ARGS with NAME one of {', '.join(names)}; got {item!r}")
        extra.setdefault(name, []).extend(shlex.split(value))
    args.extra = extra
    if args.results_dir != RESULTS and not args.report_only:
        parser.error("--results-dir goes with --report-only (the benchmarks write to benchmarks/results/)")
    if args.timeout_factor <= 0:
        parser.error("--timeout-factor must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    benchmarks = discover()
    names = [b.name for b in benchmarks]
    args = parse_args(argv, names)
    if args.list:
        for bench in benchmarks:
            quick = (
                " ".join(bench.quick) if bench.quick is not None else "(no subset flags: skipped by --quick)"
            )
            print(
                f"{bench.name:<16} full timeout {bench.timeout_s:>6.0f} s | quick: {quick} "
                f"(timeout {bench.quick_timeout_s:.0f} s){'' if bench.script.is_file() else '  [script missing]'}"
            )
        return 0
    selected = [b for b in benchmarks if (not args.only or b.name in args.only) and b.name not in args.skip]
    results: Path = args.results_dir
    earlier = previous_report(results)
    previous = {
        r["name"]: RunRecord.from_dict(r)
        for r in earlier.get("runs", [])
        if isinstance(r, dict) and "name" in r
    }
    if not args.report_only and not Path(args.data_dir).is_dir():
        print(
            f"no data folder at {args.data_dir}; pass DATA_DIR (see ../shared/data/README.md)",
            file=sys.stderr,
        )
        return 2
    # A SIGTERM to run_all unwinds like Ctrl-C, so the running benchmark's process group is ended too.
    if not args.report_only:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    start_load = load_average()
    machine = describe_machine(ROOT)
    runs: list[RunRecord] = []
    ran: list[RunRecord] = []
    for bench in benchmarks:
        if args.report_only:
            runs.append(carried(bench, previous, "not run (--report-only)", results))
        elif bench not in selected:
            runs.append(carried(bench, previous, "not selected (--only/--skip)", results))
        elif args.quick and bench.quick is None:
            runs.append(carried(bench, previous, "not run: it has no quick subset flags", results))
        else:
            print(f"\n=== {bench.name} ({'quick' if args.quick else 'full'}) ===", flush=True)
            record = run_one(
                bench,
                data_dir=args.data_dir,
                quick=args.quick,
                extra=args.extra.get(bench.name, ()),
                timeout_factor=args.timeout_factor,
                echo=not args.quiet,
                results_dir=results,
            )
            print(
                f"=== {bench.name}: {record.status}, exit {record.exit_code}, {record.wall_s} s ===",
                flush=True,
            )
            runs.append(record)
            ran.append(record)
    # report-only: figures carried from an earlier run_all run were measured on that run's machine
    carried_runs = args.report_only and any(r.status != "not-run" for r in runs)
    if args.report_only:
        if carried_runs and isinstance(earlier.get("machine"), dict):
            machine = {**earlier["machine"], "rendered_on": machine}
        else:
            machine["load_average_start"] = machine["load_average_end"] = start_load
            machine["note"] = "described when the report was rendered, not when the figures were measured"
    else:
        machine["load_average_start"] = start_load
        machine["load_average_end"] = load_average()
    mode: Literal["full", "quick", "report-only"] = (
        "report-only" if args.report_only else ("quick" if args.quick else "full")
    )
    data_dir = (earlier.get("data_dir") if carried_runs else None) if args.report_only else args.data_dir
    report = build_report(mode=mode, data_dir=data_dir, machine=machine, runs=runs, results_dir=results)
    json_path, md_path = write_report(report, results)
    tally = report["tally"]
    print(
        f"\ntargets: {tally['met']} met, {tally['not_met']} not met, {tally['not_measured']} not measured"
        + (f"; failed: {', '.join(tally['failed_benchmarks'])}" if tally["failed_benchmarks"] else "")
    )
    print(f"wrote {_shown(md_path)} and {_shown(json_path)}")
    if args.quick:
        print(
            "QUICK run: do not commit the results JSON it overwrote (git checkout benchmarks/results/<name>.json)"
        )
    broken = [r.name for r in ran if r.status in ("failed", "timeout")]
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
