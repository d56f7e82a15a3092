"""The orchestrator: retrieve, delegate source-backed questions to a researcher child, synthesise.

With the offline extractive model it runs a deterministic plan:

1. ``retrieve_context`` over memory and the documents (the selection policy decides, and says why);
2. delegate to a researcher child when the policy's web rules fire for the question (it asks for
   current or source-backed information), when nothing local was found, or when the local evidence
   covers too little of the question — each reason recorded;
3. compose an answer from the best evidence units, cite them, state every limitation, and abstain
   when nothing relevant was found.

With a chat model it runs the bounded tool-calling loop instead and checks the model's citations; if
the model fails and ``fallback_to_extractive`` is set, the deterministic plan answers instead.
"""

from __future__ import annotations

from typing import Any

from simone.agents._chat import ChatMessage, ChatModel
from simone.agents._evidence import CONTAINMENT_NOTICE, EvidenceLedger
from simone.agents._loop import LoopLimits, run_tool_loop
from simone.agents._session import Session, research_result
from simone.agents._synthesis import Answer, Citation, ExtractiveModel, StepRecord, finalize
from simone.agents._tools import ORCHESTRATOR
from simone.runtime import (
    WEB_BACKEND_HINT,
    BudgetExceeded,
    Depth,
    Evidence,
    ProviderError,
    ProviderKind,
    RetrievalResult,
    Status,
)
from simone.workflows.research import WebResearchResult
from simone.workflows.retrieval import SelectionPolicy

SYSTEM_PROMPT = (
    "You are the orchestrator of simone. {role}\n"
    "Use the tools to find evidence before answering. Answer only from the evidence you were shown, and "
    "cite every statement with the number of its evidence block, like [2]. If the evidence is "
    "insufficient, say so plainly instead of guessing. Never invent a source.\n" + CONTAINMENT_NOTICE
)


def web_reasons(result: RetrievalResult) -> list[str]:
    """Why the selection rules wanted the web for ``result``'s question (empty: they did not).

    Read from the decision the retrieval made (``result.request.unserved``: web rules that fired but
    asked nobody, since the orchestrator may not search the web), so the policy runs once.
    """
    web = ProviderKind.WEB_SEARCH.value
    return [s.reason for s in result.request.unserved if s.provider == web]


_SOURCE_WORDS = {
    "memory": "memory",
    "session-memory": "this conversation",
    "documents": "the documents",
    "web": "the web",
}
"""How the abstention names the built-in providers (others by their name)."""


