"""``simone index PATH… [--embed-pending] [--rebuild-ann]`` — index files into the document index, incrementally.

A progress bar shows files, chunks, embedded, pending and skipped counts while it runs (advancing as
files are read and as chunks are embedded and written); a summary lists what was skipped and why,
and any embedding failure (rows then wait as "pending embedding" and are still found by lexical
search).

``--json`` prints one JSON object, whatever the options: the fields of
:meth:`~simone.providers.documents.IndexReport.to_dict` (``collection``, ``space``, ``files_*``,
``chunks``, ``embedded``, …, ``skipped`` as ``[{"path", "reason"}]``, ``failures``, ``maintenance``,
``elapsed_s``) summed over what the command did (indexing, then ``--embed-pending``; counts stay 0
for a step not run), plus ``rebuilt_ann``: what ``--rebuild-ann`` did, one line per table (``[]``
without it).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from simone.agents.cli._render import make_console
from simone.agents.cli._settings import collection_name, nonempty_path, nonempty_text, settings_from_args
from simone.providers.documents import DocumentIndex, IndexReport
from simone.runtime import InvalidRequest

SKIPPED_SHOWN = 20
"""How many skipped files the summary lists one by one (the rest are counted)."""


def register(subparsers: Any) -> None:
    """Add the ``index`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "index",
        help="index files into the document index (incremental; Markdown, text, code, HTML, PDF)",
        description="Index files and folders. Unchanged files are skipped, vanished files are removed, "
        "and only new text is embedded. Rows whose embedder is unavailable wait as pending.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", type=nonempty_path, help="files or folders to index"
    )
    parser.add_argument(
        "--embed-pending",
        action="store_true",
        help="embed the chunks still waiting for a vector (alone, or after indexing PATHs)",
    )
    parser.add_argument(
        "--rebuild-ann",
        action="store_true",
        help="build the vector indexes afresh (after many small updates to a large collection)",
    )
    parser.add_argument(
        "--project", type=nonempty_text, default=None, help="the project the chunks belong to (default: none)"
    )
    parser.add_argument(
        "--collection", type=collection_name, default=None, help="the collection (default: index.collection)"
    )
    parser.add_argument(
        "--no-embed", action="store_true", help="store new chunks as pending (lexical search only for now)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the report as one JSON object (see the module docs)"
    )
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Index the paths (and/or embed pending rows) and print the report."""
    if not args.paths and not args.embed_pending and not args.rebuild_ann:
        raise InvalidRequest("give at least one PATH to index, or --embed-pending, or --rebuild-ann")
    settings = settings_from_args(args)
    console = make_console(stderr=True)
    reports: list[IndexReport] = []
    rebuilt: list[str] = []
    async with DocumentIndex.open(settings, collection=args.collection) as index:
        with _progress_bar(console, enabled=not args.json) as bar:
            task = bar.add_task("indexing", total=None)

            def progress(report: IndexReport) -> None:
                bar.update(
                    task,
                    total=report.files_total or None,
                    completed=report.files_done,
                    description=_describe(report),
                )

            if args.paths:
                reports.append(
                    await index.index_paths(
                        args.paths, project=args.project or "", progress=progress, embed=not args.no_embed
                    )
                )
            if args.embed_pending:
                bar.update(task, description="embedding pending chunks")
                reports.append(await index.embed_pending(progress=progress))
            if args.rebuild_ann:
                bar.update(task, description="building the vector indexes")
                rebuilt = await index.rebuild_ann()
        space = index.space.key if index.space is not None else ""
    if args.json:
        payload = combined(reports, collection=index.name, space=space).to_dict() | {"rebuilt_ann": rebuilt}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        out = make_console()
        for report in reports:
            print_summary(report, out)
        for note in rebuilt:
            out.print(escape(note))
    return 0


def combined(reports: list[IndexReport], *, collection: str, space: str) -> IndexReport:
    """One report of the command's steps: counts summed, lists joined, ``*pending_left`` the last step's."""
    total = IndexReport(collection=collection, space=space)
    for report in reports:
        for name in IndexReport.__slots__:
            value = getattr(report, name)
            if name in ("collection", "space"):
                continue
            if name == "pending_left":
                total.pending_left = value
            elif name == "extra_spaces":
                for key, tally in value.items():
                    into = total.extra_spaces.setdefault(key, dict.fromkeys(tally, 0))
                    for count, number in tally.items():
                        into[count] = number if count == "pending_left" else into.get(count, 0) + number
            else:
                setattr(total, name, getattr(total, name) + value)
    return total


def _progress_bar(console: Console, *, enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not enabled,
        transient=True,
    )


def _describe(report: IndexReport) -> str:
    return (
        f"files {report.files_done}/{report.files_total} · chunks {report.chunks} · "
        f"embedded {report.embedded} · pending {report.pending} · skipped {len(report.skipped)}"
    )


def print_summary(report: IndexReport, console: Console) -> None:
    """The final summary of one run."""
    table = Table(
        title=f"collection {escape(report.collection)} · space {escape(report.space)}", show_header=False
    )
    table.add_column("what")
    table.add_column("count", justify="right")
    rows = [
        ("files found", report.files_total),
        ("files indexed (new or changed)", report.files_indexed),
        ("files unchanged", report.files_unchanged),
        ("files removed (vanished)", report.files_deleted),
        ("files skipped", len(report.skipped)),
        ("chunks written", report.chunks),
        ("chunks embedded now", report.embedded),
        ("vectors from the embedding cache", report.cached),
        ("vectors reused from the index", report.reused),
        ("chunks stored pending", report.pending),
        ("pending chunks embedded", report.pending_filled),
        ("chunks still pending", report.pending_left),
    ]
    for space, tally in report.extra_spaces.items():
        rows += [
            (f"{space}: chunks embedded now", tally["embedded"]),
            (f"{space}: chunks still pending", tally["pending_left"]),
        ]
    for label, value in rows:
        table.add_row(escape(label), f"{value:,}")
    table.add_row("seconds", f"{report.elapsed_s:.2f}")
    console.print(table)
    for skipped in report.skipped[:SKIPPED_SHOWN]:
        console.print(f"[dim]skipped {escape(skipped.path)}: {escape(skipped.reason)}[/]")
    if len(report.skipped) > SKIPPED_SHOWN:
        console.print(f"[dim]… and {len(report.skipped) - SKIPPED_SHOWN} more skipped (see --json)[/]")
    for failure in report.failures:
        console.print(f"[bold yellow]warning:[/] {escape(failure)}")
    for note in report.maintenance:
        console.print(f"[dim]{escape(note)}[/]")
