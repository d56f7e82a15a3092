"""The tool lists ``simone mcp`` answers before its runtime is open: shipped, and kept equal to the live ones.

A host lists tools right after the handshake, and the live list needs the runtime's imports (the tools'
argument models live beside their handlers: the router, the workflows, the memory store) — about as
much again as the MCP SDK itself. So every role's list under every tool profile is generated from the
real tools (:func:`live_tool_lists`) into ``tool_lists.json``, shipped beside this module, and
``simone mcp`` answers ``tools/list`` from it while the runtime still opens (:func:`shipped_tools`) —
when the shipped list is the live one, that is when all of these hold:

* the settings that shape the tools are those the file was generated under (:func:`listing_key`: the
  router's ``max_query_chars``, the retrieval tools' query limit);
* the provider packages are the built-in ones the file names, and no other factory is registered (a
  plugin factory may add tools the file cannot know);
* memory is local: with ``memory.url`` (PostgreSQL) the list waits for the store's connection, so a
  client is never given the tools of a server whose store it cannot reach.

Otherwise ``tools/list`` waits for the runtime, as before. Once the runtime is open,
:func:`~simone.agents.mcp.open_stdio_tools` compares the shipped list with the live one and logs a
warning if they differ (every later ``tools/list`` is the live one). ``tests/agents/test_mcp_fast_list.py``
checks that the file equals the live lists, role by role and profile by profile; regenerate it with
``python -m simone.agents.mcp._tool_list``.

This module imports only the MCP SDK's types and the tool profiles: none of simone's runtime.
"""

from __future__ import annotations

import json
import logging
import pkgutil
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp.types as types
from simone.agents.mcp._profiles import TOOL_PROFILE_NAMES, ToolProfile, tool_profile

if TYPE_CHECKING:
    from simone.agents._runtime import Runtime
    from simone.runtime import Settings

log = logging.getLogger(__name__)

SHIPPED = Path(__file__).with_name("tool_lists.json")
"""The shipped tool lists (package data), written by :func:`write_shipped`."""

FACTORY_MODULE = "_factory"
"""The module a ``simone.providers`` package registers its factory in (``simone.providers._discovery``'s;
not imported from there: it imports the runtime's contracts)."""


def provider_packages() -> list[str]:
    """The ``_factory`` modules provider discovery would import, by name, without importing them."""
    import simone.providers

    found: list[str] = []
    for info in sorted(pkgutil.iter_modules(simone.providers.__path__), key=lambda module: module.name):
        folders = [Path(path) / info.name for path in simone.providers.__path__]
        if info.ispkg and any((folder / f"{FACTORY_MODULE}.py").is_file() for folder in folders):
            found.append(f"simone.providers.{info.name}.{FACTORY_MODULE}")
    return found


def _foreign_factories(packages: list[str]) -> list[str]:
    """The sections of registered factories that none of ``packages`` defines (a plugin's, or a replacement)."""
    provider = sys.modules.get("simone.runtime._provider")  # not loaded: nothing is registered yet
    if provider is None:
        return []
    homes = tuple(name.removesuffix(FACTORY_MODULE) for name in packages)
    return [
        factory.section
        for factory in provider.PROVIDER_FACTORIES
        if not str(getattr(factory.open, "__module__", "")).startswith(homes)
    ]


def listing_key(settings: Settings) -> dict[str, Any]:
    """What the listed tools depend on besides the role and the profile: the shipped lists hold for one key."""
    return {
        "max_query_chars": settings.router.max_query_chars,
        "provider_packages": provider_packages(),
    }


@cache
def _shipped() -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # a broken install lists live, more slowly
        log.debug("no shipped tool lists (%s): tools/list waits for the runtime", exc)
        return None
    return data


def shipped_tools(settings: Settings, role: str, tools: ToolProfile | str) -> types.ListToolsResult | None:
    """``tools/list``'s answer for ``role`` under ``tools`` from the shipped lists, or ``None``.

    ``None`` when the shipped lists may not be the live ones (see the module docstring): other
    settings, other provider factories, a remote memory store, or no file.

    Raises:
        ConfigError: ``tools`` names no tool profile.
    """
    listed = tool_profile(tools)
    data = _shipped()
    if data is None or settings.memory.url is not None:
        return None
    key = listing_key(settings)
    if key != data.get("key") or _foreign_factories(key["provider_packages"]):
        return None
    try:
        names = data["lists"][role][listed.name]
        return types.ListToolsResult(tools=[types.Tool.model_validate(data["tools"][name]) for name in names])
    except (KeyError, TypeError, ValueError) as exc:  # an unknown role, a damaged file: list live
        log.debug("the shipped tool lists have no %s/%s list (%r)", role, listed.name, exc)
        return None


def check_shipped(
    settings: Settings, role: str, tools: ToolProfile | str, live: types.ListToolsResult
) -> bool:
    """Whether the shipped list :func:`shipped_tools` gives is ``live`` (or it gives none); else warn.

    ``simone mcp`` calls this once its runtime is open: a shipped list that has drifted from the tools
    is logged (a warning naming the fix) rather than silently served again.
    """
    shipped = shipped_tools(settings, role, tools)
    if shipped is None or _wire(shipped) == _wire(live):
        return True
    log.warning(
        "the shipped tool list for %s/%s differs from the live one (answered before the runtime opened; "
        "every later tools/list is the live one): regenerate %s with python -m simone.agents.mcp._tool_list",
        role,
        tool_profile(tools).name,
        SHIPPED.name,
    )
    return False


def _wire(listed: types.ListToolsResult) -> str:
    return listed.model_dump_json(by_alias=True, exclude_none=True)


def live_tool_lists(runtime: Runtime) -> dict[str, Any]:
    """Every role's ``tools/list`` under every profile, from ``runtime``'s registry: the file's content."""
    from simone.agents._tools import ORCHESTRATOR, RESEARCHER
    from simone.agents.mcp._server import listed_tools

    described: dict[str, Any] = {}
    lists: dict[str, dict[str, list[str]]] = {}
    for role in (ORCHESTRATOR, RESEARCHER):
        lists[role.name] = {}
        for name in TOOL_PROFILE_NAMES:
            listed = listed_tools(runtime, role, name).tools
            lists[role.name][name] = [tool.name for tool in listed]
            for tool in listed:
                described[tool.name] = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {
        "generated_by": "python -m simone.agents.mcp._tool_list (tests/agents/test_mcp_fast_list.py checks it)",
        "key": listing_key(runtime.settings),
        "tools": dict(sorted(described.items())),
        "lists": lists,
    }


async def generate() -> dict[str, Any]:
    """The lists of a runtime opened as ``simone mcp`` opens it, on default settings in a temporary folder."""
    import tempfile

    from simone.agents._runtime import Runtime
    from simone.runtime import Settings

    with tempfile.TemporaryDirectory(prefix="simone-tool-lists-") as folder:
        settings = Settings(data_dir=Path(folder))
        async with Runtime.open(settings, provider_options={"index": {"lazy": True}}) as runtime:
            return live_tool_lists(runtime)


def write_shipped(path: Path = SHIPPED) -> dict[str, Any]:
    """Generate the shipped lists (:func:`generate`) into ``path``; returns what was written."""
    import anyio

    data = anyio.run(generate)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return data


if __name__ == "__main__":
    written = write_shipped()
    print(f"wrote {SHIPPED} ({len(written['tools'])} tools)")  # noqa: T201 - a generator's one line
