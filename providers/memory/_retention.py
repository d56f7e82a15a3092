"""Deleting and keeping records: soft delete, restore, hard delete and purge.

Soft-deleted records are hard-deleted once ``memory.soft_delete_retention_days`` have passed (on open,
and by :meth:`purge_deleted`).
"""

from __future__ import annotations

from simone.providers.memory._access import RecordAccess
from simone.providers.memory._core import DB
from simone.providers.memory._models import MemoryRecord
from simone.runtime import TrustedContext


class RecordRetention(RecordAccess):
    """Soft delete, restore, hard delete and purge."""

    async def delete(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Soft-delete a record (idempotent); it is hard-deleted after the retention period.

        Raises:
            NotFound: unknown or invisible id. AccessDenied: a record the context may read but not change.
        """
        return await self._run(self._set_deleted, context, record_id, True)

    async def restore(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Undo a soft delete (idempotent).

        Raises:
            NotFound: unknown or invisible id. AccessDenied: a record the context may read but not change.
        """
        return await self._run(self._set_deleted, context, record_id, False)

    def _set_deleted(self, context: TrustedContext, record_id: str, deleted: bool) -> MemoryRecord:
        now = self._now()

        def transaction(db: DB) -> MemoryRecord:
            rowid, old = self._owned(db, context, record_id)
            if (old.deleted_at is not None) == deleted:
                return old
            new = self._changed(old, {"deleted_at": now if deleted else None}, now)
            self._save(db, rowid, old, new)
            return new

        return self._write(transaction)

    async def hard_delete(self, context: TrustedContext, record_id: str) -> None:
        """Delete a record for good (soft-deleted or not).

        Raises:
            NotFound: unknown or invisible id. AccessDenied: a record the context may read but not change.
        """
        await self._run(self._hard_delete_sync, context, record_id)

    def _hard_delete_sync(self, context: TrustedContext, record_id: str) -> None:
        def transaction(db: DB) -> None:
            rowid, _ = self._owned(db, context, record_id)
            db.execute("DELETE FROM records WHERE rowid = ?", (rowid,))

        self._write(transaction)

    async def purge_deleted(self) -> int:
        """Hard-delete records soft-deleted more than ``soft_delete_retention_days`` ago."""
        return await self._run(self._purge_sync)
