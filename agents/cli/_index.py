"""``simone index PATH… [--embed-pending] [--rebuild-ann] [--calibrate] [--watch]`` — index files into the document index, incrementally.

A progress bar shows files, chunks, embedded, pending and skipped counts while it runs (advancing as
files are read and as chunks are embedded and written); the summary starts with one line that counts
every file found — ``files found 36: 25 indexed, 0 unchanged, 11 skipped (images and media 4,
stylesheets and scripts 3, …)`` — lists the files skipped for a problem (unreadable, too large, could
not be loaded; ``--verbose`` lists every skipped file with its reason, noise included), and any
embedding failure (rows then wait as "pending embedding" and are still found by lexical search).

**Noise** (stylesheets, scripts in asset folders, site navigation, images, lockfiles and build
output) is skipped by default: ``--include PATTERN`` / ``[index] include`` indexes it anyway,
``--skip PATTERN`` / ``[index] skip`` skips more (gitignore-style patterns, below each PATH).

**Freshness**: ``--watch`` indexes the PATHs, then follows their changes (watchfiles): every batch of
edited, added and removed files is re-indexed under the collection's writer lock, one line per run,
until Ctrl-C. In a git work tree a run reads only the files changed since the last indexed commit
and the ones not committed (``[index] use_git``).

``--json`` prints one JSON object, whatever the options: the fields of
:meth:`~simone.providers.documents.IndexReport.to_dict` (``collection``, ``space``, ``files_*``,
``chunks``, ``embedded``, …, ``skipped`` and ``read_in_part`` (files indexed without some of their
parts: a PDF page with no text layer…) as ``[{"path", "reason"}]``, ``failures``, ``maintenance``,
``elapsed_s``) summed over what the command did (indexing, then ``--embed-pending``; counts stay 0
for a step not run), plus ``rebuilt_ann``: what ``--rebuild-ann`` did, one line per table (``[]``
without it), and ``calibration``: per table whose relevance rule was fitted by this run, the fitted
values (:meth:`~simone.providers.documents.SpaceCalibration.to_dict`) or ``{"error": why}``.

``--drop COLLECTION`` removes a collection (its table and its extra spaces' tables) under its writer
lock, e.g. ``simone-handbook``, the bundled handbook that ``simone ask`` indexes on a fresh machine.

**Calibration** (docs/calibration.md): ``--calibrate`` fits the relevance rule for meaning (margin,
band, floor) for the collection's embedding space(s) from the collection's own chunks and stores it
with the space. It also happens on its own after indexing, once, for a space that has neither shipped
nor stored values (a model the user brings); a collection too small to fit says so and is tried again
by the next run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from simone.agents.cli._render import make_console
from simone.agents.cli._settings import collection_name, nonempty_path, nonempty_text, settings_from_args
from simone.providers.documents import (
    DocumentIndex,
    IndexReport,
    SpaceCalibration,
    WatchRun,
    calibrate,
    calibrate_missing,
    is_folder,
    skip_category,
    skipped_counts,
    watch_index,
)
from simone.runtime import InvalidRequest, Settings

if TYPE_CHECKING:
    from simone.providers.documents import RayExecutor

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
        "--calibrate",
        action="store_true",
        help="fit the relevance rule for the collection's embedding space(s) from its own chunks and store "
        "it (automatic after the first index of a space without values)",
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
        "--drop",
        type=collection_name,
        default=None,
        metavar="COLLECTION",
        help="remove a collection and its tables, e.g. simone-handbook (the handbook 'simone ask' indexes "
        "on a fresh machine); alone, without PATHs",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object (see the module docs); with --watch, one object per run",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="after indexing, follow the PATHs and re-index what is edited, added or removed, until Ctrl-C",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="list every skipped file with its reason (noise included)",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="PATTERN",
        type=nonempty_text,
        help="skip files matching this gitignore-style pattern too (repeatable; adds to [index] skip)",
    )
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="PATTERN",
        type=nonempty_text,
        help="index files matching this pattern although skipped by default, e.g. '*.css' (repeatable)",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        type=_ray_address,
        metavar="ADDRESS|auto",
        help="read, chunk and embed on a Ray cluster (pip install 'simone[ray]'): no value starts a local "
        "one, 'auto' joins the running one, else host:port or ray://host:port (see docs/distributed.md)",
    )
    parser.add_argument(
        "--ray-workers", type=_positive, default=2, metavar="N", help="Ray embedding workers (default 2)"
    )
    parser.add_argument(
        "--ray-batch",
        type=_positive,
        default=128,
        metavar="N",
        help="texts per embedding call on a worker (default 128: exactly the local run's calls and vectors)",
    )
    parser.set_defaults(func=run)


def _ray_address(text: str) -> str:
    """``local``, ``auto``, ``host:port`` or ``ray://host:port``; a PATH after ``--ray`` is refused."""
    if text in ("local", "auto") or ":" in text:
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a Ray address (auto, host:port or ray://host:port); "
        "write the PATHs before --ray, or use --ray=auto"
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("give a number of at least 1")
    return value


@asynccontextmanager
async def _ray_executor(args: argparse.Namespace, settings: Settings) -> AsyncIterator[RayExecutor | None]:
    """The Ray executor ``--ray`` asks for, started and stopped around the run (``None`` without it).

    Ray is imported only here, and only with ``--ray``; without the extra the error names it.
    """
    if args.ray is None:
        yield None
        return
    from simone.providers.documents import RayExecutor

    executor = RayExecutor.from_settings(
        settings,
        address=None if args.ray == "local" else args.ray,
        workers=args.ray_workers,
        batch_texts=args.ray_batch,
    )
    async with executor:
        yield executor


async def run(args: argparse.Namespace) -> int:
    """Index the paths (and/or embed pending rows) and print the report."""
    if args.drop is not None:
        return await _drop(args)
    if not args.paths and not args.embed_pending and not args.rebuild_ann and not args.calibrate:
        raise InvalidRequest(
            "give at least one PATH to index, or --embed-pending, --rebuild-ann or --calibrate"
        )
    if args.watch and (not args.paths or args.ray is not None):
        raise InvalidRequest("--watch follows PATHs here: give at least one PATH, without --ray")
    settings = _with_patterns(settings_from_args(args), skip=args.skip, include=args.include)
    if args.watch:
        return await _watch(args, settings)
    console = make_console(stderr=True)
    reports: list[IndexReport] = []
    rebuilt: list[str] = []
    calibrated: dict[str, SpaceCalibration | str] = {}
    async with (
        _ray_executor(args, settings) as executor,
        DocumentIndex.open(settings, collection=args.collection) as index,
    ):
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
                        args.paths,
                        project=args.project or "",
                        progress=progress,
                        embed=not args.no_embed,
                        executor=executor,
                    )
                )
            if args.embed_pending:
                bar.update(task, description="embedding pending chunks")
                reports.append(await index.embed_pending(progress=progress, executor=executor))
            if args.rebuild_ann:
                bar.update(task, description="building the vector indexes")
                rebuilt = await index.rebuild_ann()
            if args.calibrate or ((args.paths or args.embed_pending) and not args.no_embed):
                bar.update(task, description="calibrating the relevance rule")
                calibrated = await _calibrate(index, explicit=args.calibrate)
        space = index.space.key if index.space is not None else ""
    if args.json:
        payload = combined(reports, collection=index.name, space=space).to_dict() | {
            "rebuilt_ann": rebuilt,
            "calibration": {
                name: fit.to_dict() if isinstance(fit, SpaceCalibration) else {"error": fit}
                for name, fit in calibrated.items()
            },
        }
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        out = make_console()
        for report in reports:
            print_summary(report, out, verbose=args.verbose)
        for note in rebuilt:
            out.print(escape(note))
        for name, fit in calibrated.items():
            print_calibration(name, fit, out)
    return 0


