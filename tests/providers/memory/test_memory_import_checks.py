"""Import refuses malformed documents whole: one clear error naming the record and the key, nothing written.

Issue 15 (3): unknown scope keys (``tenant``, ``Actor``, ``actor ``) used to be dropped on the way into
SQLite, turning a record into a global one visible to everybody, or silently widening it when they stood
beside ``actor``. Naive timestamps and other malformed input must be a clear error, not a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from simone.agents.cli import main
from simone.providers.memory import (
    FactCreate,
    MemoryExport,
    MemoryRecord,
    NoteCreate,
    SequentialIds,
    SQLiteMemoryStore,
    TodoCreate,
    TurnRole,
    dump_export,
    load_export,
)
from simone.runtime import Caller, InvalidRequest, TrustedContext

pytestmark = pytest.mark.anyio

ALICE = TrustedContext(actor="alice", conversation="c1", project="apollo")
SYSTEM = TrustedContext(actor="root", caller=Caller.SYSTEM)

Document = dict[str, Any]
Mutation = Callable[[Document], None]


async def _good_document(store: SQLiteMemoryStore) -> Document:
    """An export of a note, a todo with a due time, a fact, a global note, two turns and a summary."""
    await store.create(ALICE, NoteCreate(title="Deploy steps", body="canary first"))
    await store.create(ALICE, TodoCreate.model_validate({"title": "Renew", "due_at": "2030-01-01T00:00:00Z"}))
    await store.create(ALICE, FactCreate(subject="HQ", predicate="is in", object="Paris"))
    await store.create(SYSTEM, NoteCreate(title="Holidays"), global_=True)
    await store.append_turn(ALICE, TurnRole.USER, "hello")
    await store.append_turn(ALICE, TurnRole.ASSISTANT, "hi")
    await store.set_summary(ALICE, "greetings")
    document: Document = json.loads(dump_export(await store.export(SYSTEM, all_scopes=True)))
    assert [r["id"] for r in document["records"]] == [
        "note-00000001",
        "todo-00000002",
        "fact-00000003",
        "note-00000004",
    ]
    return document


def _set(path: str, value: Any) -> Mutation:
    """Set ``records.0.scope``-style dotted paths (list indexes are numbers)."""

    def mutate(document: Document) -> None:
        parts = path.split(".")
        node: Any = document
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _append(path: str, value: Any) -> Mutation:
    def mutate(document: Document) -> None:
        document[path].append(value)

    return mutate


ALICE_SCOPE = {"actor": "alice", "conversation": "c1", "project": "apollo"}

# (mutation, what the one error message must name)
BAD_SCOPES: dict[str, tuple[Mutation, list[str]]] = {
    "tenant only": (_set("records.0.scope", {"tenant": "acme"}), ["note-00000001", "tenant"]),
    "Actor capitalised": (_set("records.0.scope", {"Actor": "alice"}), ["note-00000001", "Actor"]),
    "actor with a space": (_set("records.0.scope", {"actor ": "alice"}), ["note-00000001", "'actor '"]),
    "unknown key beside actor": (
        _set("records.1.scope", {"actor": "alice", "tenant": "acme"}),
        ["todo-00000002", "tenant"],
    ),
    "Project beside actor": (
        _set("records.2.scope", {"actor": "alice", "Project": "apollo"}),
        ["fact-00000003", "Project"],
    ),
    "scope of a global record gains a key": (
        _set("records.3.scope", {"org": "acme"}),
        ["note-00000004", "org"],
    ),
    "shared scope without an actor": (
        _set("records.0.scope", {"project": "apollo"}),
        ["note-00000001", "names no actor"],
    ),
    "scope value not a string": (_set("records.0.scope", {"actor": 7}), ["note-00000001", "scope.actor"]),
    "scope value null": (_set("records.0.scope", {"actor": None}), ["note-00000001", "scope.actor"]),
    "scope not an object": (_set("records.0.scope", "alice"), ["note-00000001", "scope"]),
    "turn with an unknown key": (
        _set("turns.0.scope", {**ALICE_SCOPE, "tenant": "acme"}),
        ["turn-00000005", "tenant"],
    ),
    "turn without an actor": (
        _set("turns.1.scope", {"conversation": "c1"}),
        ["turn-00000006", "needs an actor and a conversation"],
    ),
    "summary with Conversation": (
        _set("summaries.0.scope", {"actor": "alice", "Conversation": "c1"}),
        ["summary-00000007", "Conversation"],
    ),
}

NAIVE_TIMES: dict[str, tuple[Mutation, list[str]]] = {
    "record created_at": (
        _set("records.0.created_at", "2026-01-01T00:00:00"),
        ["note-00000001", "created_at", "timezone"],
    ),
    "todo due_at": (_set("records.1.due_at", "2030-01-01T00:00:00"), ["todo-00000002", "due_at", "timezone"]),
    "fact valid_from": (
        _set("records.2.fact.valid_from", "2026-01-01T00:00:00"),
        ["fact-00000003", "fact.valid_from", "timezone"],
    ),
    "record deleted_at": (
        _set("records.3.deleted_at", "2026-01-01 00:00"),
        ["note-00000004", "deleted_at", "timezone"],
    ),
    "turn created_at": (
        _set("turns.0.created_at", "2026-01-01T00:00:00"),
        ["turn-00000005", "created_at", "timezone"],
    ),
    "summary updated_at": (
        _set("summaries.0.updated_at", "2026-01-01T00:00:00"),
        ["summary-00000007", "updated_at", "timezone"],
    ),
    "exported_at": (_set("exported_at", "2026-01-01T00:00:00"), ["exported_at", "timezone"]),
}

MALFORMED: dict[str, tuple[Mutation, list[str]]] = {
    "record is a number": (_append("records", 5), ["records[4]"]),
    "record is a string": (_append("records", "note"), ["records[4]"]),
    "record is null": (_append("records", None), ["records[4]"]),
    "turn is a list": (_append("turns", ["hello"]), ["turns[2]"]),
    "records is an object": (_set("records", {"id": "x"}), ["records"]),
    "title is a number": (_set("records.0.title", 42), ["note-00000001", "title"]),
    "revision is text": (_set("records.0.revision", "many"), ["note-00000001", "revision"]),
    "revision overflows SQLite": (_set("records.0.revision", 2**70), ["note-00000001", "revision"]),
    "seq negative": (_set("turns.0.seq", -1), ["turn-00000005", "seq"]),
    "tags is a string": (_set("records.0.tags", 7), ["note-00000001", "tags"]),
    "unknown field": (_set("records.0.owner", "bob"), ["note-00000001", "owner"]),
    "lone surrogate": (_set("records.0.body", "\ud800"), ["not valid Unicode"]),
}

CASES = {**BAD_SCOPES, **NAIVE_TIMES, **MALFORMED}


async def _refused(store: SQLiteMemoryStore, text: str) -> str:
    with pytest.raises(InvalidRequest) as raised:
        await store.import_(SYSTEM, load_export(text))
    return str(raised.value)


@pytest.mark.parametrize("case", list(CASES))
async def test_bad_import_is_refused_whole(
    make_store: Callable[..., SQLiteMemoryStore], tmp_path: Path, case: str
) -> None:
    """SQLite-only: needs two separate databases (source and target files); the PostgreSQL fixture gives a test one database. The import checks are backend-neutral code (_transfer), and PostgreSQL's import runs in the parametrised suite."""
    mutate, names = CASES[case]
    async with make_store("source.sqlite3") as source:
        document = await _good_document(source)
    mutate(document)
    text = json.dumps(document, ensure_ascii=False)
    async with make_store("target.sqlite3", ids=SequentialIds("t-")) as target:
        existing = await target.create(ALICE, NoteCreate(title="already here"))
        before = (await target.export(SYSTEM, all_scopes=True)).model_dump(exclude={"exported_at"})
        message = await _refused(target, text)
        assert "nothing was written" in message
        for name in names:
            assert name in message, (name, message)
        after = await target.export(SYSTEM, all_scopes=True)
        assert after.model_dump(exclude={"exported_at"}) == before
        assert [record.id for record in after.records] == [existing.id]


