"""Finding records by id (``get``) and by filters (``list_records``), in either backend."""

from __future__ import annotations

from simone.providers.memory._access import RecordAccess
from simone.providers.memory._models import ListQuery, MemoryRecord
from simone.providers.memory._rows import SELECT_RECORD, record_from_row
from simone.runtime import TrustedContext


class RecordLookup(RecordAccess):
    """Get and list records."""

    async def get(
        self, context: TrustedContext, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        """One visible record by id (a soft-deleted one only with ``include_deleted``)."""
        return await self._run(self._get_sync, context, record_id, include_deleted)

    def _get_sync(self, context: TrustedContext, record_id: str, include_deleted: bool) -> MemoryRecord:
        return self._fetch(self._read(), context, record_id, include_deleted=include_deleted)[1]

    async def list_records(self, context: TrustedContext, query: ListQuery) -> list[MemoryRecord]:
        """Visible records, newest update first, ties by id (current facts only unless asked)."""
        self._check_limit(query.limit)
        return await self._run(self._list_sync, context, query)

    def _list_sync(self, context: TrustedContext, query: ListQuery) -> list[MemoryRecord]:
        condition, params = self._filters(
            context,
            kinds=query.kinds,
            status=query.status,
            tags=query.tags,
            include_deleted=query.include_deleted,
            include_inactive_facts=query.include_inactive_facts,
            now=self._now(),
        )
        rows = self._read().execute(
            f"SELECT {SELECT_RECORD} FROM records r WHERE {condition} "
            "ORDER BY r.updated_us DESC, r.id LIMIT ? OFFSET ?",
            (*params, query.limit, query.offset),
        )
        return [record_from_row(row) for row in rows.fetchall()]
