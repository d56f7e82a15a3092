"""The ``simone`` entry point: argparse with one sub-command module per command group.

Each module ``simone.agents.cli._<name>`` exposes ``register(subparsers)``, which adds its parser(s) and
sets ``func`` (an ``async def (args) -> int`` returning the exit code) with ``parser.set_defaults``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from simone.runtime import SimoneError

COMMANDS: tuple[str, ...] = ("index", "search", "ask", "research", "memory", "doctor", "mcp")
"""Command modules, in the order they appear in ``simone --help``."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered command."""
    parser = argparse.ArgumentParser(
        prog="simone",
        description="Routed retrieval for agents: memory, documents and researcher-only web search.",
    )
    parser.add_argument("--config", help="path to simone.toml (default: $SIMONE_CONFIG or ./simone.toml)")
    parser.add_argument(
        "--data-dir", help="where the index, memory and caches live (default: per-user data dir)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"simone.agents.cli._{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 error, 2 usage, 3 no results/failed where documented)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[Any], Awaitable[int]] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return anyio.run(func, args)
    except SimoneError as exc:
        print(f"simone: error: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("simone: interrupted", file=sys.stderr)  # noqa: T201
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
