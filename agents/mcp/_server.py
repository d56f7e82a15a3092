"""The MCP server: simone's tools over stdio with the official ``mcp`` SDK (low-level server API).

The server admits one event when it starts (actor, project, conversation… from its command line or
environment — never from a tool call) under a role: ``orchestrator`` (retrieve_context,
retrieve_memory, the memory tools, delegate_research) or ``researcher`` (web_research and
retrieve_context). Each tool call runs in that session through the same registry and caller rules as
any agent: scope-carrying arguments are refused with ScopeViolation, and the providers check the
caller again. Results are compact text for the model (numbered, contained evidence with locators and
trust; memory records with their ids — :mod:`simone.agents._tool_text`) plus the structured model as
``structuredContent`` for programs. Each call is an OpenTelemetry server span ``tools/call {tool}``
(:mod:`simone.runtime.tracing`), a child of the caller's trace when ``_meta`` carries a ``traceparent``.

``simone mcp`` serves these handlers (:func:`open_stdio_tools`) through
:mod:`simone.agents.mcp._stdio`, which answers the handshake before this module is even imported.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from simone.agents._runtime import Runtime
from simone.agents._tool_text import render_tool_result
from simone.agents._tools import ORCHESTRATOR, RESEARCHER, AgentProfile, UnknownTool
from simone.agents.mcp._stdio import ToolHandlers, server_version, stdio_instructions
from simone.providers.documents import LAZY_OPTION
from simone.runtime import Caller, Settings, SimoneError, TrustedContext
from simone.runtime.tracing import fail, tool_call_span

log = logging.getLogger(__name__)


Scope = Callable[[ServerRequestContext[Any]], tuple[TrustedContext, AgentProfile]]
"""Maps one request to the admitted context it runs in and its profile (``simone serve``: from the
caller's bearer token); raising :class:`~simone.runtime.SimoneError` refuses the request."""


def build_server(runtime: Runtime, context: TrustedContext, profile: AgentProfile) -> Server[Any]:
    """An MCP server with ``profile``'s tools, every call run in ``context`` (admitted at start-up).

    Each call gets a fresh session (and so a fresh budget) in that context: a long-running server
    never runs out of wall time, and one call cannot spend another's budget.
    """
    return build_scoped_server(
        runtime, lambda _ctx: (context, profile), instructions=stdio_instructions(profile.name, context.actor)
    )


@asynccontextmanager
async def open_stdio_tools(
    settings: Settings, event: Mapping[str, Any], *, role: str = "orchestrator"
) -> AsyncIterator[ToolHandlers]:
    """``simone mcp``'s tools: the runtime open, ``event`` admitted under ``role``; closed on exit.

    The index and the model open on first use; ``role`` is ``orchestrator`` or ``researcher``.

    Raises:
        SimoneError: the runtime cannot open, or the event is refused.
    """
    profile, caller = (
        (RESEARCHER, Caller.RESEARCHER) if role == "researcher" else (ORCHESTRATOR, Caller.ORCHESTRATOR)
    )
    async with Runtime.open(settings, provider_options={"index": {LAZY_OPTION: True}}) as runtime:
        context = runtime.admit(dict(event), caller=caller, timeout_s=None)
        yield tool_handlers(runtime, lambda _ctx: (context, profile))


def build_scoped_server(
    runtime: Runtime,
    scope: Scope,
    *,
    instructions: str | None = None,
    timeout_s: float | None = None,
    redact: Callable[[str], str] | None = None,
) -> Server[Any]:
    """An MCP server whose every request runs in the context and profile ``scope`` gives it.

    One server serves many callers (``simone serve``): ``tools/list`` shows the caller's profile's
    tools only and ``tools/call`` runs in a fresh session of the caller's context. ``timeout_s`` cancels
    a call still running after that many seconds (its context's deadline says the same to the tools).
    ``redact`` rewrites every text of every answer (``simone serve``: backend addresses become kinds).
    """
    tools = tool_handlers(runtime, scope, timeout_s=timeout_s, redact=redact)

    def schema(name: str) -> dict[str, Any] | None:
        try:
            return runtime.registry.get(name).spec().parameters
        except UnknownTool:
            return None

    return Server(
        "simone",
        version=server_version(),
        instructions=instructions
        or "simone tools. Scope comes from the caller's admitted context; tool arguments never carry scope.",
        get_tool_input_schema=schema,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )


def listed_tools(runtime: Runtime, profile: AgentProfile) -> types.ListToolsResult:
    """``tools/list``'s answer for ``profile``: each of its tools' name, description and input schema."""
    return types.ListToolsResult(
        tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.spec().parameters)
            for t in runtime.registry.for_profile(profile)
        ]
    )


def tool_handlers(
    runtime: Runtime,
    scope: Scope,
    *,
    timeout_s: float | None = None,
    redact: Callable[[str], str] | None = None,
) -> ToolHandlers:
    """The ``tools/list`` and ``tools/call`` handlers of :func:`build_scoped_server` (and of ``simone mcp``).

    ``redact`` rewrites every text of a result or an error (see :func:`build_scoped_server`).
    """

    def _scrub(value: Any) -> Any:
        return _scrub_value(value, redact)

    def _error(message: str) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_scrub(message))], is_error=True
        )

    def profile_tools(profile: AgentProfile) -> dict[str, Any]:
        return {tool.name: tool for tool in runtime.registry.for_profile(profile)}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _, profile = scope(ctx)
        return listed_tools(runtime, profile)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        meta = dict(params.meta or {})
        with tool_call_span(params.name, meta=meta, request_id=ctx.request_id) as span:
            result = await answer(ctx, params)
            if result.is_error:
                fail(span, "tool_error")
            return result

    async def answer(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        try:
            context, profile = scope(ctx)
        except SimoneError as exc:
            return _error(f"{type(exc).__name__}: {_text(exc)}")
        if name not in profile_tools(profile):
            return _error(f"UnknownTool: the {profile.name} has no tool {name!r}")
        try:
            with anyio.fail_after(timeout_s):
                result = await runtime.session(context, profile=profile).call(
                    name, dict(params.arguments or {})
                )
            data = _scrub(result.model_dump(mode="json"))
            text = _scrub(render_tool_result(name, result))
        except TimeoutError:
            return _error(f"DeadlineExceeded: {name} did not finish within {timeout_s:g} s and was cancelled")
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
            content=[types.TextContent(type="text", text=text)],
            structured_content=data,
        )

    return ToolHandlers(list_tools=list_tools, call_tool=call_tool)


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


def _scrub_value(value: Any, redact: Callable[[str], str] | None) -> Any:
    """``value`` with each string passed through ``redact`` (when given) and its lone surrogates replaced.

    A lone surrogate becomes U+FFFD: the transport writes UTF-8, which has none.
    """
    if isinstance(value, str):
        if redact is not None:
            value = redact(value)
        if value.isascii():
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_scrub_value(key, redact): _scrub_value(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_value(item, redact) for item in value]
    return value
