"""Whole-process latency users feel: ``simone --help``, ``search``, warm ``ask`` and ``mcp`` to initialize.

Each simone command runs beside its reference command, interleaved round by round in one run (the
machine is shared and noisy: compare the ratios, not the seconds):

* ``simone --help``          vs ``python -c "import argparse, rich"`` (what any rich CLI pays);
* ``simone search QUERY``    vs the engine floor: a fresh Python that imports lancedb, onnxruntime and
  tokenizers, opens the same table, loads the same int8 graph, embeds the query and runs LanceDB's own
  vector search (``limit 10``) — what one query costs in a fresh process before simone does anything;
* ``simone ask QUESTION``    (warm: the index and the int8 graph exist) vs the same engine floor;
* ``simone mcp`` spawn → ``initialize`` answered vs a bare official-SDK stdio server (``mcp`` low-level
  ``Server``) that registers the same tool list (read from ``simone mcp``'s ``tools/list``) and nothing
  else; then simone's first ``retrieve_context`` call (the first-call latency, index and model loaded
  on first use);
* ``simone mcp`` spawn → ``tools/list`` answered vs the same bare server: simone answers from the lists
  it ships (``simone.agents.mcp._tool_list``) while its runtime opens; the ``(live)`` row is the
  fallback, ``tools/list`` waiting for the runtime (forced here by a non-default
  ``router.max_query_chars``, which the shipped lists do not hold for — as a plugin provider factory or
  a PostgreSQL memory store would).

The ``mcp`` rows' CPU seconds are the whole session's: simone's includes opening its runtime (and, on
the ``mcp`` and ``mcp tools/list`` rows, the first ``retrieve_context`` call), which the bare server
never does.

Each figure is wall seconds (min / median / max over ``--runs``) and the child's CPU seconds (user +
system, median), which moves much less than wall time on a shared machine.

Run: ``python benchmarks/startup.py [--runs 5] [--label before|after]``; writes
``benchmarks/results/startup[-LABEL].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _index_common import save

QUERY = "how are rankings fused"
QUESTION = "How does simone fuse rankings?"
PYTHON = sys.executable
_SCRIPT = Path(PYTHON).parent / "simone"
SIMONE = [str(_SCRIPT)] if _SCRIPT.is_file() else [PYTHON, "-m", "simone.agents.cli"]
"""The ``simone`` console script of this interpreter's environment (what a user runs)."""

ENGINE_FLOOR = r"""
import sys, glob, os
import numpy as np
import lancedb, onnxruntime
from tokenizers import Tokenizer
data_dir, model, tokenizer, query = sys.argv[1:5]
tok = Tokenizer.from_file(tokenizer)
tok.enable_truncation(256)
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = 2
session = onnxruntime.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
enc = tok.encode(query)
ids = np.array([enc.ids], dtype=np.int64)
mask = np.array([enc.attention_mask], dtype=np.int64)
feeds = {"input_ids": ids, "attention_mask": mask}
if any(i.name == "token_type_ids" for i in session.get_inputs()):
    feeds["token_type_ids"] = np.zeros_like(ids)
hidden = session.run(None, feeds)[0]
vec = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
vec = vec / np.linalg.norm(vec, axis=1, keepdims=True)
db = lancedb.connect(os.path.join(data_dir, "index"))
table = db.open_table("documents")
column = next(f.name for f in table.schema if str(f.type).startswith("fixed_size_list"))
rows = table.search(vec[0], vector_column_name=column).limit(10).to_list()
print(len(rows))
"""

BARE_MCP = r"""
import json, sys
import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
tools = [types.Tool(**t) for t in json.loads(open(sys.argv[1], encoding="utf-8").read())]
async def list_tools(ctx, params):
    return types.ListToolsResult(tools=tools)
async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="{}")])
server = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
async def main():
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())
anyio.run(main)
"""


