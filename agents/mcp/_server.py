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

Which of the role's tools ``tools/list`` shows is the request's tool profile
(:mod:`simone.agents.mcp._profiles`: ``core`` by default — retrieval, delegation and the one
``memory`` tool —, ``full`` for every tool); a per-kind memory tool the profile no longer lists stays
callable as a deprecated alias for one release, its answer saying so.

``simone mcp`` serves these handlers (:func:`open_stdio_tools`) through
:mod:`simone.agents.mcp._stdio`, which answers the handshake — and ``tools/list``, from the shipped
lists of :mod:`simone.agents.mcp._tool_list` — before this module is even imported.
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
from simone.agents.mcp._memory_tool import MEMORY_DESCRIPTION, MEMORY_SCHEMA, memory_call
from simone.agents.mcp._profiles import (
    DEFAULT_TOOLS,
    MEMORY_ALIASES,
    MEMORY_TOOL,
    ToolProfile,
    deprecation_notice,
    replacement,
    tool_profile,
)
from simone.agents.mcp._stdio import ToolHandlers, server_version, stdio_instructions
from simone.agents.mcp._tool_list import check_shipped
from simone.providers.documents import LAZY_OPTION
from simone.runtime import Caller, InvalidRequest, Settings, SimoneError, TrustedContext
from simone.runtime.tracing import fail, tool_call_span

log = logging.getLogger(__name__)


Scope = Callable[
    [ServerRequestContext[Any]],
    tuple[TrustedContext, AgentProfile] | tuple[TrustedContext, AgentProfile, ToolProfile],
]
"""Maps one request to the admitted context it runs in, its profile and optionally its tool profile
(``simone serve``: all from the caller's bearer token; without one, the server's ``tools``); raising
:class:`~simone.runtime.SimoneError` refuses the request."""


def build_server(
    runtime: Runtime,
    context: TrustedContext,
    profile: AgentProfile,
    *,
    tools: ToolProfile | str = DEFAULT_TOOLS,
) -> Server[Any]:
    """An MCP server with ``profile``'s tools (those ``tools`` lists), every call run in ``context``.

    Each call gets a fresh session (and so a fresh budget) in that context: a long-running server
    never runs out of wall time, and one call cannot spend another's budget.

    Raises:
        ConfigError: ``tools`` names no tool profile.
    """
    return build_scoped_server(
        runtime,
        lambda _ctx: (context, profile),
        tools=tools,
        instructions=stdio_instructions(profile.name, context.actor),
    )


@asynccontextmanager
async def open_stdio_tools(
    settings: Settings,
    event: Mapping[str, Any],
    *,
    role: str = "orchestrator",
    tools: ToolProfile | str | None = None,
) -> AsyncIterator[ToolHandlers]:
    """``simone mcp``'s tools: the runtime open, ``event`` admitted under ``role``; closed on exit.

    The index and the model open on first use; ``role`` is ``orchestrator`` or ``researcher``;
    ``tools`` is the tool profile listed (default: ``[mcp] tools``, itself ``core`` by default). Once
    open, the live list is compared with the shipped one ``simone mcp`` may have answered meanwhile
    (:func:`~simone.agents.mcp._tool_list.check_shipped`: a difference is logged).

    Raises:
        SimoneError: the runtime cannot open, the event is refused, or ``tools`` names no profile.
    """
    listed = tool_profile(tools if tools is not None else settings.mcp.tools)
    profile, caller = (
        (RESEARCHER, Caller.RESEARCHER) if role == "researcher" else (ORCHESTRATOR, Caller.ORCHESTRATOR)
    )
    async with Runtime.open(settings, provider_options={"index": {LAZY_OPTION: True}}) as runtime:
        context = runtime.admit(dict(event), caller=caller, timeout_s=None)
        check_shipped(settings, profile.name, listed, listed_tools(runtime, profile, listed))
        yield tool_handlers(runtime, lambda _ctx: (context, profile), tools=listed)


def build_scoped_server(
    runtime: Runtime,
    scope: Scope,
    *,
    tools: ToolProfile | str = DEFAULT_TOOLS,
    instructions: str | None = None,
    timeout_s: float | None = None,
    redact: Callable[[str], str] | None = None,
) -> Server[Any]:
    """An MCP server whose every request runs in the context and profile ``scope`` gives it.

    One server serves many callers (``simone serve``): ``tools/list`` shows the tools of the caller's
    profile that its tool profile lists (``scope``'s third value, else ``tools``) and ``tools/call``
    runs in a fresh session of the caller's context. ``timeout_s`` cancels a call still running after
    that many seconds (its context's deadline says the same to the tools). ``redact`` rewrites every
    text of every answer (``simone serve``: backend addresses become kinds).

    Raises:
        ConfigError: ``tools`` names no tool profile.
    """
    handlers = tool_handlers(runtime, scope, tools=tools, timeout_s=timeout_s, redact=redact)

    def schema(name: str) -> dict[str, Any] | None:
        try:
            return runtime.registry.get(name).spec().parameters
        except UnknownTool:
            return dict(MEMORY_SCHEMA) if name == MEMORY_TOOL else None

    return Server(
        "simone",
        version=server_version(),
        instructions=instructions
        or "simone tools. Scope comes from the caller's admitted context; tool arguments never carry scope.",
        get_tool_input_schema=schema,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )


