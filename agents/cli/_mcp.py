"""``simone mcp`` — serve simone's tools to MCP clients over stdio.

The server admits one event at start-up (``--actor``, ``--project``, ``--conversation`` or
``$SIMONE_ACTOR``) under a role: ``--role orchestrator`` (default) or ``--role researcher`` (the only
role that gets ``web_research``). Tool arguments never carry scope.

The server answers the handshake before it opens the document index: LanceDB and the embedding model
are loaded by the first search (``provider_options={"index": {"lazy": True}}``).
"""

from __future__ import annotations

import argparse
from typing import Any

from simone.agents.cli._settings import add_scope_arguments, event_from_args, settings_from_args


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
    add_scope_arguments(parser)
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Open the runtime (the index on first use), admit the server's event, serve until the client leaves."""
    from simone.agents._mcp import serve_stdio
    from simone.agents._providers import LAZY_OPTION
    from simone.agents._runtime import Runtime
    from simone.agents._tools import ORCHESTRATOR, RESEARCHER
    from simone.runtime import Caller

    settings = settings_from_args(args)
    profile = RESEARCHER if args.role == "researcher" else ORCHESTRATOR
    caller = Caller.RESEARCHER if args.role == "researcher" else Caller.ORCHESTRATOR
    async with Runtime.open(settings, provider_options={"index": {LAZY_OPTION: True}}) as runtime:
        context = runtime.admit(event_from_args(args), caller=caller, timeout_s=None)
        await serve_stdio(runtime, context, profile)
    return 0
