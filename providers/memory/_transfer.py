"""Export and import of records, turns and summaries.

An export is one snapshot of everything visible (or every scope, for a system caller); an import writes
an export back in one transaction: all of it, or nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from simone.providers.memory import _records as trees
from simone.providers.memory._access import RecordAccess
from simone.providers.memory._core import DB
from simone.providers.memory._models import STATUSES, MemoryExport, RecordKind, SessionSummary, Turn
from simone.providers.memory._rows import (
    SELECT_RECORD,
    SELECT_TURN,
    SUMMARY,
    record_from_row,
    summary_from_row,
    turn_from_row,
)
from simone.providers.memory._scope import scope_problems, scope_signature, scope_sql
from simone.runtime import Caller, InvalidRequest, ScopeViolation, TrustedContext

_OPTIMIZE_AFTER = 1000
"""An import of at least this many records merges the full-text index into one segment."""


def existing_ids(db: DB, table: str, ids: Iterable[str]) -> list[str]:
    """The ids among ``ids`` already in ``table`` (looked up 500 at a time)."""
    found: list[str] = []
    batch: list[str] = []
    for value in [*ids, None]:
        if value is not None:
            batch.append(value)
        if batch and (value is None or len(batch) == 500):
            marks = ", ".join("?" for _ in batch)
            found.extend(row[0] for row in db.execute(f"SELECT id FROM {table} WHERE id IN ({marks})", batch))
            batch = []
    return found


class MemoryTransfer(RecordAccess):
    """Export and import of records, turns and summaries."""

    async def export(self, context: TrustedContext, *, all_scopes: bool = False) -> MemoryExport:
        """Everything visible to ``context`` (deleted records included), or every scope for a system caller.

        Raises:
            ScopeViolation: ``all_scopes`` asked by a caller other than ``system``.
        """
        if all_scopes and context.caller is not Caller.SYSTEM:
            raise ScopeViolation("only a system caller may export every scope; export your own scope instead")
        return await self._run(self._export_sync, context, all_scopes)

    def _export_sync(self, context: TrustedContext, all_scopes: bool) -> MemoryExport:
        db = self._read()
        db.execute("BEGIN")  # one snapshot for records and turns
        try:
            condition, params = ("TRUE", []) if all_scopes else scope_sql(context, "r")
            rows = db.execute(
                f"SELECT {SELECT_RECORD} FROM records r WHERE {condition} ORDER BY r.created_us, r.id",
                params,
            ).fetchall()
            turn_condition, turn_params = ("TRUE", []) if all_scopes else scope_sql(context, "t")
            turn_rows = db.execute(
                f"SELECT {SELECT_TURN} FROM turns t WHERE {turn_condition} "
                "ORDER BY t.scope_sig, t.role = 'summary' DESC, t.seq, t.id",
                turn_params,
            ).fetchall()
        finally:
            db.execute("COMMIT")
        return MemoryExport(
            exported_at=self._now(),
            records=[record_from_row(row) for row in rows],
            turns=[turn_from_row(row) for row in turn_rows if row["role"] != SUMMARY],
            summaries=[summary_from_row(row) for row in turn_rows if row["role"] == SUMMARY],
        )

    async def import_(self, context: TrustedContext, document: MemoryExport, *, replace: bool = False) -> int:
        """Write an export back in one transaction: all of it, or nothing.

        Only a ``system`` caller may import (records keep the scopes they were exported with).

        Raises:
            ScopeViolation: a non-system caller.
            InvalidRequest: ids that already exist (unless ``replace``), duplicate ids in the document,
                records that break memory's rules (status, kind fields, limits), a scope with a key that
                is not a scope key or a non-global record scope without an actor (each named by id and
                key), session memory without an actor and a conversation.
        """
        if context.caller is not Caller.SYSTEM:
            raise ScopeViolation("only a system caller may import memory (it writes records of any scope)")
        self._validate_import(document)
        return await self._run(self._import_sync, document, replace)

    def _validate_import(self, document: MemoryExport) -> None:
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
            if len(record.body) > self._settings.max_body_chars:
                problems.append(f"record {record.id}: body over memory.max_body_chars")
            if record.kind is RecordKind.CHECKLIST:
                try:
                    self._check_tree(trees.to_nodes(record.items), record.title)
                except InvalidRequest as exc:
                    problems.append(f"record {record.id}: {exc}")
        sessions: list[Turn | SessionSummary] = [*document.turns, *document.summaries]
        for item in sessions:
            problems.extend(f"turn {item.id}: {problem}" for problem in scope_problems(item.scope))
            if "conversation" not in item.scope or "actor" not in item.scope:
                problems.append(
                    f"turn {item.id}: session memory needs an actor and a conversation in its scope"
                )
        if problems:
            raise InvalidRequest("the import was refused, nothing was written: " + "; ".join(problems[:20]))

    def _import_sync(self, document: MemoryExport, replace: bool) -> int:
        def transaction(db: DB) -> int:
            conflicts = existing_ids(db, "records", [record.id for record in document.records])
            conflicts += existing_ids(
                db, "turns", [turn.id for turn in document.turns] + [s.id for s in document.summaries]
            )
            for summary in document.summaries:
                row = db.execute(
                    "SELECT id FROM turns WHERE scope_sig = ? AND role = ? AND id != ?",
                    (scope_signature(summary.scope), SUMMARY, summary.id),
                ).fetchone()
                if row is not None:
                    conflicts.append(row[0])
            if conflicts and not replace:
                raise InvalidRequest(
                    f"the import was refused, nothing was written: {len(conflicts)} ids already exist "
                    f"({', '.join(sorted(conflicts)[:5])}…); import with replace to overwrite them"
                )
            try:
                return self._import_rows(db, document, replace)
            except self._integrity_errors as exc:
                raise InvalidRequest(
                    f"the import was refused, nothing was written: {exc} (two turns of one conversation "
                    "with the same sequence number?)"
                ) from exc

        return self._write(transaction)

    def _import_rows(self, db: DB, document: MemoryExport, replace: bool) -> int:
        for record in document.records:
            if replace:
                db.execute("DELETE FROM records WHERE id = ?", (record.id,))
            self._insert(db, record)
        for turn in document.turns:
            if replace:
                db.execute("DELETE FROM turns WHERE id = ?", (turn.id,))
            self._insert_turn(
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
            self._insert_turn(
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
            self._after_bulk_import(db)
        return len(document.records) + len(document.turns) + len(document.summaries)
