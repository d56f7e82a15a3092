"""Tool profiles (issue 31.1): the default list's size, every profile described, the ``memory`` tool, old names.

The lists are measured as ``tools/list`` puts them on the wire (the MCP SDK's JSON of name,
description and inputSchema) — a deterministic fact of the code, so a bound on it is a fair test. Calls
go through the official MCP client connected in-process to the real server over a real runtime (SQLite
memory in a temporary folder).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from pydantic import BaseModel, ConfigDict, Field
from simone.agents import ORCHESTRATOR, RESEARCHER, AgentProfile, Runtime, Tool, ToolContext
from simone.agents.mcp import (
    DEFAULT_TOOLS,
    MEMORY_ALIASES,
    MEMORY_TOOL,
    TOOL_PROFILE_NAMES,
    TOOL_PROFILES,
    build_server,
    listed_tools,
    memory_call,
    tool_profile,
)
from simone.agents.mcp._memory_tool import MEMORY_SCHEMA
from simone.agents.mcp.testing import result_text
from simone.providers.memory import MEMORY_TOOL_NAMES, MEMORY_TOOLS, RecordKind
from simone.runtime import Caller, ConfigError, InvalidRequest, ScopeViolation, Settings

from tests.agents.test_tool_surface import _undescribed

MAX_DEFAULT_CHARS = 8_000
"""The default orchestrator list's bound (issue 31: ~26,900 characters before profiles)."""


def _wire(runtime: Runtime, profile: AgentProfile, tools: str) -> str:
    return listed_tools(runtime, profile, tools).model_dump_json(by_alias=True, exclude_none=True)


