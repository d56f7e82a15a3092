"""``simone research QUESTION`` — bounded web research in a researcher child session.

It needs a search backend (``SIMONE_WEB__SEARXNG_URL``, ``SIMONE_WEB__BRAVE_API_KEY`` or
``SIMONE_WEB__TAVILY_API_KEY``) and says so plainly when none is configured.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from simone.agents._runtime import Runtime
from simone.agents._session import NOT_CONFIGURED_HINT
from simone.agents.cli._render import make_console
from simone.agents.cli._settings import (
    add_scope_arguments,
    event_from_args,
    nonempty_text,
    settings_from_args,
)
from simone.providers.web import web_configured

EXIT_NOT_CONFIGURED = 2
EXIT_NO_EVIDENCE = 3


def register(subparsers: Any) -> None:
    """Add the ``research`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "research",
        help="bounded web research with cited sources (needs a search backend)",
        epilog="exit status: 0 evidence found, 3 no evidence, 2 no search backend configured, 1 error",
    )
    parser.add_argument("question", type=nonempty_text, help="the question to research")
    parser.add_argument("--depth", choices=("basic", "standard", "deep"), default=None, help="research depth")
    add_scope_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the WebResearchResult as JSON")
    parser.set_defaults(func=run)


def print_research(result: Any, console: Console) -> None:
    """Evidence with sources, the confidence, the budget and every limitation."""
    for number, item in enumerate(result.evidence, start=1):
        console.print(
            f"[bold][{number}][/] [bold]{escape(item.title or item.locator)}[/]  [dim]{escape(item.locator)}[/]"
        )
        text = " ".join(item.content.split())
        console.print(f"    {escape(text[:400] + (' …' if len(text) > 400 else ''))}\n")
    confidence = result.confidence
    console.print(
        f"status: [bold]{result.status.value}[/] (stopped: {result.stop_reason.value}) · "
        f"confidence {confidence.value:.2f} (floor {confidence.floor:.2f})"
    )
    console.print(f"  [dim]{escape(confidence.explanation)}[/]")
    budget = result.budget
    console.print(
        f"  [dim]queries {budget.queries_used}/{budget.max_queries} · fetches {budget.fetches_used}/"
        f"{budget.max_fetches} · iterations {budget.iterations_run}/{budget.max_iterations} · tokens "
        f"{budget.used_tokens}/{budget.max_context_tokens}[/]"
    )
    for note in result.limitations:
        console.print(f"  [yellow]limitation[/] {escape(note)}")


async def run(args: argparse.Namespace) -> int:
    """Research the question in a researcher child of an orchestrator session."""
    settings = settings_from_args(args)
    if not web_configured(settings):
        message = f"simone research needs a search backend, but {NOT_CONFIGURED_HINT}."
        if args.json:
            sys.stdout.write(
                '{"status": "failed", "error": "not_configured", "message": ' + _quote(message) + "}\n"
            )
        print(f"simone: {message}", file=sys.stderr)  # noqa: T201
        return EXIT_NOT_CONFIGURED
    async with Runtime.open(settings, documents=False) as runtime:
        context = runtime.admit(event_from_args(args, args.question))
        result = await runtime.research(context, args.question, depth=args.depth)
    if args.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        print_research(result, make_console())
    return 0 if result.evidence else EXIT_NO_EVIDENCE


def _quote(text: str) -> str:
    import json

    return json.dumps(text)
