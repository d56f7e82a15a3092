"""Record and turn rows inside a transaction: the shared steps of every operation.

Insert and save a record (keeping its full-text terms and its vectors in step), fetch one visible to the
context, fetch one the context may change (refusing a record it may only read — global, or shared without
an actor — with :class:`~simone.runtime.AccessDenied`, and deleted or other-kind records for edits),
apply changes (revision and update time move only when something changed), check checklist trees against
the limits, build the list and search filters, and insert a turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from simone.providers.memory import _records as trees
from simone.providers.memory._backend import Db, SqlValue
from simone.providers.memory._core import Core, scope_number
from simone.providers.memory._models import STATUSES, MemoryRecord, RecordKind, SearchQuery
from simone.providers.memory._records import index_text
from simone.providers.memory._rows import (
    RECORD_COLUMNS,
    SELECT_RECORD,
    TURN_COLUMNS,
    record_from_row,
    record_values,
    to_us,
)
from simone.providers.memory._scope import may_change, scope_signature, scope_sql, scope_values
from simone.runtime import AccessDenied, Caller, InvalidRequest, MemorySettings, NotFound, TrustedContext


def insert_record(core: Core, db: Db, record: MemoryRecord) -> None:
    """Insert ``record`` with its full-text terms."""
    title, body = core.fts(db, record)
    columns = (*RECORD_COLUMNS, "fts_title", "fts_body")
    marks = ", ".join("?" for _ in columns)
    db.execute(
        f"INSERT INTO records ({', '.join(columns)}) VALUES ({marks})",
        (*record_values(record), title, body),
    )


def save_record(core: Core, db: Db, rowid: int, old: MemoryRecord, new: MemoryRecord) -> None:
    """Write ``new`` over ``old`` (row ``rowid``); new terms and no stale vector when its text changed."""
    columns: tuple[str, ...] = RECORD_COLUMNS
    values: tuple[SqlValue, ...] = record_values(new)
    if index_text(old) != index_text(new):
        columns = (*columns, "fts_title", "fts_body")
        values = (*values, *core.fts(db, new))
        db.execute("DELETE FROM record_vectors WHERE record_rowid = ?", (rowid,))  # stale now
    assignments = ", ".join(f"{column} = ?" for column in columns)
    db.execute(f"UPDATE records SET {assignments} WHERE rowid = ?", (*values, rowid))


def fetch(
    db: Db, context: TrustedContext, record_id: str, *, include_deleted: bool
) -> tuple[int, MemoryRecord]:
    """A record visible to ``context`` and its row id (a soft-deleted one only with ``include_deleted``)."""
    condition, params = scope_sql(context, "r")
    row = db.execute(
        f"SELECT {SELECT_RECORD} FROM records r WHERE r.id = ? AND {condition}", (record_id, *params)
    ).fetchone()
    if row is None:
        raise NotFound(
            f"no memory record {record_id!r} in this scope; list or search memory to find the ids you can use"
        )
    record = record_from_row(row)
    if record.deleted_at is not None and not include_deleted:
        raise NotFound(
            f"memory record {record_id!r} was deleted at {record.deleted_at.isoformat()}; restore it "
            "first to read or change it"
        )
    return int(row["rowid"]), record


def owned(db: Db, context: TrustedContext, record_id: str) -> tuple[int, MemoryRecord]:
    """A record the context may change, deleted or not (see :func:`~._scope.may_change`).

    Raises:
        NotFound: unknown or invisible id.
        AccessDenied: a record the context may read but did not write (global, or shared without an
            actor), unless the caller is ``system``.
    """
    rowid, record = fetch(db, context, record_id, include_deleted=True)
    if not may_change(record.scope, context):
        # Visible but not changeable: the record carries no actor (global, or shared by an import).
        whose = "a global record" if record.is_global else "a shared record (it names no actor)"
        hint = (
            "create a fact of your own (without supersedes) instead"
            if record.kind is RecordKind.FACT
            else f"create a {record.kind.value} of your own instead"
        )
        raise AccessDenied(
            f"memory record {record_id!r} is {whose}: the {context.caller.value} may read it but not "
            f"change it; only the scope that wrote it, or the {Caller.SYSTEM.value} caller, may. "
            f"Nothing was changed; {hint}.",
            provider="memory",
        )
    return rowid, record


def editable(
    db: Db, context: TrustedContext, record_id: str, kind: RecordKind | None = None
) -> tuple[int, MemoryRecord]:
    """A record the context may change, not deleted, of ``kind`` when given."""
    rowid, record = owned(db, context, record_id)
    if record.deleted_at is not None:
        raise InvalidRequest(
            f"memory record {record_id!r} was deleted at {record.deleted_at.isoformat()}; restore it "
            "before changing it, or create a new one"
        )
    if kind is not None and record.kind is not kind:
        raise InvalidRequest(
            f"memory record {record_id!r} is a {record.kind.value}, not a {kind.value}; use the "
            f"{record.kind.value} operations for it"
        )
    return rowid, record


def changed(old: MemoryRecord, fields: dict[str, Any], now: datetime) -> MemoryRecord:
    """The record with ``fields`` applied; revision and update time move only if something changed."""
    merged = {**old.model_dump(), **fields}
    new = MemoryRecord.model_validate(merged)
    if new == old:
        return old
    return MemoryRecord.model_validate({**merged, "updated_at": now, "revision": old.revision + 1})


def check_tree(settings: MemorySettings, nodes: list[trees.Node], where: str) -> None:
    """Refuse a checklist tree deeper or larger than the limits."""
    depth = trees.tree_height(nodes)
    if depth > settings.checklist_max_depth:
        raise InvalidRequest(
            f"checklist {where!r} would nest {depth} levels deep; the limit is "
            f"{settings.checklist_max_depth} (memory.checklist_max_depth). Flatten it."
        )
    total = trees.count(nodes)
    if total > settings.max_checklist_items:
        raise InvalidRequest(
            f"checklist {where!r} would hold {total} items; the limit is "
            f"{settings.max_checklist_items} (memory.max_checklist_items). Split it."
        )


def search_filters(core: Core, context: TrustedContext, query: SearchQuery) -> tuple[str, list[SqlValue]]:
    """:func:`filters` for a search: never deleted records, facts as ``query`` asks, as of now."""
    return filters(
        core,
        context,
        kinds=query.kinds,
        status=query.status,
        tags=query.tags,
        include_deleted=False,
        include_inactive_facts=query.include_inactive_facts,
        now=core.now(),
    )


def filters(
    core: Core,
    context: TrustedContext,
    *,
    kinds: Sequence[RecordKind] | None,
    status: Sequence[str] | None,
    tags: Sequence[str] | None,
    include_deleted: bool,
    include_inactive_facts: bool,
    now: datetime,
) -> tuple[str, list[SqlValue]]:
    """The SQL condition on alias ``r`` (and its parameters) of a list or a search."""
    condition, scope_params = scope_sql(context, "r")
    parts = [condition]
    params: list[SqlValue] = list(scope_params)
    if not include_deleted:
        parts.append("r.deleted_us IS NULL")
    if kinds:
        parts.append(f"r.kind IN ({', '.join('?' for _ in kinds)})")
        params.extend(kind.value for kind in kinds)
    if status:
        known = {member.value for vocabulary in STATUSES.values() for member in vocabulary}
        unknown = sorted(set(status) - known)
        if unknown:
            raise InvalidRequest(f"unknown status {unknown}; use one of {', '.join(sorted(known))}")
        parts.append(f"r.status IN ({', '.join('?' for _ in status)})")
        params.extend(status)
    for tag in tags or ():
        parts.append(core.backend.tag_condition("r"))
        params.append(tag)
    if not include_inactive_facts:
        parts.append(
            "(r.kind != 'fact' OR (r.status = 'active' AND r.valid_from_us <= ? "
            "AND (r.valid_until_us IS NULL OR r.valid_until_us > ?)))"
        )
        params.extend([to_us(now), to_us(now)])
    return " AND ".join(parts), params


def insert_turn(
    core: Core,
    db: Db,
    *,
    turn_id: str,
    scope: dict[str, str],
    role: str,
    seq: int,
    through_seq: int | None,
    content: str,
    created: datetime,
) -> None:
    """Insert a turn (or a summary: role ``summary``) with its full-text terms."""
    columns = (*TURN_COLUMNS, "fts_body")
    signature = scope_signature(scope)
    db.execute(
        f"INSERT INTO turns ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
        (
            turn_id,
            *scope_values(scope),
            scope_signature(scope),
            role,
            seq,
            through_seq,
            content,
            to_us(created),
            core.terms(content, scope_number(db, signature)),
        ),
    )