def _with_runtime(tmp_path: Path, body: Callable[[Runtime], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Runtime(Settings(data_dir=tmp_path / "data"), web=False) as runtime:
            return await body(runtime)

    return anyio.run(main)


def test_the_default_list_is_small_and_every_profile_is_described(tmp_path: Path) -> None:
    async def body(runtime: Runtime) -> dict[str, Any]:
        out: dict[str, Any] = {"registered": runtime.registry.names()}
        for role in (ORCHESTRATOR, RESEARCHER):
            for name in TOOL_PROFILE_NAMES:
                out[f"{role.name}/{name}"] = (
                    listed_tools(runtime, role, name).tools,
                    _wire(runtime, role, name),
                )
        out["default"] = _wire(runtime, ORCHESTRATOR, DEFAULT_TOOLS)
        return out

    seen = _with_runtime(tmp_path, body)
    assert DEFAULT_TOOLS == "core" and TOOL_PROFILE_NAMES[0] == "core"
    assert len(seen["default"]) <= MAX_DEFAULT_CHARS, len(seen["default"])
    core = {t.name for t in seen["orchestrator/core"][0]}
    assert core == {"retrieve_context", "retrieve_memory", "delegate_research", MEMORY_TOOL}
    assert {t.name for t in seen["researcher/core"][0]} == {"retrieve_context", "web_research"}
    full = {t.name for t in seen["orchestrator/full"][0]}
    assert full == {*set(seen["registered"]) - {"web_research"}, MEMORY_TOOL}
    assert set(MEMORY_TOOL_NAMES) <= full
    assert {t.name for t in seen["orchestrator/retrieval"][0]} == {"retrieve_context", "retrieve_memory"}
    assert {t.name for t in seen["orchestrator/memory"][0]} == {MEMORY_TOOL, "retrieve_memory"}
    properties = 0
    for key, value in seen.items():
        if "/" not in key:
            continue
        tools, _ = value
        for tool in tools:
            assert (tool.description or "").strip(), f"{key}: {tool.name} has no description"
            missing = _undescribed(tool.input_schema, tool.name)
            assert not missing, f"{key}: undescribed properties {missing}"
            properties += len(tool.input_schema.get("properties", {}))
    assert properties > 200  # the walk saw every profile's properties, the full lists included
    assert len(seen["orchestrator/full"][1]) > 3 * len(seen["default"])  # the full set is still there


def test_the_memory_schema_names_every_field_of_every_per_kind_tool() -> None:
    """The one tool can say everything the 30 can: no field is missing from its schema."""
    properties = set(MEMORY_SCHEMA["properties"])
    for tool in MEMORY_TOOLS:
        fields = set(tool.args_model.model_fields) - {"kind"}
        if "checklist_id" in fields:  # the item actions take the checklist's id as ``id``
            fields = (fields - {"checklist_id"}) | {"id"}
        assert fields <= properties, f"{tool.name}: {sorted(fields - properties)} missing"
    assert set(MEMORY_SCHEMA["properties"]["kind"]["enum"]) == {kind.value for kind in RecordKind}
    assert set(MEMORY_ALIASES) == set(MEMORY_TOOL_NAMES)


@pytest.mark.parametrize(
    ("arguments", "tool", "passed"),
    [
        ({"action": "create", "kind": "note", "title": "t"}, "create_note", {"title": "t", "kind": "note"}),
        ({"action": "update", "kind": "todo", "id": "x", "due_at": None}, "update_todo", None),
        ({"action": "complete", "kind": "task_state", "id": "x"}, "complete_task_state", {"id": "x"}),
        ({"action": "list", "kind": "fact", "status": "active"}, "list_facts", {"status": ["active"]}),
        ({"action": "search", "kind": "checklist", "query": "q"}, "search_checklists", {"query": "q"}),
        ({"action": "delete", "id": "x"}, "delete_memory", {"id": "x"}),
        (
            {"action": "add_item", "id": "c", "text": "i"},
            "add_checklist_item",
            {"checklist_id": "c", "text": "i"},
        ),
        (
            {"action": "remove_item", "kind": "checklist", "id": "c", "item_id": "i"},
            "remove_checklist_item",
            None,
        ),
    ],
)
def test_a_memory_call_maps_to_its_per_kind_tool(
    arguments: dict[str, Any], tool: str, passed: dict[str, Any] | None
) -> None:
    call = memory_call(arguments)
    assert call.tool == tool
    assert MEMORY_ALIASES[tool][0] == arguments["action"]
    if passed is not None:
        assert call.arguments == passed
    if tool == "update_todo":
        assert call.arguments == {"id": "x", "due_at": None, "kind": "todo"}  # an explicit null is kept


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "action must be one of"),
        ({"action": "fly"}, "action must be one of"),
        ({"action": ["create"]}, "action must be one of"),
        ({"action": "create"}, "needs kind"),
        ({"action": "list", "kind": "diary"}, "not 'diary'"),
        ({"action": "create", "kind": "note", "id": "x", "title": "t"}, "leave id out"),
        ({"action": "add_item", "kind": "note", "id": "x"}, "works on checklists"),
        ({"action": "add_item", "id": "x", "checklist_id": "y"}, "once"),
    ],
)
def test_a_bad_memory_call_says_what_to_fix(arguments: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidRequest, match=expected):
        memory_call(arguments)


def test_a_memory_call_never_carries_scope() -> None:
    for arguments in (
        {"action": "list", "kind": "note", "actor": "bob"},
        {"action": "create", "kind": "note", "title": "t", "tags": [{"project": "x"}]},
    ):
        with pytest.raises(ScopeViolation):
            memory_call(arguments)


def test_an_unknown_profile_is_a_config_error_naming_the_profiles() -> None:
    assert tool_profile("FULL") is TOOL_PROFILES["full"]
    with pytest.raises(ConfigError, match="core, retrieval, memory, full"):
        tool_profile("everything")


