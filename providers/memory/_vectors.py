"""The optional semantic leg: vectors of records in one pinned embedding space.

The pinned space, the records still lacking a vector, storing vectors, and the nearest records by cosine
similarity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from simone.providers.memory._access import RecordAccess
from simone.providers.memory._core import DB
from simone.providers.memory._models import SearchHit, SearchQuery
from simone.providers.memory._records import index_text
from simone.providers.memory._rows import SELECT_RECORD, record_from_row
from simone.providers.memory._scope import scope_sql
from simone.runtime import EmbeddingSpace, ProviderUnavailable, TrustedContext

_EMBED_CHARS = 4000
"""Text sent to the embedder per record (embedding models read a few hundred tokens at most)."""


class VectorMemory(RecordAccess):
    """Vectors of records in one pinned embedding space."""

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
        def transaction(db: DB) -> EmbeddingSpace:
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('vector_space', ?) ON CONFLICT (key) DO NOTHING",
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
            f"SELECT {SELECT_RECORD} FROM records r {where} ORDER BY r.updated_us DESC, r.id LIMIT ?",
            (*params, space, limit),
        ).fetchall()
        batch = []
        for row in rows:
            title, body = index_text(record_from_row(row))
            batch.append((row["id"], f"{title}\n{body}"[:_EMBED_CHARS]))
        return batch, total

    async def put_vectors(self, space: str, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> int:
        """Store vectors by record id (records gone meanwhile are skipped); returns how many were stored."""
        return await self._run(self._put_sync, space, vectors)

    def _put_sync(self, space: str, vectors: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> int:
        def transaction(db: DB) -> int:
            stored = 0
            for record_id, vector in vectors:
                row = db.execute("SELECT rowid FROM records WHERE id = ?", (record_id,)).fetchone()
                if row is None:
                    continue
                blob = np.asarray(vector, dtype="<f4").tobytes()
                db.execute(
                    "INSERT INTO record_vectors (space, record_rowid, vector) VALUES (?, ?, ?) "
                    "ON CONFLICT (space, record_rowid) DO UPDATE SET vector = excluded.vector",
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
        condition, params = self._search_filters(context, query)
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
                f"SELECT {SELECT_RECORD} FROM records r WHERE r.rowid IN ({marks})",
                [item[3] for item in ranked],
            ).fetchall()
        }
        return [
            SearchHit(record=record_from_row(full[rowid]), score=-negative)
            for negative, _, _, rowid in ranked
            if rowid in full
        ]
