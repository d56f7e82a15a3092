"""Persistence: migrations, two processes writing at once, a killed writer, export/import round trips."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from simone.providers.memory import (
    SCHEMA_VERSION,
    ChecklistCreate,
    FactCreate,
    ListQuery,
    ManualClock,
    MemoryExport,
    NoteCreate,
    SearchQuery,
    SequentialIds,
    SQLiteMemoryStore,
    TaskStateCreate,
    TodoCreate,
    TurnRole,
    dump_export,
    load_export,
)
from simone.providers.memory.sqlite._schema import MIGRATIONS
from simone.runtime import (
    ConfigError,
    InvalidRequest,
    ScopeViolation,
    TrustedContext,
    load_settings,
)
from simone.runtime.text import (
    Analyzer,
    default_analyzer,
)

pytestmark = pytest.mark.anyio


def _check_consistent(path: Path) -> int:
    """Integrity of the file and of both FTS indexes; returns the record count."""
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.execute("INSERT INTO records_fts (records_fts) VALUES ('integrity-check')")
        db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('integrity-check')")
        count = int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
        indexed = int(db.execute("SELECT COUNT(*) FROM records_fts").fetchone()[0])
        assert count == indexed
        return count
    finally:
        db.close()


async def test_fresh_database_schema_and_default_path(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "data")
    store = SQLiteMemoryStore.from_settings(settings)
    assert store.path == tmp_path / "data" / "memory.sqlite3"
    async with store:
        pass
    db = sqlite3.connect(store.path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


async def test_newer_schema_is_refused(make_store: Callable[..., SQLiteMemoryStore], tmp_path: Path) -> None:
    """SQLite-only: writes SQLite's ``PRAGMA user_version`` into a file before opening it."""
    path = tmp_path / "future.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(ConfigError, match="newer than this simone"):
        async with make_store("future.sqlite3"):
            pass


async def test_migrates_a_version_1_database(
    make_store: Callable[..., SQLiteMemoryStore], tmp_path: Path, alice: TrustedContext
) -> None:
    """SQLite-only: builds a version-1 SQLite file with SQLite's own migration functions."""
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    MIGRATIONS[0](db)  # the schema as version 1 shipped it
    db.execute("PRAGMA user_version = 1")
    db.close()
    async with make_store("old.sqlite3") as store:
        note = await store.create(alice, NoteCreate(title="after migration"))
        assert [h.record.id for h in await store.search_records(alice, SearchQuery(text="migration"))] == [
            note.id
        ]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    assert db.execute("SELECT COUNT(*) FROM record_vectors").fetchone()[0] == 0
    db.close()


async def test_reopen_keeps_data_and_reindexes_when_analysis_changes(
    make_store: Callable[..., SQLiteMemoryStore], alice: TrustedContext
) -> None:
    """SQLite-only: reopens the same file with another analyzer (the fixture's SQLite file; PostgreSQL shares the re-index code in _core)."""
    async with make_store() as store:
        note = await store.create(alice, NoteCreate(title="Vehicle", body="the automobile is parked outside"))
        assert await store.search_records(alice, SearchQuery(text="car")) == []
    async with make_store() as store:
        assert (await store.get(alice, note.id)).body == "the automobile is parked outside"
    synonyms = Analyzer(synonyms=[["car", "automobile"]])
    async with make_store(analyzer=synonyms, analyzer_key="cars") as store:
        hits = await store.search_records(alice, SearchQuery(text="car"))
        assert [h.record.id for h in hits] == [note.id], "stored terms were re-analysed"


_WRITER = textwrap.dedent(
    """
    import sys, time, anyio
    from pathlib import Path
    from simone.providers.memory import SQLiteMemoryStore, NoteCreate, SequentialIds
    from simone.runtime import TrustedContext, MemorySettings

    path, name, count, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])

    async def main():
        settings = MemorySettings(busy_timeout_s=60)
        async with SQLiteMemoryStore(path, settings=settings, ids=SequentialIds(name + "-")) as store:
            context = TrustedContext(actor=name)
            while not go.exists():
                time.sleep(0.005)
            for index in range(count):
                await store.create(context, NoteCreate(title=f"{name} note {index}", body="concurrent write"))
                print(index + 1, flush=True)

    anyio.run(main)
    """
)


def test_two_processes_write_500_each(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    go = tmp_path / "go"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), name, "500", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p1", "p2")
    ]
    time.sleep(1.5)  # both opened (and migrated exactly once) before they race
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert out.split()[-1] == "500"
    assert _check_consistent(path) == 1000
    db = sqlite3.connect(path)
    per_actor = dict(db.execute("SELECT s_actor, COUNT(*) FROM records GROUP BY s_actor").fetchall())
    db.close()
    assert per_actor == {"p1": 500, "p2": 500}


_CRASHER = textwrap.dedent(
    """
    import sys, anyio
    from pathlib import Path
    from simone.providers.memory import SQLiteMemoryStore, NoteCreate, ChecklistCreate
    from simone.runtime import TrustedContext

    async def main():
        async with SQLiteMemoryStore(Path(sys.argv[1])) as store:
            context = TrustedContext(actor="crasher", conversation="c")
            body = " ".join(f"word{i}" for i in range(3000))
            index = 0
            while True:
                await store.create(context, NoteCreate(title=f"note {index}", body=body))
                await store.create(context, ChecklistCreate(title=f"list {index}", items=[{"text": "a"}] * 20))
                index += 1
                print(index * 2, flush=True)

    anyio.run(main)
    """
)


