"""The memory store: one class over a backend (:class:`MemoryStoreImpl`).

It holds the store's state (:class:`~simone.providers.memory._core.Core`: the backend, the limits, the
analysis, the clock, the ids, the in-memory search indexes) and implements ``MemoryStore``,
``SessionStore`` and ``VectorStore`` (:mod:`simone.providers.memory._store`): each method checks what it
can without the database, then runs one operation — a plain function of the core and the operation's
connection (:mod:`~simone.providers.memory._editing`, :mod:`~simone.providers.memory._checklists`,
:mod:`~simone.providers.memory._retention`, :mod:`~simone.providers.memory._lookup`,
:mod:`~simone.providers.memory._search`, :mod:`~simone.providers.memory._sessions`,
:mod:`~simone.providers.memory._transfer`, :mod:`~simone.providers.memory._vectors`) — through the
backend, which runs it on a worker thread and translates the driver's errors.
:class:`~simone.providers.memory.SQLiteMemoryStore` and :class:`~simone.providers.memory.PostgresMemoryStore`
are this class on their backend.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from simone.providers.memory import (
    _checklists as checklists,
    _editing as editing,
    _lookup as lookup,
    _retention as retention,
    _search as search,
    _sessions as sessions,
    _transfer as transfer,
    _vectors as semantic,
)
from simone.providers.memory._backend import Backend, ConstraintViolation
from simone.providers.memory._cache import SearchCacheInfo
from simone.providers.memory._clock import Clock, IdGenerator
from simone.providers.memory._core import Core, prepare, purge
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
from simone.providers.memory._terms import TermAnalyzer, analyzer_fingerprint, default_term_analyzer
from simone.runtime import (
    AsyncResource,
    Caller,
    EmbeddingSpace,
    InvalidRequest,
    MemorySettings,
    ScopeViolation,
    TrustedContext,
)


class MemoryStoreImpl(AsyncResource):
    """Structured and session memory over a backend (``MemoryStore``, ``SessionStore``, ``VectorStore``).

    Construction is cheap; open it with ``async with`` (or :meth:`open` / :meth:`close`). Opening
    connects, creates or migrates the schema, re-indexes if the analysis changed, and hard-deletes
    soft-deleted records past the retention period.

    Args:
        backend: the database (:class:`~simone.providers.memory._backend.Backend`).
        settings: memory limits (defaults: :class:`~simone.runtime.MemorySettings`).
        analyzer: the shared text analysis (default: ``simone.runtime.text.default_analyzer()``).
        clock: the time source (inject a :class:`ManualClock` for exact replays).
        ids: the id generator (inject :class:`SequentialIds` for exact replays).
        purge_on_open: hard-delete expired soft-deleted records when opening.
        analyzer_key: identifies the analyzer's configuration (synonyms, ignore words); together with
            a probe of its output it decides whether stored terms are stale and must be re-analysed.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        purge_on_open: bool = True,
        analyzer_key: str = "",
    ) -> None:
        self._core = Core(
            backend, settings=settings, analyzer=analyzer, clock=clock, ids=ids, analyzer_key=analyzer_key
        )
        self._backend = backend
        self._purge_on_open = purge_on_open

    @property
    def settings(self) -> MemorySettings:
        """The limits this store enforces."""
        return self._core.settings

    # -- life cycle ------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, create or migrate the schema, re-index if the analysis changed (idempotent)."""
        if self._backend.is_open:
            return
        await self._backend.connect()
        core = self._core
        if core.analyzer is None:
            core.analyzer = default_term_analyzer()
        fingerprint = analyzer_fingerprint(core.analyzer, core.analyzer_key)
        try:
            await self._backend.run(lambda db: db.write(lambda tx: prepare(core, tx, fingerprint)))
            if self._purge_on_open:
                await self._backend.run(lambda db: purge(core, db))
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Disconnect (idempotent); the in-memory search indexes are dropped."""
        await self._backend.close()
        with self._backend.cache_lock:
            self._core.cache.clear()

    # -- records ---------------------------------------------------------------------------------------

    async def create(
        self,
        context: TrustedContext,
        spec: CreateSpec,
        *,
        keys: Sequence[str] | None = None,
        global_: bool = False,
    ) -> MemoryRecord:
        """Create a record under the context's scope (narrowed to ``keys``, or global for system callers).

        Raises:
            InvalidRequest: a body over ``memory.max_body_chars``, too many or too deep checklist items,
                a fact that supersedes a missing, inactive or later fact.
            ScopeViolation: ``keys`` the context does not set, or a global write by a non-system caller.
            AccessDenied: a fact that supersedes a fact the context may read but not change (a global,
                shared or another actor's fact): the old fact stays current for everyone, nothing is
                written. Create the fact without ``supersedes`` to keep a fact of your own.
        """
        core = self._core
        return await self._backend.run(lambda db: editing.create(core, db, context, spec, keys, global_))

    async def update(self, context: TrustedContext, patch: UpdateSpec) -> MemoryRecord:
        """Apply a partial update (fields that are set change; an explicit ``None`` clears).

        Raises:
            NotFound: unknown or invisible id. InvalidRequest: a deleted record, a kind mismatch, a
                body over the limit, a fact valid_until not after valid_from. AccessDenied: a record the
                context may read but not change (global, shared or another actor's).
        """
        core = self._core
        return await self._backend.run(lambda db: editing.update(core, db, context, patch))

    async def complete(
        self, context: TrustedContext, record_id: str, *, kind: RecordKind | None = None
    ) -> MemoryRecord:
        """Archive a note, complete a todo / checklist (and its open items) / task state, retire a fact.

        Completing what is already complete changes nothing. With ``kind``, a record of another kind is
        refused (InvalidRequest); a record the context may read but not change, with AccessDenied.
        """
        core = self._core
        return await self._backend.run(lambda db: editing.complete(core, db, context, record_id, kind))

    async def get(
        self, context: TrustedContext, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        """One visible record by id (a soft-deleted one only with ``include_deleted``)."""
        return await self._backend.run(lambda db: lookup.get(db, context, record_id, include_deleted))

    async def list_records(self, context: TrustedContext, query: ListQuery) -> list[MemoryRecord]:
        """Visible records, newest update first, ties by id (current facts only unless asked)."""
        core = self._core
        core.check_limit(query.limit)
        return await self._backend.run(lambda db: lookup.list_records(core, db, context, query))

    async def search_records(self, context: TrustedContext, query: SearchQuery) -> list[RecordHit]:
        """BM25 over analysed title (x3) and body; only records sharing a term with the query.

        Ties are broken by the newest update, then the id.
        """
        core = self._core
        core.check_limit(query.limit)
        return await self._backend.run(lambda db: search.search_records(core, db, context, query))

    def search_cache_info(self) -> SearchCacheInfo:
        """What the in-memory search indexes hold and how often they answered (for tests and tuning)."""
        return self._core.cache.info()

    # -- deleting and keeping --------------------------------------------------------------------------

    async def delete(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Soft-delete a record (idempotent); it is hard-deleted after the retention period.

        Raises:
            NotFound: unknown or invisible id. AccessDenied: a record the context may read but not change.
        """
        core = self._core
        return await self._backend.run(lambda db: retention.set_deleted(core, db, context, record_id, True))

    async def restore(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Undo a soft delete (idempotent).

        Raises:
            NotFound: unknown or invisible id. AccessDenied: a record the context may read but not change.
        """
        core = self._core
        return await self._backend.run(lambda db: retention.set_deleted(core, db, context, record_id, False))

    async def hard_delete(self, context: TrustedContext, record_id: str) -> None:
        """Delete a record for good (soft-deleted or not).

        Raises:
            NotFound: unknown or invisible id. AccessDenied: a record the context may read but not change.
        """
        await self._backend.run(lambda db: retention.hard_delete(db, context, record_id))

    async def purge_deleted(self) -> int:
        """Hard-delete records soft-deleted more than ``soft_delete_retention_days`` ago."""
        core = self._core
        return await self._backend.run(lambda db: purge(core, db))

    # -- checklist items -------------------------------------------------------------------------------

    async def add_item(self, context: TrustedContext, args: ItemAdd) -> MemoryRecord:
        """Add an item under ``parent_id`` (top level when absent) at ``position`` (end when absent)."""
        edit = checklists.add_item(args, self._core.ids("item"))
        return await self._edit_items(context, args.checklist_id, edit)

    async def update_item(self, context: TrustedContext, args: ItemUpdate) -> MemoryRecord:
        """Change an item's text or status."""
        return await self._edit_items(context, args.checklist_id, checklists.update_item(args))

    async def move_item(self, context: TrustedContext, args: ItemMove) -> MemoryRecord:
        """Move an item with its children; never into itself, its descendants, or past the depth limit."""
        edit = checklists.move_item(args, self._core.settings.checklist_max_depth)
        return await self._edit_items(context, args.checklist_id, edit)

    async def remove_item(self, context: TrustedContext, args: ItemRemove) -> MemoryRecord:
        """Remove an item and its children."""
        return await self._edit_items(context, args.checklist_id, checklists.remove_item(args))

    async def _edit_items(
        self, context: TrustedContext, checklist_id: str, edit: checklists.Edit
    ) -> MemoryRecord:
        core = self._core
        return await self._backend.run(
            lambda db: checklists.edit_items(core, db, context, checklist_id, edit)
        )

    # -- export and import -----------------------------------------------------------------------------

    async def export(self, context: TrustedContext, *, all_scopes: bool = False) -> MemoryExport:
        """Everything visible to ``context`` (deleted records included), or every scope for a system caller.

        Raises:
            ScopeViolation: ``all_scopes`` asked by a caller other than ``system``.
        """
        if all_scopes and context.caller is not Caller.SYSTEM:
            raise ScopeViolation("only a system caller may export every scope; export your own scope instead")
        core = self._core
        return await self._backend.run(lambda db: transfer.export(core, db, context, all_scopes))

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
        core = self._core
        transfer.validate_import(core, document)
        try:
            return await self._backend.run(lambda db: transfer.import_rows(core, db, document, replace))
        except ConstraintViolation as exc:
            raise InvalidRequest(
                f"the import was refused, nothing was written: {exc.detail} (two turns of one conversation "
                "with the same sequence number?)"
            ) from exc

    # -- session memory --------------------------------------------------------------------------------

    async def append_turn(
        self, context: TrustedContext, role: TurnRole, content: str
    ) -> tuple[Turn, list[Turn]]:
        """Add a turn to the conversation; turns beyond ``session_window_turns`` fall out (returned)."""
        core = self._core
        turn_role = TurnRole(role)
        return await self._backend.run(lambda db: sessions.append_turn(core, db, context, turn_role, content))

    async def recent_turns(self, context: TrustedContext, limit: int | None = None) -> list[Turn]:
        """The conversation's turns (visible in this scope), oldest first; the last ``limit`` if given."""
        core = self._core
        return await self._backend.run(lambda db: sessions.recent_turns(core, db, context, limit))

    async def set_summary(
        self, context: TrustedContext, content: str, *, through_seq: int | None = None
    ) -> SessionSummary:
        """Fill the summary slot of the conversation (as written under this exact scope)."""
        core = self._core
        return await self._backend.run(
            lambda db: sessions.set_summary(core, db, context, content, through_seq)
        )

    async def get_summary(self, context: TrustedContext) -> SessionSummary | None:
        """The summary written under this exact scope, if any."""
        return await self._backend.run(lambda db: sessions.get_summary(db, context))

    async def search_session(self, context: TrustedContext, text: str, limit: int) -> list[SessionHit]:
        """Turns and summaries of the conversation sharing a term with ``text``, by BM25."""
        core = self._core
        core.check_limit(limit)
        return await self._backend.run(lambda db: sessions.search_session(core, db, context, text, limit))

    async def clear_session(self, context: TrustedContext) -> int:
        """Forget the turns and summary written under this exact scope."""
        return await self._backend.run(lambda db: sessions.clear_session(db, context))

    # -- vectors (the semantic leg) --------------------------------------------------------------------

    async def vector_space(self) -> EmbeddingSpace | None:
        """The embedding space this database's vectors belong to, once one was pinned."""
        return await self._backend.run(semantic.vector_space)

    async def pin_vector_space(self, space: EmbeddingSpace) -> EmbeddingSpace:
        """Pin ``space`` unless another was pinned first; returns the pinned space (never switched)."""
        return await self._backend.run(lambda db: semantic.pin_vector_space(db, space))

    async def missing_vectors(
        self, context: TrustedContext, space: str, limit: int
    ) -> tuple[list[tuple[str, str]], int]:
        """Visible live records lacking a vector in ``space``: up to ``limit`` (id, text), and the total.

        Newest updates come first, so recent memory is searchable semantically soonest.
        """
        return await self._backend.run(lambda db: semantic.missing_vectors(db, context, space, limit))

    async def put_vectors(self, space: str, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> int:
        """Store vectors by record id (records gone meanwhile are skipped); returns how many were stored."""
        return await self._backend.run(lambda db: semantic.put_vectors(db, space, vectors))

    async def nearest(
        self,
        context: TrustedContext,
        space: str,
        vector: npt.NDArray[np.float32],
        query: SearchQuery,
        *,
        min_similarity: float,
    ) -> list[RecordHit]:
        """Visible records by cosine similarity of their vector in ``space`` to ``vector``.

        Only similarities of at least ``min_similarity`` count; best first, ties by newest update then
        id. The filters of ``query`` apply; its text is not used.
        """
        core = self._core
        core.check_limit(query.limit)
        return await self._backend.run(
            lambda db: semantic.nearest(core, db, context, space, vector, query, min_similarity)
        )
