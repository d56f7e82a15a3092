"""A loopback rerank server for tests and benchmarks: a real HTTP server on 127.0.0.1 in a background thread.

It answers every rerank shape simone speaks, read from the request as real servers are told apart:

* ``documents`` + ``top_n`` → Cohere / Jina / vLLM / Infinity / llama.cpp: ``{"results": [{index, relevance_score}]}``;
* ``documents`` + ``top_k`` → Voyage: ``{"data": [{index, relevance_score}]}``;
* ``input`` → Mixedbread: ``{"data": [{index, score}]}``;
* ``texts`` → TEI: a bare list ``[{index, score}]``.

The score is the share of the query's words found in the document (deterministic, so a test knows the
order), and the server can be scripted to misbehave (429 with ``Retry-After``, a hang, malformed JSON,
indexes out of range, NaN, 500)::

    with LoopbackRerankServer() as server:
        reranker = HttpReranker(server.url, api="tei")
        server.script.extend(["rate_limit", "ok"])   # the next two requests, then ``mode`` again
"""

from __future__ import annotations

import json
import re
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from simone.providers.testing._loopback_http import ScriptedLoopbackServer

RerankServerMode = Literal[
    "ok",
    "rate_limit",
    "slow",
    "malformed_json",
    "wrong_index",
    "duplicate_index",
    "nan",
    "error500",
    "reversed",
]

_WORD = re.compile(r"\w+")


def overlap_score(query: str, document: str) -> float:
    """The share of ``query``'s distinct words that ``document`` contains (case-folded), in [0, 1]."""
    wanted = {w.casefold() for w in _WORD.findall(query)}
    if not wanted:
        return 0.0
    present = {w.casefold() for w in _WORD.findall(document)}
    return len(wanted & present) / len(wanted)


class LoopbackRerankServer(ScriptedLoopbackServer[RerankServerMode]):
    """A rerank server on ``127.0.0.1:<free port>`` for the duration of a ``with`` block.

    Args:
        retry_after: the ``Retry-After`` header value sent with 429s.
        delay_s: how long ``slow`` requests wait before answering.

    Attributes:
        mode: how requests are answered when :attr:`script` is empty.
        script: modes for the next requests, consumed one per request.
        requests: each request's path and decoded JSON body, in arrival order.
        headers: each request's headers (lower-cased names), in arrival order.
    """

    thread_name = "loopback-rerank"

    def __init__(self, *, retry_after: str = "0", delay_s: float = 5.0) -> None:
        self.retry_after = retry_after
        self.delay_s = delay_s
        super().__init__("ok")
        self.requests: list[tuple[str, dict[str, Any]]] = []

    @property
    def url(self) -> str:
        """The Cohere-style endpoint, ``http://127.0.0.1:<port>/v1/rerank`` (every path is answered alike)."""
        return self.root + "/v1/rerank"

    def record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        """Keep a request's path, body and headers."""
        with self._lock:
            self.requests.append((path, body))
            self.headers.append(headers)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler bound to this server."""
        return _handler_for(self)


def _documents(body: dict[str, Any]) -> tuple[str, list[str]]:
    """The request's shape (``results``, ``voyage``, ``mixedbread``, ``tei``) and its documents as text."""
    if "texts" in body:
        shape, raw = "tei", body.get("texts")
    elif "input" in body:
        shape, raw = "mixedbread", body.get("input")
    else:
        shape, raw = ("voyage" if "top_k" in body else "results"), body.get("documents")
    texts = [d.get("text", "") if isinstance(d, dict) else str(d) for d in (raw or [])]
    return shape, texts


def _handler_for(owner: LoopbackRerankServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without this, Nagle's algorithm and the client's
            # delayed ACK hold the body back ~40 ms on a kept-alive connection
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "request body is not JSON"}})
                return
            owner.record(self.path, body, {k.lower(): v for k, v in self.headers.items()})
            self._answer(owner.next_mode(), body)

        def _answer(self, mode: RerankServerMode, body: dict[str, Any]) -> None:
            if mode == "slow":
                owner.wait(owner.delay_s)
            if mode == "rate_limit":
                self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": owner.retry_after})
                return
            if mode == "error500":
                self._send(500, {"error": {"message": "internal error"}})
                return
            if mode == "malformed_json":
                self._raw(200, b'{"results": [', "application/json")
                return
            shape, texts = _documents(body)
            query = str(body.get("query", ""))
            scores = [overlap_score(query, text) for text in texts]
            if mode == "reversed":
                scores = [-s for s in scores]
            ranked = sorted(range(len(texts)), key=lambda i: -scores[i])
            top = body.get("top_n", body.get("top_k"))
            if isinstance(top, int) and top > 0:
                ranked = ranked[:top]
            indexes: list[int] = list(ranked)
            if mode == "wrong_index" and indexes:
                indexes[0] = len(texts) + 3
            if mode == "duplicate_index" and len(indexes) > 1:
                indexes[1] = indexes[0]
            values: list[Any] = [scores[i] if i < len(scores) else 0.5 for i in ranked]
            if mode == "nan" and values:
                values[0] = "NaN"
            key = "score" if shape in ("tei", "mixedbread") else "relevance_score"
            rows = [{"index": i, key: v} for i, v in zip(indexes, values, strict=True)]
            if shape == "tei":
                self._send(200, rows)
            elif shape in ("voyage", "mixedbread"):
                self._send(200, {"object": "list", "data": rows, "model": body.get("model")})
            else:
                self._send(
                    200, {"id": "loopback", "results": rows, "meta": {"billed_units": {"search_units": 1}}}
                )

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
