"""PostgreSQL-only behaviour: two processes sharing one database, a server killed mid-write, selection.

The behaviour suite itself runs on both backends through the ``store`` fixture (conftest.py); these are
the properties only a shared server has.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from simone.providers.memory import (
    ListQuery,
    MemoryExport,
    MemoryRecord,
    NoteCreate,
    PostgresMemoryStore,
    SequentialIds,
    SQLiteMemoryStore,
    memory_backend,
    open_memory_store,
)
from simone.runtime import Caller, ConfigError, ProviderUnavailable, Settings, SimoneError, TrustedContext

_WRITER = textwrap.dedent(
    """
    import sys, time, anyio
    from pathlib import Path
    from simone.providers.memory import PostgresMemoryStore, NoteCreate, SequentialIds
    from simone.runtime import TrustedContext

    url, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])

    async def main():
        async with PostgresMemoryStore(url, ids=SequentialIds(name + "-")) as store:
            context = TrustedContext(actor=name)
            while not go.exists():
                time.sleep(0.005)
            for index in range(count):
                await store.create(context, NoteCreate(title=f"{name} note {index}", body="concurrent write"))
            print(count, flush=True)

    anyio.run(main)
    """
)


def test_two_processes_write_500_each_through_postgres(tmp_path: Path, postgres_url: str) -> None:
    go = tmp_path / "go"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), postgres_url, name, "500", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p1", "p2")
    ]
    time.sleep(2.0)  # both opened (and migrated exactly once) before they race
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert out.split()[-1] == "500"

    async def check() -> None:
        system = TrustedContext(actor="owner", caller=Caller.SYSTEM)
        async with PostgresMemoryStore(postgres_url) as store:
            exported = await store.export(system, all_scopes=True)
        ids = [record.id for record in exported.records]
        assert len(ids) == len(set(ids)) == 1000, "0 lost, 0 duplicated"
        titles = {record.title for record in exported.records}
        assert titles == {f"{name} note {index}" for name in ("p1", "p2") for index in range(500)}

    anyio.run(check)


def _batch(count: int) -> MemoryExport:
    now = time_now()
    records = [
        MemoryRecord(
            id=f"bulk-{index:05d}",
            kind="note",
            scope={"actor": "bulk"},
            title=f"bulk note {index}",
            body=" ".join(f"word{i}" for i in range(200)),
            status="active",
            created_at=now,
            updated_at=now,
            revision=1,
        )
        for index in range(count)
    ]
    return MemoryExport(exported_at=now, records=records)


def time_now():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime.now(UTC)


def test_server_killed_mid_write_then_restarted(postgres_server: object) -> None:
    """Kill PostgreSQL during a large import: no partial record, a typed failure, the next write works."""
    server = postgres_server  # the session's server; restarted before this test returns
    url = server.create_database()  # type: ignore[attr-defined]
    system = TrustedContext(actor="owner", caller=Caller.SYSTEM)
    alice = TrustedContext(actor="alice", conversation="c1")

    async def scenario() -> None:
        async with PostgresMemoryStore(url, connect_timeout_s=5) as store:
            before = await store.create(alice, NoteCreate(title="before the crash", body="kept"))
            failure: BaseException | None = None

            async def write() -> None:
                nonlocal failure
                try:
                    await store.import_(system, _batch(20_000))
                except BaseException as exc:  # noqa: BLE001 - the failure is what the test inspects
                    failure = exc

            async with anyio.create_task_group() as group:
                group.start_soon(write)
                await anyio.sleep(1.0)  # the import's one transaction is under way
                await anyio.to_thread.run_sync(server.stop, "immediate")  # type: ignore[attr-defined]
            assert isinstance(failure, ProviderUnavailable), repr(failure)
            assert isinstance(failure, SimoneError) and failure.provider == "memory"
            # while the server is down: a structured, retryable `unavailable` failure
            with pytest.raises(ProviderUnavailable) as down:
                await store.create(alice, NoteCreate(title="while down", body="refused"))
            assert down.value.retryable
            await anyio.to_thread.run_sync(server.start)  # type: ignore[attr-defined]
            after = await store.create(alice, NoteCreate(title="after the restart", body="works"))
            listed = await store.list_records(alice, ListQuery(limit=200))
            assert {record.id for record in listed} == {before.id, after.id}, "no partial import"
            exported = await store.export(system, all_scopes=True)
            assert [r.id for r in exported.records] == [before.id, after.id], "no partial import"

    try:
        anyio.run(scenario)
    finally:
        if not _answers(server):
            server.start()  # type: ignore[attr-defined]


def _answers(server: object) -> bool:
    import psycopg

    try:
        with psycopg.connect(server.url(), connect_timeout=2):  # type: ignore[attr-defined]
            return True
    except psycopg.Error:
        return False


def test_url_selects_postgres_and_no_url_keeps_sqlite(tmp_path: Path) -> None:
    assert memory_backend(Settings(data_dir=tmp_path)) == "sqlite"
    assert isinstance(open_memory_store(Settings(data_dir=tmp_path)), SQLiteMemoryStore)
    chosen = Settings(data_dir=tmp_path, memory={"url": "postgresql://u:secret@db.example:5432/simone"})
    assert memory_backend(chosen) == "postgres"
    store = open_memory_store(chosen, ids=SequentialIds())
    assert isinstance(store, PostgresMemoryStore)
    assert store.address == "postgresql://u:***@db.example:5432/simone"
    with pytest.raises(ConfigError):
        memory_backend(Settings(data_dir=tmp_path, memory={"url": "mysql://x"}))


@pytest.mark.anyio
async def test_unreachable_server_is_unavailable() -> None:
    from tests.servers_postgres import _free_port

    store = PostgresMemoryStore(
        f"postgresql://postgres:pw@127.0.0.1:{_free_port()}/none", connect_timeout_s=1
    )
    with pytest.raises(ProviderUnavailable) as failure:
        await store.open()
    assert failure.value.provider == "memory" and failure.value.retryable
    assert "pw" not in str(failure.value)
