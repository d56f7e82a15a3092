"""SQLite implementation of the memory and session stores.

One connection per store, used by one worker thread at a time (an anyio ``CapacityLimiter`` of one),
WAL journal, ``synchronous=NORMAL`` (a committed transaction survives a killed process), and every
operation in its own ``BEGIN IMMEDIATE`` transaction with a busy timeout, so several processes can write
the same file without losing anything. Lexical search is FTS5 over the shared analysis's terms (see
:mod:`simone.providers.memory._terms`), ranked by ``bm25()`` with the title weighted 3, filtered by scope in
SQL, ties broken by the newest update, then the id. Searches are answered from per-scope in-memory
postings that reproduce ``bm25()`` bit for bit (:mod:`simone.providers.memory._cache`; kept fresh by a
change log every writer fills), and by FTS5 itself while a scope is changing a lot or does not fit
(``memory.search_cache_postings``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import numpy as np
import numpy.typing as npt
from simone.providers.memory import _records as trees
from simone.providers.memory._cache import (
    ScopeIndex,
    SearchCache,
    SearchCacheInfo,
    fts_totals,
    prune_changes,
    score as memory_scores,
)
from simone.providers.memory._clock import Clock, IdGenerator, random_ids, system_clock
from simone.providers.memory._models import (
    STATUSES,
    ChecklistCreate,
    ChecklistStatus,
    CreateSpec,
    FactCreate,
    FactStatus,
    ItemAdd,
    ItemMove,
    ItemRemove,
    ItemStatus,
    ItemUpdate,
    ListQuery,
    MemoryExport,
    MemoryRecord,
    NoteCreate,
    NoteStatus,
    RecordKind,
    SearchHit,
    SearchQuery,
    SessionHit,
    SessionSummary,
    TaskStateCreate,
    TodoCreate,
    TodoStatus,
    Turn,
    TurnRole,
    UpdateSpec,
)
from simone.providers.memory._records import index_text
from simone.providers.memory._schema import migrate
from simone.providers.memory._scope import (
    SCOPE_COLUMNS,
    scope_from_row,
    scope_signature,
    scope_sql,
    scope_values,
    visible_signatures,
    write_scope,
)
from simone.providers.memory._terms import (
    MAX_QUERY_TERMS,
    TermAnalyzer,
    analyzer_fingerprint,
    default_term_analyzer,
    fts_document,
    fts_query,
    fts_token,
)
from simone.runtime import (
    Analyzer,
    Caller,
    ConfigError,
    EmbeddingSpace,
    InvalidRequest,
    MemorySettings,
    NotFound,
    ProviderUnavailable,
    ScopeViolation,
    Settings,
    TrustedContext,
)

T = TypeVar("T")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_SUMMARY = "summary"
_EMBED_CHARS = 4000
"""Text sent to the embedder per record (embedding models read a few hundred tokens at most)."""
_MAX_WINDOW = 4096
"""The largest candidate window of the fast search path before the full query takes over."""
_OPTIMIZE_AFTER = 1000
"""An import of at least this many records merges the full-text index into one segment."""
_OPEN_ITEM = {ItemStatus.PENDING.value, ItemStatus.IN_PROGRESS.value, ItemStatus.BLOCKED.value}

_RECORD_COLUMNS: tuple[str, ...] = (
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
_SELECT_RECORD = ", ".join(f"r.{column}" for column in ("rowid", *_RECORD_COLUMNS))
_TURN_COLUMNS = ("id", *SCOPE_COLUMNS, "scope_sig", "role", "seq", "through_seq", "content", "created_us")
_SELECT_TURN = ", ".join(f"t.{column}" for column in _TURN_COLUMNS)


def _us(moment: datetime | None) -> int | None:
    return None if moment is None else (moment - _EPOCH) // _US


def _dt(us: int | None) -> datetime | None:
    return None if us is None else _EPOCH + timedelta(microseconds=us)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class SQLiteMemoryStore:
    """Structured and session memory in one SQLite file; implements ``MemoryStore`` and ``SessionStore``.

    Construction is cheap; open it with ``async with SQLiteMemoryStore(path) as store:`` (or
    :meth:`open` / :meth:`close`). Opening creates or migrates the schema, re-indexes if the analysis
    changed, and hard-deletes soft-deleted records past the retention period.

    Args:
        path: the database file (created with its folder if missing).
        settings: memory limits (defaults: :class:`~simone.runtime.MemorySettings`).
        analyzer: the shared text analysis (default: ``simone.runtime.default_analyzer()``).
        clock: the time source (inject a :class:`ManualClock` for exact replays).
        ids: the id generator (inject :class:`SequentialIds` for exact replays).
        limiter: the thread limiter for blocking SQLite work (default: one thread per store).
        purge_on_open: hard-delete expired soft-deleted records when opening.
        analyzer_key: identifies the analyzer's configuration (synonyms, ignore words); together with
            a probe of its output it decides whether stored terms are stale and must be re-analysed.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        limiter: anyio.CapacityLimiter | None = None,
        purge_on_open: bool = True,
        analyzer_key: str = "",
    ) -> None:
        if str(path) in ("", ":memory:"):
            raise ConfigError("memory needs a file path (several connections must see one database)")
        self._path = Path(path).expanduser()
        self._settings = settings or MemorySettings()
        self._analyzer = analyzer
        self._clock: Clock = clock or system_clock
        self._ids: IdGenerator = ids or random_ids
        self._limiter = limiter or anyio.CapacityLimiter(1)
        self._purge_on_open = purge_on_open
        self._analyzer_key = analyzer_key
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._cache = SearchCache(self._settings.search_cache_postings)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> SQLiteMemoryStore:
        """A store at ``settings.memory.path`` or ``settings.data_dir / "memory.sqlite3"``."""
        path = settings.memory.path or settings.data_dir / "memory.sqlite3"
        if "analyzer" not in kwargs:
            kwargs["analyzer"] = Analyzer.from_settings(settings.lexical)
            kwargs.setdefault("analyzer_key", settings.lexical.model_dump_json())
        return cls(path, settings=settings.memory, **kwargs)

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def settings(self) -> MemorySettings:
        """The limits this store enforces."""
        return self._settings

    # -- life cycle ------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Open (create, migrate, re-index if needed) the database."""
        if self._db is not None:
            return
        await anyio.to_thread.run_sync(self._open_sync, limiter=self._limiter)

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        await anyio.to_thread.run_sync(self._close_sync, limiter=self._limiter)

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _open_sync(self) -> None:
        with self._lock:
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(
                    self._path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self._settings.busy_timeout_s,
                )
            except (OSError, sqlite3.Error) as exc:
                raise ProviderUnavailable(
                    f"cannot open the memory database {self._path}: {exc}; check that the folder is "
                    "writable or set memory.path",
                    provider="memory",
                ) from exc
            db.row_factory = sqlite3.Row
            try:
                db.execute(f"PRAGMA busy_timeout = {int(self._settings.busy_timeout_s * 1000)}")
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = NORMAL")
                # a larger page cache and memory-mapped reads keep rank-then-fetch lookups off the syscalls
                db.execute("PRAGMA cache_size = -65536")
                db.execute("PRAGMA mmap_size = 268435456")
                if self._analyzer is None:
                    self._analyzer = default_term_analyzer()
                fingerprint = analyzer_fingerprint(self._analyzer, self._analyzer_key)
                self._db = db
                self._write(lambda c: self._prepare(c, fingerprint))
            except Exception as exc:
                self._db = None
                db.close()
                if isinstance(exc, sqlite3.Error):
                    raise self._translate(exc) from exc
                raise
        if self._purge_on_open:
            self._guarded(self._purge_sync)

    def _prepare(self, db: sqlite3.Connection, fingerprint: str) -> None:
        migrate(db, str(self._path))
        row = db.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
        if row is None or row[0] != fingerprint:
            if row is not None:
                self._reindex(db)
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('analyzer', ?)", (fingerprint,))

    def _reindex(self, db: sqlite3.Connection) -> None:
        """Re-analyse every record and turn (the analysis changed since they were written)."""
        for row in db.execute(f"SELECT {_SELECT_RECORD} FROM records r").fetchall():
            title, body = self._fts(db, self._record(row))
            db.execute(
                "UPDATE records SET fts_title = ?, fts_body = ? WHERE rowid = ?", (title, body, row["rowid"])
            )
        for rowid, content, signature in db.execute("SELECT rowid, content, scope_sig FROM turns").fetchall():
            terms = self._terms(content, self._scope_number(db, signature))
            db.execute("UPDATE turns SET fts_body = ? WHERE rowid = ?", (terms, rowid))

    def _close_sync(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._cache.clear()

    # -- plumbing --------------------------------------------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(partial(self._guarded, function, *args), limiter=self._limiter)

    def _guarded(self, function: Callable[..., T], *args: Any) -> T:
        with self._lock:
            if self._db is None:
                raise ConfigError(
                    "the memory store is not open; use `async with store:` or await store.open()"
                )
            try:
                return function(*args)
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc

    def _translate(self, exc: sqlite3.Error) -> ProviderUnavailable:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return ProviderUnavailable(
                f"the memory database {self._path} stayed locked by another process for more than "
                f"{self._settings.busy_timeout_s:g} s; try again, or raise memory.busy_timeout_s",
                provider="memory",
                retryable=True,
            )
        return ProviderUnavailable(
            f"the memory database {self._path} failed: {text}; check the file (disk full? damaged?) "
            "or restore it from `simone memory export` output",
            provider="memory",
        )

    def _write(self, function: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        committed = False
        try:
            result = function(db)
            db.execute("COMMIT")
            committed = True
            return result
        finally:
            if not committed and db.in_transaction:
                db.execute("ROLLBACK")

    def _read(self) -> sqlite3.Connection:
        assert self._db is not None
        return self._db

    def _now(self) -> datetime:
        now = self._clock()
        if now.tzinfo is None:
            raise ConfigError("the memory clock must return timezone-aware datetimes")
        return now.astimezone(UTC)

    def _terms(self, text: str, scope_number: int) -> str:
        assert self._analyzer is not None
        return fts_document(self._analyzer.terms(text), scope_number)

    def _fts(self, db: sqlite3.Connection, record: MemoryRecord) -> tuple[str, str]:
        title, body = index_text(record)
        number = self._scope_number(db, scope_signature(record.scope))
        return self._terms(title, number), self._terms(body, number)

    @staticmethod
    def _scope_number(db: sqlite3.Connection, signature: str) -> int:
        """The number of a scope signature (created inside the caller's write transaction)."""
        row = db.execute("SELECT n FROM scopes WHERE sig = ?", (signature,)).fetchone()
        if row is not None:
            return int(row[0])
        cursor = db.execute("INSERT INTO scopes (sig) VALUES (?)", (signature,))
        assert cursor.lastrowid is not None
        return int(cursor.lastrowid)

    @staticmethod
    def _visible_numbers(db: sqlite3.Connection, context: TrustedContext) -> list[int]:
        """The numbers of the scopes that exist and are visible to ``context``."""
        signatures = visible_signatures(context)
        marks = ", ".join("?" for _ in signatures)
        rows = db.execute(f"SELECT n FROM scopes WHERE sig IN ({marks}) ORDER BY n", signatures)
        return [int(row[0]) for row in rows.fetchall()]

    @staticmethod
    def _visible_scopes(db: sqlite3.Connection, context: TrustedContext) -> list[tuple[int, str, int]]:
        """``(number, signature, epoch)`` of the scopes that exist and are visible to ``context``."""
        signatures = visible_signatures(context)
        marks = ", ".join("?" for _ in signatures)
        rows = db.execute(f"SELECT n, sig, epoch FROM scopes WHERE sig IN ({marks}) ORDER BY n", signatures)
        return [(int(n), str(sig), int(epoch)) for n, sig, epoch in rows.fetchall()]

    def search_cache_info(self) -> SearchCacheInfo:
        """What the in-memory search indexes hold and how often they answered (for tests and tuning)."""
        return self._cache.info()

    def _check_body(self, text: str, what: str) -> None:
        limit = self._settings.max_body_chars
        if len(text) > limit:
            raise InvalidRequest(
                f"the {what} has {len(text):,} characters; memory keeps at most {limit:,} "
                "(memory.max_body_chars). Store a summary and keep the full text in a document instead."
            )

    def _check_limit(self, limit: int) -> None:
        if limit > self._settings.max_query_limit:
            raise InvalidRequest(
                f"limit {limit} is above memory.max_query_limit ({self._settings.max_query_limit}); "
                "ask for fewer records or page with offset"
            )

    # -- rows <-> records ------------------------------------------------------------------------------

    def _record(self, row: sqlite3.Row) -> MemoryRecord:
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
                "created_at": _dt(row["created_us"]),
                "updated_at": _dt(row["updated_us"]),
                "completed_at": _dt(row["completed_us"]),
                "deleted_at": _dt(row["deleted_us"]),
                "revision": row["revision"],
            }
        )

    def _values(self, record: MemoryRecord) -> tuple[Any, ...]:
        data = record.model_dump(
            mode="json", include={"priority", "due_at", "items", "fact", "task_state"}, exclude_none=True
        )
        if not record.items:
            data.pop("items", None)
        fact = record.fact
        values: dict[str, Any] = {
            "id": record.id,
            "kind": record.kind.value,
            **dict(zip(SCOPE_COLUMNS, scope_values(record.scope), strict=True)),
            "scope_sig": scope_signature(record.scope),
            "status": record.status,
            "valid_from_us": _us(fact.valid_from) if fact else None,
            "valid_until_us": _us(fact.valid_until) if fact else None,
            "created_us": _us(record.created_at),
            "updated_us": _us(record.updated_at),
            "completed_us": _us(record.completed_at),
            "deleted_us": _us(record.deleted_at),
            "revision": record.revision,
            "tags": _json(list(record.tags)),
            "title": record.title,
            "data": _json(data),
            "body": record.body,
        }
        return tuple(values[column] for column in _RECORD_COLUMNS)

    def _insert(self, db: sqlite3.Connection, record: MemoryRecord) -> None:
        title, body = self._fts(db, record)
        columns = (*_RECORD_COLUMNS, "fts_title", "fts_body")
        marks = ", ".join("?" for _ in columns)
        db.execute(
            f"INSERT INTO records ({', '.join(columns)}) VALUES ({marks})",
            (*self._values(record), title, body),
        )

    def _save(self, db: sqlite3.Connection, rowid: int, old: MemoryRecord, new: MemoryRecord) -> None:
        columns: tuple[str, ...] = _RECORD_COLUMNS
        values: tuple[Any, ...] = self._values(new)
        if index_text(old) != index_text(new):
            columns = (*columns, "fts_title", "fts_body")
            values = (*values, *self._fts(db, new))
            db.execute("DELETE FROM record_vectors WHERE record_rowid = ?", (rowid,))  # stale now
        assignments = ", ".join(f"{column} = ?" for column in columns)
        db.execute(f"UPDATE records SET {assignments} WHERE rowid = ?", (*values, rowid))

    def _fetch(
        self, db: sqlite3.Connection, context: TrustedContext, record_id: str, *, include_deleted: bool
    ) -> tuple[int, MemoryRecord]:
        condition, params = scope_sql(context, "r")
        row = db.execute(
            f"SELECT {_SELECT_RECORD} FROM records r WHERE r.id = ? AND {condition}", (record_id, *params)
        ).fetchone()
        if row is None:
            raise NotFound(
                f"no memory record {record_id!r} in this scope; list or search memory to find the ids "
                "you can use"
            )
        record = self._record(row)
        if record.deleted_at is not None and not include_deleted:
            raise NotFound(
                f"memory record {record_id!r} was deleted at {record.deleted_at.isoformat()}; restore it "
                "first to read or change it"
            )
        return int(row["rowid"]), record

    def _editable(
        self, db: sqlite3.Connection, context: TrustedContext, record_id: str, kind: RecordKind | None = None
    ) -> tuple[int, MemoryRecord]:
        rowid, record = self._fetch(db, context, record_id, include_deleted=True)
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

    def _changed(self, old: MemoryRecord, fields: dict[str, Any], now: datetime) -> MemoryRecord:
        """The record with ``fields`` applied; revision and update time move only if something changed."""
        merged = {**old.model_dump(), **fields}
        new = MemoryRecord.model_validate(merged)
        if new == old:
            return old
        return MemoryRecord.model_validate({**merged, "updated_at": now, "revision": old.revision + 1})

    # -- structured memory -----------------------------------------------------------------------------

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
        """
        return await self._run(self._create_sync, context, spec, keys, global_)

    def _create_sync(
        self, context: TrustedContext, spec: CreateSpec, keys: Sequence[str] | None, global_: bool
    ) -> MemoryRecord:
        scope = write_scope(context, keys=keys, global_=global_)
        now = self._now()
        kind = RecordKind(spec.kind)
        base: dict[str, Any] = {
            "id": self._ids(kind.value),
            "kind": kind,
            "scope": scope,
            "tags": tuple(spec.tags),
            "created_at": now,
            "updated_at": now,
            "revision": 1,
        }
        if isinstance(spec, NoteCreate):
            self._check_body(spec.body, "note body")
            base |= {"title": spec.title, "body": spec.body, "status": NoteStatus.ACTIVE.value}
        elif isinstance(spec, TodoCreate):
            self._check_body(spec.body, "todo body")
            base |= {
                "title": spec.title,
                "body": spec.body,
                "status": spec.status.value,
                "priority": spec.priority,
                "due_at": spec.due_at,
                "completed_at": now if spec.status is TodoStatus.COMPLETED else None,
            }
        elif isinstance(spec, ChecklistCreate):
            self._check_body(spec.body, "checklist body")
            nodes = trees.nodes_from_specs(spec.items, lambda: self._ids("item"))
            self._check_tree(nodes, spec.title)
            base |= {
                "title": spec.title,
                "body": spec.body,
                "status": ChecklistStatus.OPEN.value,
                "items": trees.from_nodes(nodes),
            }
        elif isinstance(spec, FactCreate):
            self._check_body(spec.object, "fact object")
            valid_from = spec.valid_from or now
            if spec.valid_until is not None and spec.valid_until <= valid_from:
                raise InvalidRequest(
                    f"valid_until ({spec.valid_until.isoformat()}) is not after valid_from "
                    f"({valid_from.isoformat()}); a fact must be valid for some time"
                )
            base |= {
                "title": f"{spec.subject} {spec.predicate}",
                "body": "",
                "status": FactStatus.ACTIVE.value,
                "fact": {
                    "subject": spec.subject,
                    "predicate": spec.predicate,
                    "object": spec.object,
                    "source": spec.source,
                    "confidence": spec.confidence,
                    "valid_from": valid_from,
                    "valid_until": spec.valid_until,
                    "supersedes": spec.supersedes,
                },
            }
        elif isinstance(spec, TaskStateCreate):
            self._check_body(spec.body, "task state body")
            self._check_body(_json(spec.checkpoint), "task checkpoint")
            base |= {
                "title": spec.name,
                "body": spec.body,
                "status": spec.status.value,
                "completed_at": now if spec.status is TodoStatus.COMPLETED else None,
                "task_state": {"phase": spec.phase, "progress": spec.progress, "checkpoint": spec.checkpoint},
            }
        record = MemoryRecord.model_validate(base)

        def transaction(db: sqlite3.Connection) -> MemoryRecord:
            if isinstance(spec, FactCreate) and spec.supersedes is not None:
                self._supersede(db, context, spec.supersedes, record, now)
            self._insert(db, record)
            return record

        return self._write(transaction)

    def _supersede(
        self, db: sqlite3.Connection, context: TrustedContext, old_id: str, new: MemoryRecord, now: datetime
    ) -> None:
        rowid, old = self._editable(db, context, old_id, RecordKind.FACT)
        assert old.fact is not None and new.fact is not None
        if old.status != FactStatus.ACTIVE.value:
            later = f" by {old.fact.superseded_by}" if old.fact.superseded_by else ""
            raise InvalidRequest(
                f"fact {old_id!r} is already {old.status}{later}; supersede the current fact instead"
            )
        if new.fact.valid_from <= old.fact.valid_from:
            raise InvalidRequest(
                f"the new fact must start after the fact it supersedes ({old.fact.valid_from.isoformat()})"
            )
        until = old.fact.valid_until
        if until is None or until > new.fact.valid_from:
            until = new.fact.valid_from
        fact = old.fact.model_copy(update={"valid_until": until, "superseded_by": new.id})
        updated = self._changed(old, {"status": FactStatus.SUPERSEDED.value, "fact": fact.model_dump()}, now)
        self._save(db, rowid, old, updated)

    def _check_tree(self, nodes: list[trees.Node], where: str) -> None:
        depth = trees.tree_height(nodes)
        if depth > self._settings.checklist_max_depth:
            raise InvalidRequest(
                f"checklist {where!r} would nest {depth} levels deep; the limit is "
                f"{self._settings.checklist_max_depth} (memory.checklist_max_depth). Flatten it."
            )
        total = trees.count(nodes)
        if total > self._settings.max_checklist_items:
            raise InvalidRequest(
                f"checklist {where!r} would hold {total} items; the limit is "
                f"{self._settings.max_checklist_items} (memory.max_checklist_items). Split it."
            )

    async def update(self, context: TrustedContext, patch: UpdateSpec) -> MemoryRecord:
        """Apply a partial update (fields that are set change; an explicit ``None`` clears).

        Raises:
            NotFound: unknown or invisible id. InvalidRequest: a deleted record, a kind mismatch, a
                body over the limit, a fact valid_until not after valid_from.
        """
        return await self._run(self._update_sync, context, patch)

    def _update_sync(self, context: TrustedContext, patch: UpdateSpec) -> MemoryRecord:
        changes = patch.model_dump(exclude_unset=True, exclude={"id", "kind"})
        now = self._now()
        kind = RecordKind(patch.kind)

        def transaction(db: sqlite3.Connection) -> MemoryRecord:
            rowid, old = self._editable(db, context, patch.id, kind)
            fields: dict[str, Any] = {}
            for key in ("title", "body", "tags", "priority", "due_at"):
                if key in changes:
                    if changes[key] is None and key in ("title", "body", "tags"):
                        continue
                    fields[key] = changes[key]
            if "body" in fields:
                self._check_body(fields["body"], f"{kind.value} body")
            if changes.get("status") is not None:
                fields |= self._status_fields(old, str(changes["status"]), now)
            if kind is RecordKind.FACT:
                assert old.fact is not None
                fact = old.fact.model_dump()
                for key in ("source", "confidence", "valid_until"):
                    if key in changes and not (key == "confidence" and changes[key] is None):
                        fact[key] = changes[key]
                if fact["valid_until"] is not None and fact["valid_until"] <= fact["valid_from"]:
                    raise InvalidRequest(
                        f"valid_until ({fact['valid_until'].isoformat()}) is not after valid_from "
                        f"({old.fact.valid_from.isoformat()}) of fact {patch.id!r}"
                    )
                fields["fact"] = fact
            elif kind is RecordKind.TASK_STATE:
                assert old.task_state is not None
                state = old.task_state.model_dump()
                if changes.get("name") is not None:
                    fields["title"] = changes["name"]
                for key in ("phase", "progress", "checkpoint"):
                    if changes.get(key) is not None:
                        state[key] = changes[key]
                self._check_body(_json(state["checkpoint"]), "task checkpoint")
                fields["task_state"] = state
            new = self._changed(old, fields, now)
            if new is not old:
                self._save(db, rowid, old, new)
            return new

        return self._write(transaction)

    def _status_fields(self, record: MemoryRecord, status: str, now: datetime) -> dict[str, Any]:
        vocabulary = STATUSES[record.kind]
        if status not in {member.value for member in vocabulary}:
            raise InvalidRequest(
                f"{status!r} is not a {record.kind.value} status; use one of "
                f"{', '.join(member.value for member in vocabulary)}"
            )
        done = status in ("completed", "archived", "retired")
        completed_at = (record.completed_at or now) if done else None
        return {"status": status, "completed_at": completed_at}

    async def complete(
        self, context: TrustedContext, record_id: str, *, kind: RecordKind | None = None
    ) -> MemoryRecord:
        """Archive a note, complete a todo / checklist (and its open items) / task state, retire a fact.

        Completing what is already complete changes nothing. With ``kind``, a record of another kind is
        refused (InvalidRequest).
        """
        return await self._run(self._complete_sync, context, record_id, kind)

    def _complete_sync(
        self, context: TrustedContext, record_id: str, kind: RecordKind | None
    ) -> MemoryRecord:
        now = self._now()

        def transaction(db: sqlite3.Connection) -> MemoryRecord:
            rowid, old = self._editable(db, context, record_id, kind)
            fields: dict[str, Any]
            if old.kind is RecordKind.NOTE:
                fields = self._status_fields(old, NoteStatus.ARCHIVED.value, now)
            elif old.kind is RecordKind.TODO:
                fields = self._status_fields(old, TodoStatus.COMPLETED.value, now)
            elif old.kind is RecordKind.CHECKLIST:
                nodes = trees.to_nodes(old.items)
                for node, _depth in trees.walk(nodes):
                    if node["status"] in _OPEN_ITEM:
                        node["status"] = ItemStatus.COMPLETED.value
                fields = self._status_fields(old, ChecklistStatus.COMPLETED.value, now)
                fields["items"] = trees.from_nodes(nodes)
            elif old.kind is RecordKind.FACT:
                assert old.fact is not None
                if old.status != FactStatus.ACTIVE.value:
                    return old
                until = max(old.fact.valid_from, now)
                if old.fact.valid_until is not None and old.fact.valid_until < until:
                    until = old.fact.valid_until
                fields = self._status_fields(old, FactStatus.RETIRED.value, now)
                fields["fact"] = old.fact.model_copy(update={"valid_until": until}).model_dump()
            else:
                assert old.task_state is not None
                fields = self._status_fields(old, TodoStatus.COMPLETED.value, now)
                fields["task_state"] = old.task_state.model_copy(update={"progress": 1.0}).model_dump()
            new = self._changed(old, fields, now)
            if new is not old:
                self._save(db, rowid, old, new)
            return new

        return self._write(transaction)

    async def get(
        self, context: TrustedContext, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        """One visible record by id (a soft-deleted one only with ``include_deleted``)."""
        return await self._run(self._get_sync, context, record_id, include_deleted)

    def _get_sync(self, context: TrustedContext, record_id: str, include_deleted: bool) -> MemoryRecord:
        return self._fetch(self._read(), context, record_id, include_deleted=include_deleted)[1]

    async def delete(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Soft-delete a record (idempotent); it is hard-deleted after the retention period."""
        return await self._run(self._set_deleted, context, record_id, True)

    async def restore(self, context: TrustedContext, record_id: str) -> MemoryRecord:
        """Undo a soft delete (idempotent)."""
        return await self._run(self._set_deleted, context, record_id, False)

    def _set_deleted(self, context: TrustedContext, record_id: str, deleted: bool) -> MemoryRecord:
        now = self._now()

        def transaction(db: sqlite3.Connection) -> MemoryRecord:
            rowid, old = self._fetch(db, context, record_id, include_deleted=True)
            if (old.deleted_at is not None) == deleted:
                return old
            new = self._changed(old, {"deleted_at": now if deleted else None}, now)
            self._save(db, rowid, old, new)
            return new

        return self._write(transaction)

    async def hard_delete(self, context: TrustedContext, record_id: str) -> None:
        """Delete a visible record for good (soft-deleted or not)."""
        await self._run(self._hard_delete_sync, context, record_id)

    def _hard_delete_sync(self, context: TrustedContext, record_id: str) -> None:
        def transaction(db: sqlite3.Connection) -> None:
            rowid, _ = self._fetch(db, context, record_id, include_deleted=True)
            db.execute("DELETE FROM records WHERE rowid = ?", (rowid,))

        self._write(transaction)

    async def purge_deleted(self) -> int:
        """Hard-delete records soft-deleted more than ``soft_delete_retention_days`` ago."""
        return await self._run(self._purge_sync)

    def _purge_sync(self) -> int:
        cutoff = self._now() - timedelta(days=self._settings.soft_delete_retention_days)

        def transaction(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "DELETE FROM records WHERE deleted_us IS NOT NULL AND deleted_us <= ?", (_us(cutoff),)
            )
            prune_changes(db)
            return cursor.rowcount

        return self._write(transaction)

    # -- checklist items -------------------------------------------------------------------------------

    def _edit_items(
        self,
        context: TrustedContext,
        checklist_id: str,
        edit: Callable[[list[trees.Node], MemoryRecord], None],
    ) -> MemoryRecord:
        now = self._now()

        def transaction(db: sqlite3.Connection) -> MemoryRecord:
            rowid, old = self._editable(db, context, checklist_id, RecordKind.CHECKLIST)
            nodes = trees.to_nodes(old.items)
            edit(nodes, old)
            self._check_tree(nodes, old.title)
            new = self._changed(old, {"items": trees.from_nodes(nodes)}, now)
            if new is not old:
                self._save(db, rowid, old, new)
            return new

        return self._write(transaction)

    async def add_item(self, context: TrustedContext, args: ItemAdd) -> MemoryRecord:
        """Add an item under ``parent_id`` (top level when absent) at ``position`` (end when absent)."""
        item_id = self._ids("item")

        def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
            siblings = nodes
            where = f"checklist {record.id}"
            if args.parent_id is not None:
                parent_list, index, _ = trees.locate(nodes, args.parent_id, record.id)
                siblings = parent_list[index]["children"]
                where = f"item {args.parent_id}"
            node: trees.Node = {"id": item_id, "text": args.text, "status": args.status.value, "children": []}
            trees.insert(siblings, node, args.position, where)

        return await self._run(self._edit_items, context, args.checklist_id, edit)

    async def update_item(self, context: TrustedContext, args: ItemUpdate) -> MemoryRecord:
        """Change an item's text or status."""

        def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
            siblings, index, _ = trees.locate(nodes, args.item_id, record.id)
            if args.text is not None:
                siblings[index]["text"] = args.text
            if args.status is not None:
                siblings[index]["status"] = args.status.value

        return await self._run(self._edit_items, context, args.checklist_id, edit)

    async def move_item(self, context: TrustedContext, args: ItemMove) -> MemoryRecord:
        """Move an item with its children; never into itself, its descendants, or past the depth limit."""
        max_depth = self._settings.checklist_max_depth

        def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
            siblings, index, _ = trees.locate(nodes, args.item_id, record.id)
            node = siblings[index]
            if args.parent_id is not None and trees.contains(node, args.parent_id):
                what = "itself" if args.parent_id == args.item_id else f"its own descendant {args.parent_id}"
                raise InvalidRequest(f"cannot move item {args.item_id} into {what}; pick another parent")
            target = nodes
            depth = 0
            where = f"checklist {record.id}"
            if args.parent_id is not None:
                parent_list, parent_index, depth = trees.locate(nodes, args.parent_id, record.id)
                target = parent_list[parent_index]["children"]
                where = f"item {args.parent_id}"
            if depth + trees.height(node) > max_depth:
                raise InvalidRequest(
                    f"moving item {args.item_id} under {where} would nest {depth + trees.height(node)} "
                    f"levels deep; the limit is {max_depth} (memory.checklist_max_depth)"
                )
            del siblings[index]
            trees.insert(target, node, args.position, where)

        return await self._run(self._edit_items, context, args.checklist_id, edit)

    async def remove_item(self, context: TrustedContext, args: ItemRemove) -> MemoryRecord:
        """Remove an item and its children."""

        def edit(nodes: list[trees.Node], record: MemoryRecord) -> None:
            siblings, index, _ = trees.locate(nodes, args.item_id, record.id)
            del siblings[index]

        return await self._run(self._edit_items, context, args.checklist_id, edit)

    # -- queries ---------------------------------------------------------------------------------------

    def _filters(
        self,
        context: TrustedContext,
        *,
        kinds: Sequence[RecordKind] | None,
        status: Sequence[str] | None,
        tags: Sequence[str] | None,
        include_deleted: bool,
        include_inactive_facts: bool,
        now: datetime,
    ) -> tuple[str, list[Any]]:
        condition, scope_params = scope_sql(context, "r")
        parts = [condition]
        params: list[Any] = list(scope_params)
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
            parts.append("EXISTS (SELECT 1 FROM json_each(r.tags) WHERE json_each.value = ?)")
            params.append(tag)
        if not include_inactive_facts:
            parts.append(
                "(r.kind != 'fact' OR (r.status = 'active' AND r.valid_from_us <= ? "
                "AND (r.valid_until_us IS NULL OR r.valid_until_us > ?)))"
            )
            params.extend([_us(now), _us(now)])
        return " AND ".join(parts), params

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
            f"SELECT {_SELECT_RECORD} FROM records r WHERE {condition} "
            "ORDER BY r.updated_us DESC, r.id LIMIT ? OFFSET ?",
            (*params, query.limit, query.offset),
        )
        return [self._record(row) for row in rows.fetchall()]

    async def search_records(self, context: TrustedContext, query: SearchQuery) -> list[SearchHit]:
        """BM25 over analysed title (x3) and body; only records sharing a term with the query."""
        self._check_limit(query.limit)
        return await self._run(self._search_sync, context, query)

    def _search_sync(self, context: TrustedContext, query: SearchQuery) -> list[SearchHit]:
        assert self._analyzer is not None
        db = self._read()
        terms = self._analyzer.terms(query.text)
        condition, params = self._filters(
            context,
            kinds=query.kinds,
            status=query.status,
            tags=query.tags,
            include_deleted=False,
            include_inactive_facts=query.include_inactive_facts,
            now=self._now(),
        )
        # One read transaction: the scope epochs, the in-memory index and the rows are one snapshot.
        db.execute("BEGIN")
        try:
            visible = self._visible_scopes(db, context)
            match = fts_query(terms, [number for number, _, _ in visible])
            if match is None:
                hits: list[SearchHit] = []
            else:
                indexes = self._cache.indexes(db, visible)
                if indexes is not None:
                    hits = self._search_memory(db, indexes, terms, condition, params, query.limit)
                else:
                    hits = self._search_sql(db, match, condition, params, query.limit)
            db.execute("COMMIT")
            return hits
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")

    def _search_memory(
        self,
        db: sqlite3.Connection,
        indexes: list[ScopeIndex],
        terms: list[str],
        condition: str,
        params: list[Any],
        limit: int,
    ) -> list[SearchHit]:
        """BM25 from the in-memory indexes (the scores of ``bm25()``), then the filters in SQL.

        The best ``window`` rows by score, with every row tied at the cut-off, go through the filters; if
        at least ``limit`` pass, no row outside (all strictly worse) can enter the result, so it is exact.
        Otherwise the window grows until it holds every matching row.
        """
        tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
        rows, total_tokens = fts_totals(db)
        rowids, scores = memory_scores(indexes, tokens, rows, total_tokens)
        if not len(rowids):
            return []
        window = max(4 * limit, 64)
        while True:
            if window >= len(rowids):
                chosen_rowids, chosen_scores, complete = rowids, scores, True
            else:
                threshold = np.partition(scores, len(scores) - window)[len(scores) - window]
                keep = scores >= threshold
                chosen_rowids, chosen_scores = rowids[keep], scores[keep]
                complete = len(chosen_rowids) == len(rowids)
            score_of = dict(zip(chosen_rowids.tolist(), chosen_scores.tolist(), strict=True))
            passed = db.execute(
                "SELECT r.rowid, r.updated_us, r.id FROM records r "
                f"WHERE r.rowid IN (SELECT value FROM json_each(?)) AND {condition}",
                (json.dumps(list(score_of)), *params),
            ).fetchall()
            if complete or len(passed) >= limit:
                break
            window *= 8
        passed.sort(key=lambda row: (-score_of[row[0]], -row[1], row[2]))
        top = [int(row[0]) for row in passed[:limit]]
        if not top:
            return []
        fetched = db.execute(
            f"SELECT {_SELECT_RECORD} FROM records r WHERE r.rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(top),),
        ).fetchall()
        by_rowid = {int(row["rowid"]): row for row in fetched}
        return [SearchHit(record=self._record(by_rowid[rowid]), score=score_of[rowid]) for rowid in top]

    def _search_sql(
        self, db: sqlite3.Connection, match: str, condition: str, params: list[Any], limit: int
    ) -> list[SearchHit]:
        """BM25 by FTS5's ``bm25()`` (the title weighted 3), the filters and the tie-break in SQL."""
        # Fast path: the best ``window`` rows by BM25 from the index alone, then the filters and the
        # tie-break on those few rows. It is exact when the index had fewer matches than the window, or
        # when the last hit kept ranks strictly better than the worst candidate (so no row outside the
        # window can tie with or beat it); otherwise the window grows, and at last the full query runs.
        window = max(4 * limit, 64)
        while window <= _MAX_WINDOW:
            candidates = db.execute(
                "SELECT rowid, bm25(records_fts, 3.0, 1.0) AS score FROM records_fts "
                "WHERE records_fts MATCH ? ORDER BY score LIMIT ?",
                (match, window),
            ).fetchall()
            ranks = {int(rowid): float(score) for rowid, score in candidates}
            if not ranks:
                return []
            marks = ", ".join("?" for _ in ranks)
            rows = db.execute(
                f"SELECT {_SELECT_RECORD} FROM records r WHERE r.rowid IN ({marks}) AND {condition}",
                (*ranks, *params),
            ).fetchall()
            rows.sort(key=lambda row: (ranks[row["rowid"]], -row["updated_us"], row["id"]))
            rows = rows[:limit]
            worst = float(candidates[-1][1])
            if len(candidates) < window or (len(rows) == limit and ranks[rows[-1]["rowid"]] < worst):
                return [SearchHit(record=self._record(row), score=-ranks[row["rowid"]]) for row in rows]
            window *= 8
        full = db.execute(
            f"SELECT {_SELECT_RECORD}, w.score FROM ("
            "SELECT r.rowid AS rid, bm25(records_fts, 3.0, 1.0) AS score, r.updated_us AS u, r.id AS i "
            "FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
            f"WHERE records_fts MATCH ? AND {condition} ORDER BY score, u DESC, i LIMIT ?"
            ") w JOIN records r ON r.rowid = w.rid ORDER BY w.score, w.u DESC, w.i",
            (match, *params, limit),
        )
        return [SearchHit(record=self._record(row), score=-float(row["score"])) for row in full.fetchall()]

    # -- vectors (the optional semantic leg) -----------------------------------------------------------

    async def vector_space(self) -> EmbeddingSpace | None:
        """The embedding space this database's vectors belong to, once one was pinned."""
        return await self._run(self._vector_space_sync)

    def _vector_space_sync(self) -> EmbeddingSpace | None:
        row = self._read().execute("SELECT value FROM meta WHERE key = 'vector_space'").fetchone()
        return None if row is None else EmbeddingSpace.model_validate_json(row[0])

    async def pin_vector_space(self, space: EmbeddingSpace) -> EmbeddingSpace:
        """Pin ``space`` unless another was pinned first; returns the pinned space (never switched)."""
        return await self._run(self._pin_sync, space)

    def _pin_sync(self, space: EmbeddingSpace) -> EmbeddingSpace:
        def transaction(db: sqlite3.Connection) -> EmbeddingSpace:
            db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('vector_space', ?)",
                (space.model_dump_json(),),
            )
            row = db.execute("SELECT value FROM meta WHERE key = 'vector_space'").fetchone()
            return EmbeddingSpace.model_validate_json(row[0])

        return self._write(transaction)

    async def missing_vectors(
        self, context: TrustedContext, space: str, limit: int
    ) -> tuple[list[tuple[str, str]], int]:
        """Visible live records lacking a vector in ``space``: up to ``limit`` (id, text), and the total.

        Newest updates come first, so recent memory is searchable semantically soonest.
        """
        return await self._run(self._missing_sync, context, space, limit)

    def _missing_sync(
        self, context: TrustedContext, space: str, limit: int
    ) -> tuple[list[tuple[str, str]], int]:
        condition, params = scope_sql(context, "r")
        where = (
            f"WHERE {condition} AND r.deleted_us IS NULL AND NOT EXISTS (SELECT 1 FROM record_vectors v "
            "WHERE v.space = ? AND v.record_rowid = r.rowid)"
        )
        db = self._read()
        total = int(db.execute(f"SELECT COUNT(*) FROM records r {where}", (*params, space)).fetchone()[0])
        rows = db.execute(
            f"SELECT {_SELECT_RECORD} FROM records r {where} ORDER BY r.updated_us DESC, r.id LIMIT ?",
            (*params, space, limit),
        ).fetchall()
        batch = []
        for row in rows:
            title, body = index_text(self._record(row))
            batch.append((row["id"], f"{title}\n{body}"[:_EMBED_CHARS]))
        return batch, total

    async def put_vectors(self, space: str, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> int:
        """Store vectors by record id (records gone meanwhile are skipped); returns how many were stored."""
        return await self._run(self._put_sync, space, vectors)

    def _put_sync(self, space: str, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> int:
        def transaction(db: sqlite3.Connection) -> int:
            stored = 0
            for record_id, vector in vectors:
                row = db.execute("SELECT rowid FROM records WHERE id = ?", (record_id,)).fetchone()
                if row is None:
                    continue
                blob = np.asarray(vector, dtype="<f4").tobytes()
                db.execute(
                    "INSERT OR REPLACE INTO record_vectors (space, record_rowid, vector) VALUES (?, ?, ?)",
                    (space, row[0], blob),
                )
                stored += 1
            return stored

        return self._write(transaction)

    async def nearest(
        self,
        context: TrustedContext,
        space: str,
        vector: npt.NDArray[np.float32],
        query: SearchQuery,
        *,
        min_similarity: float,
    ) -> list[SearchHit]:
        """Visible records by cosine similarity of their vector in ``space`` to ``vector``.

        Only similarities of at least ``min_similarity`` count; best first, ties by newest update then
        id. The filters of ``query`` apply; its text is not used.
        """
        self._check_limit(query.limit)
        return await self._run(self._nearest_sync, context, space, vector, query, min_similarity)

    def _nearest_sync(
        self,
        context: TrustedContext,
        space: str,
        vector: npt.NDArray[np.float32],
        query: SearchQuery,
        min_similarity: float,
    ) -> list[SearchHit]:
        condition, params = self._filters(
            context,
            kinds=query.kinds,
            status=query.status,
            tags=query.tags,
            include_deleted=False,
            include_inactive_facts=query.include_inactive_facts,
            now=self._now(),
        )
        db = self._read()
        rows = db.execute(
            "SELECT r.rowid, r.updated_us, r.id, v.vector FROM records r JOIN record_vectors v "
            f"ON v.space = ? AND v.record_rowid = r.rowid WHERE {condition}",
            (space, *params),
        ).fetchall()
        probe = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(probe))
        if not rows or norm == 0.0:
            return []
        matrix = np.frombuffer(b"".join(row[3] for row in rows), dtype="<f4")
        if matrix.size != len(rows) * probe.size:
            raise ProviderUnavailable(
                f"the memory vectors of space {space} do not have {probe.size} dimensions; the space was "
                "changed under the database. Delete its vectors (they are re-embedded) or pin the old space.",
                provider="memory",
            )
        matrix = matrix.reshape(len(rows), probe.size)
        lengths = np.linalg.norm(matrix, axis=1)
        lengths[lengths == 0.0] = 1.0
        similarity = (matrix @ probe) / (lengths * norm)
        ranked = sorted(
            (
                (-float(similarity[index]), -int(row[1]), str(row[2]), int(row[0]))
                for index, row in enumerate(rows)
                if similarity[index] >= min_similarity
            )
        )[: query.limit]
        if not ranked:
            return []
        marks = ", ".join("?" for _ in ranked)
        full = {
            int(row["rowid"]): row
            for row in db.execute(
                f"SELECT {_SELECT_RECORD} FROM records r WHERE r.rowid IN ({marks})",
                [item[3] for item in ranked],
            ).fetchall()
        }
        return [
            SearchHit(record=self._record(full[rowid]), score=-negative)
            for negative, _, _, rowid in ranked
            if rowid in full
        ]

    # -- session memory --------------------------------------------------------------------------------

    @staticmethod
    def _conversation(context: TrustedContext) -> str:
        if context.conversation is None:
            raise InvalidRequest(
                "session memory needs a conversation in the trusted context; admit the event with one"
            )
        return context.conversation

    def _turn(self, row: sqlite3.Row) -> Turn:
        return Turn(
            id=row["id"],
            scope=scope_from_row([row[column] for column in SCOPE_COLUMNS]),
            seq=row["seq"],
            role=TurnRole(row["role"]),
            content=row["content"],
            created_at=_dt(row["created_us"]),
        )

    def _summary(self, row: sqlite3.Row) -> SessionSummary:
        return SessionSummary(
            id=row["id"],
            scope=scope_from_row([row[column] for column in SCOPE_COLUMNS]),
            content=row["content"],
            through_seq=row["through_seq"] or 0,
            updated_at=_dt(row["created_us"]),
        )

    def _insert_turn(
        self,
        db: sqlite3.Connection,
        *,
        turn_id: str,
        scope: dict[str, str],
        role: str,
        seq: int,
        through_seq: int | None,
        content: str,
        created: datetime,
    ) -> None:
        columns = (*_TURN_COLUMNS, "fts_body")
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
                _us(created),
                self._terms(content, self._scope_number(db, signature)),
            ),
        )

    async def append_turn(
        self, context: TrustedContext, role: TurnRole, content: str
    ) -> tuple[Turn, list[Turn]]:
        """Add a turn to the conversation; turns beyond ``session_window_turns`` fall out (returned)."""
        return await self._run(self._append_sync, context, TurnRole(role), content)

    def _append_sync(self, context: TrustedContext, role: TurnRole, content: str) -> tuple[Turn, list[Turn]]:
        self._conversation(context)
        self._check_body(content, "turn")
        scope = context.scope()
        signature = scope_signature(scope)
        now = self._now()
        turn_id = self._ids("turn")
        window = self._settings.session_window_turns

        def transaction(db: sqlite3.Connection) -> tuple[Turn, list[Turn]]:
            last = db.execute(
                "SELECT MAX(seq) FROM turns WHERE scope_sig = ? AND role != ?", (signature, _SUMMARY)
            ).fetchone()[0]
            seq = int(last or 0) + 1
            self._insert_turn(
                db,
                turn_id=turn_id,
                scope=scope,
                role=role.value,
                seq=seq,
                through_seq=None,
                content=content,
                created=now,
            )
            evicted = db.execute(
                f"SELECT {_SELECT_TURN} FROM turns t WHERE t.scope_sig = ? AND t.role != ? AND t.seq <= ? "
                "ORDER BY t.seq",
                (signature, _SUMMARY, seq - window),
            ).fetchall()
            if evicted:
                db.execute(
                    "DELETE FROM turns WHERE scope_sig = ? AND role != ? AND seq <= ?",
                    (signature, _SUMMARY, seq - window),
                )
            turn = Turn(id=turn_id, scope=scope, seq=seq, role=role, content=content, created_at=now)
            return turn, [self._turn(row) for row in evicted]

        return self._write(transaction)

    def _session_condition(self, context: TrustedContext) -> tuple[str, list[Any]]:
        conversation = self._conversation(context)
        condition, params = scope_sql(context, "t")
        return f"{condition} AND t.s_conversation = ?", [*params, conversation]

    async def recent_turns(self, context: TrustedContext, limit: int | None = None) -> list[Turn]:
        """The conversation's turns (visible in this scope), oldest first; the last ``limit`` if given."""
        return await self._run(self._recent_sync, context, limit)

    def _recent_sync(self, context: TrustedContext, limit: int | None) -> list[Turn]:
        condition, params = self._session_condition(context)
        wanted = min(limit or self._settings.session_window_turns, self._settings.max_query_limit)
        rows = self._read().execute(
            f"SELECT {_SELECT_TURN} FROM turns t WHERE {condition} AND t.role != ? "
            "ORDER BY t.created_us DESC, t.seq DESC, t.id DESC LIMIT ?",
            (*params, _SUMMARY, wanted),
        )
        return [self._turn(row) for row in reversed(rows.fetchall())]

    async def set_summary(
        self, context: TrustedContext, content: str, *, through_seq: int | None = None
    ) -> SessionSummary:
        """Fill the summary slot of the conversation (as written under this exact scope)."""
        return await self._run(self._set_summary_sync, context, content, through_seq)

    def _set_summary_sync(
        self, context: TrustedContext, content: str, through_seq: int | None
    ) -> SessionSummary:
        self._conversation(context)
        self._check_body(content, "summary")
        scope = context.scope()
        signature = scope_signature(scope)
        now = self._now()

        def transaction(db: sqlite3.Connection) -> SessionSummary:
            row = db.execute(
                "SELECT id FROM turns WHERE scope_sig = ? AND role = ?", (signature, _SUMMARY)
            ).fetchone()
            summary_id = row["id"] if row is not None else self._ids("summary")
            if row is not None:
                db.execute("DELETE FROM turns WHERE id = ?", (summary_id,))
            upto = through_seq
            if upto is None:
                last = db.execute(
                    "SELECT MAX(seq) FROM turns WHERE scope_sig = ? AND role != ?", (signature, _SUMMARY)
                ).fetchone()[0]
                upto = int(last or 0)
            self._insert_turn(
                db,
                turn_id=summary_id,
                scope=scope,
                role=_SUMMARY,
                seq=0,
                through_seq=upto,
                content=content,
                created=now,
            )
            return SessionSummary(
                id=summary_id, scope=scope, content=content, through_seq=upto, updated_at=now
            )

        return self._write(transaction)

    async def get_summary(self, context: TrustedContext) -> SessionSummary | None:
        """The summary written under this exact scope, if any."""
        return await self._run(self._get_summary_sync, context)

    def _get_summary_sync(self, context: TrustedContext) -> SessionSummary | None:
        self._conversation(context)
        row = (
            self._read()
            .execute(
                f"SELECT {_SELECT_TURN} FROM turns t WHERE t.scope_sig = ? AND t.role = ?",
                (scope_signature(context.scope()), _SUMMARY),
            )
            .fetchone()
        )
        return None if row is None else self._summary(row)

    async def search_session(self, context: TrustedContext, text: str, limit: int) -> list[SessionHit]:
        """Turns and summaries of the conversation sharing a term with ``text``, by BM25."""
        self._check_limit(limit)
        return await self._run(self._search_session_sync, context, text, limit)

    def _search_session_sync(self, context: TrustedContext, text: str, limit: int) -> list[SessionHit]:
        assert self._analyzer is not None
        condition, params = self._session_condition(context)
        db = self._read()
        match = fts_query(self._analyzer.terms(text), self._visible_numbers(db, context))
        if match is None:
            return []
        rows = db.execute(
            f"SELECT {_SELECT_TURN}, bm25(turns_fts) AS rank FROM turns_fts "
            "JOIN turns t ON t.rowid = turns_fts.rowid "
            f"WHERE turns_fts MATCH ? AND {condition} ORDER BY rank, t.created_us DESC, t.id LIMIT ?",
            (match, *params, limit),
        )
        hits: list[SessionHit] = []
        for row in rows.fetchall():
            item: Turn | SessionSummary = self._summary(row) if row["role"] == _SUMMARY else self._turn(row)
            hits.append(SessionHit(item=item, score=-float(row["rank"])))
        return hits

    async def clear_session(self, context: TrustedContext) -> int:
        """Forget the turns and summary written under this exact scope."""
        return await self._run(self._clear_sync, context)

    def _clear_sync(self, context: TrustedContext) -> int:
        self._conversation(context)
        signature = scope_signature(context.scope())
        return self._write(
            lambda db: db.execute("DELETE FROM turns WHERE scope_sig = ?", (signature,)).rowcount
        )

    # -- export / import -------------------------------------------------------------------------------

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
            condition, params = ("1", []) if all_scopes else scope_sql(context, "r")
            rows = db.execute(
                f"SELECT {_SELECT_RECORD} FROM records r WHERE {condition} ORDER BY r.created_us, r.id",
                params,
            ).fetchall()
            turn_condition, turn_params = ("1", []) if all_scopes else scope_sql(context, "t")
            turn_rows = db.execute(
                f"SELECT {_SELECT_TURN} FROM turns t WHERE {turn_condition} "
                "ORDER BY t.scope_sig, t.role = 'summary' DESC, t.seq, t.id",
                turn_params,
            ).fetchall()
        finally:
            db.execute("COMMIT")
        return MemoryExport(
            exported_at=self._now(),
            records=[self._record(row) for row in rows],
            turns=[self._turn(row) for row in turn_rows if row["role"] != _SUMMARY],
            summaries=[self._summary(row) for row in turn_rows if row["role"] == _SUMMARY],
        )

    async def import_(self, context: TrustedContext, document: MemoryExport, *, replace: bool = False) -> int:
        """Write an export back in one transaction: all of it, or nothing.

        Only a ``system`` caller may import (records keep the scopes they were exported with).

        Raises:
            ScopeViolation: a non-system caller.
            InvalidRequest: ids that already exist (unless ``replace``), duplicate ids in the document,
                records that break memory's rules (status, kind fields, limits).
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
            if "conversation" not in item.scope:
                problems.append(f"turn {item.id}: session memory needs a conversation in its scope")
        if problems:
            raise InvalidRequest("the import was refused, nothing was written: " + "; ".join(problems[:20]))

    def _import_sync(self, document: MemoryExport, replace: bool) -> int:
        def transaction(db: sqlite3.Connection) -> int:
            conflicts = self._existing(db, "records", [record.id for record in document.records])
            conflicts += self._existing(
                db, "turns", [turn.id for turn in document.turns] + [s.id for s in document.summaries]
            )
            for summary in document.summaries:
                row = db.execute(
                    "SELECT id FROM turns WHERE scope_sig = ? AND role = ? AND id != ?",
                    (scope_signature(summary.scope), _SUMMARY, summary.id),
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
            except sqlite3.IntegrityError as exc:
                raise InvalidRequest(
                    f"the import was refused, nothing was written: {exc} (two turns of one conversation "
                    "with the same sequence number?)"
                ) from exc

        return self._write(transaction)

    def _import_rows(self, db: sqlite3.Connection, document: MemoryExport, replace: bool) -> int:
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
                (summary.id, scope_signature(summary.scope), _SUMMARY),
            )
            self._insert_turn(
                db,
                turn_id=summary.id,
                scope=summary.scope,
                role=_SUMMARY,
                seq=0,
                through_seq=summary.through_seq,
                content=summary.content,
                created=summary.updated_at,
            )
        if len(document.records) >= _OPTIMIZE_AFTER:
            db.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
            prune_changes(db)
        return len(document.records) + len(document.turns) + len(document.summaries)

    async def optimize(self) -> None:
        """Merge the full-text indexes into one segment each (faster searches after many writes)."""
        await self._run(self._optimize_sync)

    def _optimize_sync(self) -> None:
        def transaction(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
            db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')")

        self._write(transaction)

    @staticmethod
    def _existing(db: sqlite3.Connection, table: str, ids: Iterable[str]) -> list[str]:
        found: list[str] = []
        batch: list[str] = []
        for value in [*ids, None]:
            if value is not None:
                batch.append(value)
            if batch and (value is None or len(batch) == 500):
                marks = ", ".join("?" for _ in batch)
                found.extend(
                    row[0] for row in db.execute(f"SELECT id FROM {table} WHERE id IN ({marks})", batch)
                )
                batch = []
        return found
