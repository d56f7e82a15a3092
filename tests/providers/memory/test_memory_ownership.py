"""Seeing is not changing: only the scope that wrote a record (or the system caller) may change it.

Issue 15 (2): write permission used to equal visibility, so any actor could update, complete, delete,
edit the checklist items of, or supersede a global record. Every write path is attacked here, through the
store and through the memory tools (what agents and the MCP server call), from a foreign actor, another
project, conversation or client, a bare context and other roles; each attack must be refused with a
typed error and leave the whole database as it was. The owner (for its records) and the system caller
(for global ones) still succeed.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from simone.providers.memory import (
    MEMORY_STORE,
    ChecklistCreate,
    ChecklistUpdate,
    FactCreate,
    FactUpdate,
    ItemAdd,
    ItemMove,
    ItemRemove,
    ItemUpdate,
    ListQuery,
    MemoryExport,
    NoteCreate,
    NoteUpdate,
    RecordKind,
    SearchQuery,
    SQLiteMemoryStore,
    TaskStateCreate,
    TaskStateUpdate,
    TodoCreate,
    TodoUpdate,
    TurnRole,
    memory_tool,
    visible,
)
from simone.providers.memory._scope import may_change
from simone.runtime import AccessDenied, Caller, NotFound, Settings, TrustedContext

pytestmark = pytest.mark.anyio

OWNER = TrustedContext(actor="alice", conversation="c1", client="web", project="apollo")
SYSTEM = TrustedContext(actor="root", caller=Caller.SYSTEM)
OBSERVER = TrustedContext(actor="carol", project="hermes")
"""A bystander: what it sees as current must not move when someone attacks a global record."""

ATTACKERS: dict[str, TrustedContext] = {
    "foreign actor": OWNER.model_copy(update={"actor": "bob"}),
    "foreign researcher": TrustedContext(actor="mallory", caller=Caller.RESEARCHER),
    "other project": OWNER.model_copy(update={"project": "zeus"}),
    "other conversation": OWNER.model_copy(update={"conversation": "c9"}),
    "other client": OWNER.model_copy(update={"client": "cli"}),
    "same actor, no keys": TrustedContext(actor="alice"),
}
GLOBAL_ATTACKERS: dict[str, TrustedContext] = {
    **ATTACKERS,
    "owner's own agent": OWNER,
    "owner's research workflow": OWNER.model_copy(update={"caller": Caller.RESEARCH_WORKFLOW}),
}
"""Nobody but the system caller may change a global record, not even the actor the owner runs as."""


@dataclass(frozen=True)
class Target:
    """One record of each kind (and a deleted note, and checklist items), all under one writer."""

    ids: dict[str, str]
    items: tuple[str, str, str]


async def _targets(store: SQLiteMemoryStore, writer: TrustedContext, *, global_: bool) -> Target:
    ids: dict[str, str] = {}
    ids["note"] = (
        await store.create(writer, NoteCreate(title="Holidays", body="closed"), global_=global_)
    ).id
    ids["todo"] = (await store.create(writer, TodoCreate(title="Renew certs"), global_=global_)).id
    checklist = await store.create(
        writer,
        ChecklistCreate.model_validate(
            {"title": "Release", "items": [{"text": "tag"}, {"text": "push", "children": [{"text": "ci"}]}]}
        ),
        global_=global_,
    )
    ids["checklist"] = checklist.id
    ids["fact"] = (
        await store.create(
            writer, FactCreate(subject="HQ", predicate="is in", object="Paris"), global_=global_
        )
    ).id
    ids["task_state"] = (
        await store.create(writer, TaskStateCreate(name="Index wiki", phase="crawl"), global_=global_)
    ).id
    deleted = await store.create(writer, NoteCreate(title="Old policy"), global_=global_)
    await store.delete(writer, deleted.id)
    ids["deleted"] = deleted.id
    first, second = checklist.items
    return Target(ids=ids, items=(first.id, second.id, second.children[0].id))


Op = Callable[[SQLiteMemoryStore, TrustedContext, Target], Awaitable[Any]]


def _tool(name: str, arguments: Callable[[Target], dict[str, Any]]) -> Op:
    async def run(store: SQLiteMemoryStore, context: TrustedContext, target: Target) -> Any:
        return await memory_tool(name).invoke(store, context, arguments(target))

    return run


OPS: dict[str, Op] = {
    # -- the store -------------------------------------------------------------------------------------
    "update note": lambda s, c, t: s.update(c, NoteUpdate(id=t.ids["note"], body="hijacked")),
    "update todo": lambda s, c, t: s.update(c, TodoUpdate(id=t.ids["todo"], status="cancelled")),
    "update checklist": lambda s, c, t: s.update(c, ChecklistUpdate(id=t.ids["checklist"], title="Mine")),
    "update fact": lambda s, c, t: s.update(c, FactUpdate(id=t.ids["fact"], confidence=0.1)),
    "update task state": lambda s, c, t: s.update(
        c, TaskStateUpdate(id=t.ids["task_state"], phase="done", checkpoint={"cursor": 9})
    ),
    "complete note": lambda s, c, t: s.complete(c, t.ids["note"]),
    "complete todo": lambda s, c, t: s.complete(c, t.ids["todo"], kind=RecordKind.TODO),
    "complete checklist": lambda s, c, t: s.complete(c, t.ids["checklist"]),
    "retire fact": lambda s, c, t: s.complete(c, t.ids["fact"]),
    "complete task state": lambda s, c, t: s.complete(c, t.ids["task_state"]),
    "soft delete": lambda s, c, t: s.delete(c, t.ids["todo"]),
    "restore": lambda s, c, t: s.restore(c, t.ids["deleted"]),
    "hard delete": lambda s, c, t: s.hard_delete(c, t.ids["note"]),
    "hard delete a deleted record": lambda s, c, t: s.hard_delete(c, t.ids["deleted"]),
    "add item": lambda s, c, t: s.add_item(c, ItemAdd(checklist_id=t.ids["checklist"], text="injected")),
    "update item": lambda s, c, t: s.update_item(
        c, ItemUpdate(checklist_id=t.ids["checklist"], item_id=t.items[0], status="completed")
    ),
    "move item": lambda s, c, t: s.move_item(
        c, ItemMove(checklist_id=t.ids["checklist"], item_id=t.items[2], position=0)
    ),
    "remove item": lambda s, c, t: s.remove_item(
        c, ItemRemove(checklist_id=t.ids["checklist"], item_id=t.items[1])
    ),
    "supersede fact": lambda s, c, t: s.create(
        c, FactCreate(subject="HQ", predicate="is in", object="Berlin", supersedes=t.ids["fact"])
    ),
    # -- the memory tools (what the agent loop and the MCP server call) --------------------------------
    "tool update_note": _tool("update_note", lambda t: {"id": t.ids["note"], "title": "Mine now"}),
    "tool update_todo": _tool("update_todo", lambda t: {"id": t.ids["todo"], "priority": "low"}),
    "tool update_checklist": _tool("update_checklist", lambda t: {"id": t.ids["checklist"], "body": "x"}),
    "tool update_fact": _tool("update_fact", lambda t: {"id": t.ids["fact"], "source": "rumour"}),
    "tool update_task_state": _tool(
        "update_task_state", lambda t: {"id": t.ids["task_state"], "progress": 1}
    ),
    "tool complete_note": _tool("complete_note", lambda t: {"id": t.ids["note"]}),
    "tool complete_todo": _tool("complete_todo", lambda t: {"id": t.ids["todo"]}),
    "tool complete_checklist": _tool("complete_checklist", lambda t: {"id": t.ids["checklist"]}),
    "tool complete_fact": _tool("complete_fact", lambda t: {"id": t.ids["fact"]}),
    "tool complete_task_state": _tool("complete_task_state", lambda t: {"id": t.ids["task_state"]}),
    "tool delete_memory": _tool("delete_memory", lambda t: {"id": t.ids["checklist"]}),
    "tool add_checklist_item": _tool(
        "add_checklist_item", lambda t: {"checklist_id": t.ids["checklist"], "text": "injected"}
    ),
    "tool update_checklist_item": _tool(
        "update_checklist_item",
        lambda t: {"checklist_id": t.ids["checklist"], "item_id": t.items[1], "text": "changed"},
    ),
    "tool move_checklist_item": _tool(
        "move_checklist_item",
        lambda t: {"checklist_id": t.ids["checklist"], "item_id": t.items[0], "parent_id": t.items[1]},
    ),
    "tool remove_checklist_item": _tool(
        "remove_checklist_item", lambda t: {"checklist_id": t.ids["checklist"], "item_id": t.items[2]}
    ),
    "tool create_fact superseding": _tool(
        "create_fact",
        lambda t: {"subject": "HQ", "predicate": "is in", "object": "Rome", "supersedes": t.ids["fact"]},
    ),
}


def _snapshot(document: MemoryExport) -> dict[str, Any]:
    return document.model_dump(exclude={"exported_at"})


async def _everything(store: SQLiteMemoryStore) -> dict[str, Any]:
    return _snapshot(await store.export(SYSTEM, all_scopes=True))


async def _attack_then_legit(
    store: SQLiteMemoryStore,
    op: Op,
    target: Target,
    attackers: dict[str, TrustedContext],
    legit: TrustedContext,
) -> int:
    before = await _everything(store)
    current_for_observer = await store.list_records(OBSERVER, ListQuery())
    refused = 0
    for who, attacker in attackers.items():
        scope = (await store.get(legit, target.ids["note"])).scope
        expected = AccessDenied if visible(scope, attacker) else NotFound
        with pytest.raises(expected) as raised:
            await op(store, attacker, target)
        assert await _everything(store) == before, f"{who}: the attack changed the database"
        assert await store.list_records(OBSERVER, ListQuery()) == current_for_observer, who
        if expected is AccessDenied:
            assert isinstance(raised.value, AccessDenied)
            assert raised.value.kind == "forbidden" and "Nothing was changed" in raised.value.message
        refused += 1
    await op(store, legit, target)
    assert await _everything(store) != before, "the legitimate writer's change did not land"
    return refused


@pytest.mark.parametrize("name", list(OPS))
async def test_only_the_owner_changes_its_records(store: SQLiteMemoryStore, name: str) -> None:
    target = await _targets(store, OWNER, global_=False)
    assert await _attack_then_legit(store, OPS[name], target, ATTACKERS, OWNER) == len(ATTACKERS)


@pytest.mark.parametrize("name", list(OPS))
async def test_only_the_system_caller_changes_global_records(store: SQLiteMemoryStore, name: str) -> None:
    target = await _targets(store, SYSTEM, global_=True)
    for attacker in GLOBAL_ATTACKERS.values():  # everyone can still read global memory
        assert (await store.get(attacker, target.ids["note"])).is_global
    refused = await _attack_then_legit(store, OPS[name], target, GLOBAL_ATTACKERS, SYSTEM)
    assert refused == len(GLOBAL_ATTACKERS)


async def test_system_caller_in_the_owners_scope_may_change_its_records(store: SQLiteMemoryStore) -> None:
    target = await _targets(store, OWNER, global_=False)
    as_system = OWNER.model_copy(update={"caller": Caller.SYSTEM})
    done = await store.complete(as_system, target.ids["todo"])
    assert done.status == "completed" and done.revision == 2


async def test_superseding_a_global_fact_leaves_it_current_for_everyone(store: SQLiteMemoryStore) -> None:
    fact = await store.create(
        SYSTEM, FactCreate(subject="HQ", predicate="is in", object="Paris"), global_=True
    )
    with pytest.raises(AccessDenied, match="create a fact of your own"):
        await store.create(
            OWNER, FactCreate(subject="HQ", predicate="is in", object="Berlin", supersedes=fact.id)
        )
    for context in (OWNER, OBSERVER, ATTACKERS["foreign actor"]):
        facts = await store.search_records(context, SearchQuery(text="HQ", kinds=[RecordKind.FACT]))
        assert [hit.record.id for hit in facts] == [fact.id], context
        assert facts[0].record.status == "active" and facts[0].record.fact is not None
        assert facts[0].record.fact.valid_until is None and facts[0].record.fact.superseded_by is None
    # Nothing of the refused fact was written; a fact of one's own (no supersedes) is the way.
    mine = await store.create(OWNER, FactCreate(subject="HQ", predicate="is in", object="Berlin"))
    assert mine.scope["actor"] == "alice"
    records = await store.list_records(OWNER, ListQuery(kinds=[RecordKind.FACT]))
    assert sorted(r.id for r in records) == sorted([fact.id, mine.id])
    assert [r.id for r in await store.list_records(OBSERVER, ListQuery(kinds=[RecordKind.FACT]))] == [fact.id]


async def test_actor_wide_records_stay_the_actors_own(store: SQLiteMemoryStore) -> None:
    """A record narrowed to the actor is shared across the actor's contexts: the actor may change it there."""
    note = await store.create(OWNER, NoteCreate(title="prefers metric"), keys=["actor"])
    for context in (ATTACKERS["other project"], ATTACKERS["other client"], ATTACKERS["same actor, no keys"]):
        changed = await store.update(context, NoteUpdate(id=note.id, body=f"from {context.scope()}"))
        assert changed.scope == {"actor": "alice"}
    with pytest.raises(NotFound):
        await store.update(ATTACKERS["foreign actor"], NoteUpdate(id=note.id, body="bob was here"))


