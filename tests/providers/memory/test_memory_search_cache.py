"""The in-memory search path gives exactly the SQL path's ranking, and sees every write at once.

Every test runs on both backends (``make_any_store``): PostgreSQL keeps the same in-memory indexes,
validated per query against the scope epochs, so another process's writes are seen by the next query
there too. PostgreSQL's SQL path scores like FTS5 up to floating-point summation order, so rankings
against it compare ids exactly and scores to 1e-12 (SQLite's two paths are bit-identical).
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.providers.memory import (
    ManualClock,
    MemoryExport,
    NoteCreate,
    NoteUpdate,
    PostgresMemoryStore,
    RecordHit,
    RecordKind,
    SearchQuery,
    SequentialIds,
    SQLiteMemoryStore,
    TodoCreate,
)
from simone.runtime import (
    Caller,
    MemorySettings,
    TrustedContext,
)
from simone.runtime.text import default_analyzer

pytestmark = pytest.mark.anyio

_WORDS = ["apple", "berry", "cherry", "date", "elder", "fig", "grape", "hazel"]
_OWNER = TrustedContext(actor="owner", caller=Caller.SYSTEM)
_WRITERS = [
    TrustedContext(actor="alice", conversation="c1", project="p"),
    TrustedContext(actor="alice", conversation="c2", project="p"),
    TrustedContext(actor="bob", conversation="c1", project="p"),
    TrustedContext(actor="alice"),
]
_READERS = [*_WRITERS, TrustedContext(actor="carol")]
_SQL_ONLY = MemorySettings(search_cache_postings=0)


def _ranking(hits: list[RecordHit]) -> list[tuple[str, float]]:
    return [(hit.record.id, hit.score) for hit in hits]


def _same(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> bool:
    """The same ids in the same order, scores equal to 1e-12 (bit-identical on SQLite)."""
    return [i for i, _ in found] == [i for i, _ in expected] and all(
        a == pytest.approx(b, rel=1e-12, abs=1e-12) for (_, a), (_, b) in zip(found, expected, strict=True)
    )


_text = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=12).map(" ".join)
_create = st.tuples(
    st.just("create"),
    st.integers(0, len(_WRITERS)),  # the last one writes a global record
    st.sampled_from(_WORDS),
    _text,
    st.booleans(),  # todo rather than note
    st.booleans(),  # through the second store instance
)
_change = st.tuples(
    st.sampled_from(["update", "delete", "restore", "hard_delete"]),
    st.integers(0, 10_000),  # which record (modulo how many exist)
    st.sampled_from(_WORDS),
    _text,
    st.booleans(),
    st.booleans(),
)
_query = st.tuples(
    st.integers(0, len(_READERS) - 1),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6).map(" ".join),
    st.integers(1, 12),
    st.sampled_from([None, [RecordKind.NOTE], [RecordKind.TODO]]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    operations=st.lists(st.one_of(_create, _create, _change), min_size=1, max_size=40),
    queries=st.lists(_query, min_size=1, max_size=6),
    tick_ms=st.sampled_from([0, 1]),
)
def test_memory_path_ranks_exactly_like_sql(
    tmp_path_factory: pytest.TempPathFactory,
    backend: str,
    request: pytest.FixtureRequest,
    operations: list[tuple[str, int, str, str, bool, bool]],
    queries: list[tuple[int, str, int, list[RecordKind] | None]],
    tick_ms: int,
) -> None:
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("cache") / "memory.sqlite3"

        def open_store(**kwargs: Any) -> Any:
            return SQLiteMemoryStore(path, **kwargs)
    else:
        url = request.getfixturevalue("postgres_server").create_database()  # a fresh one per example

        def open_store(**kwargs: Any) -> Any:
            return PostgresMemoryStore(url, **kwargs)

    async def run() -> None:
        clock = ManualClock(tick=timedelta(milliseconds=tick_ms))  # tick 0: ties on update time too
        ids = SequentialIds()
        analyzer = default_analyzer()
        fast = open_store(clock=clock, ids=ids, analyzer=analyzer)
        other = open_store(clock=clock, ids=ids, analyzer=analyzer)
        sql = open_store(clock=clock, ids=ids, analyzer=analyzer, settings=_SQL_ONLY)
        async with fast, other, sql:
            written: list[tuple[str, TrustedContext]] = []

            async def compare() -> None:
                for reader, text, limit, kinds in queries:
                    query = SearchQuery(text=text, limit=limit, kinds=kinds)
                    expected = _ranking(await sql.search_records(_READERS[reader], query))
                    # twice: the first may be answered by SQL while a changed scope settles
                    for _ in range(2):
                        found = _ranking(await fast.search_records(_READERS[reader], query))
                        assert found == expected if backend == "sqlite" else _same(found, expected)

            for step, (op, which, title, body, todo, second) in enumerate(operations):
                writer = other if second else fast
                if op == "create":
                    context = _WRITERS[which] if which < len(_WRITERS) else _OWNER
                    spec = TodoCreate(title=title, body=body) if todo else NoteCreate(title=title, body=body)
                    record = await writer.create(context, spec, global_=which == len(_WRITERS))
                    written.append((record.id, context))
                elif written:
                    record_id, context = written[which % len(written)]
                    record = await writer.get(context, record_id, include_deleted=True)
                    if op == "hard_delete":
                        await writer.hard_delete(context, record_id)
                        written.remove((record_id, context))
                    elif op == "delete" and record.deleted_at is None:
                        await writer.delete(context, record_id)
                    elif op == "restore" and record.deleted_at is not None:
                        await writer.restore(context, record_id)
                    elif op == "update" and record.deleted_at is None and record.kind is RecordKind.NOTE:
                        await writer.update(context, NoteUpdate(id=record_id, title=title, body=body))
                if step % 7 == 6:
                    await compare()
            await compare()
            # at least one answer from memory: a global record every reader sees
            await fast.create(_OWNER, NoteCreate(title="apple", body="apple fig"), global_=True)
            await compare()
            assert fast.search_cache_info().hits > 0
            assert sql.search_cache_info().hits == 0

    anyio.run(run)


async def _ids(store: Any, context: TrustedContext, text: str) -> list[str]:
    return [hit.record.id for hit in await store.search_records(context, SearchQuery(text=text, limit=50))]


async def test_other_instance_writes_are_seen_by_next_query(
    make_any_store: Callable[..., Any],
) -> None:
    alice = TrustedContext(actor="alice", conversation="c1")
    ids = SequentialIds()
    async with make_any_store(ids=ids) as reader, make_any_store(ids=ids) as writer:
        first = await writer.create(alice, NoteCreate(title="orchard apple", body="apple trees"))
        assert await _ids(reader, alice, "apple") == [first.id]
        assert await _ids(reader, alice, "apple") == [first.id]
        assert reader.search_cache_info().hits >= 1  # the scope is held in memory now

        second = await writer.create(alice, NoteCreate(title="apple", body="apple apple pie"))
        assert set(await _ids(reader, alice, "apple")) == {first.id, second.id}
        await writer.update(alice, NoteUpdate(id=first.id, title="orchard pear", body="pear trees"))
        assert await _ids(reader, alice, "apple") == [second.id]
        assert await _ids(reader, alice, "pear") == [first.id]
        await writer.delete(alice, second.id)  # soft delete
        assert await _ids(reader, alice, "apple") == []
        assert await _ids(reader, alice, "apple pie") == []
        await writer.restore(alice, second.id)
        assert await _ids(reader, alice, "apple") == [second.id]
        await writer.hard_delete(alice, second.id)
        assert await _ids(reader, alice, "apple") == []
        assert await _ids(reader, alice, "apple") == []
        info = reader.search_cache_info()
        assert info.builds == 1 and info.misses == 0  # every answer from memory, patched, never rebuilt


_OTHER_PROCESS = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from simone.providers.memory import PostgresMemoryStore, SQLiteMemoryStore, NoteCreate
    from simone.runtime import TrustedContext

    async def main():
        where = sys.argv[1]
        postgres = where.startswith("postgresql://")
        async with (PostgresMemoryStore(where) if postgres else SQLiteMemoryStore(Path(where))) as store:
            record = await store.create(
                TrustedContext(actor="alice", conversation="c1"), NoteCreate(title=sys.argv[2], body="x")
            )
            print(record.id)

    anyio.run(main)
    """
)


