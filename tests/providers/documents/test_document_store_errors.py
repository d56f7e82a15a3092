"""LanceDB's, pyarrow's and the object store's failures become simone's in one place (``lance_errors``).

Every translation site of :mod:`simone.providers.documents._store` is driven here against real LanceDB
(a table dropped under an open handle, a name LanceDB refuses, a filter on a column that does not
exist): each failure is a :class:`~simone.runtime.ProviderUnavailable` of provider ``document-index``
whose message names the operation and keeps LanceDB's reason, with the original as its cause.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import anyio
import lancedb
import numpy as np
import pyarrow as pa
import pytest
from simone.providers.documents import DocumentStore
from simone.providers.documents._store import Collection, lance_errors
from simone.providers.testing import HashEmbedder
from simone.runtime import EmbeddingSpaceMismatch, InvalidRequest, ProviderUnavailable

SPACE = HashEmbedder(8).space


def _unavailable(caught: pytest.ExceptionInfo[ProviderUnavailable], operation: str) -> str:
    error = caught.value
    assert error.provider == "document-index" and error.kind == "unavailable" and error.retryable
    assert str(error).startswith(f"LanceDB failed to {operation}: "), str(error)
    assert isinstance(error.__cause__, OSError | RuntimeError | ValueError), "the original is the cause"
    assert type(error.__cause__).__name__ in str(error)
    return str(error)


def test_lance_errors_translates_third_party_failures_and_lets_simones_pass() -> None:
    with pytest.raises(ProviderUnavailable) as caught:
        with lance_errors("write 3 chunk(s) of 1 file(s)"):
            raise OSError("No space left on device")
    assert _unavailable(caught, "write 3 chunk(s) of 1 file(s)").endswith("OSError: No space left on device")
    with pytest.raises(ProviderUnavailable, match="LanceDB failed to read: ArrowInvalid: bad"):
        with lance_errors("read"):
            raise pa.ArrowInvalid("bad")  # pyarrow's errors are ValueError/OSError
    # simone's own errors pass unchanged, even those that are also a ValueError
    with pytest.raises(InvalidRequest, match="not a filter"):
        with lance_errors("read"):
            raise InvalidRequest("not a filter")
    # a programming error is not a backend failure, unless the site says it may be
    with pytest.raises(TypeError):
        with lance_errors("read"):
            raise TypeError("a bug")
    with pytest.raises(ProviderUnavailable, match="LanceDB failed to open s3://b/i: TypeError: odd"):
        with lance_errors("open s3://b/i", catch=(Exception,)):
            raise TypeError("odd")


def test_each_site_of_the_store_names_its_operation(tmp_path: Path) -> None:
    async def main() -> dict[str, str]:
        messages: dict[str, str] = {}
        async with DocumentStore(tmp_path / "index") as store:
            table = await store.create_collection("chunks", SPACE)
            assert isinstance(await store.create_collection("chunks", SPACE), Collection), (
                "a table another process created meanwhile is opened, not an error"
            )
            with pytest.raises(ProviderUnavailable) as caught:
                await store.create_collection("bad$name", SPACE)
            messages["create"] = _unavailable(caught, "create the table bad$name")
            with pytest.raises(ProviderUnavailable) as caught:
                await table.fetch(["a"], "no_such_column = 'x'")
            messages["fetch"] = _unavailable(caught, "read 1 chunk(s) by id")

            # A handle that re-reads the table's manifest at every call (the store's re-reads at most
            # every READ_CONSISTENCY), then the table dropped from under it: every call fails in LanceDB.
            strict = await lancedb.connect_async(store.uri, read_consistency_interval=timedelta(0))
            table = Collection("chunks", await strict.open_table("chunks"), SPACE)
            await store.drop_collection("chunks")
            sites = {
                "replace": (
                    "write 0 chunk(s) of 1 file(s)",
                    lambda: table.replace_files("p", ["a.md"], table.to_arrow([])),
                ),
                "delete": ("delete the chunks of 2 file(s)", lambda: table.delete_files("p", ["a", "b"])),
                "vectors": (
                    "store 0 vector(s)",
                    lambda: table.fill_vectors(table.schema.empty_table(), np.zeros((0, 8), np.float32)),
                ),
                "maintain": (
                    "update the indexes (the data is written; the next run retries)",
                    lambda: table.maintain(ann_min_rows=10, ann_kind="ivf_flat"),
                ),
                "version": ("read the version of chunks", table.version),
            }
            for site, (operation, call) in sites.items():
                with pytest.raises(ProviderUnavailable) as caught:
                    await call()
                messages[site] = _unavailable(caught, operation)
            strict.close()
        return messages

    messages = anyio.run(main)
    assert "Invalid table name" in messages["create"] and "no_such_column" in messages["fetch"]
    assert all("Not found" in messages[site] for site in ("version", "replace", "delete", "vectors"))


def test_a_table_not_made_by_simone_stays_a_space_mismatch(tmp_path: Path) -> None:
    async def main() -> None:
        async with DocumentStore(tmp_path / "index") as store:
            await store.db.create_table("raw", data=pa.table({"x": [1, 2]}))
            with pytest.raises(EmbeddingSpaceMismatch, match="records no embedding space"):
                await store.create_collection("raw", SPACE)  # exists: opened, and refused as it is

    anyio.run(main)


def test_the_store_opens_and_closes_with_async_with(tmp_path: Path) -> None:
    async def main() -> tuple[list[str], object]:
        store = DocumentStore(tmp_path / "index")
        async with store as opened:
            assert opened is store
            await store.create_collection("c", SPACE)
            names = await store.collection_names()
        return names, store._db

    names, connection = anyio.run(main)
    assert names == ["c"] and connection is None, "leaving the block closes the connection"