def _words(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def abstention_text(results: list[RetrievalResult], researched: bool) -> str:
    """Why there is no answer, saying truthfully what was searched (and what could not be).

    Args:
        results: the retrievals made for the question (none when no tool was called).
        researched: whether a researcher child searched the web.
    """
    failed = list(dict.fromkeys(f.provider for r in results for f in r.failures))
    asked = [s.provider for r in results for s in r.request.selected]
    searched = [_SOURCE_WORDS.get(n, n) for n in dict.fromkeys(asked) if n not in failed]
    if researched and "the web" not in searched:
        searched.append("the web")
    missed = [_SOURCE_WORDS.get(n, n) for n in failed]
    if searched:
        unsearched = f" ({_words(missed).replace(' or ', ' and ')} could not be searched)" if missed else ""
        return f"I found no evidence for this in {_words(searched)}{unsearched}, so I will not guess."
    if missed:
        return f"I could not search {_words(missed)}, so I have no evidence for this and will not guess."
    return (
        "I did not search memory or the documents for this, so I have no evidence to cite and will not guess."
    )


def _research_view(result: WebResearchResult) -> tuple[list[Evidence], list[str], str, float]:
    """A research result's evidence, limitations, status and confidence."""
    return list(result.evidence), list(result.limitations), result.status.value, result.confidence.value


class Orchestrator:
    """Answers questions for an orchestrator session.

    Args:
        model: a chat model for the tool-calling loop (``None``: the deterministic extractive plan).
        extractive: the extractive model (default one built on the shared analysis).
        policy: the selection policy the runtime's tools use; its web rules decide delegation, read from
            the decision ``retrieve_context`` recorded (``result.request.unserved``).
        fallback_to_extractive: when the chat model fails, answer with the deterministic plan.
        limits: the loop's bounds.
        min_coverage: below this share of the question's terms covered locally, delegate.
        confidence_floor: below this research confidence, the answer says the evidence is insufficient.
        depth: the research depth of delegated questions.
    """

    def __init__(
        self,
        *,
        model: ChatModel | None = None,
        extractive: ExtractiveModel | None = None,
        policy: SelectionPolicy | None = None,
        fallback_to_extractive: bool = True,
        limits: LoopLimits | None = None,
        min_coverage: float = 0.5,
        confidence_floor: float = 0.35,
        depth: Depth | str = Depth.STANDARD,
    ) -> None:
        self.model = model
        self.extractive = extractive or ExtractiveModel()
        self.policy = policy
        self.fallback_to_extractive = fallback_to_extractive
        self.limits = limits or LoopLimits()
        self.min_coverage = min_coverage
        self.confidence_floor = confidence_floor
        self.depth = Depth(depth)

    async def answer(self, session: Session, question: str) -> Answer:
        """Answer ``question`` in ``session`` (an orchestrator session).

        Raises:
            ScopeViolation: a tool call tried to carry a scope of its own.
        """
        if self.model is None:
            return await self.plan(session, question)
        return await self._chat(session, question, self.model)

    # -- the deterministic plan ---------------------------------------------------------------
    async def plan(self, session: Session, question: str, *, notes: list[str] | None = None) -> Answer:
        """The deterministic plan: retrieve, maybe delegate, compose extractively."""
        ledger = EvidenceLedger()
        limitations: list[str] = list(notes or [])
        steps: list[StepRecord] = []
        research: list[dict[str, Any]] = []
        confidence: float | None = None

        local = await session.call("retrieve_context", {"query": question})
        assert isinstance(local, RetrievalResult)
        asked = ", ".join(s.provider for s in local.request.selected) or "no provider"
        steps.append(
            StepRecord(
                step=1,
                action="retrieve_context",
                detail=f"asked {asked}: {local.status.value}, {len(local.evidence)} item(s)",
                outcome="ok" if local.status not in (Status.FAILED, Status.FORBIDDEN) else "error",
            )
        )
        limitations.extend(local.limitations)
        ledger.add(local.evidence)
        composed = await self.extractive.answer(question, ledger.numbered())
        text, citations, coverage = composed.text, composed.citations, composed.coverage

        reasons = web_reasons(local)
        if not local.evidence:
            reasons.append(f"memory and the documents returned nothing usable ({local.status.value})")
        elif coverage < self.min_coverage:
            reasons.append(f"the local evidence covers only {coverage:.0%} of the question's terms")
        if reasons:
            why = "; ".join(reasons)
            if session.research is None:
                steps.append(StepRecord(step=2, action="delegate_research", detail=why, outcome="skipped"))
                limitations.append(f"this question needs web research ({why}), but {WEB_BACKEND_HINT}")
            else:
                try:
                    result = research_result(
                        await session.call("delegate_research", {"question": question, "depth": self.depth})
                    )
                except (BudgetExceeded, ProviderError) as exc:
                    steps.append(
                        StepRecord(step=2, action="delegate_research", detail=str(exc), outcome="error")
                    )
                    limitations.append(f"the researcher could not run: {exc}")
                else:
                    evidence, notes_r, status, confidence = _research_view(result)
                    research.append(result.model_dump(mode="json"))
                    steps.append(
                        StepRecord(
                            step=2,
                            action="delegate_research",
                            detail=f"{why} → researcher {status}, {len(evidence)} item(s)",
                            outcome="ok" if evidence else "error",
                        )
                    )
                    limitations.extend(f"research: {note}" for note in notes_r)
                    if status == "budget_exhausted":
                        limitations.append("the researcher stopped because its budget ran out")
                    if confidence is not None and confidence < self.confidence_floor:
                        limitations.append(
                            f"the research confidence {confidence:.2f} is below the floor "
                            f"{self.confidence_floor:.2f}: the web evidence is insufficient"
                        )
                    ledger.add(evidence)
                    composed = await self.extractive.answer(question, ledger.numbered())
                    text, citations, coverage = composed.text, composed.citations, composed.coverage
        if text and coverage < self.min_coverage:
            limitations.append(f"the evidence covers only {coverage:.0%} of the question's terms")
        if text and composed.reasons and steps:  # why each unit was chosen, on the step that found it
            last = steps[-1]
            steps[-1] = last.model_copy(
                update={"detail": f"{last.detail}; answer units: {'; '.join(composed.reasons)}"}
            )
        return self._assemble(
            question,
            text,
            citations,
            limitations,
            steps,
            research,
            confidence,
            model=self.extractive.name,
            retrievals=[local],
        )

    # -- the chat-model loop ------------------------------------------------------------------
    async def _chat(self, session: Session, question: str, model: ChatModel) -> Answer:
        ledger = EvidenceLedger()
        messages = [
            ChatMessage(role="system", content=SYSTEM_PROMPT.format(role=ORCHESTRATOR.description)),
            ChatMessage(role="user", content=question),
        ]
        outcome = await run_tool_loop(
            model,
            session.registry,
            session.profile,
            session.tool_context(),
            messages,
            ledger,
            limits=self.limits,
        )
        limitations: list[str] = []
        research: list[dict[str, Any]] = []
        retrievals: list[RetrievalResult] = []
        confidence: float | None = None
        for result in outcome.results:
            if isinstance(result, RetrievalResult):
                retrievals.append(result)
                limitations.extend(result.limitations)
            elif isinstance(result, WebResearchResult):
                _, notes_r, status, confidence = _research_view(result)
                research.append(result.model_dump(mode="json"))
                limitations.extend(f"research: {note}" for note in notes_r)
                if status == "budget_exhausted":
                    limitations.append("the researcher stopped because its budget ran out")
        if confidence is not None and confidence < self.confidence_floor:
            limitations.append(
                f"the research confidence {confidence:.2f} is below the floor {self.confidence_floor:.2f}: "
                "the web evidence is insufficient"
            )
        if outcome.stop_reason == "model_failed":
            failure = outcome.failure
            what = (
                f"the chat model {model.name} failed ({failure.kind}: {failure.message})"
                if failure
                else "failed"
            )
            if self.fallback_to_extractive:
                answer = await self.plan(session, question, notes=[f"{what}; answered extractively instead"])
                return answer.model_copy(
                    update={
                        "steps": outcome.steps + answer.steps,
                        "usage": outcome.usage,
                        "model": "extractive (fallback)",
                    }
                )
            return Answer(
                question=question,
                status="failed",
                text=f"No answer: {what}.",
                limitations=[*limitations, what],
                model=model.name,
                steps=outcome.steps,
                usage=outcome.usage,
            )
        if outcome.text is None:
            limitations.append(
                f"the model stopped before answering ({outcome.stop_reason.replace('_', ' ')}); "
                "the answer was composed extractively from the evidence it gathered"
            )
            composed = await self.extractive.answer(question, ledger.numbered())
            text, citations = composed.text, composed.citations
        else:
            text, citations, notes = finalize(outcome.text, ledger)
            limitations.extend(notes)
        answer = self._assemble(
            question,
            text,
            citations,
            limitations,
            [],
            research,
            confidence,
            model=model.name,
            grounded=bool(len(ledger)),
            retrievals=retrievals,
        )
        return answer.model_copy(update={"steps": outcome.steps, "usage": outcome.usage})

    def _assemble(
        self,
        question: str,
        text: str,
        citations: list[Citation],
        limitations: list[str],
        steps: list[StepRecord],
        research: list[dict[str, Any]],
        confidence: float | None,
        *,
        model: str,
        grounded: bool | None = None,
        retrievals: list[RetrievalResult],
    ) -> Answer:
        unique = list(dict.fromkeys(limitations))
        has_evidence = bool(citations) if grounded is None else grounded
        if not text or not has_evidence:
            return Answer(
                question=question,
                status="abstained",
                text=abstention_text(retrievals, researched=bool(research)),
                limitations=unique,
                model=model,
                confidence=confidence,
                steps=steps,
                research=research,
            )
        return Answer(
            question=question,
            status="answered",
            text=text,
            citations=citations,
            limitations=unique,
            model=model,
            confidence=confidence,
            steps=steps,
            research=research,
        )
