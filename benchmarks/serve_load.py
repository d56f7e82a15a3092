"""``simone serve`` under load: many MCP clients with distinct tokens, 1 worker against 2, one run.

Usage: python benchmarks/serve_load.py [--clients 50,200] [--seconds 20] [--projects 10] [--api-calls 60]

In one run, on this machine's loopback:

1. Start the shared backends' servers (PostgreSQL memory, Redis research cache, moto's S3 for the
   document index; the same classes the tests use) and index one small handbook per project
   (``--projects``), each naming its own launch code ``PRJnnn``.
2. Create one token per client (actor ``a<i>``, project ``p<i mod projects>``) and start
   ``simone serve`` twice, with 1 worker and with 2, side by side on two ports; for each, the time
   from starting the process to the first answered ``tools/call``.
3. For each client count, against 1 worker then 2 workers: every client (the official ``mcp`` client
   over streamable HTTP) loops for ``--seconds``: ``retrieve_context`` about its project, then a memory
   tool (``create_note`` every fourth round, else ``list_notes``). Calls/s, p50/p95, errors, and
   cross-talk: a result holding another project's code or another actor's note marker.
4. The token attacks (missing, wrong, garbage, expired, revoked, scope in arguments, another actor's
   ids, an orchestrator calling ``web_research``, a token on a project it may not read): how many were
   tried and how many got through.
5. A ``retrieve_context`` call's p50 over HTTP (one client, no load, 1 worker) against the Python API
   in this process on the same backends, interleaved in blocks.

The clients run in this process, on the same cores as the servers, moto and PostgreSQL: the figures are
for the whole machine, not for the server alone. Writes benchmarks/results/serve_load.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from _index_common import percentile, save  # noqa: E402
from servers_postgres import TemporaryPostgres  # noqa: E402
from servers_redis import RedisServer  # noqa: E402
from servers_s3 import FAKE_CREDENTIALS, S3Server  # noqa: E402
from simone.agents.mcp.testing import http_mcp_client, result_text, tool_call_request  # noqa: E402

CODE = re.compile(r"PRJ\d{3}")
MARK = re.compile(r"mark-(a\d+)-\d+")
NAMES = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _project_name(k: int) -> str:
    return f"{NAMES[k % len(NAMES)]}{k // len(NAMES) or ''}"


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live descendants, from /proc (0 where unreadable)."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                total += _cpu_seconds(int(child))
    except (OSError, ValueError, IndexError):
        pass
    return total


def _rpc(url: str, token: str | None, name: str, arguments: dict[str, Any], **headers: str) -> httpx.Response:
    head, body = tool_call_request(name, arguments, token=token, **headers)
    return httpx.post(url, headers=head, json=body, timeout=60)


class Server:
    """One ``simone serve`` process."""

    def __init__(self, env: dict[str, str], workers: int, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.workers = workers
        self.started = time.perf_counter()
        self.handle = log.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "simone.agents.cli",
                "serve",
                "--port",
                str(self.port),
                "--workers",
                str(workers),
            ],
            env=env,
            stdout=self.handle,
            stderr=subprocess.STDOUT,
        )
        self.log = log

    def first_answer_s(self, token: str, timeout_s: float = 300.0) -> float:
        """Seconds from the process start to the first answered tools/call (polled every 50 ms)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"simone serve exited: {self.log.read_text()[-2000:]}")
            try:
                response = _rpc(self.url, token, "list_notes", {})
                if response.status_code == 200 and '"result"' in response.text:
                    return time.perf_counter() - self.started
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise SystemExit(f"simone serve did not answer within {timeout_s} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.handle.close()
        return int(self.process.returncode)


async def load_phase(
    url: str, clients: list[dict[str, Any]], seconds: float, codes: dict[str, str]
) -> dict[str, Any]:
    """Every client loops for ``seconds``: retrieve_context, then a memory tool; latencies and checks."""
    latencies: list[float] = []
    errors: list[str] = []
    crosstalk: list[str] = []
    calls = 0
    misses = 0
    start_gate = anyio.Event()
    deadline = {"t": 0.0}

    async def one(client: dict[str, Any]) -> None:
        actor, project, token = client["actor"], client["project"], client["token"]
        own_code = codes[project]
        try:
            await session(client, own_code, actor, project, token)
        except Exception as exc:  # noqa: BLE001 - counted (a failure while closing the client), not raised
            errors.append(f"close: {type(exc).__name__}")

    async def session(client: dict[str, Any], own_code: str, actor: str, project: str, token: str) -> None:
        nonlocal calls, misses
        async with AsyncExitStack() as stack:
            try:
                mcp = await stack.enter_async_context(http_mcp_client(url, token, timeout_s=120.0))
            except Exception as exc:  # noqa: BLE001 - counted, not raised
                errors.append(f"connect: {type(exc).__name__}")
                return
            await start_gate.wait()
            round_no = 0
            while time.perf_counter() < deadline["t"]:
                round_no += 1
                steps: list[tuple[str, dict[str, Any]]] = [
                    ("retrieve_context", {"query": f"What is the launch code of the {project} project?"})
                ]
                if round_no % 4 == 1:
                    steps.append(("create_note", {"title": f"mark-{actor}-{round_no}", "body": "load run"}))
                else:
                    steps.append(("list_notes", {"limit": 20}))
                for name, arguments in steps:
                    began = time.perf_counter()
                    try:
                        result = await mcp.call_tool(name, arguments)
                    except Exception as exc:  # noqa: BLE001 - counted, not raised
                        errors.append(f"{name}: {type(exc).__name__}")
                        continue
                    latencies.append((time.perf_counter() - began) * 1000)
                    calls += 1
                    text = result_text(result)
                    if result.is_error:
                        errors.append(f"{name}: {text[:120]}")
                        continue
                    foreign_codes = {c for c in CODE.findall(text) if c != own_code}
                    foreign_marks = {m for m in MARK.findall(text) if m != actor}
                    if foreign_codes or foreign_marks:
                        crosstalk.append(f"{actor}/{name}: {sorted(foreign_codes | foreign_marks)[:3]}")
                    if name == "retrieve_context" and own_code not in text:
                        misses += 1

    async with anyio.create_task_group() as group:
        for client in clients:
            group.start_soon(one, client)
        await anyio.sleep(min(30.0, 2.0 + len(clients) * 0.1))  # let every client connect first
        deadline["t"] = time.perf_counter() + seconds
        began = time.perf_counter()
        start_gate.set()
    elapsed = time.perf_counter() - began
    return {
        "clients": len(clients),
        "seconds": round(elapsed, 2),
        "calls": calls,
        "calls_per_s": round(calls / elapsed, 1),
        "p50_ms": round(percentile(latencies, 0.5), 1) if latencies else None,
        "p95_ms": round(percentile(latencies, 0.95), 1) if latencies else None,
        "errors": len(errors),
        "error_kinds": sorted(set(errors))[:10],
        "own_code_missing": misses,
        "crosstalk": len(crosstalk),
        "crosstalk_examples": crosstalk[:5],
    }


async def attacks(url: str, tokens: dict[str, str], store: Any) -> dict[str, Any]:
    """Every token attack; returns how many were tried and which got through."""
    through: list[str] = []
    tried = 0

    def expect(name: str, ok: bool) -> None:
        nonlocal tried
        tried += 1
        if not ok:
            through.append(name)

    real_id = tokens["alice"].split("_")[1]
    cases = {
        "missing token": None,
        "wrong secret for a real id": f"smn_{real_id}_{'A' * 43}",
        "garbage token": "let-me-in",
        "expired token": tokens["expired"],
    }
    for name, token in cases.items():
        expect(name, _rpc(url, token, "create_note", {"title": "intruder"}).status_code == 401)
    expect(
        "revoked token (before revoking it works)",
        _rpc(url, tokens["revoked"], "list_notes", {}).status_code == 200,
    )
    tried -= 1  # that was the control, not an attack
    store.revoke(tokens["revoked"].split("_")[1])
    expect("revoked token", _rpc(url, tokens["revoked"], "list_notes", {}).status_code == 401)
    for token_name, project in (("researcher", "p1"), ("alice", "p1")):
        response = _rpc(
            url,
            tokens[token_name],
            "retrieve_context",
            {"query": "launch code"},
            **{"X-Simone-Project": project},
        )
        expect(f"{token_name} token on another project", response.status_code == 403)
    async with http_mcp_client(url, tokens["alice"], timeout_s=60) as alice:
        note = await alice.call_tool("create_note", {"title": "alice private", "body": "secret-of-alice"})
        note_id = re.search(r"note-[0-9a-f]+", result_text(note)).group(0)  # type: ignore[union-attr]
        forged = await alice.call_tool("list_notes", {"actor": "bob"})
        expect("scope in arguments (actor)", forged.is_error and "ScopeViolation" in result_text(forged))
        forged = await alice.call_tool("retrieve_context", {"query": "launch code", "project": "p1"})
        expect("scope in arguments (project)", forged.is_error)
    async with http_mcp_client(url, tokens["bob"], timeout_s=60) as bob:
        changed = await bob.call_tool("update_note", {"id": note_id, "body": "bob was here"})
        expect("another actor's id: update", changed.is_error)
        deleted = await bob.call_tool("delete_memory", {"id": note_id})
        expect("another actor's id: delete", deleted.is_error)
        searched = await bob.call_tool("search_notes", {"text": "alice private secret"})
        expect("another actor's memory: search", "secret-of-alice" not in result_text(searched))
        names = {tool.name for tool in (await bob.list_tools()).tools}
        web = await bob.call_tool("web_research", {"question": "anything"})
        expect("orchestrator calling web_research", "web_research" not in names and web.is_error)
    async with http_mcp_client(url, tokens["alice"], timeout_s=60) as alice:
        listed = result_text(await alice.call_tool("list_notes", {}))
        expect(
            "alice's note unchanged afterwards",
            "secret-of-alice" in listed and "bob was here" not in listed,
        )
    tried -= 1  # the last one checks the outcome, it is not an attack
    return {"tried": tried, "got_through": len(through), "through": through}


async def http_vs_api(url: str, token: str, settings: Any, project: str, calls: int) -> dict[str, Any]:
    """retrieve_context p50 over HTTP (one client) vs the Python API in this process, interleaved."""
    from simone.agents import Runtime

    query = {"query": f"What is the launch code of the {project} project?"}
    http_times: list[float] = []
    api_times: list[float] = []
    async with Runtime.open(settings) as runtime:
        context = runtime.admit({"actor": "api-user", "project": project})
        async with http_mcp_client(url, token, timeout_s=60) as client:
            for _ in range(3):  # warm-up both
                await client.call_tool("retrieve_context", query)
                await runtime.session(context).call("retrieve_context", query)
            for _ in range(0, calls, 10):
                for _ in range(10):
                    began = time.perf_counter()
                    await client.call_tool("retrieve_context", query)
                    http_times.append((time.perf_counter() - began) * 1000)
                for _ in range(10):
                    began = time.perf_counter()
                    await runtime.session(context).call("retrieve_context", query)
                    api_times.append((time.perf_counter() - began) * 1000)
    http_p50, api_p50 = percentile(http_times, 0.5), percentile(api_times, 0.5)
    return {
        "calls_each": len(http_times),
        "http_p50_ms": round(http_p50, 1),
        "api_p50_ms": round(api_p50, 1),
        "http_p95_ms": round(percentile(http_times, 0.95), 1),
        "api_p95_ms": round(percentile(api_times, 0.95), 1),
        "http_overhead_p50_ms": round(http_p50 - api_p50, 1),
        "ratio_p50": round(http_p50 / api_p50, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="50,200", help="client counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="load time per phase")
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--api-calls", type=int, default=60)
    args = parser.parse_args()
    counts = [int(n) for n in args.clients.split(",")]
    root = Path(tempfile.mkdtemp(prefix="simone-serve-load-"))
    postgres = TemporaryPostgres()
    redis = RedisServer(root / "redis")
    s3 = S3Server(root / "moto")
    (root / "moto").mkdir()
    servers: list[Server] = []
    try:
        postgres.init()
        postgres.start()
        redis.start()
        s3.start()
        bucket = f"simone-{uuid.uuid4().hex[:12]}"
        s3.create_bucket(bucket)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
        env.update(FAKE_CREDENTIALS)
        env.update(
            SIMONE_DATA_DIR=str(root / "data"),
            SIMONE_MEMORY__URL=postgres.create_database(),
            SIMONE_WEB__CACHE_URL=redis.url,
            SIMONE_INDEX__URI=f"s3://{bucket}/index",
            SIMONE_INDEX__STORAGE_OPTIONS=json.dumps(
                {"endpoint": s3.endpoint, "region": "us-east-1", "allow_http": "true"}
            ),
        )
        os.environ.update({k: v for k, v in env.items() if k.startswith(("SIMONE_", "AWS_"))})
        from simone.agents.cli import main as cli
        from simone.agents.serve import FileTokenStore
        from simone.runtime import load_settings

        codes: dict[str, str] = {}
        print(f"indexing {args.projects} project handbooks into S3 (moto)…", file=sys.stderr)
        for k in range(args.projects):
            project = f"p{k}"
            name = _project_name(k)
            codes[project] = f"PRJ{k:03d}"
            folder = root / "docs" / project
            folder.mkdir(parents=True)
            (folder / "handbook.md").write_text(
                f"# The {project} project\n\nThe {project} project, code name {name}, has the launch code "
                f"{codes[project]}. Its team meets on Mondays and keeps the {name} runbook current.\n"
            )
            with contextlib.redirect_stdout(io.StringIO()):
                indexed = cli(["index", str(folder), "--project", project, "--json"])
            if indexed != 0:
                raise SystemExit(f"indexing {project} failed")
        store = FileTokenStore(root / "data" / "serve-tokens.json")
        clients = []
        for i in range(max(counts)):
            project = f"p{i % args.projects}"
            token, _ = store.create(f"a{i}", projects=[project])
            clients.append({"actor": f"a{i}", "project": project, "token": token})
        tokens = {
            "alice": store.create("alice", projects=["p0"])[0],
            "bob": store.create("bob", projects=["p1"])[0],
            "researcher": store.create("rita", projects=["p0"], role="researcher")[0],
            "revoked": store.create("victor", projects=["p0"])[0],
            "expired": store.create(
                "eve", projects=["p0"], now=time.time() - 7200, expires=time.time() - 3600
            )[0],
        }
        print("starting simone serve with 1 and 2 workers…", file=sys.stderr)
        first_answer: dict[str, float] = {}
        for workers in (1, 2):
            server = Server(env, workers, root / f"serve-{workers}.log")
            servers.append(server)
            first_answer[str(workers)] = round(server.first_answer_s(tokens["alice"]), 2)
        # Warm both servers alike (each worker opens its S3 tables and caches on first use): a few
        # retrieve_context calls per project, so the first phase does not pay for a cold start.
        for server in servers:
            for client in clients[: args.projects * 3]:
                _rpc(server.url, client["token"], "retrieve_context", {"query": "launch code"})
        phases: list[dict[str, Any]] = []
        for count in counts:
            for server in servers:
                print(
                    f"  {count} clients against {server.workers} worker(s), {args.seconds:g} s…",
                    file=sys.stderr,
                )
                moto_pid = s3.process.pid if s3.process is not None else -1
                server_cpu, client_cpu = _cpu_seconds(server.process.pid), time.process_time()
                moto_cpu = _cpu_seconds(moto_pid)
                result = asyncio.run(load_phase(server.url, clients[:count], args.seconds, codes))
                result["workers"] = server.workers
                # Where the CPU went during the phase (connecting included): the server's processes
                # against this process's clients.
                result["server_cpu_s"] = round(_cpu_seconds(server.process.pid) - server_cpu, 1)
                result["client_cpu_s"] = round(time.process_time() - client_cpu, 1)
                result["moto_cpu_s"] = round(_cpu_seconds(moto_pid) - moto_cpu, 1)
                phases.append(result)
        print("token attacks…", file=sys.stderr)
        attack = asyncio.run(attacks(servers[1].url, tokens, store))
        print("HTTP vs Python API…", file=sys.stderr)
        latency = asyncio.run(
            http_vs_api(
                servers[0].url, clients[0]["token"], load_settings(), clients[0]["project"], args.api_calls
            )
        )
    finally:
        for server in servers:
            server.stop()
        s3.stop()
        redis.stop()
        postgres.cleanup()
        logs = Path(tempfile.mkdtemp(prefix="simone-serve-load-logs-"))
        for log in root.glob("serve-*.log"):
            shutil.copy(log, logs / log.name)
        print(f"server logs kept in {logs}", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)

    print(
        f"\nsimone serve under load ({os.cpu_count()} CPUs, shared with the clients, PostgreSQL, Redis, moto)"
    )
    print(
        f"  {'clients':>7} {'workers':>7} {'calls':>7} {'calls/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6} "
        f"{'cross-talk':>10} {'server CPU s':>12} {'client CPU s':>12} {'moto CPU s':>10}"
    )
    for p in phases:
        print(
            f"  {p['clients']:>7} {p['workers']:>7} {p['calls']:>7} {p['calls_per_s']:>8} {p['p50_ms']:>8} "
            f"{p['p95_ms']:>8} {p['errors']:>6} {p['crosstalk']:>10} {p['server_cpu_s']:>12} {p['client_cpu_s']:>12} "
            f"{p['moto_cpu_s']:>10}"
        )
    ratios = {}
    for count in counts:
        one = next(p for p in phases if p["clients"] == count and p["workers"] == 1)
        two = next(p for p in phases if p["clients"] == count and p["workers"] == 2)
        ratios[str(count)] = round(two["calls_per_s"] / one["calls_per_s"], 2) if one["calls_per_s"] else None
        print(f"  {count} clients: 2 workers / 1 worker throughput = {ratios[str(count)]}x")
    print(f"  start to first answered call: 1 worker {first_answer['1']} s, 2 workers {first_answer['2']} s")
    print(
        f"  retrieve_context p50: HTTP {latency['http_p50_ms']} ms vs Python API {latency['api_p50_ms']} ms "
        f"(x{latency['ratio_p50']}, +{latency['http_overhead_p50_ms']} ms; {latency['calls_each']} calls each)"
    )
    print(
        f"  token attacks: {attack['tried']} tried, {attack['got_through']} got through {attack['through'] or ''}"
    )
    payload = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "shared": True,
            "load_average": list(os.getloadavg()),
        },
        "seconds_per_phase": args.seconds,
        "projects": args.projects,
        "phases": phases,
        "throughput_ratio_2_over_1": ratios,
        "first_answer_s": first_answer,
        "http_vs_api": latency,
        "attacks": attack,
    }
    payload["summary"] = summary_rows(payload)
    print(f"wrote {save('serve_load', payload)}")


def summary_rows(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Report rows (benchmarks/_report.py's generic shape)."""
    section = "Speed — serve"
    rows: list[dict[str, Any]] = []
    for count, ratio in payload["throughput_ratio_2_over_1"].items():
        one = next(p for p in payload["phases"] if str(p["clients"]) == count and p["workers"] == 1)
        two = next(p for p in payload["phases"] if str(p["clients"]) == count and p["workers"] == 2)
        rows.append(
            {
                "section": section,
                "metric": f"calls/s, {count} MCP clients (2 workers vs 1)",
                "ours": two["calls_per_s"],
                "peer_name": "1 worker",
                "peer": one["calls_per_s"],
                "ratio": ratio,
                "better": "higher",
                "note": "2 shared cores; clients, PostgreSQL, Redis and moto on the same cores",
            }
        )
        errors = sum(p["errors"] for p in payload["phases"] if str(p["clients"]) == count)
        crosstalk = sum(p["crosstalk"] for p in payload["phases"] if str(p["clients"]) == count)
        rows.append(
            {
                "section": section,
                "metric": f"errors + cross-talk, {count} clients (both runs)",
                "ours": errors + crosstalk,
                "target": {"on": "ours", "op": "==", "value": 0},
                "met": errors + crosstalk == 0,
            }
        )
    latency = payload["http_vs_api"]
    rows.append(
        {
            "section": section,
            "metric": "retrieve_context p50 over HTTP (ms)",
            "ours": latency["http_p50_ms"],
            "peer_name": "Python API, same backends",
            "peer": latency["api_p50_ms"],
            "ratio": latency["ratio_p50"],
            "better": "lower",
        }
    )
    rows.append(
        {
            "section": section,
            "metric": "start to first answered call, 1 worker (s)",
            "ours": payload["first_answer_s"]["1"],
            "better": "lower",
        }
    )
    attack = payload["attacks"]
    rows.append(
        {
            "section": section,
            "metric": f"token attacks that got through (of {attack['tried']})",
            "ours": attack["got_through"],
            "target": {"on": "ours", "op": "==", "value": 0},
            "met": attack["got_through"] == 0,
        }
    )
    return rows


if __name__ == "__main__":
    main()