@pytest.mark.parametrize("kill_after", [3, 17, 40])
def test_killed_writer_leaves_database_consistent(tmp_path: Path, kill_after: int) -> None:
    path = tmp_path / "crash.sqlite3"
    script = tmp_path / "crasher.py"
    script.write_text(_CRASHER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stderr is not None
    acknowledged = 0
    while acknowledged < kill_after * 2:
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=30)
            pytest.fail(f"the writer died on its own: {proc.stderr.read()}")
        acknowledged = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    count = _check_consistent(path)
    assert count >= acknowledged, "every acknowledged write survived"

    async def reopen() -> None:
        async with SQLiteMemoryStore(path, analyzer=default_analyzer()) as store:
            context = TrustedContext(actor="crasher", conversation="c")
            records = await store.list_records(context, ListQuery(limit=200))
            assert len(records) == min(count, 200)
            assert await store.search_records(context, SearchQuery(text="word7", limit=5))
            await store.create(context, NoteCreate(title="after the crash"))

    anyio.run(reopen)
    assert _check_consistent(path) == count + 1


async def _populate(store: SQLiteMemoryStore, alice: TrustedContext, clock: ManualClock) -> None:
    note = await store.create(alice, NoteCreate(title="Round trip", body="body text", tags=["a", "b"]))
    await store.create(alice, TodoCreate(title="todo", priority="urgent", due_at=clock() + timedelta(days=1)))
    await store.create(
        alice, ChecklistCreate(title="list", items=[{"text": "x", "children": [{"text": "y"}]}])
    )
    fact = await store.create(alice, FactCreate(subject="s", predicate="p", object="o", confidence=0.7))
    clock.advance(timedelta(hours=1))
    await store.create(alice, FactCreate(subject="s", predicate="p", object="o2", supersedes=fact.id))
    await store.create(alice, TaskStateCreate(name="task", checkpoint={"cursor": [1, 2, {"k": "v"}]}))
    await store.create(TrustedContext(actor="bob"), NoteCreate(title="bob's"))
    await store.delete(alice, note.id)
    for text in ("hello there", "general kenobi", "you are a bold one"):
        await store.append_turn(alice, TurnRole.USER, text)
    await store.set_summary(alice, "a greeting")


async def test_export_import_round_trip(
    make_store: Callable[..., SQLiteMemoryStore],
    alice: TrustedContext,
    system: TrustedContext,
    clock: ManualClock,
) -> None:
    """SQLite-only: needs two separate databases (source and target files); the PostgreSQL fixture gives a test one database."""
    async with make_store("source.sqlite3") as source:
        await _populate(source, alice, clock)
        exported = await source.export(system, all_scopes=True)
        text = dump_export(exported)
        own = await source.export(alice)
        assert {r.scope.get("actor") for r in own.records} == {"alice"}
        with pytest.raises(ScopeViolation):
            await source.export(alice, all_scopes=True)
        source_hits = await source.search_records(alice, SearchQuery(text="o2 task list"))
    assert len(exported.records) == 7 and len(exported.turns) == 3 and len(exported.summaries) == 1

    async with make_store("target.sqlite3") as target:
        with pytest.raises(ScopeViolation):
            await target.import_(alice, load_export(text))
        assert await target.import_(system, load_export(text)) == 11
        again = await target.export(system, all_scopes=True)
        assert again.model_dump(exclude={"exported_at"}) == exported.model_dump(exclude={"exported_at"})
        assert await target.search_records(alice, SearchQuery(text="o2 task list")) == source_hits
        with pytest.raises(InvalidRequest, match="already exist"):
            await target.import_(system, exported)
        assert await target.import_(system, exported, replace=True) == 11
        assert (await target.export(system, all_scopes=True)).records == exported.records


async def test_invalid_import_writes_nothing(
    make_store: Callable[..., SQLiteMemoryStore],
    alice: TrustedContext,
    system: TrustedContext,
    clock: ManualClock,
) -> None:
    """SQLite-only: needs two separate databases (source and target files); the PostgreSQL fixture gives a test one database."""
    async with make_store("source.sqlite3") as source:
        await _populate(source, alice, clock)
        good = json.loads(dump_export(await source.export(system, all_scopes=True)))
    with pytest.raises(InvalidRequest, match="not valid JSON"):
        load_export('{"format": "simone-memory", "records": [')
    broken = json.loads(json.dumps(good))
    broken["records"][-1]["kind"] = "email"
    with pytest.raises(InvalidRequest, match="not a simone memory export"):
        load_export(json.dumps(broken))
    wrong_status = json.loads(json.dumps(good))
    wrong_status["records"][-1]["status"] = "finished"
    duplicate = json.loads(json.dumps(good))
    duplicate["records"].append(duplicate["records"][0])
    seq_clash = json.loads(json.dumps(good))
    seq_clash["turns"][1]["seq"] = seq_clash["turns"][0]["seq"]
    async with make_store("target.sqlite3", ids=SequentialIds("t-")) as target:
        existing = await target.create(alice, NoteCreate(title="already here"))
        before = await target.export(system, all_scopes=True)
        for document in (wrong_status, duplicate, seq_clash):
            with pytest.raises(InvalidRequest, match="nothing was written"):
                await target.import_(system, MemoryExport.model_validate(document))
            after = await target.export(system, all_scopes=True)
            assert after.model_dump(exclude={"exported_at"}) == before.model_dump(exclude={"exported_at"})
        assert [r.id for r in (await target.export(system, all_scopes=True)).records] == [existing.id]
