"""simone.agents.mcp — simone's tools over the Model Context Protocol (the official ``mcp`` SDK).

:func:`tool_handlers` are the ``tools/list`` and ``tools/call`` handlers every transport serves: each
call runs in a fresh session of the caller's admitted context through the same registry and caller
rules as any agent, answered with compact text for the model (simone.agents' tool-result renderer) and
the structured model (``structuredContent``) for programs. Which tools ``tools/list`` shows is a
tool profile (:data:`TOOL_PROFILES`: ``core`` by default, ``full`` for every tool).
``simone mcp`` serves them over stdio (:func:`serve_stdio_opening` answers the handshake — and
``tools/list``, from the lists simone ships, :func:`shipped_tools` — while :func:`open_stdio_tools`
opens the runtime); ``simone serve`` (:mod:`simone.agents.serve`) serves
:func:`build_scoped_server` over HTTP. :mod:`simone.agents.mcp.testing` holds the MCP clients the tests
and benchmarks use.

Importing the package is cheap: each name is imported from its module the first time it is used
(PEP 562), so ``simone mcp`` reads :func:`serve_stdio_opening` (the SDK and anyio only) before its
handshake and the runtime after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.agents.mcp._memory_tool import (
        MemoryCall as MemoryCall,
        memory_call as memory_call,
    )
    from simone.agents.mcp._profiles import (
        DEFAULT_TOOLS as DEFAULT_TOOLS,
        MEMORY_ALIASES as MEMORY_ALIASES,
        MEMORY_TOOL as MEMORY_TOOL,
        TOOL_PROFILE_NAMES as TOOL_PROFILE_NAMES,
        TOOL_PROFILES as TOOL_PROFILES,
        ToolProfile as ToolProfile,
        tool_profile as tool_profile,
        tool_profiles_help as tool_profiles_help,
    )
    from simone.agents.mcp._server import (
        Scope as Scope,
        build_scoped_server as build_scoped_server,
        build_server as build_server,
        listed_tools as listed_tools,
        open_stdio_tools as open_stdio_tools,
        tool_handlers as tool_handlers,
    )
    from simone.agents.mcp._stdio import (
        ToolHandlers as ToolHandlers,
        serve_stdio_opening as serve_stdio_opening,
        server_version as server_version,
        stdio_instructions as stdio_instructions,
    )
    from simone.agents.mcp._tool_list import shipped_tools as shipped_tools

__all__ = (
    "DEFAULT_TOOLS",
    "MEMORY_ALIASES",
    "MEMORY_TOOL",
    "MemoryCall",
    "Scope",
    "TOOL_PROFILES",
    "TOOL_PROFILE_NAMES",
    "ToolHandlers",
    "ToolProfile",
    "build_scoped_server",
    "build_server",
    "listed_tools",
    "memory_call",
    "open_stdio_tools",
    "serve_stdio_opening",
    "server_version",
    "shipped_tools",
    "stdio_instructions",
    "tool_handlers",
    "tool_profile",
    "tool_profiles_help",
)

_HOMES: dict[str, str] = {
    "MemoryCall": "simone.agents.mcp._memory_tool",
    "memory_call": "simone.agents.mcp._memory_tool",
    "DEFAULT_TOOLS": "simone.agents.mcp._profiles",
    "MEMORY_ALIASES": "simone.agents.mcp._profiles",
    "MEMORY_TOOL": "simone.agents.mcp._profiles",
    "TOOL_PROFILE_NAMES": "simone.agents.mcp._profiles",
    "TOOL_PROFILES": "simone.agents.mcp._profiles",
    "ToolProfile": "simone.agents.mcp._profiles",
    "tool_profile": "simone.agents.mcp._profiles",
    "tool_profiles_help": "simone.agents.mcp._profiles",
    "Scope": "simone.agents.mcp._server",
    "build_scoped_server": "simone.agents.mcp._server",
    "build_server": "simone.agents.mcp._server",
    "listed_tools": "simone.agents.mcp._server",
    "open_stdio_tools": "simone.agents.mcp._server",
    "tool_handlers": "simone.agents.mcp._server",
    "ToolHandlers": "simone.agents.mcp._stdio",
    "serve_stdio_opening": "simone.agents.mcp._stdio",
    "server_version": "simone.agents.mcp._stdio",
    "stdio_instructions": "simone.agents.mcp._stdio",
    "shipped_tools": "simone.agents.mcp._tool_list",
}
"""Where each exported name lives (imported on first use by ``__getattr__``)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
