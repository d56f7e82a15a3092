"""``simone search QUERY [PATH]`` — routed search over the document index, or over a folder with PATH."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import AsyncExitStack
from typing import Any

from rich.console import Console
from rich.markup import escape
from simone.agents.cli._render import exit_code, print_result
from simone.agents.cli._settings import default_actor, settings_from_args
from simone.providers import FolderProvider
from simone.runtime import Analyzer, Caller, Explanation, Provider, Router, SearchMode, TrustedContext


def register(subparsers: Any) -> None:
    """Add the ``search`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "search",
        help="search the document index (or a folder of text files) through the router",
        description=(
            "Search the document index built by 'simone index' (lexical, semantic or hybrid), or, with PATH, "
            "the .md/.txt/.rst files of a folder read on the fly (lexical BM25). Exit status: 0 evidence or an "
            "honest no_results, 1 failed/forbidden or error."
        ),
    )
    parser.add_argument("query", help="the question or keywords")
    parser.add_argument(
        "path", nargs="?", help="a folder (or file) of text documents to search instead of the index"
    )
    parser.add_argument(
        "--mode",
        choices=[m.value for m in SearchMode],
        help="index search mode (default: index.default_mode)",
    )
    parser.add_argument("--project", default=None, help="search only chunks of this project (index only)")
    parser.add_argument("--collection", default=None, help="the index collection (default: index.collection)")
    parser.add_argument("--limit", type=int, default=None, help="how many items to consider (default 10)")
    parser.add_argument("--max-tokens", type=int, default=None, help="evidence token budget (default 4000)")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="show how the query was analysed (words used/ignored, synonyms, terms)",
    )
    parser.add_argument("--json", action="store_true", help="print the RetrievalResult as JSON")
    parser.add_argument("--verbose", action="store_true", help="list every skipped file")
    parser.set_defaults(func=run)


def print_explanation(explanation: Explanation, console: Console) -> None:
    """The analysis of the query, in plain words."""
    console.print(f"[bold]query analysis[/]: {escape(explanation.message)}")
    console.print(f"  words used:    {escape(', '.join(explanation.words_used) or '—')}")
    console.print(f"  words ignored: {escape(', '.join(explanation.words_ignored) or '—')}")
    if explanation.synonyms_applied:
        uses = "; ".join(
            f"{escape(' '.join(use.words))} → {escape(use.term)}" for use in explanation.synonyms_applied
        )
        console.print(f"  synonyms:      {uses}")
    console.print(f"  terms:         {escape(' '.join(explanation.terms) or '—')}\n")


async def run(args: argparse.Namespace) -> int:
    """Open the index (or read the folder), route the query through the router, print the result."""
    settings = settings_from_args(args)
    explanation = Analyzer.from_settings(settings.lexical).explain(args.query) if args.explain else None
    console = Console()
    async with AsyncExitStack() as stack:
        provider: Provider
        if args.path:
            folder = FolderProvider(args.path, analyzer=Analyzer.from_settings(settings.lexical))
            await folder.load()
            provider = folder
            if not args.json:
                shown = folder.skipped if args.verbose else folder.skipped[:5]
                for skipped in shown:
                    console.print(f"[dim]skipped {escape(skipped.path)}: {escape(skipped.reason)}[/]")
                if len(folder.skipped) > len(shown):
                    more = len(folder.skipped) - len(shown)
                    console.print(f"[dim]… and {more} more skipped file(s) (--verbose lists them)[/]")
        else:
            from simone.providers.documents import DocumentIndex

            index = await stack.enter_async_context(DocumentIndex.open(settings, collection=args.collection))
            provider = index.provider()
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
        fields: dict[str, Any] = {"limit": limit, "max_tokens": budget}
        if args.mode:
            fields["mode"] = SearchMode(args.mode)
        request = router.request(args.query, **fields)
        context = TrustedContext(
            actor=default_actor(),
            project=args.project,
            caller=Caller.ORCHESTRATOR,
            token_budget=max(1, budget),
        )
        result = await router.retrieve(request, context)
    if args.json:
        data = result.model_dump(mode="json")
        if explanation is not None:
            data = {"explain": explanation.model_dump(mode="json"), "result": data}
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        if explanation is not None:
            print_explanation(explanation, console)
        print_result(result, console)
    return exit_code(result.status)
