"""PydanticAI: a toolset with simone's retrieval tool (extra ``simone[pydantic-ai]``).

::

    toolset = simone_toolset(runtime, {"actor": "alice"}, limit=5)
    agent = Agent(model, toolsets=[toolset])
    result = await agent.run("How does simone fuse rankings?")

The toolset is a :class:`~pydantic_ai.toolsets.FunctionToolset` with one tool, ``retrieve_context``, whose
only argument is ``query`` (:class:`~simone.agents.adapters.RetrieveArgs`: a call that carries a scope
field is refused as invalid arguments, and the model is asked to call again without it). Its answer is a
:class:`~pydantic_ai.messages.ToolReturn`: ``return_value`` is the text simone renders for a model (status,
limitations, numbered evidence blocks with source, locator and trust), ``metadata`` the whole
:class:`~simone.runtime.RetrievalResult` (for the application, not sent to the model; ``to_sources``
maps its evidence to plain dicts).

A failed or forbidden retrieval (and a partial one with ``partial="raise"``) is, by default
(``on_failure="tell_model"``), a terminal failed tool result the model reads (PydanticAI's
``ToolFailed``: the failure text, not a retry prompt); with ``on_failure="raise"`` the typed error
(:class:`~simone.agents.adapters.RetrievalFailed`, :class:`~simone.agents.adapters.RetrievalForbidden`)
leaves ``agent.run``. A partial result warns with :class:`~simone.agents.adapters.PartialRetrievalWarning`
and is returned, its limitations in the text. An invalid query (empty, too long) is a retry prompt
(``ModelRetry``): that one the model can fix.

To use ``simone mcp`` instead, PydanticAI's own MCP client works too (``MCPServerStdio("simone",
["mcp"])``); this toolset runs in process, with the scope the application passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Unpack

from simone.agents import render_tool_result
from simone.agents.adapters._core import (
    TOOL_DESCRIPTION,
    PartialRetrieval,
    RetrievalFailed,
    RetrievalForbidden,
    RetrieveArgs,
    SimoneSource,
    SourceOptions,
    check_result,
    evidence_metadata,
    missing_extra,
)
from simone.runtime import InvalidRequest, RetrievalResult, TrustedContext

try:
    from pydantic_ai import exceptions as _exceptions
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai.messages import ToolReturn
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as exc:  # pragma: no cover -- exercised in a subprocess without the package
    raise missing_extra("pydantic-ai", "pydantic-ai-slim", exc) from exc

if TYPE_CHECKING:
    from simone.agents import Event, Runtime

__all__ = ("FailurePolicy", "simone_toolset", "to_sources")

FailurePolicy = Literal["tell_model", "raise"]
"""What a failed or forbidden retrieval does in a PydanticAI run: a failed tool result, or the typed error."""

# ToolFailed (a terminal failure the model sees, no retry budget spent) is recent; older releases retry.
_TERMINAL: type[Exception] = getattr(_exceptions, "ToolFailed", ModelRetry)


def to_sources(result: RetrievalResult) -> list[dict[str, Any]]:
    """The evidence of ``result`` as plain dicts: ``content`` plus :func:`evidence_metadata`."""
    return [{"content": item.content, **evidence_metadata(item, result)} for item in result.evidence]


def simone_toolset(
    runtime: Runtime,
    context: TrustedContext | Event | Mapping[str, Any],
    *,
    name: str = "retrieve_context",
    description: str = TOOL_DESCRIPTION,
    on_failure: FailurePolicy = "tell_model",
    **options: Unpack[SourceOptions],
) -> FunctionToolset[Any]:
    """A PydanticAI toolset holding simone's retrieval tool, scoped by ``context``.

    Args:
        runtime: an open :class:`~simone.agents.Runtime` (the agent runs in its event loop).
        context: the trusted context, or the event to admit on each call; never taken from the model.
        name: the tool's name.
        description: what the model reads about it.
        on_failure: ``"tell_model"``: a failed or forbidden retrieval is a failed tool result the model
            reads; ``"raise"``: the typed error leaves ``agent.run``.
        **options: :class:`~simone.agents.adapters.SourceOptions`.
    """
    if on_failure not in ("tell_model", "raise"):
        raise InvalidRequest(f"on_failure must be 'tell_model' or 'raise', not {on_failure!r}")
    source = SimoneSource(runtime, context, **options)

    async def retrieve(args: RetrieveArgs) -> ToolReturn:
        try:
            result = await source.raw(args.query)
        except InvalidRequest as exc:
            raise ModelRetry(str(exc)) from exc
        text = render_tool_result(name, result)
        try:
            check_result(result, partial=source.partial)
        except (RetrievalFailed, RetrievalForbidden, PartialRetrieval) as exc:
            if on_failure == "raise":
                raise
            raise _TERMINAL(text) from exc
        return ToolReturn(return_value=text, metadata=result)

    toolset: FunctionToolset[Any] = FunctionToolset()
    toolset.add_function(retrieve, takes_ctx=False, name=name, description=description)
    return toolset
