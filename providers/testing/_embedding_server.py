"""A loopback embedding server for tests: a real HTTP server on 127.0.0.1 in a background thread.

It speaks both the OpenAI-compatible ``POST /v1/embeddings`` and Ollama's ``POST /api/embed``,
answers with :class:`~simone.runtime.testing.HashEmbedder` vectors, and can be scripted to misbehave
the ways real servers do (429 with ``Retry-After``, 500, HTML, NaN, wrong count or dimension, a hang,
a dropped connection) so clients are tested against real sockets, not mocks::

    with LoopbackEmbeddingServer(dimension=32) as server:
        embedder = OpenAIEmbedder("hash-model", base_url=server.base_url, dimensions=32)
        server.mode = "error500"          # every request from now on
        server.script.extend(["rate_limit", "ok"])   # the next two requests, then ``mode`` again
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from simone.providers.testing._loopback_http import ScriptedLoopbackServer
from simone.runtime.testing import HashEmbedder

Mode = Literal[
    "ok",
    "rate_limit",
    "error500",
    "html",
    "nan",
    "wrong_count",
    "wrong_dimension",
    "malformed_json",
    "shuffled",
    "slow",
    "drop",
]


class LoopbackEmbeddingServer(ScriptedLoopbackServer[Mode]):
    """An embedding server on ``127.0.0.1:<free port>`` for the duration of a ``with`` block.

    Args:
        dimension: the size of the vectors it returns (``wrong_dimension`` returns one more).
        model: the model name it expects (any name is accepted; requests are recorded).
        retry_after: the ``Retry-After`` header value sent with 429s.
        delay_s: how long ``slow`` requests wait before answering.

    Attributes:
        mode: how requests are answered when :attr:`script` is empty.
        script: modes for the next requests, consumed one per request.
        requests: each request's decoded JSON body, in arrival order.
        headers: each request's headers (lower-cased names), in arrival order.
    """

    thread_name = "loopback-embeddings"

    def __init__(
        self,
        *,
        dimension: int = 32,
        model: str = "hash-model",
        retry_after: str = "0",
        delay_s: float = 5.0,
    ) -> None:
        self.dimension = dimension
        self.model = model
        self.retry_after = retry_after
        self.delay_s = delay_s
        super().__init__("ok")
        self.requests: list[dict[str, Any]] = []
        self.embedder = HashEmbedder(dimension, model=model, provider="openai")

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://127.0.0.1:<port>/v1``."""
        return self.root + "/v1"

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        """Keep a request's body and headers."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler bound to this server."""
        return _handler_for(self)


def _handler_for(owner: LoopbackEmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "request body is not JSON"}})
                return
            owner.record(body, {k.lower(): v for k, v in self.headers.items()})
            if self.path not in ("/v1/embeddings", "/embeddings", "/api/embed"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            inputs = body.get("input")
            texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
            self._answer(owner.next_mode(), [str(t) for t in texts])

        def _answer(self, mode: Mode, texts: list[str]) -> None:
            if mode == "drop":
                self.close_connection = True
                self.connection.close()
                return
            if mode == "slow":
                owner.wait(owner.delay_s)
            if mode == "rate_limit":
                self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": owner.retry_after})
                return
            if mode == "error500":
                self._send(500, {"error": {"message": "internal error"}})
                return
            if mode == "html":
                page = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
                self._raw(200, page, "text/html; charset=utf-8")
                return
            if mode == "malformed_json":
                self._raw(200, b'{"data": [', "application/json")
                return
            vectors = owner.embedder.vectors(texts).tolist()
            if mode == "nan" and vectors:
                vectors[0][0] = float("nan")
            if mode == "wrong_count":
                vectors = vectors[:-1] if len(vectors) > 1 else vectors * 2
            if mode == "wrong_dimension":
                vectors = [v + [0.0] for v in vectors]
            if self.path == "/api/embed":
                self._send(200, {"model": owner.model, "embeddings": vectors})
                return
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            if mode == "shuffled":
                data.reverse()
            self._send(200, {"object": "list", "model": owner.model, "data": data})

        def _send(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
            self._raw(status, json.dumps(payload).encode(), "application/json", headers)

        def _raw(
            self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:  # the client gave up (a timeout test)
                self.close_connection = True

    return Handler
