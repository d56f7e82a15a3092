"""The MCP server: simone's tools over stdio with the official ``mcp`` SDK (low-level server API).

The server admits one event when it starts (actor, project, conversation… from its command line or
environment — never from a tool call) under a role: ``orchestrator`` (retrieve_context,
retrieve_memory, the memory tools, delegate_research) or ``researcher`` (web_research and
retrieve_context). Each tool call runs in that session through the same registry and caller rules as
any agent: scope-carrying arguments are refused with ScopeViolation, and the providers check the
caller again. Results are the structured models (``structuredContent``) plus their JSON as text.
"""

from __future__ import annotations

import json
import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from simone.agents._runtime import Runtime
from simone.agents._tools import AgentProfile
from simone.runtime import SimoneError, TrustedContext

log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return version("simone")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


def build_server(runtime: Runtime, context: TrustedContext, profile: AgentProfile) -> Server[Any]:
    """An MCP server with ``profile``'s tools, every call run in ``context`` (admitted at start-up).

    Each call gets a fresh session (and so a fresh budget) in that context: a long-running server
    never runs out of wall time, and one call cannot spend another's budget.
    """
    tools = runtime.registry.for_profile(profile)
    by_name = {tool.name: tool for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.spec().parameters)
                for t in tools
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        if name not in by_name:
            return _error(f"UnknownTool: the {profile.name} has no tool {name!r}")
        try:
            result = await runtime.session(context, profile=profile).call(name, dict(params.arguments or {}))
            data = _scrub(result.model_dump(mode="json"))
        except SimoneError as exc:
            return _error(f"{type(exc).__name__}: {_text(exc)}")
        except Exception as exc:  # last resort: a tool's bug is this call's error, not the server's
            known = _simone_error(exc)
            if known is not None:
                return _error(f"{type(known).__name__}: {_text(known)}")
            log.error("tool %s failed unexpectedly", name, exc_info=exc)
            return _error(
                f"InternalError: {name} failed ({type(exc).__name__}); the call did not complete and "
                "the server's log has the traceback"
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
            structured_content=data,
        )

    def schema(name: str) -> dict[str, Any] | None:
        tool = by_name.get(name)
        return tool.spec().parameters if tool is not None else None

    return Server(
        "simone",
        version=_version(),
        instructions=(
            f"simone {profile.name} tools. Scope comes from the server's admitted context "
            f"(actor {context.actor!r}); tool arguments never carry scope."
        ),
        get_tool_input_schema=schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=_scrub(message))], is_error=True)


def _simone_error(exc: BaseException) -> SimoneError | None:
    """The one SimoneError inside ``exc``'s exception groups (a task group's wrapping), if it is alone."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, SimoneError) else None


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - an error whose str() fails still gets a message
        return "(no message)"


def _scrub(value: Any) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD: the transport writes UTF-8, which has none."""
    if isinstance(value, str):
        if value.isascii():
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_scrub(key): _scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


async def serve_stdio(runtime: Runtime, context: TrustedContext, profile: AgentProfile) -> None:
    """Serve ``profile``'s tools in ``context`` over stdin/stdout until the client disconnects."""
    server = build_server(runtime, context, profile)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
