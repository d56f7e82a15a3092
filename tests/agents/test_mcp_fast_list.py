"""``simone mcp`` answers ``tools/list`` from the lists it ships — and they are the live lists (issue 32.3).

The shipped file (``simone.agents.mcp._tool_list``) is compared with the lists a real runtime builds
from the real tool models, for every role and tool profile, so the two can never drift; it is declined
whenever it may not be the live list (other tool settings, a plugin factory, a remote memory store).
Listing from it imports none of the runtime: checked by what a fresh process has imported, never by
timing (the timings are in ``benchmarks/startup.py``).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from pydantic import BaseModel
from simone.agents import ORCHESTRATOR, RESEARCHER, Runtime
from simone.agents.mcp import TOOL_PROFILE_NAMES, listed_tools
from simone.agents.mcp._tool_list import (
    SHIPPED,
    check_shipped,
    live_tool_lists,
    provider_packages,
    shipped_tools,
)
from simone.providers import discover_provider_packages
from simone.runtime import (
    PROVIDER_FACTORIES,
    OpenedProviders,
    ProviderFactory,
    RouterSettings,
    Settings,
    register_provider,
)

from tests.agents.test_mcp_stdio import LIST, _handshake, _receive, _send

REGENERATE = "the shipped tool lists are stale: run python -m simone.agents.mcp._tool_list"


def _wire(listed: types.ListToolsResult) -> str:
    return listed.model_dump_json(by_alias=True, exclude_none=True)


def _open(settings: Settings) -> Runtime:
    return Runtime.open(settings, provider_options={"index": {"lazy": True}})  # as simone mcp opens it


def test_the_shipped_lists_are_the_live_lists_for_every_role_and_profile(isolated_env: Path) -> None:
    settings = Settings(data_dir=isolated_env / "data")

    async def main() -> tuple[dict[str, Any], dict[str, str]]:
        async with _open(settings) as runtime:
            live = {
                f"{role.name}/{name}": _wire(listed_tools(runtime, role, name))
                for role in (ORCHESTRATOR, RESEARCHER)
                for name in TOOL_PROFILE_NAMES
            }
            return live_tool_lists(runtime), live

    generated, live = anyio.run(main)
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert shipped["key"] == generated["key"], REGENERATE
    assert shipped == generated, REGENERATE
    for combination, wire in live.items():
        role, name = combination.split("/")
        fast = shipped_tools(settings, role, name)
        assert fast is not None, combination
        assert _wire(fast) == wire, combination
    assert json.loads(live["orchestrator/core"])["tools"], "core lists tools"


def test_the_scan_finds_the_packages_discovery_imports() -> None:
    assert provider_packages() == discover_provider_packages()


def _perturbed(section: BaseModel, skip: set[str]) -> BaseModel:
    """``section`` with every number it accepts changed (one that its validation refuses is kept)."""
    values = section.model_dump()
    for name, value in section.model_dump().items():
        if name in skip or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        changed = value + 1 if isinstance(value, int) else value * 0.5 + 0.25
        try:
            type(section).model_validate({**values, name: changed})
        except ValueError:
            continue
        values[name] = changed
    return type(section).model_validate(values)


def test_only_the_keyed_settings_change_the_lists(isolated_env: Path) -> None:
    """Every other number in every section changed: the same lists (the key is complete); the query
    limit changed: other lists, and the shipped ones are declined."""
    base = Settings(data_dir=isolated_env / "data")
    sections = {
        name: _perturbed(getattr(base, name), {"max_query_chars"})
        for name, value in base
        if isinstance(value, BaseModel)
    }
    others = base.model_copy(update=sections)
    other_limit = base.model_copy(update={"router": RouterSettings(max_query_chars=1234)})

    async def lists(settings: Settings) -> dict[str, str]:
        async with _open(settings) as runtime:
            return {
                f"{role.name}/{name}": _wire(listed_tools(runtime, role, name))
                for role in (ORCHESTRATOR, RESEARCHER)
                for name in TOOL_PROFILE_NAMES
            }

    assert others != base
    assert anyio.run(lists, others) == anyio.run(lists, base)
    changed = anyio.run(lists, other_limit)
    assert '"maxLength":1234' in changed["orchestrator/core"]
    assert all(shipped_tools(other_limit, role.name, "core") is None for role in (ORCHESTRATOR, RESEARCHER))
    assert shipped_tools(others, "orchestrator", "core") is not None


def test_a_remote_store_a_plugin_factory_or_an_unknown_role_lists_live(isolated_env: Path) -> None:
    settings = Settings(data_dir=isolated_env / "data")
    assert shipped_tools(settings, "orchestrator", "core") is not None
    remote = settings.model_copy(
        update={"memory": settings.memory.model_copy(update={"url": "postgresql://simone@127.0.0.1:9/s"})}
    )
    assert shipped_tools(remote, "orchestrator", "core") is None
    assert shipped_tools(settings, "auditor", "core") is None

    async def nothing(setup: Any) -> OpenedProviders:
        return OpenedProviders()

    plugin: ProviderFactory[Any] = ProviderFactory(
        section="fast_list_plugin", settings=RouterSettings, open=nothing
    )
    register_provider(plugin)
    try:
        assert shipped_tools(settings, "orchestrator", "core") is None
    finally:
        PROVIDER_FACTORIES.unregister("fast_list_plugin")
    assert shipped_tools(settings, "orchestrator", "core") is not None


def test_a_shipped_list_that_drifted_is_logged(isolated_env: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(data_dir=isolated_env / "data")
    shipped = shipped_tools(settings, "orchestrator", "core")
    assert shipped is not None
    assert check_shipped(settings, "orchestrator", "core", shipped)
    drifted = types.ListToolsResult(tools=shipped.tools[1:])
    with caplog.at_level(logging.WARNING, logger="simone.agents.mcp._tool_list"):
        assert not check_shipped(settings, "orchestrator", "core", drifted)
    assert "python -m simone.agents.mcp._tool_list" in caplog.text


LISTING_PROBE = textwrap.dedent(
    """
    import json, sys
    from simone.agents.cli import _mcp
    from simone.agents.mcp._tool_list import shipped_tools
    from simone.runtime import load_settings
    settings = load_settings()
    listed = {
        f"{role}/{name}": [tool.name for tool in shipped_tools(settings, role, name).tools]
        for role in ("orchestrator", "researcher")
        for name in ("core", "retrieval", "memory", "full")
    }
    print(json.dumps({"listed": listed, "modules": sorted(sys.modules)}))
    """
)

HEAVY = (
    "lancedb",
    "onnxruntime",
    "numpy",
    "pyarrow",
    "simone.agents._runtime",
    "simone.agents._tools",
    "simone.agents._builtin",
    "simone.providers.memory",
    "simone.runtime._provider",
    "simone.workflows",
)
"""What building the tools imports, and listing them from the shipped file must not."""


def test_listing_from_the_shipped_lists_imports_none_of_the_runtime(isolated_env: Path) -> None:
    env = {"SIMONE_DATA_DIR": str(isolated_env / "data"), "PATH": "/usr/bin:/bin", "HOME": str(isolated_env)}
    done = subprocess.run(
        [sys.executable, "-c", LISTING_PROBE],
        env=env,
        cwd=isolated_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["listed"]["orchestrator/core"] == [
        "delegate_research",
        "memory",
        "retrieve_context",
        "retrieve_memory",
    ]
    assert seen["listed"]["researcher/core"] == ["retrieve_context", "web_research"]
    imported = [name for name in seen["modules"] if name.split(".")[0] in HEAVY or name in HEAVY]
    imported += [name for name in seen["modules"] if any(name.startswith(f"{heavy}.") for heavy in HEAVY)]
    assert not imported, imported


# serve_stdio_opening with an early list: answered while the tools are closed, theirs once open.
EARLY_SERVER = textwrap.dedent(
    """
    import sys
    from contextlib import asynccontextmanager
    from pathlib import Path
    import anyio
    import mcp.types as types
    from simone.agents.mcp import ToolHandlers, serve_stdio_opening

    gate = Path(sys.argv[1])

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="opened", input_schema={"type": "object"})])

    async def call_tool(ctx, params):
        return types.CallToolResult(content=[types.TextContent(type="text", text="called")])

    @asynccontextmanager
    async def open_tools():
        while not gate.exists():
            await anyio.sleep(0.02)
        yield ToolHandlers(list_tools=list_tools, call_tool=call_tool)

    def early():
        return types.ListToolsResult(tools=[types.Tool(name="shipped", input_schema={"type": "object"})])

    failure = anyio.run(
        lambda: serve_stdio_opening(
            open_tools, name="early", version="1", instructions="i", report=print, early_list=early
        )
    )
    sys.exit(0 if failure is None else 1)
    """
)


def test_the_early_list_is_answered_while_the_tools_open_and_theirs_after(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    proc = subprocess.Popen(
        [sys.executable, "-c", EARLY_SERVER, str(gate)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _handshake(proc)
        _send(proc, LIST)
        assert [tool["name"] for tool in _receive(proc, 2)["result"]["tools"]] == ["shipped"]
        assert not gate.exists()  # answered while the tools were still closed
        gate.touch()
        _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "opened"}})
        assert _receive(proc, 3)["result"]["content"][0]["text"] == "called"  # waited for the tools
        _send(proc, {**LIST, "id": 4})
        assert [tool["name"] for tool in _receive(proc, 4)["result"]["tools"]] == ["opened"]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        code = proc.wait(timeout=30)
    assert code == 0
