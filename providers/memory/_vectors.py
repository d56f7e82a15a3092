"""The optional semantic leg: vectors of records in one pinned embedding space.

The pinned space, the records still lacking a vector, storing vectors, and the nearest records by cosine
similarity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from simone.providers.memory._access import search_filters
from simone.providers.memory._backend import Db, scalar
from simone.providers.memory._core import Core
from simone.providers.memory._models import RecordHit, SearchQuery
from simone.providers.memory._records import index_text
from simone.providers.memory._rows import SELECT_RECORD, record_from_row
from simone.providers.memory._scope import scope_sql
from simone.runtime import EmbeddingSpace, ProviderUnavailable, TrustedContext

_EMBED_CHARS = 4000
"""Text sent to the embedder per record (embedding models read a few hundred tokens at most)."""


def vector_space(db: Db) -> EmbeddingSpace | None:
    """The embedding space this database's vectors belong to, once one was pinned."""
    row = db.execute("SELECT value FROM meta WHERE key = 'vector_space'").fetchone()
    return None if row is None else EmbeddingSpace.model_validate_json(row[0])


def pin_vector_space(db: Db, space: EmbeddingSpace) -> EmbeddingSpace:
    """Pin ``space`` unless another was pinned first; returns the pinned space (never switched)."""

    def transaction(tx: Db) -> EmbeddingSpace:
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('vector_space', ?) ON CONFLICT (key) DO NOTHING",
            (space.model_dump_json(),),
        )
        return EmbeddingSpace.model_validate_json(
            scalar(tx.execute("SELECT value FROM meta WHERE key = 'vector_space'"))
        )

    return db.write(transaction)


def missing_vectors(
    db: Db, context: TrustedContext, space: str, limit: int
) -> tuple[list[tuple[str, str]], int]:
    """Visible live records lacking a vector in ``space``: up to ``limit`` (id, text), and the total."""
    condition, params = scope_sql(context, "r")
    where = (
        f"WHERE {condition} AND r.deleted_us IS NULL AND NOT EXISTS (SELECT 1 FROM record_vectors v "
        "WHERE v.space = ? AND v.record_rowid = r.rowid)"
    )
    total = int(scalar(db.execute(f"SELECT COUNT(*) FROM records r {where}", (*params, space))))
    rows = db.execute(
        f"SELECT {SELECT_RECORD} FROM records r {where} ORDER BY r.updated_us DESC, r.id LIMIT ?",
        (*params, space, limit),
    ).fetchall()
    batch = []
    for row in rows:
        title, body = index_text(record_from_row(row))
        batch.append((str(row["id"]), f"{title}\n{body}"[:_EMBED_CHARS]))
    return batch, total


def put_vectors(db: Db, space: str, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> int:
    """Store vectors by record id (records gone meanwhile are skipped); returns how many were stored."""

    def transaction(tx: Db) -> int:
        stored = 0
        for record_id, vector in vectors:
            row = tx.execute("SELECT rowid FROM records WHERE id = ?", (record_id,)).fetchone()
            if row is None:
                continue
            blob = np.asarray(vector, dtype="<f4").tobytes()
            tx.execute(
                "INSERT INTO record_vectors (space, record_rowid, vector) VALUES (?, ?, ?) "
                "ON CONFLICT (space, record_rowid) DO UPDATE SET vector = excluded.vector",
                (space, int(row[0]), blob),
            )
            stored += 1
        return stored

    return db.write(transaction)


def nearest(
    core: Core,
    db: Db,
    context: TrustedContext,
    space: str,
    vector: npt.NDArray[np.float32],
    query: SearchQuery,
    min_similarity: float,
) -> list[RecordHit]:
    """Visible records by cosine similarity of their vector in ``space`` to ``vector`` (see the store)."""
    condition, params = search_filters(core, context, query)
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
            f"SELECT {SELECT_RECORD} FROM records r WHERE r.rowid IN ({marks})", [item[3] for item in ranked]
        ).fetchall()
    }
    return [
        RecordHit(record=record_from_row(full[rowid]), score=-negative)
        for negative, _, _, rowid in ranked
        if rowid in full
    ]
