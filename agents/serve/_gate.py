"""The door of ``simone serve``: bearer tokens, the caller's project, per-token limits and request logs.

:class:`Gate` is plain ASGI middleware in front of the MCP endpoint. For each HTTP request it

1. maps the ``Authorization: Bearer`` token to its :class:`~simone.agents.serve.Grant` (missing,
   malformed, unknown, wrong, expired or revoked: **401**, and nothing runs; a token file the server
   may not trust or read — readable by others, not valid: **503**, the detail in the server log only);
2. picks the project: the ``X-Simone-Project`` header if the token may read it (else **403**), or the
   token's first project;
3. reads the JSON-RPC body (at most ``max_body`` bytes, else **413**; within ``body_timeout_s``, else
   **408** and the connection closes) and decodes it with
   :func:`~simone.runtime.loads_untrusted` (not JSON, not UTF-8 or nested too deep: **400** with the
   JSON-RPC parse error ``-32700``) to learn the method and the tool name; holds ``tools/call``
   requests and open ``GET`` streams to the token's limits (**429** with ``Retry-After``);
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

import anyio
from simone.agents.serve._tokens import Grant, TokenStore, UnsafeTokenFile
from simone.runtime import ConfigError, SimoneError, loads_untrusted
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPE_KEY = "simone.caller"
"""Where the gate leaves the :class:`Admitted` caller in the ASGI scope."""

PROJECT_HEADER = "x-simone-project"
"""The request header that picks one of the token's projects (default: its first)."""

request_log = logging.getLogger("simone.serve.requests")
"""One JSON line per request (no content, no tokens)."""

server_log = logging.getLogger("uvicorn.error")
"""The server's own log (uvicorn's): what an operator must fix, with the detail a caller never sees."""

PARSE_ERROR = -32700
"""JSON-RPC's code for a body that is not JSON."""


@dataclass(frozen=True)
class Admitted:
    """Who is calling, as the gate admitted it: the token's grant and the project of this request."""

    grant: Grant
    project: str | None


