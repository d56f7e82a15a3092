"""Fixtures of the document-index tests: the real ONNX model, a loopback embedding server, a tree."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.providers.testing import HashEmbedder


@pytest.fixture(scope="session")
def onnx() -> OnnxMiniLMEmbedder:
    """The bundled all-MiniLM-L6-v2, started once for the whole session."""
    embedder = OnnxMiniLMEmbedder(intra_op_threads=2)
    anyio.run(embedder.open)
    return embedder


@dataclass
class EmbeddingServer:
    """An OpenAI-compatible ``/v1/embeddings`` on 127.0.0.1 whose behaviour a test switches.

    ``mode``: ``ok``, ``down`` (503), ``html`` (200 with a web page), ``nan``, ``count`` (one vector
    short), ``dimension`` (one value too many).
    """

    dimension: int = 32
    mode: str = "ok"
    requests: int = 0
    texts: int = 0
    base_url: str = ""
    _hash: HashEmbedder = field(init=False)

    def __post_init__(self) -> None:
        self._hash = HashEmbedder(self.dimension)

    def answer(self, payload: dict[str, Any]) -> tuple[int, str, bytes]:
        self.requests += 1
        if self.mode == "down":
            return 503, "application/json", b'{"error": "maintenance"}'
        if self.mode == "html":
            return 200, "text/html", b"<html><body><h1>Welcome to nginx!</h1></body></html>"
        inputs = payload["input"]
        vectors = self._hash.vectors(inputs).tolist()
        if self.mode == "nan":
            vectors[0][0] = float("nan")
        elif self.mode == "count":
            vectors = vectors[:-1]
        elif self.mode == "dimension":
            vectors = [v + [0.5] for v in vectors]
        self.texts += len(inputs)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        body = json.dumps({"object": "list", "model": payload["model"], "data": data}).encode()
        return 200, "application/json", body


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    """A loopback OpenAI-compatible embedding server started for one test."""
    state = EmbeddingServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length) or b"{}")
            status, content_type, body = state.answer(payload)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


GUIDE = """# Installation guide

simone installs with pip. The wheel bundles the ONNX model.

## Requirements

Python 3.11 or newer and about 200 MB of disk space.

## Configuration

Settings live in simone.toml; secrets only in the environment.
"""

FAQ = """# Frequently asked questions

## Why LanceDB?

It stores vectors and a full-text index in one embedded table.

## Can I use another embedding model?

Yes: configure an OpenAI-compatible server; a new space is filled at its own pace.
"""

CODE = '''"""Billing helpers."""


def compute_invoice_total(lines):
    """Sum the invoice lines, tax included."""
    return sum(line.amount * (1 + line.tax_rate) for line in lines)


class RefundPolicy:
    """Decides whether a refund is allowed."""

    def allowed(self, days_since_purchase):
        return days_since_purchase <= 30
'''


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small document tree: Markdown, text and Python."""
    root = tmp_path / "docs"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "install.md").write_text(GUIDE, encoding="utf-8")
    (root / "faq.md").write_text(FAQ, encoding="utf-8")
    (root / "billing.py").write_text(CODE, encoding="utf-8")
    (root / "notes.txt").write_text(
        "Meeting notes.\n\nThe quarterly report is due on Friday.\n\nAlice owns the roadmap.\n",
        encoding="utf-8",
    )
    return root
