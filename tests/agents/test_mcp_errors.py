"""The MCP server answers every call: a tool's unexpected failure is that call's error result, never a
dead session or a bare "Internal server error"; text the transport cannot encode is scrubbed."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel, ConfigDict
from simone.agents import Runtime
from simone.agents._tools import AgentProfile, Tool, ToolContext
from simone.agents.mcp import build_server
from simone.runtime import Caller, InvalidRequest, Settings


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""


class _Echo(BaseModel):
    text: str


async def _crash(context: ToolContext, args: _Args) -> _Echo:
    raise KeyError("terms")


async def _grouped(context: ToolContext, args: _Args) -> _Echo:
    async def fail() -> None:
        raise InvalidRequest("the query is empty")

    async with anyio.create_task_group() as group:
        group.start_soon(fail)
    return _Echo(text="unreachable")


async def _echo(context: ToolContext, args: _Args) -> _Echo:
    return _Echo(text=args.text + "\ud800")


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("crash", "InternalError: crash failed (KeyError)"),
        ("grouped", "InvalidRequest: the query is empty"),
    ],
)
def test_an_unexpected_tool_failure_is_that_calls_error(tmp_path: Path, tool: str, expected: str) -> None:
    async def main_() -> None:
        async with Runtime.open(Settings(data_dir=tmp_path / "data")) as runtime:
            for name, handler in (("crash", _crash), ("grouped", _grouped), ("echo", _echo)):
                runtime.registry.register(Tool(name=name, description=name, args=_Args, handler=handler))
            profile = AgentProfile(name="tester", caller=Caller.ORCHESTRATOR, tools=frozenset({tool, "echo"}))
            context = runtime.admit({"actor": "alice"}, caller=Caller.ORCHESTRATOR)
            async with Client(build_server(runtime, context, profile)) as client:
                failed = await client.call_tool(tool, {})
                assert failed.is_error
                assert failed.content[0].text.startswith(expected)  # type: ignore[union-attr]
                # the session survives: the next call answers
                echoed = await client.call_tool("echo", {"text": "ok"})
                assert not echoed.is_error
                assert echoed.structured_content == {"text": "ok\ufffd"}

    anyio.run(main_)


def test_each_tool_call_is_a_server_span_in_the_callers_trace(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"

    async def main_() -> None:
        async with Runtime.open(Settings(data_dir=tmp_path / "data")) as runtime:
            for name, handler in (("crash", _crash), ("echo", _echo)):
                runtime.registry.register(Tool(name=name, description=name, args=_Args, handler=handler))
            profile = AgentProfile(
                name="tester", caller=Caller.ORCHESTRATOR, tools=frozenset({"crash", "echo"})
            )
            context = runtime.admit({"actor": "alice"}, caller=Caller.ORCHESTRATOR)
            async with Client(build_server(runtime, context, profile)) as client:
                meta = {"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"}
                assert not (await client.call_tool("echo", {"text": "private words"}, meta=meta)).is_error  # type: ignore[arg-type]
                assert (await client.call_tool("crash", {})).is_error

    anyio.run(main_)
    calls = {s.name: s for s in spans.get_finished_spans() if s.name.startswith("tools/call")}
    assert set(calls) == {"tools/call echo", "tools/call crash"}
    echo, crash = calls["tools/call echo"], calls["tools/call crash"]
    assert format(echo.context.trace_id, "032x") == trace_id
    assert (echo.attributes or {})["gen_ai.tool.name"] == "echo"
    assert echo.status.status_code is StatusCode.UNSET
    assert (
        crash.status.status_code is StatusCode.ERROR
        and (crash.attributes or {})["error.type"] == "tool_error"
    )
    assert not any(
        "private words" in str(v) for s in spans.get_finished_spans() for v in (s.attributes or {}).values()
    )
