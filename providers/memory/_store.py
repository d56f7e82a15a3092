"""The store protocols: what memory needs from a database, so PostgreSQL can take SQLite's place later.

Every method takes the :class:`~simone.runtime.TrustedContext` of the request: writes carry its scope,
reads see only what its scope may see (see :mod:`simone.providers.memory._scope`). An id that does not
exist and an id that is not visible in the caller's scope are the same :class:`~simone.runtime.NotFound`.
Changing a record needs more than seeing it: a record that is visible but not the caller's own (global,
shared, another actor's) is refused with :class:`~simone.runtime.AccessDenied` unless the caller is
``system``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from simone.providers.memory._models import (
    CreateSpec,
    ItemAdd,
    ItemMove,
    ItemRemove,
    ItemUpdate,
    ListQuery,
    MemoryExport,
    MemoryRecord,
    RecordHit,
    RecordKind,
    SearchQuery,
    SessionHit,
    SessionSummary,
    Turn,
    TurnRole,
    UpdateSpec,
)
from simone.runtime import EmbeddingSpace, TrustedContext


@runtime_checkable
class MemoryStore(Protocol):
    """Structured memory: notes, todos, checklists, facts and task states.

    Each method is one transaction. Failures of the database itself raise
    :class:`~simone.runtime.ProviderUnavailable`; bad input raises :class:`~simone.runtime.InvalidRequest`,
    unknown or invisible ids :class:`~simone.runtime.NotFound`, scope misuse
    :class:`~simone.runtime.ScopeViolation`, changes to a record the caller may only read
    :class:`~simone.runtime.AccessDenied`.
    """

    async def create(
        self,
        context: TrustedContext,
        spec: CreateSpec,
        *,
        keys: Sequence[str] | None = None,
        global_: bool = False,
    ) -> MemoryRecord:
        """Create a record under the context's scope (narrowed to ``keys``, or global for system callers)."""
        ...

    async def update(self, context: TrustedContext, patch: UpdateSpec) -> MemoryRecord:
        """Apply a partial update; the fields that are set change, the revision goes up by one."""
        ...

    async def complete(
        self, context: TrustedContext, record_id: str, *, kind: RecordKind | None = None
    ) -> MemoryRecord:
        """Complete a record: archive a note, complete a todo, checklist or task state, retire a fact.

        With ``kind``, a record of another kind is refused.
        """
        ...

    async def get(
        self, context: TrustedContext, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        """One record by id."""
        ...

    async def delete(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Soft-delete: hidden from lists and search, hard-deleted after the retention period."""
        ...

    async def restore(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Undo a soft delete."""
        ...

    async def hard_delete(self, context: TrustedContext, record_id: str) -> None:
        """Delete a record for good."""
        ...

    async def add_item(self, context: TrustedContext, args: ItemAdd) -> MemoryRecord:
        """Add an item to a checklist."""
        ...

    async def update_item(self, context: TrustedContext, args: ItemUpdate) -> MemoryRecord:
        """Change a checklist item's text or status."""
        ...

    async def move_item(self, context: TrustedContext, args: ItemMove) -> MemoryRecord:
        """Move a checklist item (with its children) to another parent or position."""
        ...

    async def remove_item(self, context: TrustedContext, args: ItemRemove) -> MemoryRecord:
        """Remove a checklist item and its children."""
        ...

    async def list_records(self, context: TrustedContext, query: ListQuery) -> list[MemoryRecord]:
        """Visible records, newest update first, ties by id."""
        ...

    async def search_records(self, context: TrustedContext, query: SearchQuery) -> list[RecordHit]:
        """Visible records sharing a term with the query, by BM25, ties by newest update then id."""
        ...

    async def purge_deleted(self) -> int:
        """Hard-delete soft-deleted records past the retention period; returns how many."""
        ...

    async def export(self, context: TrustedContext, *, all_scopes: bool = False) -> MemoryExport:
        """Everything visible to the context (every scope for a system caller with ``all_scopes``)."""
        ...

    async def import_(self, context: TrustedContext, document: MemoryExport, *, replace: bool = False) -> int:
        """Write an export back, all or nothing; returns how many objects were written."""
        ...


@runtime_checkable
class SessionStore(Protocol):
    """Session memory: the recent turns of a conversation and its summary slot."""

    async def append_turn(
        self, context: TrustedContext, role: TurnRole, content: str
    ) -> tuple[Turn, list[Turn]]:
        """Add a turn; returns it and the turns that fell out of the window (oldest first)."""
        ...

    async def recent_turns(self, context: TrustedContext, limit: int | None = None) -> list[Turn]:
        """The conversation's turns in the window, oldest first (the last ``limit`` when given)."""
        ...

    async def set_summary(
        self, context: TrustedContext, content: str, *, through_seq: int | None = None
    ) -> SessionSummary:
        """Fill the conversation's summary slot (replacing what was there)."""
        ...

    async def get_summary(self, context: TrustedContext) -> SessionSummary | None:
        """The conversation's summary, if any."""
        ...

    async def search_session(self, context: TrustedContext, text: str, limit: int) -> list[SessionHit]:
        """Turns and summary of the conversation sharing a term with ``text``, by BM25."""
        ...

    async def clear_session(self, context: TrustedContext) -> int:
        """Forget the conversation's turns and summary; returns how many rows went."""
        ...


@runtime_checkable
class VectorStore(Protocol):
    """Vectors of records in one pinned embedding space, for the optional semantic leg."""

    async def vector_space(self) -> EmbeddingSpace | None:
        """The pinned space, if any."""
        ...

    async def pin_vector_space(self, space: EmbeddingSpace) -> EmbeddingSpace:
        """Pin ``space`` unless another one was pinned first; returns the pinned one."""
        ...

    async def missing_vectors(
        self, context: TrustedContext, space: str, limit: int
    ) -> tuple[list[tuple[str, str]], int]:
        """Up to ``limit`` visible records lacking a vector: (id, text); and how many lack one in all."""
        ...

    async def put_vectors(self, space: str, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> int:
        """Store vectors by record id."""
        ...

    async def nearest(
        self,
        context: TrustedContext,
        space: str,
        vector: npt.NDArray[np.float32],
        query: SearchQuery,
        *,
        min_similarity: float,
    ) -> list[RecordHit]:
        """Visible records by cosine similarity to ``vector`` (at least ``min_similarity``)."""
        ...
