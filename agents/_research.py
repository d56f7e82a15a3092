"""Web research for researcher sessions: the research workflow behind the :class:`ResearchRunner` protocol.

:func:`open_web_research` opens the web layer the settings describe (backends, safe fetcher, cache)
and returns a runner over the web-research workflow plus the researcher-only web provider for the
router — or ``None`` when no search backend is configured, so callers can say so plainly.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from typing import Any

from simone.agents._session import ResearchCaps, ResearchSpend
from simone.runtime import Caller, InvalidResponse, Provider, Settings, TrustedContext, WebSettings
from simone.workflows.research import (
    ResearchStatus,
    StopReason,
    WebResearch,
    WebResearchRequest,
    WebResearchResult,
    critique,
    resolve_budget,
)


def web_configured(settings: Settings) -> bool:
    """Whether any search backend is configured (a URL for SearXNG, a key for Brave or Tavily)."""
    web = settings.web
    return bool(web.backends or web.searxng_url or web.brave_api_key or web.tavily_api_key)


class WorkflowResearchRunner:
    """Runs :class:`~simone.workflows.research.WebResearch` within a child's caps.

    Args:
        research: the web-research workflow (over an open web stack).
        settings: the web settings (hard caps, confidence floor).
    """

    def __init__(self, research: WebResearch, settings: WebSettings) -> None:
        self.research = research
        self.settings = settings

    def _request(self, question: str, caps: ResearchCaps) -> WebResearchRequest:
        return WebResearchRequest.create(
            question,
            depth=caps.depth,
            max_queries=max(1, caps.max_queries),
            max_fetches=caps.max_fetches,
            max_context_tokens=max(1, caps.max_context_tokens),
            freshness=caps.freshness,
        )

    async def run(self, question: str, context: TrustedContext, caps: ResearchCaps) -> WebResearchResult:
        """Research ``question`` for the researcher ``context`` within ``caps``."""
        if caps.max_queries < 1 or caps.max_context_tokens < 1:
            return self.interrupted(
                question, caps, "the researcher's budget had no search queries or tokens left"
            )
        deadline = time.time() + caps.wall_s
        if context.deadline is None or deadline < context.deadline:
            context = context.model_copy(update={"deadline": deadline})
        return await self.research.run(self._request(question, caps), context)

    def interrupted(self, question: str, caps: ResearchCaps, reason: str) -> WebResearchResult:
        """A ``budget_exhausted`` result for a run stopped before it could finish (nothing invented)."""
        request = self._request(question, caps)
        budget = resolve_budget(request, self.settings, context_tokens=max(1, caps.max_context_tokens))
        confidence = critique(
            question,
            [],
            min_sources=budget.min_sources,
            floor=self.settings.confidence_floor,
            attempted=0,
            failed=0,
            now=time.time(),
        )
        return WebResearchResult(
            request=request,
            caller=Caller.RESEARCHER,
            status=ResearchStatus.BUDGET_EXHAUSTED,
            stop_reason=StopReason.DEADLINE,
            confidence=confidence,
            budget=budget,
            limitations=[reason + "; no web evidence was gathered"],
        )

    def spend(self, result: WebResearchResult) -> ResearchSpend:
        """What a WebResearchResult says it used."""
        if not isinstance(result, WebResearchResult):  # a runtime guard for untyped callers
            raise InvalidResponse(
                f"the research runner returned {type(result).__name__}, not a WebResearchResult"
            )
        return ResearchSpend(
            queries=result.budget.queries_used,
            fetches=result.budget.fetches_used,
            tokens=result.budget.used_tokens,
        )


async def open_web_research(
    settings: Settings,
    stack: AsyncExitStack,
    **web_options: Any,
) -> tuple[WorkflowResearchRunner, Provider] | None:
    """The research runner and the web provider the settings describe, or ``None`` without a backend.

    ``web_options`` go to :func:`~simone.providers.web.open_web` (``transport``, ``resolver``,
    ``clock``, ``cache_dir``) — tests use them to reach a loopback web.
    """
    if not web_configured(settings):
        return None
    from simone.providers.web import open_web

    web = await stack.enter_async_context(open_web(settings, **web_options))
    runner = WorkflowResearchRunner(WebResearch.from_stack(web), settings.web)
    provider: Provider = web.provider()
    return runner, provider
