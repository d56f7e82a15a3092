"""Web research for researcher sessions: the research workflow behind the :class:`ResearchRunner` protocol.

The web factory (``simone.providers.web``) opens the web layer when a search backend is configured
and publishes it (:data:`~simone.providers.web.WEB_STACK`); :func:`research_runner` builds the runner
over the web-research workflow from it — or returns ``None`` when nothing published a web layer, so
callers can say plainly that web research is not configured.
"""

from __future__ import annotations

import time

from simone.agents._session import ResearchCaps
from simone.runtime import Caller, InvalidResponse, Published, TrustedContext, WebSettings
from simone.workflows.research import (
    ResearchLimits,
    ResearchStatus,
    StopReason,
    WebResearch,
    WebResearchRequest,
    WebResearchResult,
    critique,
    resolve_budget,
)


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
            max_queries=max(1, caps.queries),
            max_fetches=caps.fetches,
            max_context_tokens=max(1, caps.tokens),
            freshness=caps.freshness,
        )

    async def run(self, question: str, context: TrustedContext, caps: ResearchCaps) -> WebResearchResult:
        """Research ``question`` for the researcher ``context`` within ``caps``."""
        if caps.queries < 1 or caps.tokens < 1:
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
        budget = resolve_budget(request, self.settings, context_tokens=max(1, caps.tokens))
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

    def spend(self, result: WebResearchResult) -> ResearchLimits:
        """What a WebResearchResult says it used."""
        if not isinstance(result, WebResearchResult):  # a runtime guard for untyped callers
            raise InvalidResponse(
                f"the research runner returned {type(result).__name__}, not a WebResearchResult"
            )
        return result.budget.used()


def research_runner(published: Published, settings: WebSettings) -> WorkflowResearchRunner | None:
    """A runner over the web layer a factory published (:data:`~simone.providers.web.WEB_STACK`), if any."""
    from simone.providers.web import WEB_STACK

    web = published.get(WEB_STACK)
    return None if web is None else WorkflowResearchRunner(WebResearch.from_stack(web), settings)
