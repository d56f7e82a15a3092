"""``simone memory add|list|search|done|delete|export|import`` — structured memory from the command line.

The person at the terminal is the owner: commands run as a ``system`` caller under the scope given by
``--actor`` (default ``$SIMONE_ACTOR`` or the login name), ``--project`` and ``--conversation``. Only the
owner can write global records (``add … --global``) and export or import every scope (``--all``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime
from typing import Any

import anyio
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from simone.agents.cli._render import make_console
from simone.agents.cli._settings import (
    add_scope_arguments,
    default_actor,
    fraction,
    non_negative_int,
    nonempty_path,
    nonempty_text,
    positive_int,
    settings_from_args,
    utf8_text,
)
from simone.providers.memory import (
    ChecklistCreate,
    CreateSpec,
    FactCreate,
    ListQuery,
    MemoryRecord,
    NoteCreate,
    Priority,
    RecordKind,
    SearchQuery,
    TaskStateCreate,
    TodoCreate,
    dump_export,
    load_export,
    open_memory_store,
    render,
)
from simone.runtime import Caller, InvalidRequest, TrustedContext, describe_validation_error

EXIT_NOTHING_FOUND = 3
"""``simone memory search`` exits 3 when nothing in scope shares a word with the query."""

_KINDS = {"task": RecordKind.TASK_STATE, **{kind.value: kind for kind in RecordKind}}


def register(subparsers: Any) -> None:
    """Add the ``memory`` command group."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "memory", help="notes, todos, checklists, facts and task states (SQLite or PostgreSQL, scoped)"
    )
    commands = parser.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    add = commands.add_parser("add", help="remember something")
    kinds = add.add_subparsers(dest="kind", metavar="KIND", required=True)
    note = kinds.add_parser("note", help="a note: TITLE [--body TEXT]")
    note.add_argument("title", type=nonempty_text)
    note.add_argument("--body", type=utf8_text, default="")
    todo = kinds.add_parser("todo", help="a todo: TITLE [--priority P] [--due ISO-TIME]")
    todo.add_argument("title", type=nonempty_text)
    todo.add_argument("--body", type=utf8_text, default="")
    todo.add_argument("--priority", choices=[p.value for p in Priority], default="normal")
    todo.add_argument("--due", type=nonempty_text, default=None, help="e.g. 2026-02-01T09:00:00+00:00")
    checklist = kinds.add_parser("checklist", help="a checklist: TITLE --item TEXT …")
    checklist.add_argument("title", type=nonempty_text)
    checklist.add_argument(
        "--item", type=nonempty_text, action="append", default=[], help="an item (repeat, in order)"
    )
    fact = kinds.add_parser("fact", help="a fact: SUBJECT PREDICATE OBJECT")
    fact.add_argument("subject", type=nonempty_text)
    fact.add_argument("predicate", type=nonempty_text)
    fact.add_argument("object", type=nonempty_text)
    fact.add_argument("--source", type=nonempty_text, default=None)
    fact.add_argument("--confidence", type=fraction, default=1.0, help="0 to 1 (default 1)")
    fact.add_argument(
        "--supersedes",
        type=nonempty_text,
        default=None,
        help="the id of the current fact this one replaces",
    )
    task = kinds.add_parser("task", help="a task state: NAME [--phase P] [--progress 0-1]")
    task.add_argument("name", type=nonempty_text)
    task.add_argument("--phase", type=nonempty_text, default="started")
    task.add_argument("--progress", type=fraction, default=0.0, help="0 to 1 (default 0)")
    for kind_parser in (note, todo, checklist, fact, task):
        kind_parser.add_argument(
            "--tag", type=nonempty_text, action="append", default=[], help="a tag (repeat)"
        )
        kind_parser.add_argument(
            "--global", dest="global_", action="store_true", help="visible in every scope"
        )
        _common(kind_parser)

    listing = commands.add_parser("list", help="list records, newest first")
    listing.add_argument("--kind", choices=sorted(_KINDS), default=None)
    listing.add_argument("--status", type=nonempty_text, action="append", default=None)
    listing.add_argument("--tag", type=nonempty_text, action="append", default=None)
    listing.add_argument("--deleted", action="store_true", help="include soft-deleted records")
    listing.add_argument("--all-facts", action="store_true", help="include superseded and retired facts")
    listing.add_argument("--limit", type=positive_int, default=50, help="at most this many (default 50)")
    listing.add_argument("--offset", type=non_negative_int, default=0, help="skip this many first")
    _common(listing)

    search = commands.add_parser("search", help="search by words (BM25); exits 3 when nothing matches")
    search.add_argument("query", type=nonempty_text)
    search.add_argument("--kind", choices=sorted(_KINDS), default=None)
    search.add_argument("--limit", type=positive_int, default=10, help="at most this many (default 10)")
    _common(search)

    done = commands.add_parser("done", help="complete a record (archive / complete / retire)")
    done.add_argument("id", type=nonempty_text)
    _common(done)

    delete = commands.add_parser("delete", help="soft-delete a record (purged after the retention period)")
    delete.add_argument("id", type=nonempty_text)
    _common(delete)

    export = commands.add_parser("export", help="write memory as JSON (to FILE or stdout)")
    export.add_argument("file", type=nonempty_path, nargs="?", default="-")
    export.add_argument("--all", action="store_true", help="every scope, not only yours")
    _common(export)

    importing = commands.add_parser("import", help="read an export (all of it, or nothing)")
    importing.add_argument("file", type=nonempty_path, help="a JSON export, or - for stdin")
    importing.add_argument("--replace", action="store_true", help="overwrite records with the same ids")
    _common(importing)


