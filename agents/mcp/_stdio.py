"""``simone mcp``'s stdio server: the handshake answered while the runtime opens.

A client waits for ``initialize`` before it does anything else, and importing simone's runtime (the
contracts, the providers, the workflows, the tools) costs about as much as importing the MCP SDK
itself. This module imports only the SDK and anyio, so the server starts at once: it answers
``initialize`` and ``ping`` while the tools are imported in a worker thread and opened beside it, and
``tools/call`` waits for them (:func:`serve_stdio_opening`). ``tools/list`` waits too, unless the server
was given the list to answer meanwhile (``early_list``: ``simone mcp`` answers the shipped list when it
is the live one — :mod:`simone.agents.mcp._tool_list`); once the tools are open it is always theirs.

If the tools fail to open, the failure is reported at once (``report``: ``simone mcp`` prints it on
stderr) and every later ``tools/list`` or ``tools/call`` is answered with a JSON-RPC error that carries
it — a client never waits on a server that will not answer. The server keeps answering until the
client closes stdin (a stdio server's life is its client's), then :func:`serve_stdio_opening` returns
the failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

ListTools = Callable[
    [ServerRequestContext[Any], types.PaginatedRequestParams | None], Awaitable[types.ListToolsResult]
]
CallTool = Callable[[ServerRequestContext[Any], types.CallToolRequestParams], Awaitable[types.CallToolResult]]


def server_version() -> str:
    """The installed simone version, as ``initialize`` reports it."""
    try:
        return version("simone")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


def stdio_instructions(profile: str, actor: str) -> str:
    """The instructions a one-caller (stdio) server gives: whose tools they are, and that scope is fixed."""
    return (
        f"simone {profile} tools. Scope comes from the server's admitted context "
        f"(actor {actor!r}); tool arguments never carry scope."
    )


@dataclass(frozen=True)
class ToolHandlers:
    """What a server needs of simone's tools: its ``tools/list`` and ``tools/call`` handlers."""

    list_tools: ListTools
    call_tool: CallTool


async def serve_stdio_opening(
    open_tools: Callable[[], AbstractAsyncContextManager[ToolHandlers]],
    *,
    name: str,
    version: str,
    instructions: str,
    report: Callable[[BaseException], object],
    early_list: Callable[[], types.ListToolsResult | None] | None = None,
) -> BaseException | None:
    """Serve over stdin/stdout while ``open_tools`` opens the tools; ``None``, or the failure to open.

    Args:
        open_tools: enters to the tool handlers (it may import heavy modules: run them in a worker
            thread, as ``simone mcp`` does, so the handshake is answered meanwhile) and closes them
            when the client has gone.
        name: the server name ``initialize`` answers with.
        version: the server version ``initialize`` answers with.
        instructions: the instructions ``initialize`` answers with.
        report: called once, at once, with the exception if ``open_tools`` fails.
        early_list: ``tools/list``'s answer while the tools are still opening (called on the first
            such request; ``None`` from it, or no ``early_list``: the request waits for the tools).

    Returns:
        ``None`` after a clean session, or the exception ``open_tools`` raised (already reported).
    """
    ready = anyio.Event()
    stop = anyio.Event()
    opened: list[ToolHandlers] = []
    failed: list[BaseException] = []

    async def handlers() -> ToolHandlers:
        await ready.wait()
        if failed:
            exc = failed[0]
            raise MCPError(
                types.INTERNAL_ERROR, f"simone could not start its tools: {type(exc).__name__}: {exc}"
            )
        return opened[0]

    early: list[types.ListToolsResult | None] = []

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if early_list is not None and not ready.is_set():
            if not early:
                early.append(early_list())
            if early[0] is not None:
                return early[0]
        return await (await handlers()).list_tools(ctx, params)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await (await handlers()).call_tool(ctx, params)

    async def hold() -> None:
        try:
            async with open_tools() as tools:
                opened.append(tools)
                ready.set()
                await stop.wait()
        except Exception as exc:  # reported, then answered to every tool request
            if opened:  # closing after a session failed: the session itself went well
                raise
            failed.append(exc)
            report(exc)
        finally:
            ready.set()

    server: Server[Any] = Server(
        name, version=version, instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool
    )
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hold)
        try:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            stop.set()
    return failed[0] if failed else None
