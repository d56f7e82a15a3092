"""The LanceDB store of the document index: one table per collection.

Each table holds one row per chunk: its text and metadata, the analysed terms (the lexical
analysis of :class:`simone.runtime.text.Analyzer` joined by spaces, under a *whitespace* full-text index
with no stemming, lower-casing or stop words — the analysis already did all that, in every language)
and the vector, compared by cosine distance. The table records its embedding space in the Arrow
schema metadata (``simone.space``); vectors of any other space are refused. A row whose space's
embedder was unavailable is stored with a null vector ("pending embedding") — never a zero vector —
and filled later.

A leg that searches the table its rows are read from asks LanceDB for the result columns with its
candidates (``read=True``): at 100k rows that costs 1.4–1.8 ms per 50 candidates (4.7–5.2 ms at 1M),
where a read by row id after fusion cost ~2 ms even for one row and waited for the slowest leg. Rows
not read that way (a leg over another table, a deeper page) are read by row id or through a BTree
index on ``id``. The connection re-reads the table's manifest at most every :data:`READ_CONSISTENCY`
so that a long-running process (an MCP server, an agent) sees what another process indexed.

Writes are ``merge_insert`` upserts keyed by chunk id, one commit per batch of files, so a run killed
at any point leaves every file either fully old or fully new. LanceDB searches rows that are not yet
in the full-text or vector index by brute force, so rows written after an index build are found;
:meth:`Collection.maintain` folds them into the indexes (``optimize``) and builds the ANN index once
enough rows have vectors.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

import anyio
import numpy as np
import numpy.typing as npt
import pyarrow as pa
from simone.providers.documents._location import IndexLocation
from simone.runtime import (
    AsyncResource,
    ConfigError,
    EmbeddingSpace,
    EmbeddingSpaceMismatch,
    InvalidRequest,
    ProviderUnavailable,
    SimoneError,
    owner_only_dir,
)

if TYPE_CHECKING:
    from simone.providers.documents._calibration import SpaceCalibration

SPACE_KEY = b"simone.space"
SCHEMA_KEY = b"simone.schema"
SCHEMA_VERSION = b"2"
"""1: without the ``card`` column (added on open)."""
FTS_INDEX = "terms_idx"
VECTOR_INDEX = "vector_idx"
PROJECT_INDEX = "project_idx"
ID_INDEX = "id_idx"
SCALAR_INDEXES: Mapping[str, Literal["btree", "bitmap"]] = {
    "path": "btree",
    "digest": "btree",
    "kind": "bitmap",
    "language": "bitmap",
}
"""Scalar indexes built beside the project and id ones: filter columns and the digest lookups."""

READ_CONSISTENCY = timedelta(seconds=2)
"""How stale a table handle may be before LanceDB re-reads its manifest (other writers' commits)."""


AnnKind = Literal["ivf_flat", "ivf_hnsw_sq"]

FILTER_COLUMNS: Mapping[str, str] = {
    "path": "path",
    "path_prefix": "path",
    "title": "title",
    "kind": "kind",
    "language": "language",
    "heading": "heading",
}
"""Metadata filters a request may use (exact match; ``path_prefix`` matches the start of the path)."""

_TEXT_COLUMNS = (
    "id",
    "project",
    "path",
    "title",
    "heading",
    "kind",
    "language",
    "text",
    "context",
    "terms",
    "digest",
    "file_digest",
)
COMPACT_FRAGMENTS = 8
"""Small fragments (one per write batch) from which maintenance compacts the table."""

CARD_FIELDS = ("kind", "language", "line_start", "line_end", "project")
"""The small result columns, also kept tab-joined in one ``card`` column (the project last, so a tab
in a project name cannot shift the others): reading a row by id costs a random read per column, and
at 1M rows these five cost ~2 ms each for 25 rows where the text column costs ~1 ms."""
_CARD_INTS = frozenset({"line_start", "line_end"})
CARD_SQL = "concat_ws(chr(9), {})".format(
    ", ".join(f"CAST({name} AS VARCHAR)" if name in _CARD_INTS else name for name in CARD_FIELDS)
)
"""The ``card`` of an older table's rows, computed from the columns it joins."""
READ_COLUMNS = ("id", "path", "title", "heading", "text", "terms", "card")
"""What a read by id selects."""


def card_of(row: Mapping[str, Any]) -> str:
    """The ``card`` value of a row holding the :data:`CARD_FIELDS`."""
    return "\t".join(str(row[name]) for name in CARD_FIELDS)


def project_of(columns: Mapping[str, Any]) -> str:
    """The project of a row read with its card packed (the card's last field)."""
    return str(columns["card"]).split("\t", len(CARD_FIELDS) - 1)[-1]


def unpack_row(columns: Mapping[str, Any]) -> dict[str, Any]:
    """A result row (the card's fields as columns) from a row read with its card packed; a new dict."""
    return _uncard(dict(columns))


def _uncard(row: dict[str, Any]) -> dict[str, Any]:
    card = row.pop("card")
    try:
        parts = str(card).split("\t", len(CARD_FIELDS) - 1)
        if len(parts) != len(CARD_FIELDS):
            raise ValueError(f"{len(parts)} fields")
        for name, value in zip(CARD_FIELDS, parts, strict=True):
            row[name] = int(value) if name in _CARD_INTS else value
    except ValueError as exc:
        raise ProviderUnavailable(
            f"chunk {row.get('id')!r} has a damaged card column ({card!r}); the table was altered "
            "outside simone: re-index into a new collection",
            provider="document-index",
            retryable=False,
        ) from exc
    return row


def chunk_schema(space: EmbeddingSpace) -> pa.Schema:
    """The Arrow schema of a collection in ``space`` (the space is in the schema metadata)."""
    fields = [pa.field(name, pa.string(), nullable=False) for name in _TEXT_COLUMNS]
    fields += [
        pa.field("line_start", pa.int32(), nullable=False),
        pa.field("line_end", pa.int32(), nullable=False),
        pa.field("ordinal", pa.int32(), nullable=False),
        pa.field("tokens", pa.int32(), nullable=False),
        pa.field("indexed_at", pa.float64(), nullable=False),
        pa.field("vector", pa.list_(pa.float32(), space.dimension), nullable=True),
        pa.field("card", pa.string(), nullable=True),  # nullable: added to older tables by SQL
    ]
    metadata = {SPACE_KEY: space.model_dump_json().encode(), SCHEMA_KEY: SCHEMA_VERSION}
    return pa.schema(fields, metadata=metadata)


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    """``column IN ('a', 'b')``."""
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})"


