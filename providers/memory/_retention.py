"""Deleting and keeping records: soft delete, restore and hard delete (purge: :func:`~._core.purge`).

Soft-deleted records are hard-deleted once ``memory.soft_delete_retention_days`` have passed (on open,
and by ``purge_deleted``).
"""

from __future__ import annotations

from simone.providers.memory._access import changed, owned, save_record
from simone.providers.memory._backend import Db
from simone.providers.memory._core import Core
from simone.providers.memory._models import MemoryRecord
from simone.runtime import TrustedContext


def set_deleted(core: Core, db: Db, context: TrustedContext, record_id: str, deleted: bool) -> MemoryRecord:
    """Soft-delete (``deleted``) or restore a record; idempotent."""
    now = core.now()

    def transaction(tx: Db) -> MemoryRecord:
        rowid, old = owned(tx, context, record_id)
        if (old.deleted_at is not None) == deleted:
            return old
        new = changed(old, {"deleted_at": now if deleted else None}, now)
        save_record(core, tx, rowid, old, new)
        return new

    return db.write(transaction)


def hard_delete(db: Db, context: TrustedContext, record_id: str) -> None:
    """Delete a record for good (soft-deleted or not)."""

    def transaction(tx: Db) -> None:
        rowid, _ = owned(tx, context, record_id)
        tx.execute("DELETE FROM records WHERE rowid = ?", (rowid,))

    db.write(transaction)
