"""The built-in tools: retrieve_context, retrieve_memory, delegate_research, web_research.

Each is a plain async function over a router, a selection policy and a research runner the developer
can swap. Handlers clamp their work to the calling session's ledger and charge what they used; the
context is always the session's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model
from simone.agents._session import ResearchCaps, ResearchRunner, Session, child_budget
from simone.agents._tools import Tool, ToolContext
from simone.runtime import (
    MAX_QUERY_CHARS,
    BudgetExceeded,
    Depth,
    Freshness,
    ProviderKind,
    ProviderNotConfigured,
    ProviderSelection,
    RetrievalRequest,
    RetrievalResult,
    Router,
    SearchMode,
    web_not_configured,
)
from simone.workflows.research import MAX_QUESTION_CHARS, WebResearchResult, depth_preset, lowest
from simone.workflows.retrieval import SelectionDecision, SelectionPolicy, retrieve, select


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _names(enum: type[StrEnum], description: str, *, nullable: bool = False) -> WithJsonSchema:
    """A StrEnum field shown to models as an inline string enum (as a ``Literal`` would be), described."""
    values: list[str | None] = [member.value for member in enum]
    if nullable:
        values.append(None)
    return WithJsonSchema(
        {
            "enum": values,
            "title": enum.__name__,
            "type": ["string", "null"] if nullable else "string",
            "description": description,
        }
    )


class RetrieveContextArgs(_Args):
    """Arguments of ``retrieve_context`` (the query's limit is ``router.max_query_chars``: see :func:`builtin_tools`)."""

    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for, in plain words")
    ]
    limit: Annotated[int, Field(ge=1, le=50, description="at most this many evidence items")] = 10
    max_tokens: Annotated[
        int | None, Field(ge=1, description="cap on the evidence's tokens (default: the session's budget)")
    ] = None
    mode: Annotated[
        SearchMode | None,
        _names(
            SearchMode,
            "lexical (words), semantic (meaning) or hybrid (both); default: each provider's own",
            nullable=True,
        ),
    ] = None
    providers: Annotated[
        list[str] | None,
        Field(
            description="ask only these providers, by name (e.g. documents, memory); default: the policy picks"
        ),
    ] = None


class RetrieveMemoryArgs(_Args):
    """Arguments of ``retrieve_memory``."""

    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what to look for, in plain words")
    ]
    limit: Annotated[int, Field(ge=1, le=50, description="at most this many evidence items")] = 10


class ResearchArgs(_Args):
    """Arguments of ``delegate_research`` and ``web_research``."""

    question: Annotated[
        str, Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="the question to research")
    ]
    depth: Annotated[
        Depth, _names(Depth, "how much work: basic, standard or deep (more searches and pages)")
    ] = Depth.STANDARD
    freshness: Annotated[
        Freshness,
        _names(Freshness, "cache use: auto (fresh enough), fresh (refetch) or cached (accept stale pages)"),
    ] = Freshness.AUTO
    max_queries: Annotated[
        int | None, Field(ge=0, description="at most this many web searches (default: the depth's)")
    ] = None
    max_fetches: Annotated[
        int | None, Field(ge=0, description="at most this many page fetches (default: the depth's)")
    ] = None


QueryArgsT = TypeVar("QueryArgsT", RetrieveContextArgs, RetrieveMemoryArgs)


def with_query_limit(model: type[QueryArgsT], max_query_chars: int) -> type[QueryArgsT]:
    """``model`` with its ``query`` limited to ``max_query_chars`` (the model itself at the default).

    The tools validate a query against the configured ``router.max_query_chars``, and the JSON schema a
    chat model sees says the same limit.
    """
    field = model.model_fields["query"]
    if max_query_chars == MAX_QUERY_CHARS:
        return model
    query = Annotated[str, Field(min_length=1, max_length=max_query_chars, description=field.description)]
    limited: type[QueryArgsT] = create_model(  # a subclass: isinstance checks on the model still hold
        model.__name__, __base__=model, __module__=model.__module__, __doc__=model.__doc__, query=(query, ...)
    )
    return limited


def _clamp_tokens(tool_context: ToolContext, wanted: int | None) -> int:
    budget = (
        tool_context.context.token_budget
        if wanted is None
        else min(wanted, tool_context.context.token_budget)
    )
    if tool_context.ledger is not None:
        left = tool_context.ledger.available().tokens
        if left <= 0:
            raise BudgetExceeded("the session has no evidence tokens left; answer with what you have")
        budget = min(budget, left)
    return budget


def _web_within_budget(
    router: Router, decision: SelectionDecision, tool_context: ToolContext
) -> SelectionDecision:
    """Charge one search query per web provider asked; past the session's queries, drop them with a reason."""
    ledger = tool_context.ledger
    kinds = {name: provider.kind for name, provider in router.providers.items()}
    web = [s for s in decision.selected if kinds.get(s.provider) is ProviderKind.WEB_SEARCH]
    if not web or ledger is None:
        return decision
    if ledger.available().queries >= len(web):
        ledger.charge(queries=len(web))
        return decision
    spent = [
        ProviderSelection(provider=s.provider, reason="not asked: the session's search-query budget is spent")
        for s in web
    ]
    return decision.model_copy(
        update={
            "selected": [s for s in decision.selected if s not in web],
            "dropped": [*decision.dropped, *spent],
        }
    )