@pytest.mark.parametrize(
    "text",
    [
        "[1, 2]",
        '"simone-memory"',
        "null",
        "[" * 100_000,
        '{"format": "simone-memory", "version": 1, "exported_at": "2026-01-01T00:00:00Z", "records": "x"}',
    ],
    ids=["list", "string", "null", "deeply nested", "records not a list"],
)
def test_documents_that_are_not_exports(text: str) -> None:
    with pytest.raises(InvalidRequest, match="nothing was written"):
        load_export(text)


async def test_unknown_scope_keys_cannot_reach_sqlite_even_bypassing_validation(
    store: SQLiteMemoryStore,
) -> None:
    """A document built without validation (``model_construct``) is checked again by the store."""
    now = "2026-01-01T00:00:00Z"
    good = MemoryRecord.model_validate(
        {"id": "n1", "kind": "note", "title": "t", "status": "active", "created_at": now, "updated_at": now}
    )
    forged = good.model_copy(update={"scope": {"actor": "alice", "tenant": "acme"}})
    document = MemoryExport.model_construct(
        exported_at=good.created_at, records=[forged], turns=[], summaries=[]
    )
    with pytest.raises(InvalidRequest, match="n1.*tenant"):
        await store.import_(SYSTEM, document)
    assert (await store.export(SYSTEM, all_scopes=True)).records == []


async def test_a_valid_export_still_round_trips(make_store: Callable[..., SQLiteMemoryStore]) -> None:
    """SQLite-only: needs two separate databases (source and target files); the PostgreSQL fixture gives a test one database."""
    async with make_store("source.sqlite3") as source:
        document = await _good_document(source)
    async with make_store("target.sqlite3") as target:
        assert await target.import_(SYSTEM, load_export(json.dumps(document))) == 7
        again = json.loads(dump_export(await target.export(SYSTEM, all_scopes=True)))
    assert {**again, "exported_at": None} == {**document, "exported_at": None}


@pytest.mark.parametrize(
    "case", ["tenant only", "unknown key beside actor", "fact valid_from", "record is null"]
)
def test_cli_import_refuses_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    for name in ("SIMONE_CONFIG", "SIMONE_DATA_DIR", "SIMONE_ACTOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    source = ["--data-dir", str(tmp_path / "source")]
    assert main([*source, "memory", "add", "note", "Deploy", "--actor", "alice", "--json"]) == 0
    assert main([*source, "memory", "add", "todo", "Renew", "--actor", "alice", "--json"]) == 0
    assert main([*source, "memory", "add", "fact", "HQ", "is in", "Paris", "--actor", "alice", "--json"]) == 0
    assert main([*source, "memory", "add", "note", "Holidays", "--global", "--actor", "root", "--json"]) == 0
    exported = tmp_path / "export.json"
    assert main([*source, "memory", "export", str(exported), "--all"]) == 0
    document = json.loads(exported.read_text())
    mutate, _ = CASES[case]
    mutate(document)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    capsys.readouterr()
    target = ["--data-dir", str(tmp_path / "target")]
    assert main([*target, "memory", "import", str(broken)]) == 1
    error = capsys.readouterr().err
    assert "nothing was written" in error and "Traceback" not in error
    assert main([*target, "memory", "export", "--all"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == []
    for who in ("alice", "intruder"):
        assert main([*target, "memory", "list", "--actor", who, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == []
