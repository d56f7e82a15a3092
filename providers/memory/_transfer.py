"""Export and import of records, turns and summaries.

An export is one snapshot of everything visible (or every scope, for a system caller); an import writes
an export back in one transaction: all of it, or nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from simone.providers.memory import _records as trees
from simone.providers.memory._access import check_tree, insert_turn
from simone.providers.memory._backend import Db, SqlValue
from simone.providers.memory._cache import prune_changes
from simone.providers.memory._core import Core, scope_number
from simone.providers.memory._models import STATUSES, MemoryExport, RecordKind, SessionSummary, Turn
from simone.providers.memory._records import index_text
from simone.providers.memory._rows import (
    RECORD_COLUMNS,
    SELECT_RECORD,
    SELECT_TURN,
    SUMMARY,
    record_from_row,
    record_values,
    summary_from_row,
    turn_from_row,
)
from simone.providers.memory._scope import scope_problems, scope_signature, scope_sql
from simone.runtime import InvalidRequest, TrustedContext

_OPTIMIZE_AFTER = 1000
"""An import of at least this many records merges the full-text index into one segment."""


def existing_ids(db: Db, table: str, ids: Iterable[str]) -> list[str]:
    """The ids among ``ids`` already in ``table`` (looked up 500 at a time)."""
    found: list[str] = []
    for batch in _batches(ids):
        marks = ", ".join("?" for _ in batch)
        found.extend(
            str(row[0]) for row in db.execute(f"SELECT id FROM {table} WHERE id IN ({marks})", batch)
        )
    return found


def _batches(ids: Iterable[str], size: int = 500) -> Iterator[list[str]]:
    batch: list[str] = []
    for value in ids:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def export(core: Core, db: Db, context: TrustedContext, all_scopes: bool) -> MemoryExport:
    """Everything visible to ``context`` (deleted records included), or every scope, in one snapshot."""

    def snapshot(tx: Db) -> MemoryExport:
        condition, params = ("TRUE", []) if all_scopes else scope_sql(context, "r")
        rows = tx.execute(
            f"SELECT {SELECT_RECORD} FROM records r WHERE {condition} ORDER BY r.created_us, r.id", params
        ).fetchall()
        turn_condition, turn_params = ("TRUE", []) if all_scopes else scope_sql(context, "t")
        turn_rows = tx.execute(
            f"SELECT {SELECT_TURN} FROM turns t WHERE {turn_condition} "
            "ORDER BY t.scope_sig, t.role = 'summary' DESC, t.seq, t.id",
            turn_params,
        ).fetchall()
        return MemoryExport(
            exported_at=core.now(),
            records=[record_from_row(row) for row in rows],
            turns=[turn_from_row(row) for row in turn_rows if row["role"] != SUMMARY],
            summaries=[summary_from_row(row) for row in turn_rows if row["role"] == SUMMARY],
        )

    return db.snapshot(snapshot)


def validate_import(core: Core, document: MemoryExport) -> None:
    """Refuse (naming each problem) an export that breaks memory's rules, before anything is written."""
    problems: list[str] = []
    ids = [record.id for record in document.records]
    turn_ids = [turn.id for turn in document.turns] + [summary.id for summary in document.summaries]
    for label, values in (("record", ids), ("turn", turn_ids)):
        duplicates = sorted(value for value, seen in Counter(values).items() if seen > 1)
        if duplicates:
            problems.append(f"duplicate {label} ids {duplicates[:5]}")
    required = {
        RecordKind.FACT: "fact",
        RecordKind.TASK_STATE: "task_state",
    }
    for record in document.records:
        # The model refuses these too; a document built with model_construct skips the model.
        problems.extend(f"record {record.id}: {problem}" for problem in scope_problems(record.scope))
        if record.scope and "actor" not in record.scope:
            problems.append(
                f"record {record.id}: scope {sorted(record.scope)} names no actor; a record is global "
                "(scope {}) or carries the actor that wrote it"
            )
        vocabulary = {member.value for member in STATUSES[record.kind]}
        if record.status not in vocabulary:
            problems.append(
                f"record {record.id}: status {record.status!r} is not a {record.kind.value} status"
            )
        field = required.get(record.kind)
        if field is not None and getattr(record, field) is None:
            problems.append(f"record {record.id}: a {record.kind.value} needs its {field!r} fields")
        if len(record.body) > core.settings.max_body_chars:
            problems.append(f"record {record.id}: body over memory.max_body_chars")
        if record.kind is RecordKind.CHECKLIST:
            try:
                check_tree(core.settings, trees.to_nodes(record.items), record.title)
            except InvalidRequest as exc:
                problems.append(f"record {record.id}: {exc}")
    sessions: list[Turn | SessionSummary] = [*document.turns, *document.summaries]
    for item in sessions:
        problems.extend(f"turn {item.id}: {problem}" for problem in scope_problems(item.scope))
        if "conversation" not in item.scope or "actor" not in item.scope:
            problems.append(f"turn {item.id}: session memory needs an actor and a conversation in its scope")
    if problems:
        raise InvalidRequest("the import was refused, nothing was written: " + "; ".join(problems[:20]))


