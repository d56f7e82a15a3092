"""Every operation of every kind on the real SQLite store, and the bad input it must refuse."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from simone.providers.memory import (
    ChecklistCreate,
    ChecklistUpdate,
    FactCreate,
    FactUpdate,
    ItemAdd,
    ItemMove,
    ItemRemove,
    ItemUpdate,
    ListQuery,
    ManualClock,
    NoteCreate,
    NoteUpdate,
    RecordKind,
    SearchQuery,
    SQLiteMemoryStore,
    TaskStateCreate,
    TaskStateUpdate,
    TodoCreate,
    TodoUpdate,
)
from simone.runtime import ConfigError, InvalidRequest, MemorySettings, NotFound, TrustedContext

pytestmark = pytest.mark.anyio


def _ids(items: object) -> list[str]:
    return [item.id for item in items]  # type: ignore[attr-defined]


# -- notes ---------------------------------------------------------------------------------------------


async def test_note_create_update_complete_list_search(
    store: SQLiteMemoryStore, alice: TrustedContext
) -> None:
    note = await store.create(
        alice, NoteCreate(title="Deploy notes", body="Use the blue green switch", tags=["ops"])
    )
    assert note.kind is RecordKind.NOTE
    assert note.status == "active"
    assert note.scope == {"actor": "alice", "conversation": "c1", "project": "apollo"}
    assert note.revision == 1 and note.locator == f"memory:note/{note.id}"

    changed = await store.update(alice, NoteUpdate(id=note.id, body="Use the canary switch"))
    assert changed.body == "Use the canary switch" and changed.title == "Deploy notes"
    assert changed.revision == 2 and changed.updated_at > note.updated_at

    same = await store.update(alice, NoteUpdate(id=note.id, body="Use the canary switch"))
    assert same.revision == 2, "an update that changes nothing does not bump the revision"

    hits = await store.search_records(alice, SearchQuery(text="canary"))
    assert _ids(h.record for h in hits) == [note.id]
    assert await store.search_records(alice, SearchQuery(text="blue green")) == [], "old terms are gone"

    archived = await store.complete(alice, note.id)
    assert archived.status == "archived" and archived.completed_at is not None
    assert (await store.complete(alice, note.id)).revision == archived.revision
    listed = await store.list_records(alice, ListQuery(kinds=[RecordKind.NOTE], status=["archived"]))
    assert _ids(listed) == [note.id]
    assert await store.list_records(alice, ListQuery(kinds=[RecordKind.NOTE], status=["active"])) == []


async def test_note_tags_filter_and_clear(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    a = await store.create(alice, NoteCreate(title="a", tags=["x", "y"]))
    b = await store.create(alice, NoteCreate(title="b", tags=["y"]))
    assert _ids(await store.list_records(alice, ListQuery(tags=["y"]))) == [b.id, a.id]
    assert _ids(await store.list_records(alice, ListQuery(tags=["x", "y"]))) == [a.id]
    cleared = await store.update(alice, NoteUpdate(id=a.id, tags=[]))
    assert cleared.tags == ()
    assert _ids(await store.list_records(alice, ListQuery(tags=["x"]))) == []


# -- todos ---------------------------------------------------------------------------------------------


async def test_todo_lifecycle(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    due = datetime(2026, 3, 1, 12, tzinfo=UTC)
    todo = await store.create(alice, TodoCreate(title="Renew certificate", priority="urgent", due_at=due))
    assert (todo.status, todo.priority, todo.due_at) == ("pending", "urgent", due)
    for status in ("in_progress", "blocked", "pending", "cancelled"):
        todo = await store.update(alice, TodoUpdate(id=todo.id, status=status))
        assert todo.status == status and todo.completed_at is None
    todo = await store.update(alice, TodoUpdate(id=todo.id, priority="low", due_at=None))
    assert todo.priority == "low" and todo.due_at is None, "an explicit null clears the due time"
    done = await store.complete(alice, todo.id)
    assert done.status == "completed" and done.completed_at is not None
    reopened = await store.update(alice, TodoUpdate(id=todo.id, status="pending"))
    assert reopened.completed_at is None
    assert _ids(await store.list_records(alice, ListQuery(kinds=[RecordKind.TODO]))) == [todo.id]
    hits = await store.search_records(alice, SearchQuery(text="certificate renewal", kinds=[RecordKind.TODO]))
    assert _ids(h.record for h in hits) == [todo.id]


async def test_todo_bad_status_and_kind_mismatch(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    note = await store.create(alice, NoteCreate(title="n"))
    with pytest.raises(InvalidRequest, match="is a note, not a todo"):
        await store.update(alice, TodoUpdate(id=note.id, status="completed"))
    with pytest.raises(InvalidRequest, match="unknown status"):
        await store.list_records(alice, ListQuery(status=["finished"]))
    with pytest.raises(InvalidRequest, match="is a note, not a todo"):
        await store.complete(alice, note.id, kind=RecordKind.TODO)


# -- checklists ----------------------------------------------------------------------------------------


async def test_checklist_items_add_update_move_remove(
    store: SQLiteMemoryStore, alice: TrustedContext
) -> None:
    checklist = await store.create(
        alice,
        ChecklistCreate(
            title="Release 2.0",
            items=[{"text": "Tag", "children": [{"text": "Sign tag"}]}, {"text": "Announce"}],
        ),
    )
    tag, announce = checklist.items
    sign = tag.children[0]
    assert [tag.text, sign.text, announce.text] == ["Tag", "Sign tag", "Announce"]

    checklist = await store.add_item(
        alice, ItemAdd(checklist_id=checklist.id, text="Build wheels", position=0)
    )
    assert [item.text for item in checklist.items] == ["Build wheels", "Tag", "Announce"]
    build = checklist.items[0]

    checklist = await store.add_item(
        alice, ItemAdd(checklist_id=checklist.id, text="Upload", parent_id=build.id)
    )
    assert [child.text for child in checklist.items[0].children] == ["Upload"]

    checklist = await store.update_item(
        alice, ItemUpdate(checklist_id=checklist.id, item_id=sign.id, status="skipped", text="Sign tag (GPG)")
    )
    assert checklist.items[1].children[0].status == "skipped"
    assert checklist.items[1].children[0].text == "Sign tag (GPG)"

    checklist = await store.move_item(
        alice, ItemMove(checklist_id=checklist.id, item_id=announce.id, position=0)
    )
    assert [item.text for item in checklist.items] == ["Announce", "Build wheels", "Tag"]
    checklist = await store.move_item(
        alice, ItemMove(checklist_id=checklist.id, item_id=announce.id, parent_id=tag.id, position=0)
    )
    assert [item.text for item in checklist.items[1].children] == ["Announce", "Sign tag (GPG)"]

    checklist = await store.remove_item(alice, ItemRemove(checklist_id=checklist.id, item_id=build.id))
    assert [item.text for item in checklist.items] == ["Tag"], "removing an item removes its children"

    hits = await store.search_records(alice, SearchQuery(text="announce"))
    assert _ids(h.record for h in hits) == [checklist.id], "item text is searchable"

    checklist = await store.update(alice, ChecklistUpdate(id=checklist.id, title="Release 2.0.1"))
    done = await store.complete(alice, checklist.id)
    statuses = [done.items[0].status, *[child.status for child in done.items[0].children]]
    assert done.status == "completed"
    assert statuses == ["completed", "completed", "skipped"], "open items complete, skipped ones stay"


async def test_checklist_bad_moves(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    checklist = await store.create(
        alice,
        ChecklistCreate(
            title="Deep",
            items=[{"text": "a", "children": [{"text": "b", "children": [{"text": "c"}]}]}, {"text": "d"}],
        ),
    )
    a = checklist.items[0]
    b = a.children[0]
    d = checklist.items[1]
    with pytest.raises(InvalidRequest, match="into itself"):
        await store.move_item(alice, ItemMove(checklist_id=checklist.id, item_id=a.id, parent_id=a.id))
    with pytest.raises(InvalidRequest, match="own descendant"):
        await store.move_item(alice, ItemMove(checklist_id=checklist.id, item_id=a.id, parent_id=b.id))
    with pytest.raises(InvalidRequest, match="levels deep"):  # a has height 3; under d it would be 4 > 3
        await store.move_item(alice, ItemMove(checklist_id=checklist.id, item_id=a.id, parent_id=d.id))
    with pytest.raises(InvalidRequest, match="levels deep"):
        await store.add_item(alice, ItemAdd(checklist_id=checklist.id, text="e", parent_id=b.children[0].id))
    with pytest.raises(InvalidRequest, match="past the end"):
        await store.move_item(alice, ItemMove(checklist_id=checklist.id, item_id=d.id, position=5))
    with pytest.raises(InvalidRequest, match="has no item"):
        await store.update_item(
            alice, ItemUpdate(checklist_id=checklist.id, item_id="nope", status="completed")
        )
    with pytest.raises(InvalidRequest, match="levels deep"):
        await store.create(
            alice,
            ChecklistCreate(
                title="too deep",
                items=[
                    {
                        "text": "1",
                        "children": [{"text": "2", "children": [{"text": "3", "children": [{"text": "4"}]}]}],
                    }
                ],
            ),
        )
    after = await store.get(alice, checklist.id)
    assert after == checklist, "a refused edit changes nothing"


async def test_checklist_item_cap(make_any_store: Callable[..., Any], alice: TrustedContext) -> None:
    async with make_any_store(settings=MemorySettings(max_checklist_items=3)) as store:
        checklist = await store.create(
            alice, ChecklistCreate(title="c", items=[{"text": str(i)} for i in range(3)])
        )
        with pytest.raises(InvalidRequest, match="max_checklist_items"):
            await store.add_item(alice, ItemAdd(checklist_id=checklist.id, text="4"))


# -- facts ---------------------------------------------------------------------------------------------


async def test_fact_supersede_keeps_old_but_not_current(
    store: SQLiteMemoryStore, alice: TrustedContext, clock: ManualClock
) -> None:
    old = await store.create(
        alice,
        FactCreate(subject="Alice", predicate="lives in", object="Lisbon", source="chat", confidence=0.8),
    )
    assert old.fact is not None and old.fact.current(old.created_at)
    clock.advance(timedelta(days=1))
    new = await store.create(
        alice, FactCreate(subject="Alice", predicate="lives in", object="Porto", supersedes=old.id)
    )
    kept = await store.get(alice, old.id)
    assert kept.status == "superseded" and kept.fact is not None
    assert kept.fact.superseded_by == new.id and kept.fact.valid_until == new.fact.valid_from  # type: ignore[union-attr]
    current = await store.list_records(alice, ListQuery(kinds=[RecordKind.FACT]))
    assert _ids(current) == [new.id]
    everything = await store.list_records(
        alice, ListQuery(kinds=[RecordKind.FACT], include_inactive_facts=True)
    )
    assert set(_ids(everything)) == {old.id, new.id}
    hits = await store.search_records(alice, SearchQuery(text="where does Alice live"))
    assert _ids(h.record for h in hits) == [new.id]
    with pytest.raises(InvalidRequest, match="already superseded"):
        await store.create(
            alice, FactCreate(subject="Alice", predicate="lives in", object="Faro", supersedes=old.id)
        )

    updated = await store.update(alice, FactUpdate(id=new.id, confidence=0.5, source="letter"))
    assert updated.fact is not None and (updated.fact.confidence, updated.fact.source) == (0.5, "letter")
    retired = await store.complete(alice, new.id)
    assert retired.status == "retired" and retired.fact is not None and retired.fact.valid_until is not None
    assert await store.list_records(alice, ListQuery(kinds=[RecordKind.FACT])) == []


async def test_fact_validity_window(
    store: SQLiteMemoryStore, alice: TrustedContext, clock: ManualClock
) -> None:
    start = clock() + timedelta(days=2)
    future = await store.create(
        alice, FactCreate(subject="Office", predicate="moves to", object="Dock 5", valid_from=start)
    )
    assert await store.list_records(alice, ListQuery(kinds=[RecordKind.FACT])) == [], "not valid yet"
    clock.advance(timedelta(days=3))
    assert _ids(await store.list_records(alice, ListQuery(kinds=[RecordKind.FACT]))) == [future.id]
    with pytest.raises(InvalidRequest, match="not after valid_from"):
        await store.update(alice, FactUpdate(id=future.id, valid_until=start - timedelta(hours=1)))
    with pytest.raises(ValueError, match="valid_until must be after valid_from"):
        FactCreate(
            subject="a", predicate="b", object="c", valid_from=start, valid_until=start - timedelta(days=1)
        )
    with pytest.raises(InvalidRequest, match="not after valid_from"):
        await store.create(
            alice, FactCreate(subject="a", predicate="b", object="c", valid_until=clock() - timedelta(days=1))
        )


# -- task states ---------------------------------------------------------------------------------------


async def test_task_state_lifecycle(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    state = await store.create(
        alice, TaskStateCreate(name="Index the wiki", phase="crawling", checkpoint={"page": 10})
    )
    assert state.task_state is not None and state.status == "in_progress"
    state = await store.update(
        alice,
        TaskStateUpdate(
            id=state.id, phase="embedding", progress=0.5, checkpoint={"page": 120, "pending": [1, 2]}
        ),
    )
    assert state.task_state is not None
    assert (state.task_state.phase, state.task_state.progress) == ("embedding", 0.5)
    assert state.task_state.checkpoint == {"page": 120, "pending": [1, 2]}
    hits = await store.search_records(alice, SearchQuery(text="wiki index"))
    assert _ids(h.record for h in hits) == [state.id]
    done = await store.complete(alice, state.id)
    assert done.status == "completed" and done.task_state is not None and done.task_state.progress == 1.0


# -- deletion, retention, ids --------------------------------------------------------------------------


async def test_soft_delete_restore_retention_hard_delete(
    make_any_store: Callable[..., Any], alice: TrustedContext, clock: ManualClock
) -> None:
    async with make_any_store(settings=MemorySettings(soft_delete_retention_days=7)) as store:
        note = await store.create(alice, NoteCreate(title="Temporary", body="scratch"))
        keep = await store.create(alice, NoteCreate(title="Keep", body="scratch"))
        deleted = await store.delete(alice, note.id)
        assert deleted.deleted_at is not None
        assert _ids(await store.list_records(alice, ListQuery())) == [keep.id]
        assert _ids(h.record for h in await store.search_records(alice, SearchQuery(text="scratch"))) == [
            keep.id
        ]
        assert _ids(await store.list_records(alice, ListQuery(include_deleted=True))) == [note.id, keep.id]
        with pytest.raises(NotFound, match="was deleted"):
            await store.get(alice, note.id)
        with pytest.raises(InvalidRequest, match="restore it"):
            await store.update(alice, NoteUpdate(id=note.id, title="edited"))
        with pytest.raises(InvalidRequest, match="restore it"):
            await store.complete(alice, note.id)
        restored = await store.restore(alice, note.id)
        assert restored.deleted_at is None and restored.title == "Temporary"

        await store.delete(alice, note.id)
        clock.advance(timedelta(days=6))
        assert await store.purge_deleted() == 0
        clock.advance(timedelta(days=2))
        assert await store.purge_deleted() == 1
        with pytest.raises(NotFound):
            await store.get(alice, note.id, include_deleted=True)

        await store.hard_delete(alice, keep.id)
        with pytest.raises(NotFound):
            await store.get(alice, keep.id, include_deleted=True)
        assert await store.search_records(alice, SearchQuery(text="scratch")) == []


async def test_unknown_ids(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    for operation in (
        store.get(alice, "note-missing"),
        store.update(alice, NoteUpdate(id="note-missing", title="x")),
        store.complete(alice, "note-missing"),
        store.delete(alice, "note-missing"),
        store.hard_delete(alice, "note-missing"),
        store.add_item(alice, ItemAdd(checklist_id="checklist-missing", text="x")),
    ):
        with pytest.raises(NotFound, match="no memory record"):
            await operation


# -- limits --------------------------------------------------------------------------------------------


async def test_megabyte_note_is_refused(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    huge = "x" * 1_000_000
    with pytest.raises(InvalidRequest, match="max_body_chars"):
        await store.create(alice, NoteCreate(title="big", body=huge))
    note = await store.create(alice, NoteCreate(title="small"))
    with pytest.raises(InvalidRequest, match="max_body_chars"):
        await store.update(alice, NoteUpdate(id=note.id, body=huge))
    with pytest.raises(ValueError):
        NoteCreate(title="bigger", body=huge + "y")  # past the wire ceiling of the model itself
    assert _ids(await store.list_records(alice, ListQuery())) == [note.id]


async def test_query_limit_is_bounded(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    with pytest.raises(InvalidRequest, match="max_query_limit"):
        await store.list_records(alice, ListQuery(limit=store.settings.max_query_limit + 1))
    with pytest.raises(InvalidRequest, match="max_query_limit"):
        await store.search_records(alice, SearchQuery(text="x", limit=10_000))
    for index in range(5):
        await store.create(alice, NoteCreate(title=f"n{index}"))
    assert len(await store.list_records(alice, ListQuery(limit=3))) == 3
    assert len(await store.list_records(alice, ListQuery(limit=3, offset=3))) == 2


async def test_order_is_newest_update_then_id(
    make_any_store: Callable[..., Any], alice: TrustedContext
) -> None:
    frozen = ManualClock()  # every record gets the same timestamp: ties fall to the id
    async with make_any_store(clock=frozen) as store:
        created = [
            await store.create(alice, NoteCreate(title="same words", body="same words")) for _ in range(4)
        ]
        listed = await store.list_records(alice, ListQuery())
        assert _ids(listed) == sorted(_ids(created))
        hits = await store.search_records(alice, SearchQuery(text="same words"))
        assert [h.record.id for h in hits] == sorted(_ids(created))
        assert len({h.score for h in hits}) == 1
        frozen.advance(timedelta(seconds=1))
        bumped = await store.update(alice, NoteUpdate(id=created[2].id, status="archived"))
        hits = await store.search_records(alice, SearchQuery(text="same words"))
        assert hits[0].record.id == bumped.id, "on equal scores the newest update wins"


async def test_search_relevance_and_title_weight(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    in_title = await store.create(
        alice, NoteCreate(title="Kubernetes upgrade", body="plan the maintenance window")
    )
    in_body = await store.create(
        alice, NoteCreate(title="Maintenance", body="kubernetes upgrade steps listed here")
    )
    await store.create(alice, NoteCreate(title="Lunch", body="sandwiches on friday"))
    hits = await store.search_records(alice, SearchQuery(text="kubernetes upgrade"))
    assert _ids(h.record for h in hits) == [in_title.id, in_body.id], "no shared term, no hit; title weighs 3"
    assert hits[0].score > hits[1].score > 0
    assert await store.search_records(alice, SearchQuery(text="the and of")) == [], "stop words only"


async def test_multilingual_search(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    ja = await store.create(
        alice, NoteCreate(title="営業時間", body="店舗の営業時間は午前9時から午後6時までです")
    )
    pt = await store.create(alice, NoteCreate(title="Horário", body="A loja abre às nove horas da manhã"))
    assert _ids(h.record for h in await store.search_records(alice, SearchQuery(text="営業時間"))) == [ja.id]
    assert _ids(h.record for h in await store.search_records(alice, SearchQuery(text="loja abre"))) == [pt.id]


async def test_closed_store_and_naive_clock(
    make_any_store: Callable[..., Any], alice: TrustedContext
) -> None:
    store = make_any_store()
    with pytest.raises(ConfigError, match="not open"):
        await store.list_records(alice, ListQuery())
    naive = make_any_store("naive.sqlite3", clock=lambda: datetime(2026, 1, 1))
    with pytest.raises(ConfigError, match="timezone-aware"):
        async with naive:
            pass
    with pytest.raises(ConfigError, match="file path"):
        SQLiteMemoryStore(":memory:")


async def test_fast_search_path_equals_full_query(
    make_store: Callable[..., SQLiteMemoryStore], alice: TrustedContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite-only: compares SQLite's FTS5 candidate-window path with its full FTS5 query (PostgreSQL has neither; its ranking is checked against SQLite's in test_memory_search_cache). Ties across the candidate window, rare kinds and deleted rows: both paths give the same hits."""
    frozen = ManualClock()
    async with make_store(clock=frozen) as store:
        for index in range(150):
            await store.create(alice, NoteCreate(title="weekly sync", body="weekly sync agenda"))
            if index % 50 == 0:
                await store.create(alice, TodoCreate(title="weekly sync prep", body="agenda"))
                frozen.advance(timedelta(seconds=1))
        listed = await store.list_records(alice, ListQuery(limit=200))
        for victim in listed[::7]:
            await store.delete(alice, victim.id)
        queries = [
            SearchQuery(text="weekly sync", limit=10),
            SearchQuery(text="weekly sync", limit=100),
            SearchQuery(text="agenda", kinds=[RecordKind.TODO], limit=5),
            SearchQuery(text="sync prep", status=["pending"], limit=3),
        ]
        fast = [await store.search_records(alice, query) for query in queries]
        monkeypatch.setattr("simone.providers.memory.sqlite._search._MAX_WINDOW", 0)
        full = [await store.search_records(alice, query) for query in queries]
    assert fast == full
    assert len(fast[1]) == 100 and all(hit.record.deleted_at is None for hit in fast[1])
    ties = [hit for hit in fast[0] if hit.score == fast[0][0].score]
    expected = sorted(ties, key=lambda hit: (-hit.record.updated_at.timestamp(), hit.record.id))
    assert len(ties) > 1 and ties == expected, "equal scores: newest update first, then id"