def _charge(tool_context: ToolContext, result: RetrievalResult) -> None:
    if tool_context.ledger is not None:
        tool_context.ledger.charge(tokens=result.budget.used_tokens)


def _retrieve_context(
    router: Router, policy: SelectionPolicy | None, max_query_chars: int
) -> Tool[BaseModel]:
    async def retrieve_context(tool_context: ToolContext, args: RetrieveContextArgs) -> RetrievalResult:
        request = RetrievalRequest.create(
            args.query,
            max_query_chars=max_query_chars,
            limit=args.limit,
            max_tokens=_clamp_tokens(tool_context, args.max_tokens),
            mode=args.mode,
            providers=tuple(args.providers) if args.providers else None,
        )
        decision = _web_within_budget(
            router, select(router, request, tool_context.context, policy=policy), tool_context
        )
        result = await retrieve(router, request, tool_context.context, policy=policy, decision=decision)
        _charge(tool_context, result)
        return result

    return Tool(
        name="retrieve_context",
        description=(
            "Find evidence for a query in memory and the indexed documents (providers chosen by the "
            "selection policy; web search is only for the researcher). Returns numbered evidence."
        ),
        args=with_query_limit(RetrieveContextArgs, max_query_chars),
        handler=retrieve_context,  # type: ignore[arg-type]
    )


def _retrieve_memory(router: Router, policy: SelectionPolicy | None, max_query_chars: int) -> Tool[BaseModel]:
    async def retrieve_memory(tool_context: ToolContext, args: RetrieveMemoryArgs) -> RetrievalResult:
        names = tuple(
            name
            for name, provider in router.providers.items()
            if provider.kind in (ProviderKind.MEMORY, ProviderKind.SESSION_MEMORY)
        )
        if not names:
            raise ProviderNotConfigured(
                "no memory provider is registered with this runtime", provider="memory"
            )
        request = RetrievalRequest.create(
            args.query,
            max_query_chars=max_query_chars,
            limit=args.limit,
            max_tokens=_clamp_tokens(tool_context, None),
            providers=names,
        )
        result = await retrieve(router, request, tool_context.context, policy=policy)
        _charge(tool_context, result)
        return result

    return Tool(
        name="retrieve_memory",
        description="Search only the actor's structured and session memory.",
        args=with_query_limit(RetrieveMemoryArgs, max_query_chars),
        handler=retrieve_memory,  # type: ignore[arg-type]
    )


def _delegate_research(child_wall_s: float) -> Tool[BaseModel]:
    async def delegate_research(tool_context: ToolContext, args: ResearchArgs) -> WebResearchResult:
        session = tool_context.session
        if not isinstance(session, Session):
            raise ProviderNotConfigured("delegate_research needs a session to spawn the researcher from")
        wanted = child_budget(
            args.depth, wall_s=child_wall_s, max_queries=args.max_queries, max_fetches=args.max_fetches
        )
        return await session.delegate(
            args.question, depth=args.depth, budget=wanted, freshness=args.freshness
        )

    return Tool(
        name="delegate_research",
        description=(
            "Ask a researcher child session to research a current or source-backed question on the web "
            "within a bounded budget; returns cited web evidence and a confidence."
        ),
        args=ResearchArgs,
        handler=delegate_research,  # type: ignore[arg-type]
    )


def _web_research(research: ResearchRunner | None) -> Tool[BaseModel]:
    async def web_research(tool_context: ToolContext, args: ResearchArgs) -> WebResearchResult:
        if research is None:
            raise ProviderNotConfigured(web_not_configured(), provider="web-search")
        ledger = tool_context.ledger
        left = ledger.available() if ledger is not None else None
        asked = {
            "queries": args.max_queries,
            "fetches": args.max_fetches,
            "tokens": tool_context.context.token_budget,
        }
        limits = lowest(depth_preset(args.depth).limits(), asked, left)
        wall = tool_context.context.remaining_s() or 60.0
        if left is not None:
            wall = min(wall, left.wall_s)
        caps = ResearchCaps(
            **limits.model_dump(), depth=args.depth, wall_s=max(wall, 1e-3), freshness=args.freshness
        )
        result = await research.run(args.question, tool_context.context, caps)
        if ledger is not None:
            spent = lowest(research.spend(result), caps)
            ledger.charge(tokens=spent.tokens, queries=spent.queries, fetches=spent.fetches)
        return result

    return Tool(
        name="web_research",
        description="Bounded web research (search, fetch, extract, pack) — researcher only.",
        args=ResearchArgs,
        handler=web_research,  # type: ignore[arg-type]
    )


def builtin_tools(
    router: Router,
    *,
    policy: SelectionPolicy | None = None,
    research: ResearchRunner | None = None,
    max_query_chars: int = MAX_QUERY_CHARS,
    child_wall_s: float = 60.0,
) -> list[Tool[BaseModel]]:
    """The built-in tools over ``router`` (retrieval) and ``research`` (the researcher's web research).

    ``max_query_chars`` is the longest query the retrieval tools' argument models accept (the runtime
    passes ``router.max_query_chars``); ``child_wall_s`` is the wall time of a researcher child spawned
    by ``delegate_research``.
    """
    return [
        _retrieve_context(router, policy, max_query_chars),
        _retrieve_memory(router, policy, max_query_chars),
        _delegate_research(child_wall_s),
        _web_research(research),
    ]