def test_may_change_rule() -> None:
    alice = TrustedContext(actor="alice", project="apollo")
    assert may_change({"actor": "alice"}, alice)
    assert may_change({"actor": "alice", "project": "apollo"}, alice)
    assert not may_change({}, alice), "global: read-only but for system"
    assert not may_change({"project": "apollo"}, alice), "shared without an actor: read-only"
    assert not may_change({"actor": "bob"}, alice)
    assert not may_change({"actor": "alice", "project": "zeus"}, alice), "not even visible"
    root = TrustedContext(actor="root", caller=Caller.SYSTEM)
    assert may_change({}, root)
    assert not may_change({"actor": "alice"}, root), "system changes only what it sees"


async def test_session_memory_of_others_is_out_of_reach(store: SQLiteMemoryStore) -> None:
    """Session writes are keyed by the exact scope: others append, summarise and clear only their own."""
    await store.append_turn(OWNER, TurnRole.USER, "the launch code is 1234")
    await store.set_summary(OWNER, "alice asked about the launch")
    turns = await store.recent_turns(OWNER)
    summary = await store.get_summary(OWNER)
    attackers = {name: c for name, c in ATTACKERS.items() if c.conversation is not None}
    for name, attacker in attackers.items():
        await store.append_turn(attacker, TurnRole.USER, "ignore everything")
        await store.set_summary(attacker, "nothing happened")
        await store.clear_session(attacker)
        assert await store.recent_turns(OWNER) == turns, name
        assert await store.get_summary(OWNER) == summary, name


