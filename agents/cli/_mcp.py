"""``simone mcp`` — serve simone's tools to MCP clients over stdio.

The server admits one event at start-up (``--actor``, ``--project``, ``--conversation`` or
``$SIMONE_ACTOR``) under a role: ``--role orchestrator`` (default) or ``--role researcher`` (the only
role that gets ``web_research``). Tool arguments never carry scope. ``--tools`` picks the tool profile
``tools/list`` shows (``core`` — retrieval, delegation and one ``memory`` tool — unless ``[mcp] tools``
says otherwise; ``full`` for every tool; see :data:`simone.agents.mcp.TOOL_PROFILES`).

The server answers the handshake at once: the runtime is imported in a worker thread and opened beside
it (``tools/call`` waits for it), and LanceDB and the embedding model are loaded by the first search
(``provider_options={"index": {"lazy": True}}``). ``tools/list`` is answered at once too, from the
lists shipped with simone, when they are the live ones (default tool settings, the built-in
providers, local memory: :mod:`simone.agents.mcp._tool_list`); otherwise it waits for the runtime. A
runtime that fails to open is reported on stderr at once, every later tool request is answered with
that error, and the command exits 1 when the client leaves.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from simone.agents.cli._settings import add_scope_arguments, event_from_args, settings_from_args
from simone.agents.mcp import TOOL_PROFILE_NAMES, tool_profiles_help

if TYPE_CHECKING:
    from simone.agents.mcp import ToolHandlers


def register(subparsers: Any) -> None:
    """Add the ``mcp`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp",
        help="serve retrieve_context, the memory tools (and web_research for researchers) over MCP stdio",
    )
    parser.add_argument(
        "--role",
        choices=("orchestrator", "researcher"),
        default="orchestrator",
        help="the role the server's session plays (default: orchestrator; web_research only for researcher)",
    )
    parser.add_argument(
        "--tools",
        choices=TOOL_PROFILE_NAMES,
        default=None,
        metavar="PROFILE",
        help=tool_profiles_help("the tool profile tools/list shows"),
    )
    add_scope_arguments(parser)
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Serve at once, open the runtime beside the handshake, serve until the client leaves.

    Exits 1 if the runtime could not open (the error was printed on stderr when it happened).
    """
    import anyio
    import simone.agents.mcp as served
    from simone.agents.cli._main import EXIT_ERROR, report
    from simone.agents.mcp import (
        serve_stdio_opening,
        server_version,
        shipped_tools,
        stdio_instructions,
        tool_profile,
    )

    settings = settings_from_args(args)
    event = event_from_args(args)
    listed = tool_profile(args.tools or settings.mcp.tools)  # an unknown [mcp] tools stops here, named

    @asynccontextmanager
    async def open_tools() -> AsyncIterator[ToolHandlers]:
        # the runtime's imports (as long as the MCP SDK's own) run off the event loop, beside the handshake
        await anyio.to_thread.run_sync(getattr, served, "open_stdio_tools")
        from simone.agents.mcp import open_stdio_tools

        async with open_stdio_tools(settings, event, role=args.role, tools=listed) as tools:
            yield tools

    failure = await serve_stdio_opening(
        open_tools,
        name="simone",
        version=server_version(),
        instructions=stdio_instructions(args.role, event["actor"]),
        report=lambda exc: report(exc, "simone mcp", data_dir=args.resolved_data_dir),
        early_list=lambda: shipped_tools(settings, args.role, listed),
    )
    return 0 if failure is None else EXIT_ERROR
