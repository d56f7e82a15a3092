"""``simone serve`` — simone's MCP tools over streamable HTTP for many callers, each scoped by its token.

``simone serve --host 127.0.0.1 --port 8765 [--workers N]``: the same tools as ``simone mcp`` at
``http://HOST:PORT/mcp``, plus ``GET /healthz`` and ``GET /readyz``. Each caller presents a bearer
token from ``simone token create``, which carries its actor, projects and role. ``--actor`` instead
serves without tokens, every call as that actor (for one user on loopback). ``--tools`` is the tool
profile of open mode and of every token made without one (default ``[mcp] tools``, else ``core``).
See docs/serve.md.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from simone.agents.cli._settings import nonempty_text, positive_int
from simone.agents.mcp import TOOL_PROFILE_NAMES, tool_profiles_help


def _port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= number <= 65_535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, not {number}")
    return number


def register(subparsers: Any) -> None:
    """Add the ``serve`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve the MCP tools over streamable HTTP to many callers, scoped by bearer tokens",
        description=(
            "Serve simone's MCP tools at http://HOST:PORT/mcp (streamable HTTP), with GET /healthz and "
            "GET /readyz. Callers present a token from 'simone token create'."
        ),
    )
    parser.add_argument(
        "--host", type=nonempty_text, default=None, help="address to bind (default: [serve] host, 127.0.0.1)"
    )
    parser.add_argument("--port", type=_port, default=None, help="port (default: [serve] port, 8765)")
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="worker processes (default 1; above 1 needs shared memory, research cache and index)",
    )
    parser.add_argument(
        "--actor",
        type=nonempty_text,
        default=None,
        help="serve WITHOUT tokens, every call as this actor (open mode; for one user on loopback)",
    )
    parser.add_argument(
        "--project", type=nonempty_text, action="append", default=None, help="open mode: a readable project"
    )
    parser.add_argument(
        "--role",
        choices=("orchestrator", "researcher"),
        default="orchestrator",
        help="open mode: the role (default orchestrator; web_research only for researcher)",
    )
    parser.add_argument(
        "--tools",
        choices=TOOL_PROFILE_NAMES,
        default=None,
        metavar="PROFILE",
        help=tool_profiles_help("the tool profile of open mode and of tokens made without --tools"),
    )
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Check the set-up (tokens, workers, bind address), then serve until SIGINT or SIGTERM."""
    from simone.agents.cli._settings import settings_from_args
    from simone.agents.mcp import tool_profile
    from simone.agents.serve import (
        ServeOptions,
        is_loopback,
        open_token_store,
        serve_one,
        serve_workers,
        unshared_stores,
    )
    from simone.runtime import ConfigError

    settings = settings_from_args(args)
    tool_profile(args.tools or settings.mcp.tools)  # an unknown [mcp] tools stops the start, named
    serve = settings.serve
    host = args.host or serve.host
    port = serve.port if args.port is None else args.port
    workers = args.workers or serve.workers
    if args.actor is None and (args.project or args.role != "orchestrator"):
        raise ConfigError(
            "--project and --role belong to open mode (--actor); a token carries them otherwise"
        )
    if workers > 1:
        problems = unshared_stores(settings)
        if problems:
            raise ConfigError(
                f"--workers {workers} needs stores that every worker shares, but "
                + "; ".join(problems)
                + " — see docs/team.md, or run one worker"
            )
    options = ServeOptions(
        config=args.config,
        data_dir=args.data_dir,
        host=host,
        open_actor=args.actor,
        open_projects=tuple(args.project or ()),
        open_role=args.role,
        tools=args.tools,
    )
    if args.actor is None:
        store = open_token_store(settings)
        try:
            active = store.active()
        finally:
            store.close()
        where = f"tokens from {store.where} ({len(active)} active)"
        if not active:
            _warn(
                f"no token is configured in {store.where}: every call is refused (401) until you run "
                "'simone token create --actor NAME --project NAME'"
            )
    else:
        where = f"OPEN mode, no tokens: every call runs as actor {args.actor!r}"
        if not is_loopback(host):
            _warn(
                f"binding {host} without tokens: anyone who reaches {host}:{port} acts as {args.actor!r}; "
                "use tokens ('simone token create') instead of --actor"
            )
    _warn(f"listening on http://{host}:{port}/mcp, {workers} worker(s), {where}")
    from simone.agents.cli._refresh import refreshing, refreshing_in_thread  # [index] watch

    if workers > 1:  # the supervisor has no runtime: its refresh opens an embedder of its own
        with refreshing_in_thread(settings):
            serve_workers(settings, options, host=host, port=port, workers=workers)
    else:  # the refresh embeds with the runtime's chain (one ONNX session, not two)
        await serve_one(
            settings, options, host=host, port=port, beside=functools.partial(refreshing, settings)
        )
    return 0


def _warn(message: str) -> None:
    print(f"simone serve: {message}", file=sys.stderr, flush=True)  # noqa: T201
