"""MCP clients for tests and benchmarks: simone's tools as a client sees them, over stdio or HTTP.

Reuse these instead of writing a client per test. Each is the official ``mcp`` SDK's :class:`mcp.Client`
on a real transport, against a real server:

* :func:`stdio_mcp_client` starts ``simone mcp`` (``python -m simone.agents.cli``) as a subprocess and
  talks to it over its stdin and stdout;
* :func:`http_mcp_client` reaches a running ``simone serve`` over streamable HTTP with a bearer token
  (and the project header);
* :func:`tool_call_request` is one raw JSON-RPC ``tools/call`` (headers and body), for what the SDK
  would never send; :func:`result_text` joins the text blocks of a result.

Example::

    async with stdio_mcp_client(data_dir, actor="alice", errlog=tmp_path / "mcp.log") as client:
        result = await client.call_tool("retrieve_context", {"query": "rank fusion"})
        print(result_text(result))
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from simone.agents.serve import PROJECT_HEADER


def simone_mcp_parameters(
    data_dir: Path | str,
    *,
    actor: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> StdioServerParameters:
    """How to start ``simone --data-dir DATA_DIR mcp --actor ACTOR [ARGS…]`` with this interpreter.

    Args:
        data_dir: the server's data folder (its index and memory).
        actor: the actor the server admits at start-up.
        args: more ``simone mcp`` arguments (``--role researcher``, ``--project p``…).
        env: variables added to the SDK's default environment of the subprocess.
        cwd: the subprocess's working folder.
    """
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "simone.agents.cli", "--data-dir", str(data_dir), "mcp", "--actor", actor, *args],
        env=dict(env) if env is not None else None,
        cwd=str(cwd) if cwd is not None else None,
    )


@asynccontextmanager
async def stdio_mcp_client(
    data_dir: Path | str,
    *,
    actor: str,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    errlog: Path | None = None,
) -> AsyncIterator[Client]:
    """An MCP client of a ``simone mcp`` subprocess (see :func:`simone_mcp_parameters`), initialised.

    ``errlog`` receives the server's stderr (appended; pytest owns the test's own stderr), else it goes
    to this process's stderr. Leaving the block closes the session and ends the server.
    """
    parameters = simone_mcp_parameters(data_dir, actor=actor, args=args, env=env, cwd=cwd)
    async with AsyncExitStack() as stack:
        log = stack.enter_context(errlog.open("a", encoding="utf-8")) if errlog is not None else sys.stderr
        client = await stack.enter_async_context(Client(stdio_client(parameters, errlog=log)))
        yield client


@asynccontextmanager
async def http_mcp_client(
    url: str, token: str | None = None, *, project: str | None = None, timeout_s: float = 120.0
) -> AsyncIterator[Client]:
    """An MCP client of ``url`` (a ``simone serve`` ``/mcp``) over streamable HTTP, initialised.

    Args:
        url: the server's MCP endpoint.
        token: sent as ``Authorization: Bearer <token>``; ``None`` sends none.
        project: sent as the project header (one of the token's projects); ``None`` sends none.
        timeout_s: the HTTP client's timeout for each request.
    """
    headers = _headers(token, project=project)
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout_s)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def tool_call_request(
    name: str, arguments: Any, *, token: str | None = None, **headers: str
) -> tuple[dict[str, str], dict[str, Any]]:
    """The headers and body of one raw JSON-RPC ``tools/call`` (what any MCP client sends), without the SDK.

    Args:
        name: the tool.
        arguments: the call's arguments, sent as they are (a test may send what no client would).
        token: sent as ``Authorization: Bearer <token>``; ``None`` sends none.
        headers: more request headers (``**{"X-Simone-Project": "p1"}``).
    """
    head = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        **headers,
        **_headers(token),
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return head, body


def result_text(result: CallToolResult) -> str:
    """The text blocks of a ``tools/call`` result, joined (what a model reads)."""
    return "".join(getattr(block, "text", "") for block in result.content)


def _headers(token: str | None, *, project: str | None = None) -> dict[str, str]:
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if project is not None:
        headers[PROJECT_HEADER] = project
    return headers


__all__ = (
    "http_mcp_client",
    "result_text",
    "simone_mcp_parameters",
    "stdio_mcp_client",
    "tool_call_request",
)