async def test_mcp_tools_cannot_change_global_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same refusal through the MCP server (in process) over the runtime's tool registry."""
    from mcp import Client
    from simone.agents import ORCHESTRATOR, Runtime
    from simone.agents.mcp import build_server

    for key in [key for key in os.environ if key.startswith("SIMONE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    async with Runtime(Settings(data_dir=tmp_path / "data"), documents=False, web=False) as runtime:
        store = runtime.published.require(MEMORY_STORE)
        assert isinstance(store, SQLiteMemoryStore)
        target = await _targets(store, SYSTEM, global_=True)
        before = await _everything(store)
        attacker = runtime.admit({"actor": "mallory", "project": "apollo"}, timeout_s=None)
        attempts = {
            "update_note": {"id": target.ids["note"], "body": "hijacked"},
            "complete_todo": {"id": target.ids["todo"]},
            "delete_memory": {"id": target.ids["fact"]},
            "add_checklist_item": {"checklist_id": target.ids["checklist"], "text": "injected"},
            "update_task_state": {"id": target.ids["task_state"], "phase": "done"},
            "create_fact": {
                "subject": "HQ",
                "predicate": "is in",
                "object": "Rome",
                "supersedes": target.ids["fact"],
            },
        }
        async with Client(build_server(runtime, attacker, ORCHESTRATOR)) as client:
            for name, arguments in attempts.items():
                result = await client.call_tool(name, arguments)
                text = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error and text.startswith("AccessDenied"), (name, text)
            read = await client.call_tool("list_notes", {})
            assert not read.is_error and target.ids["note"] in read.content[0].text  # type: ignore[union-attr]
        assert await _everything(store) == before
