"""Scope isolation under adversarial input: nothing leaks across actors, conversations, projects, clients."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.providers.memory import (
    MEMORY_TOOLS,
    ChecklistCreate,
    ItemAdd,
    ListQuery,
    MemoryProvider,
    NoteCreate,
    NoteUpdate,
    SearchQuery,
    SequentialIds,
    SQLiteMemoryStore,
    TodoCreate,
    memory_tool,
    scope_like,
    visible,
)
from simone.runtime import (
    SCOPE_KEYS,
    Caller,
    NotFound,
    RetrievalRequest,
    ScopeViolation,
    TrustedContext,
)
from simone.runtime.text import default_analyzer

pytestmark = pytest.mark.anyio


async def test_other_actor_sees_nothing_and_cannot_touch(
    store: SQLiteMemoryStore, alice: TrustedContext, bob: TrustedContext
) -> None:
    secret = await store.create(alice, NoteCreate(title="Salary review", body="alice salary numbers"))
    checklist = await store.create(alice, ChecklistCreate(title="Private list", items=[{"text": "salary"}]))
    assert await store.list_records(bob, ListQuery()) == []
    assert await store.search_records(bob, SearchQuery(text="salary")) == []
    for attempt in (
        store.get(bob, secret.id),
        store.get(bob, secret.id, include_deleted=True),
        store.update(bob, NoteUpdate(id=secret.id, body="overwritten")),
        store.complete(bob, secret.id),
        store.delete(bob, secret.id),
        store.restore(bob, secret.id),
        store.hard_delete(bob, secret.id),
        store.add_item(bob, ItemAdd(checklist_id=checklist.id, text="injected")),
    ):
        with pytest.raises(NotFound, match="no memory record"):
            await attempt
    assert await store.get(alice, secret.id) == secret
    assert await store.get(alice, checklist.id) == checklist


async def test_same_actor_other_conversation_or_project(
    store: SQLiteMemoryStore, alice: TrustedContext
) -> None:
    note = await store.create(alice, NoteCreate(title="conversation bound", body="launch codes"))
    for other in (
        alice.model_copy(update={"conversation": "c9"}),
        alice.model_copy(update={"project": "zeus"}),
        alice.model_copy(update={"conversation": None}),
        TrustedContext(actor="alice"),
    ):
        assert await store.search_records(other, SearchQuery(text="launch codes")) == [], other
        with pytest.raises(NotFound):
            await store.get(other, note.id)
    wider = alice.model_copy(update={"thread": "t1", "client": "acme"})
    assert [h.record.id for h in await store.search_records(wider, SearchQuery(text="launch"))] == [
        note.id
    ], "a context with more keys than the record still sees it"


async def test_record_with_fewer_keys_than_query(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    actor_wide = await store.create(
        alice, NoteCreate(title="preference", body="prefers metric units"), keys=["actor"]
    )
    assert actor_wide.scope == {"actor": "alice"}
    for context in (alice, TrustedContext(actor="alice"), TrustedContext(actor="alice", project="zeus")):
        hits = await store.search_records(context, SearchQuery(text="metric units"))
        assert [h.record.id for h in hits] == [actor_wide.id]
    assert await store.search_records(TrustedContext(actor="mallory"), SearchQuery(text="metric")) == []
    with pytest.raises(ScopeViolation, match="does not set"):
        await store.create(TrustedContext(actor="alice"), NoteCreate(title="x"), keys=["project"])
    with pytest.raises(ScopeViolation, match="unknown scope keys"):
        await store.create(alice, NoteCreate(title="x"), keys=["tenant"])


async def test_global_records(
    store: SQLiteMemoryStore, alice: TrustedContext, system: TrustedContext
) -> None:
    policy = await store.create(
        system, NoteCreate(title="Company holidays", body="office closed on holidays"), global_=True
    )
    assert policy.is_global and policy.scope == {}
    for context in (
        alice,
        TrustedContext(actor="anyone"),
        TrustedContext(actor="x", project="y", client="z"),
    ):
        assert [h.record.id for h in await store.search_records(context, SearchQuery(text="holidays"))] == [
            policy.id
        ]
    with pytest.raises(ScopeViolation, match="only a system caller"):
        await store.create(alice, NoteCreate(title="fake global"), global_=True)


# -- tools: forged scope is refused, never merged or dropped ----------------------------------------


FORGED = [
    {"title": "x", "actor": "bob"},
    {"title": "x", "conversation": "c2"},
    {"title": "x", "Conversation_ID": "c2"},
    {"title": "x", "projectId": "zeus"},
    {"title": "x", "CLIENT": "acme"},
    {"title": "x", "thread-id": "t"},
    {"title": "x", "task": "t"},
    {"title": "x", "scope": {"actor": "bob"}},
    {"title": "x", "tags": ["a"], "metadata": {"actor": "bob"}},
    {"title": "x", "items": [{"text": "a", "children": [{"text": "b", "actor": "bob"}]}]},
]


@pytest.mark.parametrize("arguments", FORGED)
async def test_forged_scope_in_tool_call(
    store: SQLiteMemoryStore, alice: TrustedContext, arguments: dict[str, object]
) -> None:
    tool = memory_tool("create_checklist" if "items" in arguments else "create_note")
    with pytest.raises(ScopeViolation, match="scope"):
        await tool.invoke(store, alice, arguments)
    with pytest.raises(ScopeViolation):
        tool.args_model.model_validate(arguments)
    assert await store.list_records(alice, ListQuery()) == [], "nothing was written"


async def test_forged_scope_on_every_tool(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    for tool in MEMORY_TOOLS:
        with pytest.raises(ScopeViolation):
            await tool.invoke(store, alice, '{"id": "x", "query": "x", "actor": "bob"}')


async def test_other_actors_conversation_id_in_arguments(
    store: SQLiteMemoryStore, alice: TrustedContext, bob: TrustedContext
) -> None:
    bobs = await store.create(bob, TodoCreate(title="bob's todo"))
    update = memory_tool("update_todo")
    with pytest.raises(ScopeViolation):
        await update.invoke(
            store, alice, {"id": bobs.id, "status": "completed", "conversation_id": bob.conversation}
        )
    with pytest.raises(NotFound):
        await update.invoke(store, alice, {"id": bobs.id, "status": "completed"})
    result = await memory_tool("search_todos").invoke(store, alice, {"query": "bob's todo"})
    assert result.model_dump() == {"hits": []}
    assert (await store.get(bob, bobs.id)).status == "pending"


def test_no_argument_model_has_scope_fields() -> None:
    for tool in MEMORY_TOOLS:
        schema = str(tool.parameters())
        for name in tool.args_model.model_fields:
            assert not scope_like(name), (tool.name, name)
        assert "actor" not in schema and "conversation" not in schema, tool.name


def test_scope_like_spellings() -> None:
    for key in (
        "actor",
        "Actor",
        "ACTOR_ID",
        "conversationId",
        "conversation-id",
        "project_name",
        "scopes",
        "tenant",
    ):
        assert scope_like(key), key
    for key in (
        "title",
        "body",
        "tags",
        "status",
        "subject",
        "object",
        "phase",
        "progress",
        "checkpoint",
        "items",
    ):
        assert not scope_like(key), key


# -- the matching rule, SQL against Python, on random scopes -----------------------------------------

_values = st.sampled_from(["a", "b"])
_scopes = st.fixed_dictionaries(
    {"actor": _values}, optional={key: _values for key in SCOPE_KEYS if key != "actor"}
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_scopes, min_size=1, max_size=12), contexts=st.lists(_scopes, min_size=1, max_size=6))
def test_sql_scope_filter_matches_rule(
    tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, str]], contexts: list[dict[str, str]]
) -> None:
    path: Path = tmp_path_factory.mktemp("scope") / "memory.sqlite3"

    async def run() -> None:
        async with SQLiteMemoryStore(path, ids=SequentialIds(), analyzer=default_analyzer()) as store:
            owner = TrustedContext(actor="owner", caller=Caller.SYSTEM)
            written = []
            for index, scope in enumerate([*records, {}]):
                context = TrustedContext(**scope) if scope else owner
                written.append(
                    await store.create(context, NoteCreate(title=f"shared word {index}"), global_=not scope)
                )
            provider = MemoryProvider(store)
            for scope in contexts:
                context = TrustedContext(**scope)
                expected = {record.id for record in written if visible(record.scope, context)}
                listed = {r.id for r in await store.list_records(context, ListQuery(limit=200))}
                found = {
                    h.record.id
                    for h in await store.search_records(context, SearchQuery(text="shared", limit=200))
                }
                response = await provider.retrieve(RetrievalRequest.create("shared word", limit=200), context)
                served = {e.metadata["record_id"] for e in response.evidence}
                assert listed == found == served == expected

    anyio.run(run)


def test_visible_rule() -> None:
    context = TrustedContext(actor="a", project="p")
    assert visible({}, context)
    assert visible({"actor": "a"}, context)
    assert visible({"actor": "a", "project": "p"}, context)
    assert not visible({"actor": "a", "conversation": "c"}, context)
    assert not visible({"actor": "b"}, context)
