"""The tool surface a model reads: every tool and every property described, schemas without noise."""

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.agents import ORCHESTRATOR, RESEARCHER, Runtime, bundled_docs
from simone.agents._tools import Tool, compact_schema
from simone.agents.mcp.testing import stdio_mcp_client
from simone.providers.documents import DOCUMENT_INDEX
from simone.runtime import Settings


def _undescribed(schema: Any, where: str) -> list[str]:
    """Paths of properties (nested ones and those under ``$defs`` included) with no description."""
    missing: list[str] = []
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if not (isinstance(sub, dict) and str(sub.get("description") or "").strip()):
                missing.append(f"{where}.{name}")
        for key, value in schema.items():
            if key in ("properties", "$defs") and isinstance(value, dict):
                for name, sub in value.items():
                    missing += _undescribed(sub, f"{where}.{name}")
            elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
                missing += _undescribed(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for index, sub in enumerate(schema):
            missing += _undescribed(sub, f"{where}[{index}]")
    return missing


def _titles(schema: Any) -> int:
    """How many ``title`` annotations a compact schema still has (a property named title is not one)."""
    if isinstance(schema, list):
        return sum(_titles(sub) for sub in schema)
    if not isinstance(schema, dict):
        return 0
    count = int("title" in schema)
    for key, value in schema.items():
        if key in ("properties", "$defs"):
            count += sum(_titles(sub) for sub in value.values())
        elif key not in ("enum", "const", "default", "examples"):
            count += _titles(value)
    return count


def test_every_tool_and_every_property_of_every_profile_is_described(tmp_path: Path) -> None:
    async def main() -> dict[str, list[Tool[Any]]]:
        async with Runtime(Settings(data_dir=tmp_path / "data"), web=False) as runtime:
            tools = {p.name: runtime.registry.for_profile(p) for p in (ORCHESTRATOR, RESEARCHER)}
            tools["registered"] = [runtime.registry.get(name) for name in runtime.registry.names()]
            return tools

    profiles = anyio.run(main)
    assert {t.name for t in profiles["orchestrator"]} >= {"retrieve_context", "create_note", "delete_memory"}
    assert {t.name for t in profiles["researcher"]} == {"web_research", "retrieve_context"}
    checked = 0
    for profile, tools in profiles.items():
        for tool in tools:
            spec = tool.spec()
            assert spec.description.strip(), f"{profile}: {tool.name} has no description"
            assert spec.parameters["properties"], f"{tool.name} has no properties"
            missing = _undescribed(spec.parameters, tool.name)
            assert not missing, f"{profile}: undescribed properties {missing}"
            assert _titles(spec.parameters) == 0, f"{tool.name}: the schema still carries titles"
            checked += len(spec.parameters["properties"])
    assert checked > 100  # the walk saw the memory tools' properties, not an empty list


def test_compact_schema_drops_titles_but_keeps_properties_named_title_and_data() -> None:
    schema = {
        "title": "NoteCreate",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string", "description": "a short title"},
            "meta": {"default": {"title": "kept"}, "enum": [{"title": 1}], "type": "object"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "mode": {"anyOf": [{"title": "A", "type": "string"}, {"type": "null"}]},
        },
        "$defs": {"Item": {"title": "Item", "properties": {"title": {"title": "T", "type": "string"}}}},
    }
    compact = compact_schema(schema)
    assert "title" not in compact
    assert compact["properties"]["title"] == {"type": "string", "description": "a short title"}
    assert compact["properties"]["meta"]["default"] == {"title": "kept"}  # data is never touched
    assert compact["properties"]["meta"]["enum"] == [{"title": 1}]
    assert compact["properties"]["mode"]["anyOf"][0] == {"type": "string"}
    assert compact["$defs"]["Item"] == {"properties": {"title": {"type": "string"}}}
    assert schema["title"] == "NoteCreate"  # the input is not changed


@pytest.mark.slow
def test_an_mcp_client_reads_compact_text_and_programs_get_the_structured_result(isolated_env: Path) -> None:
    """Needs the renderer wired into ``simone.agents.mcp`` (call_tool's text content)."""
    data = isolated_env / "data"
    docs = bundled_docs()
    assert docs is not None

    async def main_() -> None:
        async with Runtime(Settings(data_dir=data), memory=False, web=False) as runtime:
            await runtime.published.require(DOCUMENT_INDEX).index_paths([docs])
        errlog = isolated_env / "mcp-server.log"
        async with stdio_mcp_client(data, actor="alice", cwd=isolated_env, errlog=errlog) as client:
            listed = (await client.list_tools()).tools
            for tool in listed:
                assert tool.description and not _undescribed(tool.input_schema, tool.name)
            result = await client.call_tool("retrieve_context", {"query": "reciprocal rank fusion"})
            assert not result.is_error
            structured: Any = result.structured_content
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("retrieve_context: ") and "<<<EVIDENCE n=1 " in text
            evidence = structured["evidence"]
            assert evidence and structured["request"]["caller"] == "orchestrator"
            for number, item in enumerate(evidence, start=1):
                assert f"<<<EVIDENCE n={number} " in text and f'locator="{item["locator"]}"' in text
            assert len(text) < len(json.dumps(structured, ensure_ascii=False))

            created = await client.call_tool("create_note", {"title": "Fusion", "body": "Weights are equal."})
            record: Any = created.structured_content
            note = record["record"]  # the result model (RecordResult) as JSON
            assert created.content[0].text.startswith("create_note: 1 record")  # type: ignore[union-attr]
            assert f"id={note['id']}" in created.content[0].text  # type: ignore[union-attr]

    anyio.run(main_)
