"""``simone token`` — bearer tokens for ``simone serve``: create (printed once), list, revoke.

Only each token's SHA-256 is stored, with its actor, projects, client, role, tool profile and expiry, in the store
``[serve] tokens`` names: the token file (``[serve] tokens_file``, default
``<data_dir>/serve-tokens.json``, owner-only permissions) or memory's PostgreSQL database.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from simone.agents.cli._settings import nonempty_text
from simone.agents.mcp import TOOL_PROFILE_NAMES, tool_profiles_help

if TYPE_CHECKING:
    from simone.agents.serve import TokenStore


def register(subparsers: Any) -> None:
    """Add ``token create``, ``token list`` and ``token revoke``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "token", help="create, list and revoke the bearer tokens of 'simone serve'"
    )
    commands = parser.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = commands.add_parser("create", help="create a token (printed once; only its hash is stored)")
    create.add_argument("--actor", type=nonempty_text, required=True, help="the actor every call runs as")
    create.add_argument(
        "--project",
        type=nonempty_text,
        action="append",
        default=None,
        help="a project it may read (repeat; the first is the default)",
    )
    create.add_argument(
        "--role",
        choices=("orchestrator", "researcher"),
        default="orchestrator",
        help="orchestrator (default) or researcher (the only role with web_research)",
    )
    create.add_argument(
        "--tools",
        choices=TOOL_PROFILE_NAMES,
        default=None,
        metavar="PROFILE",
        help=tool_profiles_help("the tool profile its tools/list shows", default="the server's"),
    )
    create.add_argument("--client", type=nonempty_text, default=None, help="the client scope key")
    create.add_argument(
        "--expires",
        type=nonempty_text,
        default=None,
        help="30d, 12h, 90m, 2w or an ISO date (default: never)",
    )
    create.set_defaults(func=run_create)
    listing = commands.add_parser("list", help="the tokens (never their secrets)")
    listing.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    listing.set_defaults(func=run_list)
    revoke = commands.add_parser("revoke", help="revoke a token by its id (works at once, in every worker)")
    revoke.add_argument("id", type=nonempty_text, help="the token's id (from 'simone token list')")
    revoke.set_defaults(func=run_revoke)


def _store(args: argparse.Namespace) -> TokenStore:
    from simone.agents.cli._settings import settings_from_args
    from simone.agents.serve import open_token_store

    return open_token_store(settings_from_args(args))


async def run_create(args: argparse.Namespace) -> int:
    """Create a token; print it (stdout, once) and where its hash went (stderr)."""
    from simone.agents.serve import parse_expiry

    store = _store(args)
    expires = parse_expiry(args.expires) if args.expires else None
    token, record = store.create(
        args.actor,
        projects=args.project or (),
        client=args.client,
        role=args.role,
        tools=args.tools,
        expires=expires,
    )
    print(token)  # noqa: T201
    print(  # noqa: T201
        f"simone token: created {record.grant.token_id} for {args.actor} ({args.role}, tools "
        f"{args.tools or 'of the server'}); only its hash is "
        f"stored, in {store.where} — keep the token now, it is not shown again",
        file=sys.stderr,
    )
    return 0


async def run_list(args: argparse.Namespace) -> int:
    """Print every token's id, actor, projects, role, expiry and state (never a secret)."""
    rows = [record.public() for record in _store(args).records()]
    if args.json:
        for row in rows:
            print(json.dumps(row))  # noqa: T201
        return 0
    if not rows:
        print("no tokens; create one with 'simone token create --actor NAME'")  # noqa: T201
        return 0
    for row in rows:
        state = "active" if row["active"] else ("revoked" if row["revoked"] else "expired")
        projects = ",".join(row["projects"]) or "-"
        print(  # noqa: T201
            f"{row['id']}  {state:7}  {row['role']:12}  tools={row['tools'] or '-'}  actor={row['actor']}  "
            f"projects={projects}  "
            f"client={row['client'] or '-'}  expires={row['expires'] or 'never'}"
        )
    return 0


async def run_revoke(args: argparse.Namespace) -> int:
    """Revoke one token."""
    record = _store(args).revoke(args.id)
    print(f"revoked {record.grant.token_id} (actor {record.grant.actor})")  # noqa: T201
    return 0