class TokenLimits:
    """Per-token limits in one worker: calls at once, calls in any 60 s and open streams.

    Args:
        concurrent: the most calls one token may have in flight.
        per_minute: the most calls one token may start in any 60 s.
        streams: the most ``GET`` streams (server-sent events) one token may hold open at once.
        clock: a monotonic clock (for tests).
    """

    def __init__(
        self,
        concurrent: int,
        per_minute: int,
        *,
        streams: int = 4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.concurrent = concurrent
        self.per_minute = per_minute
        self.streams = streams
        self._clock = clock
        self._running: dict[str, int] = {}
        self._started: dict[str, deque[float]] = {}
        self._open: dict[str, int] = {}

    def open_stream(self, key: str) -> bool:
        """Take a stream slot for ``key``: ``False`` when the token already holds ``streams`` open."""
        held = self._open.get(key, 0)
        if held >= self.streams:
            return False
        self._open[key] = held + 1
        return True

    def close_stream(self, key: str) -> None:
        """Give back a slot taken by :meth:`open_stream`."""
        left = self._open.get(key, 0) - 1
        if left > 0:
            self._open[key] = left
        else:
            self._open.pop(key, None)

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


class _BadBody(Exception):
    pass


class Gate:
    """ASGI middleware: authenticate, scope, limit and log every request to ``app`` (see the module).

    Args:
        app: the MCP endpoint.
        tokens: the token store (``None``: open mode, every request is ``open_grant``).
        open_grant: the one grant of an open server (started with ``--actor``, no tokens).
        limits: the per-token limits.
        max_body: the largest request body accepted, in bytes.
        body_timeout_s: how long the whole body may take to arrive.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: TokenStore | None,
        limits: TokenLimits,
        open_grant: Grant | None = None,
        max_body: int = 4 * 1024 * 1024,
        body_timeout_s: float = 30.0,
    ) -> None:
        if tokens is None and open_grant is None:
            raise ValueError("a gate needs a token store or an open grant")
        self.app = app
        self.tokens = tokens
        self.open_grant = open_grant
        self.limits = limits
        self.max_body = max_body
        self.body_timeout_s = body_timeout_s
        self._logged_problem: str | None = None

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
        """Admit one HTTP request (token, project, body, limits) and hand it on, or refuse it."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        grant = await self._authenticate(headers.get("authorization"), send, entry)
        if grant is None:
            return
        entry["token"] = grant.token_id
        entry["actor"] = grant.actor
        wanted = headers.get(PROJECT_HEADER)
        if wanted is not None and wanted not in grant.projects:
            entry["refused"] = "project"
            await _reply(send, 403, "forbidden_project", "this token may not read that project")
            return
        project = wanted if wanted is not None else (grant.projects[0] if grant.projects else None)
        post = scope.get("method") == "POST"
        read = await self._read_rpc(receive, send, entry, post=post)
        if read is None:
            return
        body, rpc, tool = read
        if rpc:
            entry["rpc"] = rpc
        if tool:
            entry["tool"] = tool
        scope[SCOPE_KEY] = Admitted(grant=grant, project=project)
        replay = _replay(body, receive) if post else receive
        if scope.get("method") == "GET":
            await self._stream(scope, replay, send, grant, entry)
            return
        if rpc != "tools/call":
            await self.app(scope, replay, send)
            return
        await self._call(scope, replay, send, grant, entry)

    async def _authenticate(
        self, authorization: str | None, send: Send, entry: dict[str, Any]
    ) -> Grant | None:
        """The caller's grant; ``None`` once the refusal (401, or 503 for the token store) is sent."""
        try:
            if self.tokens is not None and self.tokens.blocking:  # never hold the event loop on a network
                grant = await anyio.to_thread.run_sync(self._grant, authorization)
            else:
                grant = self._grant(authorization)
        except ConfigError as exc:  # the token file turned unsafe or invalid while serving
            entry["refused"] = "token_file"
            await _reply(send, 503, "token_file_unsafe", self._token_file_problem(exc), {"retry-after": "30"})
            return None
        except SimoneError as exc:  # a token store on a server (PostgreSQL) that does not answer
            entry["refused"] = "token_store"
            server_log.warning("the token store did not answer: %s", exc)
            await _reply(
                send,
                503,
                "token_store_unavailable",
                "the server cannot check tokens now; retry later",
                {"retry-after": "5"},
            )
            return None
        if grant is None:
            entry["refused"] = "token"
            await _reply(
                send,
                401,
                "invalid_token",
                "a valid bearer token is required: 'Authorization: Bearer smn_…' from 'simone token create'",
                {"www-authenticate": 'Bearer error="invalid_token"'},
            )
        return grant

    async def _read_rpc(
        self, receive: Receive, send: Send, entry: dict[str, Any], *, post: bool
    ) -> tuple[bytes, str | None, str | None] | None:
        """The body (a ``POST``'s, else empty), its JSON-RPC method and tool; ``None`` once 413/408/400 is sent."""
        try:
            with anyio.fail_after(self.body_timeout_s):
                body = await _read_body(receive, self.max_body) if post else b""
            rpc, tool = _rpc_of(_decode(body))
        except _BodyTooLarge:
            entry["refused"] = "size"
            await _reply(send, 413, "too_large", f"the request body is over {self.max_body} bytes")
            return None
        except TimeoutError:
            entry["refused"] = "slow_body"
            await _reply(
                send,
                408,
                "request_timeout",
                f"the request body did not arrive within {self.body_timeout_s:g} s",
                {"connection": "close"},
            )
            return None
        except _BadBody as exc:
            entry["refused"] = "parse"
            await _parse_error(send, str(exc))
            return None
        return body, rpc, tool

    async def _call(
        self, scope: Scope, receive: Receive, send: Send, grant: Grant, entry: dict[str, Any]
    ) -> None:
        """A ``tools/call``, held to the token's limits of calls at once and per minute."""
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
            await self.app(scope, receive, send)
        finally:
            self.limits.release(grant.token_id)

    async def _stream(
        self, scope: Scope, receive: Receive, send: Send, grant: Grant, entry: dict[str, Any]
    ) -> None:
        """A ``GET`` (the server-sent-event stream), held to the token's cap on open streams."""
        if not self.limits.open_stream(grant.token_id):
            entry["refused"] = "streams"
            await _reply(
                send,
                429,
                "too_many_streams",
                f"this token already holds {self.limits.streams} open streams; close one first",
                {"retry-after": "1"},
            )
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.limits.close_stream(grant.token_id)

    def _token_file_problem(self, exc: ConfigError) -> str:
        """What a caller is told (no path), the detail logged once per distinct problem."""
        detail = str(exc)
        if detail != self._logged_problem:
            self._logged_problem = detail
            server_log.error("every request is refused until the token file is fixed: %s", detail)
        if isinstance(exc, UnsafeTokenFile):
            problem = (
                "may be read or replaced by others; the operator must fix its mode to 0600 (and its owner)"
            )
        else:
            problem = "cannot be read or is not valid; the operator must fix it"
        return f"the server cannot check tokens: its token file {problem} — the server log says how"

    def _grant(self, authorization: str | None) -> Grant | None:
        """The grant of ``authorization``, or ``None``.

        Raises:
            ConfigError: the token file cannot be trusted or read (from the store).
        """
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


def _decode(body: bytes) -> Any:
    """The JSON of a request body (``None`` when empty).

    Raises:
        _BadBody: not JSON, not UTF-8, or nested too deep (:func:`~simone.runtime.loads_untrusted`).
    """
    if not body:
        return None
    try:
        return loads_untrusted(body)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise _BadBody(f"Parse error: {reason}") from exc


def _rpc_method(body: bytes) -> tuple[str | None, str | None]:
    """The JSON-RPC method of a request body (``tools/call`` if a batch holds one) and its tool name."""
    try:
        return _rpc_of(_decode(body))
    except _BadBody:
        return None, None


def _rpc_of(data: Any) -> tuple[str | None, str | None]:
    """The JSON-RPC method of decoded JSON (``tools/call`` if a batch holds one) and its tool name."""
    if data is None:
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


async def _parse_error(send: Send, message: str) -> None:
    """HTTP 400 with JSON-RPC's parse error, as the MCP SDK answers a body it cannot parse."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": message}}
    await _send_json(send, 400, error, {})


async def _reply(
    send: Send, status: int, error: str, description: str, headers: dict[str, str] | None = None
) -> None:
    await _send_json(send, status, {"error": error, "error_description": description}, headers or {})


async def _send_json(send: Send, status: int, data: dict[str, Any], headers: dict[str, str]) -> None:
    body = json.dumps(data).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