BREAKDOWN = r"""
import json, sys, time
t0 = time.perf_counter()
import lancedb, onnxruntime, tokenizers  # the engine (what the engine floor imports too)
te = time.perf_counter()
import anyio
from simone.agents.cli import _search  # the command's own imports (rich, the runtime's faces)
from simone.providers.documents import DocumentIndex, DocumentIndexProvider
from simone.runtime import Caller, Router, TrustedContext, load_settings
t1 = time.perf_counter()
marks = {}
async def main():
    settings = load_settings()
    async with DocumentIndex.open(settings) as index:
        marks["open"] = time.perf_counter()
        space = index.collection.space
        await index.chain.embed(["warm"], space=space, kind="query")  # loads the model
        marks["model"] = time.perf_counter()
        router = Router([DocumentIndexProvider(index)])
        context = TrustedContext(actor="bench", caller=Caller.ORCHESTRATOR)
        await router.retrieve(router.request(sys.argv[1]), context)
        marks["query"] = time.perf_counter()
anyio.run(main)
print(json.dumps({"import lancedb, onnxruntime, tokenizers": te - t0, "import simone's modules": t1 - te,
                  "open store": marks["open"] - t1,
                  "load model": marks["model"] - marks["open"], "query": marks["query"] - marks["model"]}))
"""
"""``simone search``'s steps, timed inside one fresh process (after the interpreter's own start)."""

ENGINE_PACKAGES = frozenset(
    {
        "lancedb",
        "lance",
        "lance_namespace",
        "lance_namespace_urllib3_client",
        "pandas",
        "pyarrow",
        "numpy",
        "onnxruntime",
        "tokenizers",
        "urllib3",
        "pytz",
        "dateutil",
        "six",
        "deprecation",
        "packaging",
        "tqdm",
        "overrides",
    }
)
"""What LanceDB and onnxruntime import (the engine floor pays for these too)."""


def breakdown(env: dict[str, str], cwd: Path, runs: int) -> dict[str, Any]:
    """Where a fresh ``simone search`` spends its time: interpreter, imports (by owner), steps."""
    steps: dict[str, list[float]] = {}
    owners: dict[str, list[float]] = {}
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [PYTHON, "-X", "importtime", "-c", BREAKDOWN, QUERY],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"the breakdown child failed: {done.stderr[-2000:]}")
        timed_steps = json.loads(done.stdout.strip().splitlines()[-1])
        for name, seconds in timed_steps.items():
            steps.setdefault(name, []).append(seconds)
        steps.setdefault("interpreter and exit", []).append(wall - sum(timed_steps.values()))
        per_owner: dict[str, float] = {}
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if (
                not line.startswith("import time:")
                or len(parts) != 3
                or not parts[0].split(":")[1].strip().isdigit()
            ):
                continue
            name = parts[2].strip()
            top = name.split(".")[0]
            owner = (
                "engine (lancedb, pyarrow, pandas, numpy, onnxruntime…)"
                if top in ENGINE_PACKAGES
                else "simone"
                if top == "simone"
                else "pydantic"
                if top.startswith(("pydantic", "annotated_types", "typing_inspection"))
                else "rich"
                if top in ("rich", "pygments", "markdown_it", "mdurl")
                else "httpx and its deps"
                if top in ("httpx", "httpcore", "idna", "h11", "certifi", "sniffio", "click")
                else f"other ({top})"
            )
            per_owner[owner] = per_owner.get(owner, 0.0) + int(parts[0].split(":")[1]) / 1e6
        for owner, seconds in per_owner.items():
            owners.setdefault(owner, []).append(seconds)
    return {
        "steps_s": {name: round(statistics.median(values), 3) for name, values in steps.items()},
        "imports_by_owner_s": _grouped_others(
            {name: statistics.median(values) for name, values in owners.items()}, shown=4
        ),
        "note": "imports timed with -X importtime (self time summed by owner; the tracer inflates it ~1.3x)",
    }


