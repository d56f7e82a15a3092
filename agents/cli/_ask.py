"""``simone ask QUESTION`` — a cited answer from memory and the documents (offline by default).

The documents are the user's collection (``index.collection``). While it holds nothing, and no
documents of the user's are named (``--docs``, ``agents.sample_docs``), the question is answered from
simone's bundled handbook instead: its own collection, :data:`HANDBOOK_COLLECTION`, indexed on first
use and never mixed into the user's (``--handbook`` asks it on purpose; ``simone index --drop
simone-handbook`` removes it). With ``--docs PATH`` or ``agents.sample_docs``, an empty collection of
the user's is filled from those first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from simone.agents._runtime import Runtime, bundled_docs
from simone.agents._synthesis import Answer
from simone.agents.cli._render import make_console
from simone.agents.cli._settings import (
    add_scope_arguments,
    event_from_args,
    nonempty_path,
    nonempty_text,
    settings_from_args,
)
from simone.runtime import ConfigError, InvalidRequest, Settings

EXIT_ABSTAINED = 3

HANDBOOK_COLLECTION = "simone-handbook"
"""The collection of simone's bundled handbook (``simone.agents.handbook``), apart from the user's."""


def register(subparsers: Any) -> None:
    """Add the ``ask`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ask",
        help="answer a question with citations from memory and the indexed documents",
        epilog="exit status: 0 answered, 3 abstained (no evidence), 1 failed or error",
    )
    parser.add_argument("question", type=nonempty_text, help="the question")
    add_scope_arguments(parser)
    parser.add_argument(
        "--docs",
        type=nonempty_path,
        default=None,
        help="documents to index when no index exists (default: agents.sample_docs, else the bundled handbook)",
    )
    parser.add_argument("--no-auto-index", action="store_true", help="never index anything automatically")
    parser.add_argument(
        "--handbook",
        action="store_true",
        help=f"answer from simone's bundled handbook (collection {HANDBOOK_COLLECTION}) instead of your documents",
    )
    parser.add_argument("--json", action="store_true", help="print the Answer as JSON")
    parser.set_defaults(func=run)


async def ensure_index(runtime: Runtime, docs: str | None, console: Console | None) -> str | None:
    """Index the sample documents when the index is empty; returns what was indexed (or ``None``).

    Raises:
        ConfigError: the index is empty and there is nothing to index.
    """
    from simone.providers.documents import DOCUMENT_INDEX

    index = runtime.published.get(DOCUMENT_INDEX)
    if index is None:
        return None
    info = await index.info()
    if info is not None and info.rows:
        return None
    handbook = runtime.settings.index.collection == HANDBOOK_COLLECTION
    chosen = bundled_docs() if handbook else Path(docs) if docs else runtime.settings.agents.sample_docs
    if chosen is None and not handbook:
        return None  # nothing of the user's to index: the handbook answers instead (see run)
    if chosen is None or not await anyio.Path(chosen).exists():
        raise ConfigError(
            "the document index is empty and no sample documents were found; index your own with "
            "'simone index PATH' or pass --docs PATH"
        )
    if console is not None:
        console.print(f"[dim]no index yet: indexing {escape(str(chosen))} (first run)…[/]")
    with Progress(
        TextColumn("[dim]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=console is None,
        transient=True,
    ) as bar:
        task = bar.add_task("indexing", total=None)

        def progress(report: Any) -> None:
            bar.update(
                task,
                total=report.files_total or None,
                completed=report.files_done,
                description=f"indexing: {report.chunks} chunk(s), {report.embedded} embedded",
            )

        # the handbook is a package: index its pages, not its __init__.py
        paths = sorted(chosen.glob("*.md")) if chosen == bundled_docs() else [chosen]
        report = await index.index_paths(paths, progress=progress)
    if console is not None:
        console.print(
            f"[dim]indexed {report.files_indexed} file(s), {report.chunks} chunk(s) "
            f"in {report.elapsed_s:.1f}s[/]"
        )
    return str(chosen)


def print_answer(answer: Answer, console: Console) -> None:
    """The answer, its numbered sources and its limitations."""
    style = {"answered": "green", "abstained": "yellow", "failed": "red"}[answer.status]
    console.print(escape(answer.text))
    if answer.citations:
        console.print("\n[bold]Sources[/]")
        for cite in answer.citations:
            title = f"{escape(cite.title)} — " if cite.title else ""
            console.print(
                f"  [bold][{cite.number}][/] {title}[dim]{escape(cite.provider_name)} · "
                f"{escape(cite.locator)} · {cite.trust.value}[/]"
            )
    if answer.limitations:
        console.print("\n[bold]Limitations[/]")
        for note in answer.limitations:
            console.print(f"  [yellow]-[/] {escape(note)}")
    confidence = f" · research confidence {answer.confidence:.2f}" if answer.confidence is not None else ""
    console.print(
        f"\n[dim]status: [{style}]{answer.status}[/] · model: {escape(answer.model)}{confidence}[/]"
    )


async def _rows(settings: Settings) -> int:
    """How many chunks the collection of ``settings`` holds (0: none, or no index at all yet)."""
    from simone.providers.documents import DocumentStore, IndexLocation

    location = IndexLocation.from_settings(settings)
    if not location.remote and not await anyio.Path(location.uri).exists():
        return 0
    async with DocumentStore.at(location) as store:
        collection = await store.open_collection(settings.index.collection)
        return 0 if collection is None else await collection.count()


async def answering_settings(settings: Settings, args: argparse.Namespace) -> tuple[Settings, bool]:
    """The settings to answer with, and whether they name the handbook's collection instead of the user's.

    The handbook answers when asked (``--handbook``), or when the user's collection is empty and no
    documents of the user's are named to fill it (``--docs``, ``agents.sample_docs``).
    """
    if args.handbook and args.docs is not None:
        raise InvalidRequest("--handbook answers from simone's handbook; --docs names your own: give one")
    use_handbook = args.handbook or (
        not args.no_auto_index
        and args.docs is None
        and settings.agents.sample_docs is None
        and await _rows(settings) == 0
    )
    if not use_handbook:
        return settings, False
    # the handbook lives in the installed package, outside any folder the user's locator_base maps
    index = settings.index.model_copy(update={"collection": HANDBOOK_COLLECTION, "locator_base": None})
    return settings.model_copy(update={"index": index}), True


async def run(args: argparse.Namespace) -> int:
    """Open the runtime, index the sample docs if needed, answer."""
    own = settings_from_args(args)
    settings, handbook = await answering_settings(own, args)
    err = make_console(stderr=True)
    if handbook and not args.json and not args.handbook:
        err.print(
            f"[dim]your document index ({escape(own.index.collection)}) is empty: "
            f"answering from simone's handbook (collection {HANDBOOK_COLLECTION}). 'simone index PATH' "
            f"indexes your own; 'simone index --drop {HANDBOOK_COLLECTION}' removes the handbook.[/]"
        )
    async with Runtime.open(settings) as runtime:
        if not args.no_auto_index:
            await ensure_index(runtime, args.docs, None if args.json else err)
        answer = await runtime.ask(event_from_args(args, args.question))
    if args.json:
        sys.stdout.write(answer.model_dump_json(indent=2) + "\n")
    else:
        print_answer(answer, make_console())
    return {"answered": 0, "abstained": EXIT_ABSTAINED, "failed": 1}[answer.status]
