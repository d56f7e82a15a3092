"""Integrity checks of a collection's table: chunks stored more than once, and their repair.

A chunk id is unique by construction (project, path, position and text), so two rows with one id
mean two writers committed the same new chunks at once (see :mod:`._lock`, which now prevents it).
Such a table stays wrong on its own: an unchanged file is never rewritten, and an upsert updates
every copy. :func:`repair_duplicates` rewrites the files concerned with one row per id;
``simone doctor`` reports the count from :func:`count_duplicates`.
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc
from simone.providers.documents._store import Collection, sql_in, sql_string

_ID_BATCH = 500


async def duplicate_chunks(collection: Collection) -> dict[str, int]:
    """``chunk id → copies`` of every id stored more than once (empty for a sound table)."""
    ids = (await collection.rows(columns=["id"])).column("id")
    if len(ids) == 0:
        return {}
    counts = pc.value_counts(ids.combine_chunks())
    values = counts.field("values").to_pylist()
    copies = counts.field("counts").to_pylist()
    return {str(v): int(c) for v, c in zip(values, copies, strict=True) if c > 1}


async def count_duplicates(collection: Collection) -> int:
    """Rows beyond the first of each chunk id: 0 for a sound table (``simone doctor`` checks it)."""
    return sum(copies - 1 for copies in (await duplicate_chunks(collection)).values())


async def repair_duplicates(collection: Collection) -> int:
    """Keep one row per chunk id (one with a vector, when a copy has one); the surplus rows removed.

    The files holding a duplicated id are rewritten: their rows are deleted, then added back once
    each. A run killed between the two commits leaves those files absent, never half there, so the
    next index run indexes them again as new files.
    """
    duplicates = await duplicate_chunks(collection)
    if not duplicates:
        return 0
    files: dict[str, set[str]] = defaultdict(set)
    ids = sorted(duplicates)
    for start in range(0, len(ids), _ID_BATCH):
        found = await collection.rows(sql_in("id", ids[start : start + _ID_BATCH]), ["project", "path"])
        for project, path in zip(found["project"].to_pylist(), found["path"].to_pylist(), strict=True):
            files[project].add(path)
    removed = 0
    for project, paths in sorted(files.items()):
        ordered = sorted(paths)
        for start in range(0, len(ordered), _ID_BATCH):
            part = ordered[start : start + _ID_BATCH]
            rows = await collection.rows(f"project = {sql_string(project)} AND {sql_in('path', part)}")
            unique = _one_per_id(rows)
            await collection.delete_files(project, part)
            if unique.num_rows:
                await collection.table.add(unique)
            removed += rows.num_rows - unique.num_rows
    return removed


def _one_per_id(rows: pa.Table) -> pa.Table:
    """The first row of each id, preferring one whose vector is set."""
    chosen: dict[str, int] = {}
    has_vector = rows.column("vector").is_valid().to_pylist()
    for position, chunk_id in enumerate(rows.column("id").to_pylist()):
        kept = chosen.get(chunk_id)
        if kept is None or (has_vector[position] and not has_vector[kept]):
            chosen[chunk_id] = position
    return rows.take(sorted(chosen.values()))