def _grouped_others(owners: dict[str, float], *, shown: int) -> dict[str, float]:
    """Owners by time, the ``shown`` largest "other (package)" named and the rest summed as "other"."""
    named = {k: v for k, v in owners.items() if not k.startswith("other (")}
    others = sorted(((v, k) for k, v in owners.items() if k.startswith("other (")), reverse=True)
    named.update({k: v for v, k in others[:shown]})
    if others[shown:]:
        named["other (the rest)"] = sum(v for v, _ in others[shown:])
    return {k: round(v, 3) for k, v in sorted(named.items(), key=lambda item: -item[1])}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd`` (its output discarded; a failure raises)."""
    cpu = _cpu()
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    return wall, _cpu() - cpu


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _receive(proc: subprocess.Popen[bytes], want_id: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"the MCP server closed its stdout: {err[-2000:]}")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == want_id:
            return message


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "startup-bench", "version": "1"},
    },
}


def mcp_session(cmd: list[str], env: dict[str, str], cwd: Path, *, call: bool) -> dict[str, Any]:
    """Spawn → initialize answered (s); then tools/list and, with ``call``, one retrieve_context (s)."""
    cpu = _cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        _send(proc, INITIALIZE)
        init = _receive(proc, 1)
        if "result" not in init:
            raise RuntimeError(f"initialize failed: {init}")
        initialized = time.perf_counter() - started
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        tools = _receive(proc, 2)["result"]["tools"]
        listed = time.perf_counter() - started
        first_call = None
        if call:
            began = time.perf_counter()
            _send(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "retrieve_context", "arguments": {"query": QUERY}},
                },
            )
            reply = _receive(proc, 3)
            if reply.get("result", {}).get("isError"):
                raise RuntimeError(f"retrieve_context failed: {reply}")
            first_call = time.perf_counter() - began
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {
        "initialize_s": initialized,
        "tools_list_s": listed,
        "first_call_s": first_call,
        "tools": tools,
        "cpu_s": _cpu() - cpu,
    }


LIVE_ROW = "mcp tools/list (live)"
LIVE_MAX_QUERY_CHARS = 8000
"""A ``router.max_query_chars`` the shipped tool lists do not hold for: ``tools/list`` waits for the runtime."""


def _query_limit(tools: list[dict[str, Any]]) -> int | None:
    """The ``maxLength`` of ``retrieve_context``'s query in a ``tools/list`` answer."""
    found = next((t for t in tools if t["name"] == "retrieve_context"), None)
    return None if found is None else found["inputSchema"]["properties"]["query"].get("maxLength")


def model_path(data_dir: Path) -> Path:
    """The int8 graph simone built (the shared user cache, else the data directory's), else the packaged one."""
    candidates = sorted(data_dir.glob("models/*.onnx"))
    if not candidates:
        import platformdirs

        cache = Path(platformdirs.user_cache_dir("simone", appauthor=False))
        candidates = sorted(cache.glob("**/all-MiniLM-L6-v2.int8*.onnx"))
    if candidates:
        return candidates[-1]
    from simone.providers.embeddings.minilm import packaged_model_path

    return packaged_model_path()