def _like_prefix(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return sql_string(escaped + "%")


def build_where(projects: Sequence[str], filters: Mapping[str, object], *, scoped: bool = True) -> str:
    """The SQL filter for a search: the visible projects and the metadata filters.

    ``scoped=False`` leaves the project test out, for a table whose rows are all visible (see
    :meth:`Collection.only_projects`); the result may then be empty (no filter).

    Raises:
        InvalidRequest: an unknown filter key, a non-text value, or ``project`` (scope comes only
            from the trusted context).
    """
    clauses = [sql_in("project", projects)] if scoped else []
    for key in sorted(filters):
        value = filters[key]
        if key == "project":
            raise InvalidRequest(
                "'project' cannot be a filter: the project comes from the trusted context only"
            )
        if key not in FILTER_COLUMNS:
            known = ", ".join(sorted(FILTER_COLUMNS))
            raise InvalidRequest(f"unknown document filter {key!r}; the index filters on: {known}")
        if not isinstance(value, str):
            raise InvalidRequest(f"document filter {key!r} takes text, not {type(value).__name__}")
        if key == "path_prefix":
            clauses.append(f"path LIKE {_like_prefix(value)} ESCAPE '\\'")
        else:
            clauses.append(f"{FILTER_COLUMNS[key]} = {sql_string(value)}")
    return " AND ".join(clauses)


LANCE_ERRORS: tuple[type[Exception], ...] = (OSError, RuntimeError, ValueError)
"""What LanceDB, pyarrow and the object store raise when an operation fails: Lance's errors are
``RuntimeError``/``ValueError``, pyarrow's ``ArrowIOError``/``ArrowInvalid`` are ``OSError``/``ValueError``
and an object store's are ``OSError``."""


@contextmanager
def lance_errors(what: str, *, catch: tuple[type[Exception], ...] = LANCE_ERRORS) -> Iterator[None]:
    """Translate a third-party failure inside the block into :class:`~simone.runtime.ProviderUnavailable`.

    The one place where LanceDB's, pyarrow's and the object store's errors become simone's (as httpx
    maps its transport errors in one context manager). The message names the operation (``what``,
    e.g. ``"write 3 chunk(s) of 1 file(s)"``) and the error, never a credential; simone's own errors
    pass through unchanged.

    Args:
        what: the operation, completing "LanceDB failed to …".
        catch: the exception types translated (LanceDB's by default).

    Raises:
        ProviderUnavailable: provider ``document-index``; the original is its ``__cause__``.
    """
    try:
        yield
    except SimoneError:
        raise
    except catch as exc:
        raise ProviderUnavailable(
            f"LanceDB failed to {what}: {type(exc).__name__}: {exc}", provider="document-index"
        ) from exc


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    """What ``simone doctor`` shows about a collection."""

    name: str
    space: EmbeddingSpace
    rows: int
    pending: int
    files: int
    indexes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Hit:
    """One chunk found by a leg, with the leg's own score (BM25, or cosine similarity).

    ``row`` is LanceDB's row id in the searched table at the time of the search: a hint for a
    faster read (:meth:`Collection.fetch`), checked against ``id`` there, since compaction moves rows.
    ``columns`` is the chunk's :data:`READ_COLUMNS` as stored (the card packed: :func:`unpack_row`
    makes a result row of it) when the search read them (``read=True``), as the searched table held
    them at that moment.
    """

    id: str
    score: float
    row: int | None = None
    columns: Mapping[str, Any] | None = None


class DocumentStore(AsyncResource):
    """The LanceDB database that holds the collections; open it with ``async with``.

    Args:
        uri: a local folder (made absolute; a relative path starting with ``db`` would be taken for
            LanceDB Cloud otherwise) or an object-store URI such as ``s3://bucket/index``.
        storage_options: LanceDB's object-store options without secrets (endpoint, region,
            allow_http, ...); credentials come from the environment (see :mod:`._location`).
    """

    def __init__(self, uri: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None) -> None:
        self.location = IndexLocation.of(uri, storage_options)
        self.uri = self.location.uri
        self._db: Any = None

    @classmethod
    def at(cls, location: IndexLocation) -> DocumentStore:
        """The store at ``location`` (see :meth:`IndexLocation.from_settings`)."""
        return cls(location.uri, location.storage_options)

    async def open(self) -> None:
        """Connect (creating a local folder when needed)."""
        import lancedb

        if self._db is not None:
            return
        if "://" not in self.uri:
            await anyio.to_thread.run_sync(owner_only_dir, self.uri)
        with lance_errors(f"open {self.uri}", catch=(Exception,)):  # a connection fails in many ways
            self._db = await lancedb.connect_async(
                self.uri,
                read_consistency_interval=READ_CONSISTENCY,
                storage_options=self.location.lance_options,
            )

    async def close(self) -> None:
        """Drop the connection."""
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> Any:
        """The open ``lancedb.AsyncConnection``."""
        if self._db is None:
            raise ConfigError("the document store is not open; use 'async with DocumentStore(...)'")
        return self._db

    async def collection_names(self) -> list[str]:
        """The names of the tables in the database."""
        response = await self.db.list_tables()
        names = getattr(response, "tables", response)
        return sorted(str(name) for name in names)

    async def open_collection(self, name: str) -> Collection | None:
        """The existing collection ``name``, or ``None``.

        Raises:
            EmbeddingSpaceMismatch: the table was not made by simone, has no recorded space, or its
                vector column does not match the space it records.
        """
        if name not in await self.collection_names():
            return None
        table = await self.db.open_table(name)
        schema: pa.Schema = await table.schema()
        space = space_of_schema(name, schema)
        if "card" not in schema.names:
            # A table from before the card column: computed from the columns it joins, once.
            with lance_errors(f"add the card column to {name} (an older table)"):
                try:
                    await table.add_columns({"card": CARD_SQL})
                except LANCE_ERRORS:
                    await table.checkout_latest()
                    if "card" not in (await table.schema()).names:  # not added by another process meanwhile
                        raise
        from simone.providers.documents._calibration import calibration_of_schema  # it imports this module

        collection = Collection(name, table, space)
        collection.calibration = calibration_of_schema(schema, space.key)
        return collection

    async def create_collection(self, name: str, space: EmbeddingSpace) -> Collection:
        """Create the collection ``name`` in ``space`` (fails if it exists)."""
        if not name or any(ch in name for ch in "/\\ ") or name.startswith("."):
            raise ConfigError(f"invalid collection name {name!r}: use letters, digits, '-' and '_'")
        schema = chunk_schema(space)
        with lance_errors(f"create the table {name}", catch=(Exception,)):
            try:
                table = await self.db.create_table(name, schema=schema)
            except Exception:
                existing = await self.open_collection(name)  # created by another process meanwhile?
                if existing is None:
                    raise
                return existing
        return Collection(name, table, space)

    async def drop_collection(self, name: str) -> None:
        """Delete the collection ``name`` and its files."""
        await self.db.drop_table(name)


def space_of_schema(name: str, schema: pa.Schema) -> EmbeddingSpace:
    """The embedding space a table records, checked against its vector column."""
    metadata = schema.metadata or {}
    raw = metadata.get(SPACE_KEY)
    if raw is None:
        raise EmbeddingSpaceMismatch(
            f"table {name!r} records no embedding space (it was not created by simone's document "
            "index); index into another collection name or drop that table",
            provider="document-index",
        )
    try:
        space = EmbeddingSpace.model_validate_json(raw)
    except ValueError as exc:
        raise EmbeddingSpaceMismatch(
            f"table {name!r} has an unreadable embedding space record: {exc}", provider="document-index"
        ) from exc
    try:
        field = schema.field("vector")
    except KeyError:
        field = None
    dimension = (
        field.type.list_size if field is not None and isinstance(field.type, pa.FixedSizeListType) else None
    )
    if dimension != space.dimension:
        raise EmbeddingSpaceMismatch(
            f"table {name!r} records space {space.key} but its vector column holds {dimension} "
            "dimensions; the table is damaged or was altered: re-index into a new collection",
            provider="document-index",
        )
    return space


class Collection:
    """One table of chunks in one embedding space."""

    def __init__(self, name: str, table: Any, space: EmbeddingSpace) -> None:
        self.name = name
        self.table = table
        self.space = space
        self.schema = chunk_schema(space)
        # The relevance rule fitted for this space (docs/calibration.md), read when the table is opened.
        self.calibration: SpaceCalibration | None = None
        self._pending: tuple[int, int] | None = None
        self._vector_index: tuple[int, tuple[str, int] | None] | None = None
        self._only_projects: dict[tuple[int, tuple[str, ...]], bool] = {}

    # -- reading -----------------------------------------------------------------------------------

    async def count(self, where: str | None = None) -> int:
        """Rows matching ``where`` (all rows without it)."""
        return int(await self.table.count_rows(where))

    async def version(self) -> int:
        """The table version this handle reads (the manifest is re-read every :data:`READ_CONSISTENCY`).

        A search takes it once and hands it to :meth:`pending_count`, :meth:`only_projects`,
        :meth:`vector_index` and :meth:`search_vector`: each asks LanceDB otherwise, and while the legs
        run those calls queue behind the searches (0.3–0.6 ms each at p50, 4 ms at p95, at 100k rows).
        """
        with lance_errors(f"read the version of {self.name}"):
            return int(await self.table.version())

    async def pending_count(self, version: int | None = None) -> int:
        """Rows waiting for their vector (counted once per table version: the count scans vectors)."""
        version = await self.version() if version is None else version
        if self._pending is not None and self._pending[0] == version:
            return self._pending[1]
        count = await self.count("vector IS NULL")
        self._pending = (version, count)
        return count

    async def only_projects(self, projects: Sequence[str], version: int | None = None) -> bool:
        """Whether every row belongs to one of ``projects`` (checked once per table version).

        A search may then leave its project test out (at 1M rows the test cost the vector search
        ~4 ms); every row it returns is still checked for its project (rows read with the search,
        and :meth:`fetch`), so a row written meanwhile for another project is never returned.
        """
        version = await self.version() if version is None else version
        key = (version, tuple(sorted(set(projects))))
        if key not in self._only_projects:
            others = await self.count(f"NOT ({sql_in('project', key[1])})")
            self._only_projects = {key: others == 0}
        return self._only_projects[key]

    async def vector_index(self, version: int | None = None) -> tuple[str, int] | None:
        """The table's vector index as (kind, partitions), e.g. ``("IvfFlat", 316)``; ``None`` without one.

        Looked up once per table version; the partition count follows :func:`ann_partitions`.
        """
        version = await self.version() if version is None else version
        if self._vector_index is not None and self._vector_index[0] == version:
            return self._vector_index[1]
        found = (await self.index_names()).get(VECTOR_INDEX)
        info: tuple[str, int] | None = None
        if found is not None:
            kind = str(found.index_type)
            stats = await self.table.index_stats(VECTOR_INDEX)
            rows = stats.num_indexed_rows if stats is not None else 0
            info = (kind, ann_partitions("ivf_flat" if kind == "IvfFlat" else "ivf_hnsw_sq", rows))
        self._vector_index = (version, info)
        return info

    async def fetch(
        self,
        ids: Sequence[str],
        where: str | None = None,
        *,
        rows: Mapping[str, int] | None = None,
        projects: Sequence[str] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """The result columns and analysed terms of the chunks ``ids`` (present and matching ``where``).

        ``rows`` maps ids to row ids this table's own searches returned, under the same ``where``
        (a :class:`Hit`'s ``row``): those rows are taken directly (measured for 25 rows: 5.6 ms
        against 9.8 ms by id at 100k rows, 8 against 15 ms at 1M). Each taken row must still carry
        its id and one of ``projects`` (compaction may have moved rows since the search); any that
        does not, and ids without a row, are read by id with ``where``.
        """
        if not ids:
            return {}
        found: dict[str, dict[str, Any]] = {}
        wanted = [chunk_id for chunk_id in ids if rows is not None and chunk_id in rows]
        if wanted and rows is not None and projects is not None:
            visible = set(projects)
            try:
                taken = self.table.take_row_ids([rows[i] for i in wanted]).select(list(READ_COLUMNS))
                table = await taken.to_arrow()
            except LANCE_ERRORS:
                table = None  # a row id gone with a compaction: read those by id below
            if table is not None:
                expected = set(wanted)
                for row in table.to_pylist():
                    row = _uncard(row)
                    if row["id"] in expected and row["project"] in visible:
                        found[str(row["id"])] = row
        rest = [chunk_id for chunk_id in ids if chunk_id not in found]
        if not rest:
            return found
        # The id test first: the BTree index narrows to a few rows before the rest is evaluated.
        clause = sql_in("id", rest) if where is None else f"{sql_in('id', rest)} AND ({where})"
        with lance_errors(f"read {len(rest)} chunk(s) by id"):
            table = await self.table.query().where(clause).select(list(READ_COLUMNS)).to_arrow()
        found.update((str(row["id"]), _uncard(row)) for row in table.to_pylist())
        return found

    async def file_states(self, project: str) -> dict[str, str]:
        """``path → file digest`` of every file indexed for ``project``."""
        table = await (
            self.table.query()
            .where(f"project = {sql_string(project)}")
            .select(["path", "file_digest"])
            .to_arrow()
        )
        paths = table.column("path").to_pylist()
        digests = table.column("file_digest").to_pylist()
        return dict(zip(paths, digests, strict=True))

    async def vectors_for(self, digests: Iterable[str]) -> dict[str, npt.NDArray[np.float32]]:
        """Vectors already stored for these chunk digests (reuse instead of re-embedding)."""
        wanted = sorted(set(digests))
        found: dict[str, npt.NDArray[np.float32]] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            table = await (
                self.table.query()
                .where(f"{sql_in('digest', part)} AND vector IS NOT NULL")
                .select(["digest", "vector"])
                .to_arrow()
            )
            if table.num_rows == 0:
                continue
            vectors = _vector_matrix(table.column("vector"), self.space.dimension)
            for digest, vector in zip(table.column("digest").to_pylist(), vectors, strict=True):
                found.setdefault(digest, vector)
        return found

    async def pending_rows(self, limit: int) -> pa.Table:
        """Up to ``limit`` full rows that wait for their vector."""
        return await self.table.query().where("vector IS NULL").limit(limit).to_arrow()

    async def rows(self, where: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
        """Rows matching ``where`` (for tests, the doctor and exports)."""
        query = self.table.query()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(list(columns))
        return await query.to_arrow()

    async def info(self) -> CollectionInfo:
        """Counts and indexes of the collection."""
        paths = await self.rows(columns=["path"])
        indexes = tuple(sorted(f"{i.name}:{i.index_type}" for i in await self.table.list_indices()))
        return CollectionInfo(
            name=self.name,
            space=self.space,
            rows=paths.num_rows,
            pending=await self.pending_count(),
            files=len(set(paths.column("path").to_pylist())),
            indexes=indexes,
        )

    # -- writing -----------------------------------------------------------------------------------

    def check_vectors(self, vectors: npt.NDArray[np.float32], count: int) -> None:
        """Refuse vectors of another shape than ``(count, space.dimension)`` or with non-finite values."""
        if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] != self.space.dimension:
            raise EmbeddingSpaceMismatch(
                f"collection {self.name!r} holds {self.space.dimension}-dimensional vectors of space "
                f"{self.space.key}; got an array of shape {vectors.shape}. Embed with that space's "
                "model, or index into a new collection",
                provider="document-index",
            )
        if not np.isfinite(vectors).all():
            raise EmbeddingSpaceMismatch(
                f"refusing non-finite vectors for collection {self.name!r}", provider="document-index"
            )

    def to_arrow(self, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
        """Rows (dicts with every column; ``vector`` a float32 array or ``None``) as an Arrow table."""
        columns: dict[str, pa.Array] = {}
        for field in self.schema:
            if field.name == "vector":
                continue
            columns[field.name] = pa.array([row[field.name] for row in rows], type=field.type)
        columns["vector"] = _vector_array([row["vector"] for row in rows], self.space.dimension)
        return pa.Table.from_pydict(columns, schema=self.schema)

    async def replace_files(self, project: str, paths: Sequence[str], rows: pa.Table) -> None:
        """Make ``rows`` the only chunks of ``paths`` for ``project``, in one atomic commit."""
        if not paths:
            return
        condition = f"project = {sql_string(project)} AND {sql_in('path', paths)}"
        builder = (
            self.table.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(condition)
        )
        # Vectors were checked (dimension, finite) before they got here; "null" lets LanceDB accept
        # the intentional nulls of pending rows, which its own check would count as bad vectors.
        with lance_errors(f"write {rows.num_rows} chunk(s) of {len(paths)} file(s)"):
            await builder.execute(rows if rows.num_rows else self.schema.empty_table(), on_bad_vectors="null")

    async def delete_files(self, project: str, paths: Sequence[str]) -> None:
        """Delete every chunk of ``paths`` for ``project``."""
        for start in range(0, len(paths), 500):
            part = paths[start : start + 500]
            with lance_errors(f"delete the chunks of {len(part)} file(s)"):
                await self.table.delete(f"project = {sql_string(project)} AND {sql_in('path', part)}")

    async def fill_vectors(self, rows: pa.Table, vectors: npt.NDArray[np.float32]) -> None:
        """Store ``vectors`` in the (pending) ``rows``; rows changed meanwhile are left alone."""
        self.check_vectors(vectors, rows.num_rows)
        index = rows.schema.get_field_index("vector")
        updated = rows.set_column(
            index, self.schema.field("vector"), _vector_array(list(vectors), self.space.dimension)
        )
        with lance_errors(f"store {rows.num_rows} vector(s)"):
            await (
                self.table.merge_insert("id")
                .when_matched_update_all(where="target.vector IS NULL")
                .execute(updated.cast(self.schema))
            )

    # -- indexes -----------------------------------------------------------------------------------

    async def index_names(self) -> dict[str, Any]:
        """The table's indexes by name."""
        return {index.name: index for index in await self.table.list_indices()}

    async def maintain(
        self,
        *,
        ann_min_rows: int,
        ann_kind: AnnKind,
        force_ann: bool = False,
        full_text: bool = True,
        ann_rebuild_rows: int = 300_000,
        ann_rebuild_share: float = 0.05,
    ) -> list[str]:
        """Build the FTS index if missing, fold new rows into the indexes, build the ANN index.

        The ANN index is built once ``ann_min_rows`` rows carry a vector (``force_ann``: from 256).
        When new vectors arrive after that, it is rebuilt if the table holds at most
        ``ann_rebuild_rows`` vectors or the new ones are at least ``ann_rebuild_share`` of them
        (``force_ann``: always); otherwise they are folded into it (a slower index until the next
        rebuild). ``full_text=False`` skips the full-text index (a collection's extra-space tables
        are searched by vector only). Returns what was done, in plain words.
        """
        with lance_errors("update the indexes (the data is written; the next run retries)"):
            return await self._maintain(
                ann_min_rows=ann_min_rows,
                ann_kind=ann_kind,
                force_ann=force_ann,
                full_text=full_text,
                ann_rebuild_rows=ann_rebuild_rows,
                ann_rebuild_share=ann_rebuild_share,
            )

    async def _maintain(
        self,
        *,
        ann_min_rows: int,
        ann_kind: AnnKind,
        force_ann: bool,
        full_text: bool,
        ann_rebuild_rows: int,
        ann_rebuild_share: float,
    ) -> list[str]:
        done: list[str] = []
        indexes = await self.index_names()
        rows = await self.count()
        if rows == 0:
            return done
        pending = await self.pending_count()
        embedded = rows - pending
        fresh = 0  # vectors written since the vector index was built (pending rows have none)
        if VECTOR_INDEX in indexes:
            vector = await self.table.index_stats(VECTOR_INDEX)
            fresh = max(0, (vector.num_unindexed_rows if vector is not None else 0) - pending)
        done += await self._optimize(indexes, fresh=fresh, full_text=full_text)
        done += await self._build_missing_indexes(indexes, full_text=full_text)
        done += await self._update_vector_index(
            indexes,
            embedded=embedded,
            fresh=fresh,
            ann_min_rows=ann_min_rows,
            ann_kind=ann_kind,
            force_ann=force_ann,
            ann_rebuild_rows=ann_rebuild_rows,
            ann_rebuild_share=ann_rebuild_share,
        )
        return done

    async def _optimize(self, indexes: Mapping[str, object], *, fresh: int, full_text: bool) -> list[str]:
        """Compact the small fragments and fold new rows into the indexes, when there is anything to do."""
        done: list[str] = []
        folded = FTS_INDEX if full_text and FTS_INDEX in indexes else ID_INDEX
        stats = await self.table.index_stats(folded) if folded in indexes else None
        behind = stats.num_unindexed_rows if stats is not None else 0
        small = int((await self.table.stats())["fragment_stats"]["num_small_fragments"])
        wanted = [FTS_INDEX] * full_text + [PROJECT_INDEX, ID_INDEX, *(f"{c}_idx" for c in SCALAR_INDEXES)]
        if behind or fresh or small >= COMPACT_FRAGMENTS or all(name in indexes for name in wanted):
            # Compacts the write batches' small fragments (each batch is one; a fragmented table
            # searched ~2x slower at 100k rows) and folds new rows into the existing indexes —
            # before any index is built, so new indexes cover the compacted files.
            await self.table.optimize()
            if small >= COMPACT_FRAGMENTS:
                done.append(f"compacted {small:,} small fragments")
            if behind:
                done.append(f"added {behind:,} rows to the indexes")
        return done

    async def _build_missing_indexes(self, indexes: Mapping[str, object], *, full_text: bool) -> list[str]:
        """Build the full-text index (with ``full_text``) and the scalar indexes that are missing."""
        from lancedb.index import FTS, Bitmap, BTree

        done: list[str] = []
        if full_text and FTS_INDEX not in indexes:
            await self.table.create_index(
                "terms",
                config=FTS(
                    base_tokenizer="whitespace",
                    lower_case=False,
                    stem=False,
                    remove_stop_words=False,
                    ascii_folding=False,
                    max_token_length=64,
                    with_position=False,
                ),
                name=FTS_INDEX,
            )
            done.append("built the full-text index")
        if PROJECT_INDEX not in indexes:
            # Every search filters on the project; without a scalar index that prefilter scans the
            # whole column and costs more than the vector search itself (measured ~10x at 100k rows).
            await self.table.create_index("project", config=Bitmap(), name=PROJECT_INDEX)
        if ID_INDEX not in indexes:
            # Rows are read by id after fusion; without this index each read scans the id column.
            await self.table.create_index("id", config=BTree(), name=ID_INDEX)
        for column, config in SCALAR_INDEXES.items():
            # Metadata filters and the digest lookups of re-indexing scan every row without these
            # (benchmarks/scale.py at 1M rows: a path_prefix filter made hybrid p95 6x slower).
            if f"{column}_idx" not in indexes:
                await self.table.create_index(
                    column, config=BTree() if config == "btree" else Bitmap(), name=f"{column}_idx"
                )
        return done

    async def _update_vector_index(
        self,
        indexes: Mapping[str, object],
        *,
        embedded: int,
        fresh: int,
        ann_min_rows: int,
        ann_kind: AnnKind,
        force_ann: bool,
        ann_rebuild_rows: int,
        ann_rebuild_share: float,
    ) -> list[str]:
        """Build the vector index once enough rows carry a vector; rebuild it or fold ``fresh`` vectors in."""
        if VECTOR_INDEX not in indexes:
            if embedded >= ann_min_rows or (force_ann and embedded >= 256):
                await self.build_ann(ann_kind, embedded)
                return [f"built the {ann_kind} vector index over {embedded:,} vectors"]
        elif fresh and (embedded <= ann_rebuild_rows or fresh >= ann_rebuild_share * embedded or force_ann):
            # LanceDB folds new vectors into an IVF index by merging, and the merged index searches
            # 3-4x slower than a freshly built one (benchmarks at 100k rows, nprobes 20: 6 ms → 22-24
            # ms after folding in 2,000 rows; rebuilt: 6-7 ms again). Rebuilding also re-trains the
            # partitions on the current data; it costs ~8 s at 100k rows and ~110 s at 1M.
            await self.build_ann(ann_kind, embedded)
            return [f"rebuilt the {ann_kind} vector index over {embedded:,} vectors ({fresh:,} new)"]
        elif fresh:
            return [
                f"folded {fresh:,} new vectors into the vector index (searches are slower until it is "
                "rebuilt: 'simone index --rebuild-ann')"
            ]
        return []

    async def build_ann(self, kind: AnnKind, rows: int) -> None:
        """(Re)build the vector index of ``kind`` with about sqrt(rows) partitions."""
        from lancedb.index import HnswSq, IvfFlat

        partitions = ann_partitions(kind, rows)
        config: Any
        if kind == "ivf_flat":
            config = IvfFlat(distance_type="cosine", num_partitions=partitions)
        else:
            config = HnswSq(distance_type="cosine", num_partitions=partitions)
        await self.table.create_index("vector", config=config, name=VECTOR_INDEX, replace=True)

    # -- searching ---------------------------------------------------------------------------------

    async def search_terms(self, terms: str, where: str, limit: int, *, read: bool = False) -> list[Hit]:
        """BM25 over the analysed-terms column (LanceDB's FTS), best first.

        With ``read`` each hit carries its :data:`READ_COLUMNS` (read by the search itself: at 100k
        rows 50 hits cost 1.4 ms more than ids alone, a read by row id afterwards ~4 ms for 25).
        """
        if not terms.strip():
            return []
        query = self.table.query().nearest_to_text(terms, columns="terms")
        if where:
            query = query.where(where)
        columns = [*READ_COLUMNS, "_score"] if read else ["id", "_score"]
        table = await query.select(columns).with_row_id().limit(limit).to_arrow()
        return _hits(table, [float(s) for s in table.column("_score").to_pylist()], read=read)

    async def search_vector(
        self,
        vector: npt.NDArray[np.float32],
        where: str,
        limit: int,
        *,
        nprobes: int = 20,
        refine_factor: int | None = 5,
        exact: bool = False,
        probe_share: float = 0.0,
        read: bool = False,
        version: int | None = None,
    ) -> list[Hit]:
        """Nearest chunks by cosine distance, best first; the score is the cosine similarity.

        With ``read`` each hit carries its :data:`READ_COLUMNS` (as :meth:`search_terms`); ``version`` is
        the table version the caller took (:meth:`version`).

        ``refine_factor`` has a quantised index (IVF_HNSW_SQ) return ``limit × refine_factor``
        candidates, re-ranked by exact distance. IVF_FLAT already ranks by exact distance, so it is
        not refined there: refining re-reads every candidate's vector from disk for nothing
        (measured at 100k rows, nprobes 20: 10.3 ms without, 20.9 ms with a factor of 5; recall
        unchanged — only partitions not probed cost recall). ``probe_share`` raises ``nprobes`` to
        that share of the index's partitions, so recall holds as a table grows (its partitions grow
        with sqrt(rows) while a fixed nprobes covers less and less of it).
        """
        self.check_vectors(vector.reshape(1, -1), 1)
        query = (
            self.table.query()
            .nearest_to(vector.astype(np.float32))
            .column("vector")
            .distance_type("cosine")
            .select([*READ_COLUMNS, "_distance"] if read else ["id", "_distance"])
            .with_row_id()
            .limit(limit)
        )
        if where:
            query = query.where(where)
        if exact:
            query = query.bypass_vector_index()
        else:
            index = await self.vector_index(version)
            if index is not None:
                nprobes = max(nprobes, math.ceil(probe_share * index[1]))
            query = query.nprobes(nprobes)
            if refine_factor and index is not None and index[0] != "IvfFlat":
                query = query.refine_factor(refine_factor)
        table = await query.to_arrow()
        return _hits(table, [1.0 - float(d) for d in table.column("_distance").to_pylist()], read=read)


def _hits(table: pa.Table, scores: list[float], *, read: bool) -> list[Hit]:
    """A search's hits: ids, scores, row ids and, when ``read``, the rows' result columns."""
    ids = table.column("id").to_pylist()
    rows = table.column("_rowid").to_pylist()
    if not read:
        return [Hit(str(i), s, int(r)) for i, s, r in zip(ids, scores, rows, strict=True)]
    records = table.select(list(READ_COLUMNS)).to_pylist()
    return [
        Hit(str(i), s, int(r), record) for i, s, r, record in zip(ids, scores, rows, records, strict=True)
    ]


def ann_partitions(kind: AnnKind, rows: int) -> int:
    """Partitions of a vector index over ``rows`` vectors.

    sqrt(rows) for IVF_FLAT, 1/16 of that for IVF_HNSW_SQ (each partition holds a graph, so it can
    be larger).
    """
    partitions = max(1, int(math.sqrt(rows)))
    return partitions if kind == "ivf_flat" else max(1, partitions // 16)


def _vector_array(vectors: Sequence[npt.NDArray[np.float32] | None], dimension: int) -> pa.Array:
    flat = np.zeros((len(vectors), dimension), dtype=np.float32)
    mask = np.zeros(len(vectors), dtype=bool)
    for index, vector in enumerate(vectors):
        if vector is None:
            mask[index] = True
        else:
            flat[index] = vector
    values = pa.array(flat.reshape(-1), type=pa.float32())
    return pa.FixedSizeListArray.from_arrays(values, dimension, mask=pa.array(mask))


def _vector_matrix(column: pa.ChunkedArray, dimension: int) -> npt.NDArray[np.float32]:
    array = column.combine_chunks()
    values = np.asarray(array.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    return values.reshape(-1, dimension)


def now() -> float:
    """Seconds since the epoch (the ``indexed_at`` column)."""
    return time.time()


def space_json(space: EmbeddingSpace) -> str:
    """The space as JSON (for reports)."""
    return json.dumps(space.model_dump(), sort_keys=True)
