"""The memory tools agents call: every kind through create/update/complete/list/search, items, delete."""

from __future__ import annotations

from typing import Any

import pytest
from simone.providers.memory import (
    MEMORY_TOOL_NAMES,
    MEMORY_TOOLS,
    HitsResult,
    MemoryTool,
    RecordResult,
    RecordsResult,
    SQLiteMemoryStore,
    memory_tool as _memory_tool,
)
from simone.runtime import InvalidRequest, NotFound, TrustedContext


class _AsJSON:
    """A memory tool whose results are read here as their JSON (what an MCP client receives)."""

    def __init__(self, tool: MemoryTool) -> None:
        self.tool = tool

    async def invoke(self, store: SQLiteMemoryStore, context: TrustedContext, raw: Any) -> dict[str, Any]:
        result = await self.tool.invoke(store, context, raw)
        assert isinstance(result, RecordResult | RecordsResult | HitsResult)
        assert isinstance(result, self.tool.result_model)  # each tool returns the model it declares
        return result.model_dump(mode="json")


def memory_tool(name: str) -> _AsJSON:
    return _AsJSON(_memory_tool(name))


pytestmark = pytest.mark.anyio

CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = [
    (
        "note",
        "notes",
        {"title": "Wifi password", "body": "ask the front desk"},
        {"body": "printed on the fridge"},
        "archived",
    ),
    ("todo", "todos", {"title": "Book flights", "priority": "high"}, {"status": "in_progress"}, "completed"),
    (
        "checklist",
        "checklists",
        {"title": "Packing", "items": [{"text": "passport"}]},
        {"title": "Packing list"},
        "completed",
    ),
    (
        "fact",
        "facts",
        {"subject": "Flight", "predicate": "departs at", "object": "09:40"},
        {"confidence": 0.6},
        "retired",
    ),
    (
        "task_state",
        "task_states",
        {"name": "Trip planning", "phase": "research"},
        {"phase": "booking", "progress": 0.4},
        "completed",
    ),
]


@pytest.mark.parametrize(("one", "many", "create", "update", "done"), CASES)
async def test_tool_cycle_for_each_kind(
    store: SQLiteMemoryStore,
    alice: TrustedContext,
    one: str,
    many: str,
    create: dict[str, Any],
    update: dict[str, Any],
    done: str,
) -> None:
    created = (await memory_tool(f"create_{one}").invoke(store, alice, create))["record"]
    assert created["kind"] == one and created["scope"]["actor"] == "alice"
    updated = (await memory_tool(f"update_{one}").invoke(store, alice, {"id": created["id"], **update}))[
        "record"
    ]
    assert updated["revision"] == 2
    listed = await memory_tool(f"list_{many}").invoke(store, alice, {})
    assert [r["id"] for r in listed["records"]] == [created["id"]]
    word = next(iter(create.values())).split()[0]
    found = await memory_tool(f"search_{many}").invoke(store, alice, {"query": word})
    assert [h["id"] for h in found["hits"]] == [created["id"]] and found["hits"][0]["text"]
    completed = (await memory_tool(f"complete_{one}").invoke(store, alice, f'{{"id": "{created["id"]}"}}'))[
        "record"
    ]
    assert completed["status"] == done
    other_kind = "note" if one != "note" else "todo"
    with pytest.raises(InvalidRequest, match=f"is a {one}, not a {other_kind}"):
        await memory_tool(f"complete_{other_kind}").invoke(store, alice, {"id": created["id"]})
    deleted = (await memory_tool("delete_memory").invoke(store, alice, {"id": created["id"]}))["record"]
    assert deleted["deleted_at"] is not None
    assert (await memory_tool(f"list_{many}").invoke(store, alice, {"include_inactive": True}))[
        "records"
    ] == []


async def test_checklist_item_tools(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    checklist = (await memory_tool("create_checklist").invoke(store, alice, {"title": "Launch"}))["record"]
    cid = checklist["id"]
    record = (
        await memory_tool("add_checklist_item").invoke(
            store, alice, {"checklist_id": cid, "text": "write post"}
        )
    )["record"]
    first = record["items"][0]["id"]
    record = (
        await memory_tool("add_checklist_item").invoke(
            store, alice, {"checklist_id": cid, "text": "review", "parent_id": first}
        )
    )["record"]
    second = record["items"][0]["children"][0]["id"]
    record = (
        await memory_tool("update_checklist_item").invoke(
            store, alice, {"checklist_id": cid, "item_id": second, "status": "completed"}
        )
    )["record"]
    assert record["items"][0]["children"][0]["status"] == "completed"
    record = (
        await memory_tool("move_checklist_item").invoke(
            store, alice, {"checklist_id": cid, "item_id": second, "position": 0}
        )
    )["record"]
    assert [item["text"] for item in record["items"]] == ["review", "write post"]
    with pytest.raises(InvalidRequest, match="into itself"):
        await memory_tool("move_checklist_item").invoke(
            store, alice, {"checklist_id": cid, "item_id": first, "parent_id": first}
        )
    record = (
        await memory_tool("remove_checklist_item").invoke(
            store, alice, {"checklist_id": cid, "item_id": first}
        )
    )["record"]
    assert [item["text"] for item in record["items"]] == ["review"]


async def test_bad_arguments_are_typed_errors(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    create = memory_tool("create_note")
    for raw in (
        {},
        {"title": ""},
        {"title": "x", "colour": "red"},
        "not json",
        "[1, 2]",
        {"title": "x", "tags": ["two words"]},
    ):
        with pytest.raises(InvalidRequest, match="create_note"):
            await create.invoke(store, alice, raw)
    with pytest.raises(InvalidRequest, match="valid_until must be after valid_from"):
        await memory_tool("create_fact").invoke(
            store,
            alice,
            {
                "subject": "a",
                "predicate": "b",
                "object": "c",
                "valid_from": "2026-02-01T00:00:00Z",
                "valid_until": "2026-01-01T00:00:00Z",
            },
        )
    with pytest.raises(InvalidRequest, match="timezone"):
        await memory_tool("create_todo").invoke(store, alice, {"title": "x", "due_at": "2026-02-01T00:00:00"})
    with pytest.raises(NotFound):
        await memory_tool("update_note").invoke(store, alice, {"id": "note-404", "title": "x"})
    with pytest.raises(InvalidRequest, match="no memory tool"):
        memory_tool("drop_database")


def test_tool_catalogue() -> None:
    assert len(MEMORY_TOOL_NAMES) == len(set(MEMORY_TOOL_NAMES)) == 30
    for tool in MEMORY_TOOLS:
        assert tool.description and tool.parameters()["type"] == "object"
        assert tool.args_model.model_config.get("extra") == "forbid"
        assert tool.result_model in (RecordResult, RecordsResult, HitsResult)
