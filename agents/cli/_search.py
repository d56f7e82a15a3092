"""``simone search QUERY PATH`` — routed lexical search over a folder of text documents."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from simone.agents.cli._render import exit_code, print_result
from simone.providers import FolderProvider
from simone.runtime import Caller, Router, TrustedContext, load_settings


def register(subparsers: Any) -> None:
    """Add the ``search`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "search", help="search a folder of text documents (BM25 through the router)"
    )
    parser.add_argument("query", help="the question or keywords")
    parser.add_argument("path", help="a folder (or file) of .md/.txt/.rst documents")
    parser.add_argument("--limit", type=int, default=None, help="how many items to consider (default 10)")
    parser.add_argument("--max-tokens", type=int, default=None, help="evidence token budget (default 4000)")
    parser.add_argument("--json", action="store_true", help="print the RetrievalResult as JSON")
    parser.add_argument("--verbose", action="store_true", help="list every skipped file")
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Load the folder, route the query through the router, print the result."""
    settings = load_settings(args.config)
    provider = await FolderProvider(args.path).load()
    router = Router(
        [provider],
        rrf_k=settings.router.rrf_k,
        weights=settings.router.weights,
        provider_timeout_s=settings.router.provider_timeout_s,
        max_query_chars=settings.router.max_query_chars,
        min_truncation_tokens=settings.router.min_truncation_tokens,
    )
    limit = args.limit if args.limit is not None else settings.router.default_limit
    budget = args.max_tokens if args.max_tokens is not None else settings.router.default_max_tokens
    request = router.request(args.query, limit=limit, max_tokens=budget)
    context = TrustedContext(actor="cli", caller=Caller.ORCHESTRATOR, token_budget=max(1, budget))
    result = await router.retrieve(request, context)
    if args.json:
        sys.stdout.write(result.to_json() + "\n")
    else:
        console = Console()
        shown = provider.skipped if args.verbose else provider.skipped[:5]
        for skipped in shown:
            console.print(f"[dim]skipped {skipped.path}: {skipped.reason}[/]")
        if len(provider.skipped) > len(shown):
            console.print(
                f"[dim]… and {len(provider.skipped) - len(shown)} more skipped file(s) (--verbose lists them)[/]"
            )
        print_result(result, console)
    return exit_code(result.status)