def _common(parser: argparse.ArgumentParser) -> None:
    add_scope_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _context(args: argparse.Namespace) -> TrustedContext:
    return TrustedContext(
        actor=args.actor if args.actor is not None else default_actor(),
        project=args.project or None,
        conversation=args.conversation or None,
        caller=Caller.SYSTEM,
    )


def _spec(args: argparse.Namespace) -> CreateSpec:
    kind = args.kind
    tags = list(args.tag)
    if kind == "note":
        return NoteCreate(title=args.title, body=args.body, tags=tags)
    if kind == "todo":
        due = _time(args.due) if args.due else None
        return TodoCreate(
            title=args.title, body=args.body, priority=Priority(args.priority), due_at=due, tags=tags
        )
    if kind == "checklist":
        return ChecklistCreate.model_validate(
            {"title": args.title, "items": [{"text": t} for t in args.item], "tags": tags}
        )
    if kind == "fact":
        return FactCreate(
            subject=args.subject,
            predicate=args.predicate,
            object=args.object,
            source=args.source,
            confidence=args.confidence,
            supersedes=args.supersedes,
            tags=tags,
        )
    return TaskStateCreate(name=args.name, phase=args.phase, progress=args.progress, tags=tags)


def _time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidRequest(f"{text!r} is not an ISO time — write e.g. 2026-02-01T09:00:00+00:00") from exc
    if moment.tzinfo is None:
        raise InvalidRequest(f"{text!r} has no timezone — add one, e.g. {text}+00:00")
    return moment