async def test_other_process_writes_are_seen_by_next_query(
    make_any_store: Callable[..., Any], backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Process B writes; process A's next search sees it, answered from A's patched in-memory index."""
    alice = TrustedContext(actor="alice", conversation="c1")
    script = tmp_path / "other.py"
    script.write_text(_OTHER_PROCESS)
    async with make_any_store() as reader:
        mine = await reader.create(alice, NoteCreate(title="quince jam"))
        for _ in range(2):
            assert await _ids(reader, alice, "quince") == [mine.id]
        held = reader.search_cache_info()
        assert held.scopes == 1 and held.hits >= 1
        where = str(reader.path) if backend == "sqlite" else request.getfixturevalue("postgres_url")
        with anyio.fail_after(120):
            done = await anyio.run_process(
                [sys.executable, str(script), where, "quince marmalade"], check=True
            )
        theirs = done.stdout.decode().split()[-1]
        assert set(await _ids(reader, alice, "quince")) == {mine.id, theirs}
        assert await _ids(reader, alice, "marmalade") == [theirs]
        assert await _ids(reader, alice, "marmalade") == [theirs]
        assert reader.search_cache_info().misses == 0  # patched in memory, not answered by SQL


async def test_out_of_scope_and_deleted_never_appear_from_memory(
    make_any_store: Callable[..., Any], system: TrustedContext
) -> None:
    alice = TrustedContext(actor="alice", conversation="c1", project="p")
    bob = TrustedContext(actor="bob", conversation="c1", project="p")
    async with make_any_store() as store:
        mine = await store.create(alice, NoteCreate(title="lantern", body="lantern oil"))
        narrow = await store.create(alice, NoteCreate(title="lantern wick"), keys=["conversation"])
        gone = await store.create(alice, NoteCreate(title="lantern glass"))
        await store.delete(alice, gone.id)
        shared = await store.create(system, NoteCreate(title="lantern festival"), global_=True)
        for index in range(20):
            await store.create(bob, NoteCreate(title="lantern lantern", body=f"bob {index} lantern"))
        expected = {mine.id, narrow.id, shared.id}
        for _ in range(3):
            assert set(await _ids(store, alice, "lantern")) == expected
        assert store.search_cache_info().hits >= 1
        other_conversation = TrustedContext(actor="alice", conversation="c2", project="p")
        for _ in range(2):
            assert set(await _ids(store, other_conversation, "lantern")) == {shared.id}
        bob_ids = set(await _ids(store, bob, "lantern"))
        assert len(bob_ids) == 21 and shared.id in bob_ids and not bob_ids & {mine.id, narrow.id, gone.id}


async def test_bounded_cache_falls_back_to_sql(make_any_store: Callable[..., Any]) -> None:
    alice = TrustedContext(actor="alice")
    ids = SequentialIds()
    async with (
        make_any_store(ids=ids, settings=MemorySettings(search_cache_postings=5)) as small,
        make_any_store(ids=ids, settings=_SQL_ONLY) as sql,
    ):
        for index in range(10):
            await small.create(alice, NoteCreate(title=f"kettle {index}", body="kettle steam whistle"))
        query = SearchQuery(text="kettle whistle", limit=5)
        for _ in range(3):
            assert _same(
                _ranking(await small.search_records(alice, query)),
                _ranking(await sql.search_records(alice, query)),
            )
        info = small.search_cache_info()
        assert info.hits == 0 and info.scopes == 0 and info.postings == 0 and info.misses == 3


async def test_many_changes_rebuild_with_the_same_ranking(
    make_any_store: Callable[..., Any],
) -> None:
    alice = TrustedContext(actor="alice")
    ids = SequentialIds()
    async with (
        make_any_store(ids=ids) as reader,
        make_any_store(ids=ids) as writer,
        make_any_store(ids=ids, settings=_SQL_ONLY) as sql,
    ):
        await writer.create(alice, NoteCreate(title="meadow", body="meadow grass"))
        query = SearchQuery(text="meadow grass clover", limit=20)
        assert len(await reader.search_records(alice, query)) == 1
        spec = NoteCreate(title="clover meadow", body="grass")
        await writer.import_(
            _OWNER,
            MemoryExport(
                exported_at=datetime(2026, 1, 1, tzinfo=UTC),
                records=[
                    (await writer.create(alice, spec)).model_copy(update={"id": f"bulk-{index}"})
                    for index in range(3)
                ],
            ),
        )
        for index in range(300):  # more than the patch bound: the scope is rebuilt
            await writer.create(alice, NoteCreate(title=f"clover {index % 7}", body="meadow " * (index % 5)))
        expected = _ranking(await sql.search_records(alice, query))
        for _ in range(3):
            assert _same(_ranking(await reader.search_records(alice, query)), expected)
        info = reader.search_cache_info()
        assert info.builds == 2 and info.misses == 1  # dropped, answered by SQL once, then rebuilt
