"""Finding records by id (``get``) and by filters (``list_records``), in either backend."""

from __future__ import annotations

from simone.providers.memory._access import fetch, filters
from simone.providers.memory._backend import Db
from simone.providers.memory._core import Core
from simone.providers.memory._models import ListQuery, MemoryRecord
from simone.providers.memory._rows import SELECT_RECORD, record_from_row
from simone.runtime import TrustedContext


def get(db: Db, context: TrustedContext, record_id: str, include_deleted: bool) -> MemoryRecord:
    """One visible record by id (a soft-deleted one only with ``include_deleted``)."""
    return fetch(db, context, record_id, include_deleted=include_deleted)[1]


def list_records(core: Core, db: Db, context: TrustedContext, query: ListQuery) -> list[MemoryRecord]:
    """Visible records, newest update first, ties by id (current facts only unless asked)."""
    condition, params = filters(
        core,
        context,
        kinds=query.kinds,
        status=query.status,
        tags=query.tags,
        include_deleted=query.include_deleted,
        include_inactive_facts=query.include_inactive_facts,
        now=core.now(),
    )
    rows = db.execute(
        f"SELECT {SELECT_RECORD} FROM records r WHERE {condition} "
        "ORDER BY r.updated_us DESC, r.id LIMIT ? OFFSET ?",
        (*params, query.limit, query.offset),
    )
    return [record_from_row(row) for row in rows.fetchall()]