def _listing(runtime: Runtime, profile: AgentProfile, tools: ToolProfile) -> dict[str, types.Tool]:
    """The tools ``tools/list`` shows: those of ``profile`` that ``tools`` lists, by name, sorted.

    The ``memory`` tool is listed when the profile lists it and the role may call a memory tool (it
    only ever runs one of them).
    """
    registered = runtime.registry.for_profile(profile)
    listed = {
        t.name: types.Tool(name=t.name, description=t.description, input_schema=t.spec().parameters)
        for t in registered
        if tools.lists(t.name)
    }
    if (
        MEMORY_TOOL not in listed
        and tools.lists(MEMORY_TOOL)
        and any(t.name in MEMORY_ALIASES for t in registered)
    ):
        listed[MEMORY_TOOL] = types.Tool(
            name=MEMORY_TOOL, description=MEMORY_DESCRIPTION, input_schema=dict(MEMORY_SCHEMA)
        )
    return dict(sorted(listed.items()))


def listed_tools(
    runtime: Runtime, profile: AgentProfile, tools: ToolProfile | str = DEFAULT_TOOLS
) -> types.ListToolsResult:
    """``tools/list``'s answer for ``profile`` under the tool profile ``tools``: name, description, schema.

    Raises:
        ConfigError: ``tools`` names no tool profile.
    """
    return types.ListToolsResult(tools=list(_listing(runtime, profile, tool_profile(tools)).values()))


def _scoped(
    scoped: tuple[TrustedContext, AgentProfile] | tuple[TrustedContext, AgentProfile, ToolProfile],
    tools: ToolProfile,
) -> tuple[TrustedContext, AgentProfile, ToolProfile]:
    if len(scoped) == 3:
        return scoped
    context, profile = scoped
    return context, profile, tools


def tool_handlers(
    runtime: Runtime,
    scope: Scope,
    *,
    tools: ToolProfile | str = DEFAULT_TOOLS,
    timeout_s: float | None = None,
    redact: Callable[[str], str] | None = None,
) -> ToolHandlers:
    """The ``tools/list`` and ``tools/call`` handlers of :func:`build_scoped_server` (and of ``simone mcp``).

    ``tools`` is the tool profile of a request whose ``scope`` names none; ``redact`` rewrites every
    text of a result or an error (see :func:`build_scoped_server`).

    Raises:
        ConfigError: ``tools`` names no tool profile.
    """
    default_tools = tool_profile(tools)
    warned: set[str] = set()  # the deprecated aliases this server has logged (each once)

    def _scrub(value: Any) -> Any:
        return _scrub_value(value, redact)

    def _error(message: str) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_scrub(message))], is_error=True
        )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _, profile, listed = _scoped(scope(ctx), default_tools)
        return types.ListToolsResult(tools=list(_listing(runtime, profile, listed).values()))

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
            context, profile, listed = _scoped(scope(ctx), default_tools)
        except SimoneError as exc:
            return _error(f"{type(exc).__name__}: {_text(exc)}")
        listing = _listing(runtime, profile, listed)
        registered = {tool.name for tool in runtime.registry.for_profile(profile)}
        role_tools = registered | ({MEMORY_TOOL} if registered & MEMORY_ALIASES.keys() else set())
        deprecated: str | None = None
        if name not in listing:
            if name in MEMORY_ALIASES and name in role_tools and MEMORY_TOOL in listing:
                deprecated = deprecation_notice(name)
                if name not in warned:
                    warned.add(name)
                    log.warning("%s", deprecated)
            elif name in role_tools:
                return _error(
                    f"UnknownTool: {name!r} is not in the {listed.name!r} tool profile, whose tools are "
                    f"{', '.join(listing) or 'none'}; a server or token with --tools full lists it"
                )
            else:
                return _error(f"UnknownTool: the {profile.name} has no tool {name!r}")
        try:
            target, arguments, label = name, dict(params.arguments or {}), name
            if name == MEMORY_TOOL and MEMORY_TOOL not in registered:
                call = memory_call(arguments)
                target, arguments, label = call.tool, call.arguments, call.label
                _check_arguments(runtime, target, label, arguments)
            with anyio.fail_after(timeout_s):
                result = await runtime.session(context, profile=profile).call(target, arguments)
            data = _scrub(result.model_dump(mode="json"))
            text = _scrub(render_tool_result(label, result))
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
        if deprecated is not None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"{text}\n\n{deprecated}")],
                structured_content=data,
                meta={"simone/deprecated": {"tool": name, "replacement": replacement(name)}},
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=data,
        )

    return ToolHandlers(list_tools=list_tools, call_tool=call_tool)


def _check_arguments(runtime: Runtime, tool: str, label: str, arguments: dict[str, Any]) -> None:
    """Validate a ``memory`` call's fields against the per-kind tool's model, the error naming the call.

    Raises:
        InvalidRequest: a field the per-kind tool does not take, or a value it refuses.
        ScopeViolation: scope in the fields.
    """
    target = runtime.registry.get(tool)
    try:
        runtime.registry.parse(target, arguments)
    except InvalidRequest as exc:
        names = [("id" if name == "checklist_id" else name) for name in target.args.model_fields]
        fields = ", ".join(name for name in names if name != "kind") or "none"
        raise InvalidRequest(f"{label}: {_text(exc)} (its fields: {fields})") from exc


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
