"""``simone search QUERY [PATH]`` — routed search over the document index, or over a folder with PATH."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from simone.agents.cli._render import exit_code, make_console, print_result
from simone.agents.cli._settings import (
    collection_name,
    default_actor,
    nonempty_path,
    nonempty_text,
    positive_int,
    settings_from_args,
)
from simone.providers import FolderProvider
from simone.runtime import (
    Caller,
    Provider,
    RerankOptions,
    Router,
    SearchMode,
    Status,
    TrustedContext,
)
from simone.runtime.text import (
    Analyzer,
    Explanation,
)

if TYPE_CHECKING:
    from simone.providers.documents import DocumentIndex

HINT_PROJECTS_SHOWN = 5
"""How many other projects a "no results here" hint names."""


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
    parser.add_argument("query", type=nonempty_text, help="the question or keywords")
    parser.add_argument(
        "path",
        type=nonempty_path,
        nargs="?",
        help="a folder (or file) of text documents to search instead of the index",
    )
    parser.add_argument(
        "--mode",
        choices=[m.value for m in SearchMode],
        help="index search mode (default: index.default_mode)",
    )
    parser.add_argument(
        "--project", type=nonempty_text, default=None, help="search only chunks of this project (index only)"
    )
    parser.add_argument(
        "--collection",
        type=collection_name,
        default=None,
        help="the index collection (default: index.collection)",
    )
    parser.add_argument(
        "--limit", type=positive_int, default=None, help="how many items to consider (default 10)"
    )
    parser.add_argument(
        "--max-tokens", type=positive_int, default=None, help="evidence token budget (default 4000)"
    )
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
    console = make_console()
    hint: str | None = None
    async with AsyncExitStack() as stack:
        provider: Provider
        index: DocumentIndex | None = None
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
            from simone.providers.documents import DocumentIndex, DocumentIndexProvider

            index = await stack.enter_async_context(DocumentIndex.open(settings, collection=args.collection))
            provider = DocumentIndexProvider(index)
        reranker = None
        if settings.rerank.backend != "none":  # the rerank stage, as the runtime's router has it
            from simone.providers.rerank import build_reranker

            reranker = build_reranker(settings.rerank)
            if reranker is not None:
                await stack.enter_async_context(reranker)
        router = Router(
            [provider],
            rrf_k=settings.router.rrf_k,
            weights=settings.router.weights,
            provider_timeout_s=settings.router.provider_timeout_s,
            max_query_chars=settings.router.max_query_chars,
            min_truncation_tokens=settings.router.min_truncation_tokens,
            reranker=reranker,
            rerank=RerankOptions.from_settings(settings.rerank),
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
        if index is not None and result.status is Status.NO_RESULTS:
            hint = await other_projects_hint(index, args.project)
    if args.json:
        data = result.model_dump(mode="json")
        if explanation is not None:
            data = {"explain": explanation.model_dump(mode="json"), "result": data}
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        if explanation is not None:
            print_explanation(explanation, console)
        print_result(result, console)
        if hint is not None:
            console.print(f"[yellow]hint[/] {escape(hint)}")
    return exit_code(result.status)


async def other_projects_hint(index: DocumentIndex, project: str | None) -> str | None:
    """When a search found nothing: how many chunks the collection holds in projects it did not search.

    A search sees the chunks indexed without a project plus those of ``--project``; chunks indexed with
    ``simone index … --project NAME`` are invisible to a search without it, which looked like "nothing
    indexed". Only counts and project names are told, never content. ``None`` when there are none.
    """
    collection = index.collection
    if collection is None:
        return None
    searched = ["", project] if project else [""]
    where = "project NOT IN ({})".format(", ".join("'" + p.replace("'", "''") + "'" for p in searched))
    hidden = await collection.count(where)
    if not hidden:
        return None
    rows = await collection.rows(where, columns=["project"])
    names = sorted({str(name) for name in rows.column("project").to_pylist()})
    shown = ", ".join(names[:HINT_PROJECTS_SHOWN]) + (", …" if len(names) > HINT_PROJECTS_SHOWN else "")
    scope = "chunks indexed without a project"
    if project:
        scope = f"project {project!r} and {scope}"
    return (
        f"this search covered {scope}; the collection also holds {hidden:,} chunk(s) in "
        f"{len(names)} other project(s) ({shown}) — add --project NAME to search one"
    )