def test_old_names_still_work_on_the_default_profile_and_say_they_are_deprecated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def body(runtime: Runtime) -> dict[str, Any]:
        context = runtime.admit({"actor": "alice"}, timeout_s=None)
        out: dict[str, Any] = {}
        async with Client(build_server(runtime, context, ORCHESTRATOR)) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert "create_note" not in listed and MEMORY_TOOL in listed
            old = await client.call_tool("create_note", {"title": "Old name", "body": "still works"})
            out["old"] = old
            new = await client.call_tool(
                "memory", {"action": "create", "kind": "todo", "title": "New tool", "priority": "high"}
            )
            out["new"] = new
            todo_id = new.structured_content["record"]["id"]
            out["done"] = await client.call_tool(
                "memory", {"action": "complete", "kind": "todo", "id": todo_id}
            )
            out["list"] = await client.call_tool("list_todos", {"status": ["completed"]})
            out["search"] = await client.call_tool(
                "memory", {"action": "search", "kind": "note", "query": "old"}
            )
            out["misfit"] = await client.call_tool(
                "memory", {"action": "create", "kind": "note", "title": "x", "priority": "high"}
            )
            out["scope"] = await client.call_tool(
                "memory", {"action": "list", "kind": "note", "actor": "bob"}
            )
            out["web"] = await client.call_tool("web_research", {"question": "what is new?"})
        async with Client(build_server(runtime, context, ORCHESTRATOR, tools="full")) as client:
            out["full"] = await client.call_tool("create_note", {"title": "Listed here", "body": "no notice"})
        async with Client(build_server(runtime, context, ORCHESTRATOR, tools="retrieval")) as client:
            out["readonly"] = await client.call_tool("create_note", {"title": "refused"})
            out["readonly_memory"] = await client.call_tool("memory", {"action": "list", "kind": "note"})
        return out

    with caplog.at_level(logging.WARNING, logger="simone.agents.mcp._server"):
        out = _with_runtime(tmp_path, body)
    old = out["old"]
    assert not old.is_error, result_text(old)
    text = result_text(old)
    assert text.startswith("create_note: 1 record") and "Old name" in text
    assert text.rstrip().endswith(
        'call memory {"action": "create", "kind": "note", …the same fields} instead'
    )
    assert "deprecated: create_note is an old tool name" in text
    assert old.meta is not None and old.meta["simone/deprecated"]["tool"] == "create_note"
    assert old.structured_content["record"]["title"] == "Old name"
    assert any("create_note is an old tool name" in r.getMessage() for r in caplog.records)
    new = out["new"]
    assert not new.is_error and result_text(new).startswith("memory create todo: 1 record")
    assert "deprecated" not in result_text(new)
    assert new.structured_content["record"]["priority"] == "high"
    assert not out["done"].is_error and out["done"].structured_content["record"]["status"] == "completed"
    assert "New tool" in result_text(out["list"]) and "deprecated: list_todos" in result_text(out["list"])
    assert "Old name" in result_text(out["search"])
    misfit = result_text(out["misfit"])
    assert out["misfit"].is_error and misfit.startswith("InvalidRequest: memory create note:")
    assert "priority" in misfit and "its fields: tags, title, body" in misfit
    assert out["scope"].is_error and "ScopeViolation" in result_text(out["scope"])
    assert out["web"].is_error and "UnknownTool: the orchestrator has no tool 'web_research'" in result_text(
        out["web"]
    )
    assert not out["full"].is_error and "deprecated" not in result_text(out["full"])
    assert out["full"].meta is None or "simone/deprecated" not in out["full"].meta
    for refused in (out["readonly"], out["readonly_memory"]):  # a profile narrows; an alias never widens it
        assert refused.is_error and "UnknownTool" in result_text(refused)
        assert "'retrieval' tool profile" in result_text(refused)


class _EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="what to say back")


async def _echo(tool_context: ToolContext, args: _EchoArgs) -> BaseModel:
    return args


def test_a_developers_own_tools_are_listed_under_every_profile(tmp_path: Path) -> None:
    """A profile chooses among simone's tools; the developer's agent profile has chosen its own."""

    async def body(runtime: Runtime) -> dict[str, set[str]]:
        runtime.registry.register(
            Tool(name="echo", description="Say it back.", args=_EchoArgs, handler=_echo)
        )
        mine = AgentProfile(
            name="mine",
            caller=Caller.ORCHESTRATOR,
            tools=frozenset({"echo", "retrieve_context", "create_note"}),
        )
        return {
            name: {t.name for t in listed_tools(runtime, mine, name).tools} for name in TOOL_PROFILE_NAMES
        }

    seen = _with_runtime(tmp_path, body)
    assert seen["retrieval"] == {"echo", "retrieve_context"}
    assert seen["core"] == {"echo", "retrieve_context", MEMORY_TOOL}  # create_note stands behind memory
    assert seen["full"] == {"echo", "retrieve_context", "create_note", MEMORY_TOOL}