def stats(values: list[float]) -> dict[str, float]:
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "shared_data",
        nargs="?",
        default=None,
        help="unused (benchmarks/run_all.py passes the shared data dir)",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--label", default="", help="suffix of the results file (e.g. before, after)")
    parser.add_argument("--data-dir", type=Path, default=None, help="a data dir to use (default: a temp one)")
    parser.add_argument(
        "--only",
        choices=("help", "search", "ask", "mcp"),
        action="append",
        default=None,
        help="measure only these commands (repeatable; default: all)",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also time simone search's steps (imports by owner, open, model, query) in a fresh process",
    )
    args = parser.parse_args(argv)
    only = set(args.only or ("help", "search", "ask", "mcp"))
    owned = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="simone-startup-")) if owned else args.data_dir
    env = {**os.environ, "SIMONE_DATA_DIR": str(data_dir), "PYTHONDONTWRITEBYTECODE": "0"}
    env.pop("SIMONE_CONFIG", None)
    workdir = Path(tempfile.mkdtemp(prefix="simone-startup-cwd-"))  # no ./simone.toml is picked up
    scratch = Path(tempfile.mkdtemp(prefix="simone-startup-tools-"))
    try:
        # warm-up: index the handbook into the default collection (since the handbook answers from its
        # own collection, an empty index would leave `search` nothing to find), then build the int8
        # graph with a first `simone ask`
        from simone.agents import bundled_docs

        handbook = bundled_docs()
        if handbook is None:
            raise RuntimeError("simone's bundled handbook is missing from this install")
        indexed = subprocess.run(
            [*SIMONE, "index", str(handbook)],
            env=env,
            cwd=workdir,
            capture_output=True,
            text=True,
            check=False,
        )
        if indexed.returncode != 0:
            raise RuntimeError(f"simone index of the handbook failed: {indexed.stderr[-2000:]}")
        first = subprocess.run(
            [*SIMONE, "ask", QUESTION], env=env, cwd=workdir, capture_output=True, text=True, check=False
        )
        if first.returncode not in (0, 3):
            raise RuntimeError(f"the first simone ask failed: {first.stderr[-2000:]}")
        import simone.providers.embeddings.minilm as minilm

        tokenizer = Path(minilm.__file__).parent / "tokenizer.json"
        model = model_path(data_dir)
        floor = [PYTHON, "-c", ENGINE_FLOOR, str(data_dir), str(model), str(tokenizer), QUERY]
        probe = mcp_session([*SIMONE, "mcp", "--actor", "bench"], env, workdir, call=False)
        tools_file = scratch / "tools.json"
        tools_file.write_text(
            json.dumps(
                [
                    {"name": t["name"], "description": t.get("description"), "input_schema": t["inputSchema"]}
                    for t in probe["tools"]
                ]
            ),
            encoding="utf-8",
        )
        bare = [PYTHON, "-c", BARE_MCP, str(tools_file)]
        pairs: dict[str, tuple[list[str], list[str]]] = {
            "help": ([*SIMONE, "--help"], [PYTHON, "-c", "import argparse, rich"]),
            "search": ([*SIMONE, "search", QUERY], floor),
            "ask (warm)": ([*SIMONE, "ask", QUESTION], floor),
        }
        pairs = {k: v for k, v in pairs.items() if k.split()[0] in only}
        mcp_rows = ["mcp", "mcp tools/list", LIVE_ROW] if "mcp" in only else []
        live_env = {**env, "SIMONE_ROUTER__MAX_QUERY_CHARS": str(LIVE_MAX_QUERY_CHARS)}
        walls: dict[str, dict[str, list[float]]] = {k: {"ours": [], "peer": []} for k in [*pairs, *mcp_rows]}
        cpus: dict[str, dict[str, list[float]]] = {k: {"ours": [], "peer": []} for k in [*pairs, *mcp_rows]}
        first_calls: list[float] = []
        for _ in range(args.runs):
            for name, (ours, peer) in pairs.items():
                for side, cmd in (("ours", ours), ("peer", peer)):
                    wall, cpu = timed(cmd, env, workdir)
                    walls[name][side].append(wall)
                    cpus[name][side].append(cpu)
            if not mcp_rows:
                continue
            ours_mcp = mcp_session([*SIMONE, "mcp", "--actor", "bench"], env, workdir, call=True)
            peer_mcp = mcp_session(bare, env, workdir, call=False)
            live_mcp = mcp_session([*SIMONE, "mcp", "--actor", "bench"], live_env, workdir, call=False)
            if _query_limit(live_mcp["tools"]) != LIVE_MAX_QUERY_CHARS:
                raise RuntimeError("the (live) row's tools/list was not the live list")
            for row, key, ours_run in (
                ("mcp", "initialize_s", ours_mcp),
                ("mcp tools/list", "tools_list_s", ours_mcp),
                (LIVE_ROW, "tools_list_s", live_mcp),
            ):
                walls[row]["ours"].append(ours_run[key])
                walls[row]["peer"].append(peer_mcp[key])
                cpus[row]["ours"].append(ours_run["cpu_s"])
                cpus[row]["peer"].append(peer_mcp["cpu_s"])
            first_calls.append(float(ours_mcp["first_call_s"]))
        where = breakdown(env, workdir, args.runs) if args.breakdown else None
    finally:
        if owned:
            shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    peers = {
        "help": 'python -c "import argparse, rich"',
        "search": "engine floor (lancedb + onnxruntime, one vector query)",
        "ask (warm)": "engine floor (lancedb + onnxruntime, one vector query)",
        "mcp": "bare official-SDK stdio server, same tool list",
        "mcp tools/list": "the same bare server: spawn to tools/list answered",
        LIVE_ROW: "the same bare server: spawn to tools/list answered",
    }
    targets = {"help": 1.2, "mcp": 1.5, "mcp tools/list": 1.2}
    rows: list[dict[str, Any]] = []
    print(
        f"{args.runs} runs, interleaved; wall s min/median/max; CPU s median (shared machine: read the ratios)"
    )
    header = f"{'command':<21} {'ours wall':>22} {'peer wall':>22} {'ratio':>6} {'ours cpu':>9} {'peer cpu':>9}  peer"
    print(header)
    summary: list[dict[str, Any]] = []
    for name in walls:
        mine, theirs = stats(walls[name]["ours"]), stats(walls[name]["peer"])
        ratio = mine["median"] / theirs["median"] if theirs["median"] else float("nan")
        cpu_ours = statistics.median(cpus[name]["ours"])
        cpu_peer = statistics.median(cpus[name]["peer"])
        row = {
            "command": name,
            "ours_wall_s": mine,
            "peer_wall_s": theirs,
            "ratio_median": round(ratio, 3),
            "ours_cpu_s": round(cpu_ours, 3),
            "peer_cpu_s": round(cpu_peer, 3),
            "peer": peers[name],
        }
        rows.append(row)
        fmt = "{min:.2f}/{median:.2f}/{max:.2f}"
        print(
            f"{name:<21} {fmt.format(**mine):>22} {fmt.format(**theirs):>22} {ratio:>6.2f} "
            f"{cpu_ours:>9.2f} {cpu_peer:>9.2f}  {peers[name]}"
        )
        item: dict[str, Any] = {
            "section": "Speed — start-up",
            "metric": f"simone {name}: process wall time, median of {args.runs} (s)",
            "ours": mine["median"],
            "peer_name": peers[name],
            "peer": theirs["median"],
            "ratio": round(ratio, 3),
            "better": "lower",
        }
        if name in targets:
            item["target"] = {"on": "ratio", "op": "<=", "value": targets[name]}
        summary.append(item)
    call = stats(first_calls) if first_calls else None
    if call is not None:
        print(f"mcp first retrieve_context call: {call['min']:.2f}/{call['median']:.2f}/{call['max']:.2f} s")
    if where is not None:
        print(f"\nwhere a fresh simone search spends its time (median of {args.runs}; {where['note']}):")
        for name, seconds in where["steps_s"].items():
            print(f"  step    {name:<58} {seconds:6.3f} s")
        for name, seconds in where["imports_by_owner_s"].items():
            print(f"  import  {name:<58} {seconds:6.3f} s")
    label = args.label or ("" if args.only is None else "partial")  # a subset never replaces the full run
    name = f"startup-{label}" if label else "startup"
    path = save(
        name,
        {
            "runs": args.runs,
            "rows": rows,
            "mcp_first_call_s": call,
            "search_breakdown": where,
            "summary": summary,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