async def run(args: argparse.Namespace) -> int:
    """Open the memory database and run one action."""
    settings = settings_from_args(args)
    context = _context(args)
    out = make_console()
    async with open_memory_store(settings) as store:
        action = args.memory_command
        if action == "add":
            try:
                spec = _spec(args)
            except ValidationError as exc:
                raise InvalidRequest(
                    f"cannot add this {args.kind}: {describe_validation_error(exc)} — "
                    f"see 'simone memory add {args.kind} --help'"
                ) from exc
            record = await store.create(context, spec, global_=args.global_)
            _show_one(record, args.json, out, "added")
            return 0
        if action == "done":
            _show_one(await store.complete(context, args.id), args.json, out, "done")
            return 0
        if action == "delete":
            _show_one(await store.delete(context, args.id), args.json, out, "deleted")
            return 0
        if action == "list":
            query = ListQuery(
                kinds=[_KINDS[args.kind]] if args.kind else None,
                status=args.status,
                tags=args.tag,
                include_deleted=args.deleted,
                include_inactive_facts=args.all_facts,
                limit=args.limit,
                offset=args.offset,
            )
            records = await store.list_records(context, query)
            _show_many(records, [None] * len(records), args.json, out)
            return 0
        if action == "search":
            hits = await store.search_records(
                context,
                SearchQuery(
                    text=args.query, kinds=[_KINDS[args.kind]] if args.kind else None, limit=args.limit
                ),
            )
            _show_many([h.record for h in hits], [h.score for h in hits], args.json, out)
            return 0 if hits else EXIT_NOTHING_FOUND
        if action == "export":
            document = await store.export(context, all_scopes=args.all)
            text = dump_export(document) + "\n"
            if args.file == "-":
                sys.stdout.write(text)
            else:
                await _write(args.file, text)
                make_console(stderr=True).print(
                    f"exported {len(document.records)} records, {len(document.turns)} turns to {escape(args.file)}"
                )
            return 0
        text = sys.stdin.read() if args.file == "-" else await _read(args.file)
        written = await store.import_(context, load_export(text), replace=args.replace)
        if args.json:
            sys.stdout.write(json.dumps({"imported": written}) + "\n")
        else:
            out.print(f"imported {written} objects")
        return 0


async def _read(name: str) -> str:
    try:
        return await anyio.Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidRequest(
            f"cannot read {name}: {exc.strerror or exc}; nothing was written — check the path"
        ) from exc
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"{name} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
            "nothing was written — import a file written by 'simone memory export'"
        ) from exc


async def _write(name: str, text: str) -> None:
    try:
        await anyio.Path(name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InvalidRequest(
            f"cannot write the export to {name}: {exc.strerror or exc} — choose a file in an existing, "
            "writable folder, or '-' for stdout"
        ) from exc


def _show_one(record: MemoryRecord, as_json: bool, out: Console, verb: str) -> None:
    if as_json:
        sys.stdout.write(record.model_dump_json(indent=2) + "\n")
        return
    out.print(f"{verb} [bold]{record.kind.value}[/] {escape(record.id)} ({record.status})")
    out.print(escape(render(record)))


def _show_many(records: list[MemoryRecord], scores: list[float | None], as_json: bool, out: Console) -> None:
    if as_json:
        rows = [
            {**record.model_dump(mode="json"), **({"score": score} if score is not None else {})}
            for record, score in zip(records, scores, strict=True)
        ]
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return
    if not records:
        out.print("[dim]nothing in this scope[/]")
        return
    scored = bool(scores) and scores[0] is not None
    table = Table("kind", "status", "title", "updated", *(["score"] if scored else []))
    table.add_column("id", no_wrap=True)
    if scored:
        table.caption = SCORE_CAPTION
    for record, score in zip(records, scores, strict=True):
        cells = [record.kind.value, record.status, record.title, record.updated_at.strftime("%Y-%m-%d %H:%M")]
        if score is not None:
            cells.append(_relative(score, scores))
        cells.append(record.id)
        table.add_row(*(escape(cell) for cell in cells))
    out.print(table)


SCORE_CAPTION = "score: BM25 relative to the best hit (1.00 = best); --json gives the raw BM25 score"
"""Under the table of ``simone memory search``: what its score column shows."""


def _relative(score: float, scores: list[float | None]) -> str:
    """``score`` over the best of ``scores``, two decimals (else the raw value, three significant digits).

    FTS5's raw BM25 in a small memory is ~1e-6 (its IDF floor), which ``.3f`` printed as 0.000 for every hit.
    """
    best = max((s for s in scores if s is not None and math.isfinite(s)), default=0.0)
    return f"{score / best:.2f}" if best > 0.0 else f"{score:.3g}"