def import_rows(core: Core, db: Db, document: MemoryExport, replace: bool) -> int:
    """Write ``document`` in one write transaction: all of it, or nothing (existing ids only with ``replace``).

    Records go in as one bulk insert (``COPY`` on PostgreSQL), with the rows and terms of one-by-one
    inserts; turns and summaries one by one.
    """

    def transaction(tx: Db) -> int:
        conflicts = existing_ids(tx, "records", [record.id for record in document.records])
        conflicts += existing_ids(
            tx, "turns", [turn.id for turn in document.turns] + [s.id for s in document.summaries]
        )
        for summary in document.summaries:
            row = tx.execute(
                "SELECT id FROM turns WHERE scope_sig = ? AND role = ? AND id != ?",
                (scope_signature(summary.scope), SUMMARY, summary.id),
            ).fetchone()
            if row is not None:
                conflicts.append(str(row[0]))
        if conflicts and not replace:
            raise InvalidRequest(
                f"the import was refused, nothing was written: {len(conflicts)} ids already exist "
                f"({', '.join(sorted(conflicts)[:5])}…); import with replace to overwrite them"
            )
        return _write_rows(core, tx, document, replace)

    return db.write(transaction)


def _write_rows(core: Core, db: Db, document: MemoryExport, replace: bool) -> int:
    if replace:
        for batch in _batches(record.id for record in document.records):
            db.execute(f"DELETE FROM records WHERE id IN ({', '.join('?' for _ in batch)})", batch)
    numbers: dict[str, int] = {}
    rows: list[tuple[SqlValue, ...]] = []
    for record in document.records:
        signature = scope_signature(record.scope)
        if signature not in numbers:
            numbers[signature] = scope_number(db, signature)
        title, body = index_text(record)
        number = numbers[signature]
        rows.append((*record_values(record), core.terms(title, number), core.terms(body, number)))
    if rows:
        db.insert_many("records", (*RECORD_COLUMNS, "fts_title", "fts_body"), rows)
    for turn in document.turns:
        if replace:
            db.execute("DELETE FROM turns WHERE id = ?", (turn.id,))
        insert_turn(
            core,
            db,
            turn_id=turn.id,
            scope=turn.scope,
            role=turn.role.value,
            seq=turn.seq,
            through_seq=None,
            content=turn.content,
            created=turn.created_at,
        )
    for summary in document.summaries:
        db.execute(
            "DELETE FROM turns WHERE id = ? OR (scope_sig = ? AND role = ?)",
            (summary.id, scope_signature(summary.scope), SUMMARY),
        )
        insert_turn(
            core,
            db,
            turn_id=summary.id,
            scope=summary.scope,
            role=SUMMARY,
            seq=0,
            through_seq=summary.through_seq,
            content=summary.content,
            created=summary.updated_at,
        )
    if len(document.records) >= _OPTIMIZE_AFTER:
        core.backend.after_bulk_import(db)
        prune_changes(db)
    return len(document.records) + len(document.turns) + len(document.summaries)
