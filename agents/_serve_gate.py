"""The door of ``simone serve``: bearer tokens, the caller's project, per-token limits and request logs.

:class:`Gate` is plain ASGI middleware in front of the MCP endpoint. For each HTTP request it

1. maps the ``Authorization: Bearer`` token to its :class:`~simone.agents._tokens.Grant` (missing,
   malformed, unknown, wrong, expired or revoked: **401**, and nothing runs);
2. picks the project: the ``X-Simone-Project`` header if the token may read it (else **403**), or the
   token's first project;
3. reads the JSON-RPC body (at most ``max_body`` bytes, else **413**) to learn the method and the tool
   name, and holds ``tools/call`` requests to the token's limits (**429** with ``Retry-After``);
4. hands the request on with the :class:`Admitted` caller in the ASGI scope (``scope["simone.caller"]``), where
   the MCP server's scope function finds it;
5. logs one JSON line: time, worker, method, path, status, milliseconds, token id, actor, JSON-RPC
   method and tool name. Never arguments, results or tokens.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simone.agents._tokens import Grant, TokenStore
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPE_KEY = "simone.caller"
"""Where the gate leaves the :class:`Admitted` caller in the ASGI scope."""

PROJECT_HEADER = "x-simone-project"
"""The request header that picks one of the token's projects (default: its first)."""

request_log = logging.getLogger("simone.serve.requests")
"""One JSON line per request (no content, no tokens)."""


@dataclass(frozen=True)
class Admitted:
    """Who is calling, as the gate admitted it: the token's grant and the project of this request."""

    grant: Grant
    project: str | None


class TokenLimits:
    """Per-token limits in one worker: calls at once and calls in any 60 s.

    Args:
        concurrent: the most calls one token may have in flight.
        per_minute: the most calls one token may start in any 60 s.
        clock: a monotonic clock (for tests).
    """

    def __init__(
        self, concurrent: int, per_minute: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.concurrent = concurrent
        self.per_minute = per_minute
        self._clock = clock
        self._running: dict[str, int] = {}
        self._started: dict[str, deque[float]] = {}

    def acquire(self, key: str) -> float | None:
        """Take a slot for ``key``: ``None`` when granted, else the seconds to wait before retrying."""
        now = self._clock()
        started = self._started.setdefault(key, deque())
        while started and started[0] <= now - 60.0:
            started.popleft()
        if len(started) >= self.per_minute:
            return max(1.0, started[0] + 60.0 - now)
        if self._running.get(key, 0) >= self.concurrent:
            return 1.0
        started.append(now)
        self._running[key] = self._running.get(key, 0) + 1
        return None

    def release(self, key: str) -> None:
        """Give back a slot taken by :meth:`acquire`."""
        left = self._running.get(key, 0) - 1
        if left > 0:
            self._running[key] = left
        else:
            self._running.pop(key, None)
            if not self._started.get(key):
                self._started.pop(key, None)


class _BodyTooLarge(Exception):
    pass


class Gate:
    """ASGI middleware: authenticate, scope, limit and log every request to ``app`` (see the module).

    Args:
        app: the MCP endpoint.
        tokens: the token store (``None``: open mode, every request is ``open_grant``).
        open_grant: the one grant of an open server (started with ``--actor``, no tokens).
        limits: the per-token limits.
        max_body: the largest request body accepted, in bytes.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: TokenStore | None,
        limits: TokenLimits,
        open_grant: Grant | None = None,
        max_body: int = 4 * 1024 * 1024,
    ) -> None:
        if tokens is None and open_grant is None:
            raise ValueError("a gate needs a token store or an open grant")
        self.app = app
        self.tokens = tokens
        self.open_grant = open_grant
        self.limits = limits
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        entry: dict[str, Any] = {"method": scope.get("method"), "path": scope.get("path")}
        status = {"code": 0}

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self._handle(scope, receive, watched, entry)
        finally:
            entry["status"] = status["code"]
            entry["ms"] = round((time.perf_counter() - started) * 1000, 2)
            log_request(entry)

    async def _handle(self, scope: Scope, receive: Receive, send: Send, entry: dict[str, Any]) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        grant = self._grant(headers.get("authorization"))
        if grant is None:
            entry["refused"] = "token"
            await _reply(
                send,
                401,
                "invalid_token",
                "a valid bearer token is required: 'Authorization: Bearer smn_…' from 'simone token create'",
                {"www-authenticate": 'Bearer error="invalid_token"'},
            )
            return
        entry["token"] = grant.token_id
        entry["actor"] = grant.actor
        wanted = headers.get(PROJECT_HEADER)
        if wanted is not None and wanted not in grant.projects:
            entry["refused"] = "project"
            await _reply(send, 403, "forbidden_project", "this token may not read that project")
            return
        project = wanted if wanted is not None else (grant.projects[0] if grant.projects else None)
        try:
            body = await _read_body(receive, self.max_body) if scope.get("method") == "POST" else b""
        except _BodyTooLarge:
            entry["refused"] = "size"
            await _reply(send, 413, "too_large", f"the request body is over {self.max_body} bytes")
            return
        rpc, tool = _rpc_method(body)
        if rpc:
            entry["rpc"] = rpc
        if tool:
            entry["tool"] = tool
        scope[SCOPE_KEY] = Admitted(grant=grant, project=project)
        replay = _replay(body, receive) if scope.get("method") == "POST" else receive
        if rpc != "tools/call":
            await self.app(scope, replay, send)
            return
        wait = self.limits.acquire(grant.token_id)
        if wait is not None:
            entry["refused"] = "limit"
            await _reply(
                send,
                429,
                "rate_limited",
                "this token is over its limit of calls at once or per minute; retry later",
                {"retry-after": str(math.ceil(wait))},
            )
            return
        try:
            await self.app(scope, replay, send)
        finally:
            self.limits.release(grant.token_id)

    def _grant(self, authorization: str | None) -> Grant | None:
        if self.tokens is None:
            return self.open_grant
        if not authorization:
            return None
        kind, _, token = authorization.partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            return None
        return self.tokens.verify(token.strip())


def log_request(entry: dict[str, Any]) -> None:
    """Write one request's JSON line (time and worker added)."""
    if request_log.isEnabledFor(logging.INFO):
        line = {"ts": round(time.time(), 3), "worker": os.getpid(), **entry}
        request_log.info(json.dumps(line, ensure_ascii=False, separators=(",", ":")))


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _rpc_method(body: bytes) -> tuple[str | None, str | None]:
    """The JSON-RPC method of a request body (``tools/call`` if a batch holds one) and its tool name."""
    if not body:
        return None, None
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None, None
    messages = data if isinstance(data, list) else [data]
    first: tuple[str | None, str | None] = (None, None)
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            continue
        method = message["method"]
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        found = (method[:64], name[:128] if isinstance(name, str) and method == "tools/call" else None)
        if method == "tools/call":
            return found
        if first[0] is None:
            first = found
    return first


async def _reply(
    send: Send, status: int, error: str, description: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