def _with_patterns(settings: Settings, *, skip: list[str], include: list[str]) -> Settings:
    """``settings`` with the command line's ``--skip`` / ``--include`` patterns added to ``[index]``."""
    if not skip and not include:
        return settings
    index = settings.index.model_copy(
        update={"skip": [*settings.index.skip, *skip], "include": [*settings.index.include, *include]}
    )
    return settings.model_copy(update={"index": index})


async def _watch(args: argparse.Namespace, settings: Settings) -> int:
    """``--watch``: index, then one line (or JSON object) per run until Ctrl-C or SIGTERM; exit 0."""
    import signal

    import anyio

    out = make_console()
    err = make_console(stderr=True)
    stop = anyio.Event()

    def on_run(run: WatchRun) -> None:
        if args.json:
            payload: dict[str, Any] = {"kind": run.kind, "added": run.added, "modified": run.modified}
            payload |= {"deleted": run.deleted, "error": run.error or None}
            payload["report"] = run.report.to_dict() if run.report is not None else None
            sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        out.print(escape(describe_run(run)))
        if run.report is not None:
            for failure in run.report.failures:
                out.print(f"[bold yellow]warning:[/] {escape(failure)}")

    async def until_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                stop.set()
                return

    async with (
        DocumentIndex.open(settings, collection=args.collection) as index,
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(until_signal)
        if not args.json:
            err.print(f"[dim]watching {len(args.paths)} path(s); Ctrl-C stops[/]")
        await watch_index(
            index, args.paths, on_run=on_run, project=args.project or "", embed=not args.no_embed, stop=stop
        )
        tasks.cancel_scope.cancel()
    return 0


def describe_run(run: WatchRun) -> str:
    """One line for a watched run: the time, what changed, and what the index did."""
    import time

    stamp = time.strftime("%H:%M:%S")
    if run.report is None:
        return f"{stamp} index run failed: {run.error}"
    report = run.report
    if run.kind == "initial":
        what = "indexed"
    else:
        names = [
            f"{label} {', '.join(_short(p) for p in paths)}"
            for label, paths in (("added", run.added), ("changed", run.modified), ("removed", run.deleted))
            if paths
        ]
        what = "; ".join(names) or "changes"
    return (
        f"{stamp} {what} → {found_line(report)}; {report.files_deleted} removed · "
        f"{report.chunks} chunk(s) written · {report.elapsed_s:.2f} s"
    )


def _short(path: str) -> str:
    return Path(path).name


async def _drop(args: argparse.Namespace) -> int:
    """``--drop COLLECTION``: remove it (alone: with PATHs or other steps it is refused)."""
    if args.paths or args.embed_pending or args.rebuild_ann or args.calibrate or args.collection:
        raise InvalidRequest("--drop COLLECTION runs alone: give no PATH, --collection or other step with it")
    from simone.providers.documents import drop_collection

    tables = await drop_collection(settings_from_args(args), args.drop)
    if args.json:
        sys.stdout.write(json.dumps({"dropped": args.drop, "tables": tables}, indent=2) + "\n")
    else:
        make_console().print(f"dropped collection {escape(args.drop)} ({len(tables)} table(s))")
    return 0


async def _calibrate(index: DocumentIndex, *, explicit: bool) -> dict[str, SpaceCalibration | str]:
    """``--calibrate``: fit every semantic table of the collection; otherwise only the uncalibrated."""
    tables = index.semantic_collections()
    if not explicit:
        return dict(await calibrate_missing(tables, index.chain, index.settings, analyzer=index.analyzer))
    if not tables:
        raise InvalidRequest(
            f"collection {index.name!r} is empty: index some files first ('simone index PATH'), then calibrate"
        )
    return {
        table.name: await calibrate(table, index.chain, index.settings, analyzer=index.analyzer)
        for _, table in tables
    }


def print_calibration(name: str, fit: SpaceCalibration | str, console: Console) -> None:
    """One line per fitted table: the values and what they do on the collection's own questions."""
    if not isinstance(fit, SpaceCalibration):
        console.print(f"[yellow]relevance rule of {escape(name)} not calibrated:[/] {escape(fit)}")
        return
    console.print(
        f"relevance rule of {escape(name)} ({escape(fit.space)}) calibrated: margin {fit.margin:.4f} · "
        f"band {fit.band:.3f} · floor {fit.floor:.2f} — on {fit.questions} questions from its chunks, own "
        f"chunk kept {fit.default_answered:.0%} → {fit.answered:.0%}; {fit.absent} absent topics left empty "
        f"{fit.default_absent_empty:.0%} → {fit.absent_empty:.0%}"
        + (
            f"; fusion vote {vote.intercept:+.2f} + {vote.slopes[0]:.2f} × margin (own chunk first "
            f"{fit.top_share:.0%}"
            + (
                f", the lexical leg {fit.lexical_top_share:.0%}"
                + (
                    f": read {-fit.vote_shift:+.2f} log-odds surer, on its footing"
                    if fit.shifted and fit.vote_shift
                    else ""
                )
                if fit.lexical_top_share is not None
                else ""
            )
            + ")"
            if (vote := fit.vote) is not None and fit.top_share is not None
            else ""
        )
    )


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


def found_line(report: IndexReport) -> str:
    """``files found 36: 25 indexed, 0 unchanged, 11 skipped (images and media 4, …)``.

    Folders skipped whole follow (``; 2 folders not walked (generated 2)``): their files were
    never listed, so they are not among the files found.
    """
    found = report.files_found or report.files_total
    return (
        f"files found {found:,}: {report.files_indexed:,} indexed, {report.files_unchanged:,} unchanged, "
        + skipped_counts(report.skipped)
    )


NOISE_LABELS = frozenset(
    {
        "stylesheets and scripts",
        "site navigation",
        "images and media",
        "generated",
        "index.skip",
        "unsupported type",
    }
)
"""Skip categories the summary only counts unless ``--verbose`` (expected, not a problem to look at)."""


def print_summary(report: IndexReport, console: Console, *, verbose: bool = False) -> None:
    """The final summary of one run: the files-found line, the counts, then what was skipped for a problem.

    Files skipped as noise (:data:`NOISE_LABELS`) are only counted; ``verbose`` lists them too.
    """
    console.print(escape(found_line(report)))
    table = Table(
        title=f"collection {escape(report.collection)} · space {escape(report.space)}", show_header=False
    )
    table.add_column("what")
    table.add_column("count", justify="right")
    rows = [
        ("files found", report.files_found or report.files_total),
        ("files indexed (new or changed)", report.files_indexed),
        ("files unchanged", report.files_unchanged),
        ("… of them not read (git: unchanged since the last indexed commit)", report.files_not_read),
        ("files removed (vanished)", report.files_deleted),
        ("files skipped", sum(1 for s in report.skipped if not is_folder(s.path))),
        ("folders skipped whole (files not listed)", sum(1 for s in report.skipped if is_folder(s.path))),
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
    listed = [s for s in report.skipped if verbose or skip_category(s.reason) not in NOISE_LABELS]
    shown = listed if verbose else listed[:SKIPPED_SHOWN]
    for skipped in shown:
        console.print(f"[dim]skipped {escape(skipped.path)}: {escape(skipped.reason)}[/]")
    if len(listed) > len(shown):
        console.print(f"[dim]… and {len(listed) - len(shown)} more skipped (see --verbose or --json)[/]")
    for partial in report.read_in_part:  # indexed, but some of it is not searchable: always said
        console.print(f"[yellow]read in part[/] {escape(partial.path)}: {escape(partial.reason)}")
    if report.git:
        for note in report.git:
            console.print(f"[dim]git: {escape(note)}[/]")
    for failure in report.failures:
        console.print(f"[bold yellow]warning:[/] {escape(failure)}")
    for note in report.maintenance:
        console.print(f"[dim]{escape(note)}[/]")
