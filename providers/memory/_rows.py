"""Rows and values: how records, turns and summaries are laid out in either backend, and back.

Times are stored as integer microseconds since the Unix epoch (UTC), JSON columns in one canonical form
(sorted keys, no spaces, UTF-8 kept), so equal values are equal text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from simone.providers.memory._backend import Row, SqlValue
from simone.providers.memory._models import MemoryRecord, SessionSummary, Turn, TurnRole
from simone.providers.memory._scope import SCOPE_COLUMNS, scope_from_row, scope_signature, scope_values

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)

SUMMARY = "summary"
"""The role of a conversation's summary row in the ``turns`` table (one per scope, ``seq`` 0)."""

RECORD_COLUMNS: tuple[str, ...] = (
    # small columns first: filters and sorting read them without touching the text's overflow pages
    "id",
    "kind",
    *SCOPE_COLUMNS,
    "scope_sig",
    "status",
    "valid_from_us",
    "valid_until_us",
    "created_us",
    "updated_us",
    "completed_us",
    "deleted_us",
    "revision",
    "tags",
    "title",
    "data",
    "body",
)
SELECT_RECORD = ", ".join(f"r.{column}" for column in ("rowid", *RECORD_COLUMNS))
TURN_COLUMNS = ("id", *SCOPE_COLUMNS, "scope_sig", "role", "seq", "through_seq", "content", "created_us")
SELECT_TURN = ", ".join(f"t.{column}" for column in TURN_COLUMNS)


def to_us(moment: datetime | None) -> int | None:
    """Microseconds since the epoch (``None`` stays ``None``)."""
    return None if moment is None else (moment - _EPOCH) // _US


def from_us(us: int | None) -> datetime | None:
    """The UTC datetime of microseconds since the epoch (``None`` stays ``None``)."""
    return None if us is None else _EPOCH + timedelta(microseconds=us)


def canonical_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys (one text per value)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def record_from_row(row: Row) -> MemoryRecord:
    """The record of a ``records`` row selected with :data:`SELECT_RECORD`."""
    data = json.loads(row["data"])
    return MemoryRecord.model_validate(
        {
            "id": row["id"],
            "kind": row["kind"],
            "scope": scope_from_row([row[column] for column in SCOPE_COLUMNS]),
            "title": row["title"],
            "body": row["body"],
            "tags": json.loads(row["tags"]),
            "status": row["status"],
            **data,
            "created_at": from_us(row["created_us"]),
            "updated_at": from_us(row["updated_us"]),
            "completed_at": from_us(row["completed_us"]),
            "deleted_at": from_us(row["deleted_us"]),
            "revision": row["revision"],
        }
    )


def record_values(record: MemoryRecord) -> tuple[SqlValue, ...]:
    """The values of :data:`RECORD_COLUMNS` for ``record``, in that order."""
    data = record.model_dump(
        mode="json", include={"priority", "due_at", "items", "fact", "task_state"}, exclude_none=True
    )
    if not record.items:
        data.pop("items", None)
    fact = record.fact
    values: dict[str, SqlValue] = {
        "id": record.id,
        "kind": record.kind.value,
        **dict(zip(SCOPE_COLUMNS, scope_values(record.scope), strict=True)),
        "scope_sig": scope_signature(record.scope),
        "status": record.status,
        "valid_from_us": to_us(fact.valid_from) if fact else None,
        "valid_until_us": to_us(fact.valid_until) if fact else None,
        "created_us": to_us(record.created_at),
        "updated_us": to_us(record.updated_at),
        "completed_us": to_us(record.completed_at),
        "deleted_us": to_us(record.deleted_at),
        "revision": record.revision,
        "tags": canonical_json(list(record.tags)),
        "title": record.title,
        "data": canonical_json(data),
        "body": record.body,
    }
    return tuple(values[column] for column in RECORD_COLUMNS)


def turn_from_row(row: Row) -> Turn:
    """The turn of a ``turns`` row selected with :data:`SELECT_TURN`."""
    return Turn(
        id=row["id"],
        scope=scope_from_row([row[column] for column in SCOPE_COLUMNS]),
        seq=row["seq"],
        role=TurnRole(row["role"]),
        content=row["content"],
        created_at=from_us(row["created_us"]),
    )


def summary_from_row(row: Row) -> SessionSummary:
    """The summary of a ``turns`` row of role :data:`SUMMARY` selected with :data:`SELECT_TURN`."""
    return SessionSummary(
        id=row["id"],
        scope=scope_from_row([row[column] for column in SCOPE_COLUMNS]),
        content=row["content"],
        through_seq=row["through_seq"] or 0,
        updated_at=from_us(row["created_us"]),
    )
