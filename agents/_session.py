"""Sessions: one agent's profile, admitted context, budget ledger and tools — and its researcher children.

A parent session spawns **researcher child sessions** inside a :class:`ChildGroup` (an anyio task
group): each child gets a budget carved from the parent's (reserved at spawn, settled when it ends),
a context derived by the runtime (same scope, caller ``researcher``, a deadline no later than the
parent's), and runs ``web_research`` through the registry under the researcher profile. Children run
concurrently, can be cancelled one by one or all together, and each ends with a structured result:
its own, or — when its wall time runs out — a ``budget_exhausted`` one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, Field
from simone.agents._admission import derive
from simone.agents._budget import Budget, BudgetLedger
from simone.agents._tools import RESEARCHER, AgentProfile, ToolContext, ToolRegistry
from simone.runtime import (
    WEB_BACKEND_HINT,
    Caller,
    Depth,
    Freshness,
    InvalidResponse,
    ProviderNotConfigured,
    ProviderUnavailable,
    ScopeViolation,
    TrustedContext,
    web_not_configured,
)
from simone.workflows.research import ResearchLimits, WebResearchResult, depth_preset, lowest


class ResearchCaps(ResearchLimits):
    """The bounds one piece of web research runs under (already clamped to the session's budget).

    Its ``queries``, ``fetches`` and ``tokens`` are the research limits; ``wall_s`` is its wall time.
    """

    queries: Annotated[int, Field(ge=0)]
    fetches: Annotated[int, Field(ge=0)]
    tokens: Annotated[int, Field(ge=0)]
    depth: Depth = Depth.STANDARD
    wall_s: Annotated[float, Field(gt=0)]
    freshness: Freshness = Freshness.AUTO


class ResearchRunner(Protocol):
    """Runs bounded web research for a researcher context and returns a :class:`WebResearchResult`.

    ``run`` must respect ``caps``; ``interrupted`` builds the ``budget_exhausted`` result of a run
    stopped from outside (its wall time ran out); ``spend`` reads what a result used (its queries,
    fetches and tokens).
    """

    async def run(self, question: str, context: TrustedContext, caps: ResearchCaps) -> WebResearchResult:
        """Research ``question`` within ``caps``."""
        ...

    def interrupted(self, question: str, caps: ResearchCaps, reason: str) -> WebResearchResult:
        """The result of a run stopped before it finished."""
        ...

    def spend(self, result: WebResearchResult) -> ResearchLimits:
        """What ``result`` says was used."""
        ...


def research_result(result: BaseModel) -> WebResearchResult:
    """``result`` as the :class:`WebResearchResult` a research tool must return.

    Raises:
        InvalidResponse: it is something else (a tool replaced by one that breaks the contract).
    """
    if not isinstance(result, WebResearchResult):
        raise InvalidResponse(f"web research returned {type(result).__name__}, not a WebResearchResult")
    return result


ChildStatus = Literal["pending", "running", "done", "cancelled", "failed"]


@dataclass
class ChildHandle:
    """A researcher child: its question, carved budget, status and result."""

    question: str
    budget: Budget
    depth: Depth
    freshness: Freshness = Freshness.AUTO
    status: ChildStatus = "pending"
    result: WebResearchResult | None = None
    error: str | None = None
    _scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    _done: anyio.Event = field(default_factory=anyio.Event)

    def cancel(self) -> None:
        """Cancel this child (its reservation returns to the parent; status becomes ``cancelled``)."""
        self._scope.cancel()

    async def wait(self) -> WebResearchResult | None:
        """Wait until the child ends; its result (``None`` when cancelled or failed)."""
        await self._done.wait()
        return self.result


class Session:
    """One agent's session.

    Args:
        profile: the role it plays (decides its tools).
        context: its admitted context (its caller must be the profile's).
        registry: the runtime's tools.
        budget: its allotment (a child's is carved from its parent's).
        research: the research runner children use (``None``: delegation says it is not configured).
        parent: the parent session of a child.
        clock: a monotonic clock for the budget.
    """

    def __init__(
        self,
        *,
        profile: AgentProfile,
        context: TrustedContext,
        registry: ToolRegistry,
        budget: Budget,
        research: ResearchRunner | None = None,
        parent: Session | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if context.caller is not profile.caller:
            raise ScopeViolation(
                f"a {profile.name} session needs a {profile.caller.value} context, not {context.caller.value}"
            )
        self.profile = profile
        self.context = context
        self.registry = registry
        self.ledger = BudgetLedger(budget, clock=clock)
        self.research = research
        self.parent = parent
        self._clock = clock
        self.children: list[ChildHandle] = []

    def tool_context(self) -> ToolContext:
        """The context every tool call of this session runs with."""
        return ToolContext(context=self.context, ledger=self.ledger, session=self)

    async def call(self, name: str, arguments: str | dict[str, Any] | None = None) -> BaseModel:
        """Call a tool as this session (capability, scope and argument checks apply)."""
        return await self.registry.call(self.profile, self.tool_context(), name, arguments)

    def reserve(
        self,
        question: str,
        *,
        depth: Depth | str = Depth.STANDARD,
        budget: Budget | None = None,
        freshness: Freshness = Freshness.AUTO,
    ) -> ChildHandle:
        """Reserve a researcher child: its budget is carved from this session's now; launch it in a group.

        Raises:
            BudgetExceeded: too many children are running, or nothing is left to give.
            ProviderNotConfigured: no research runner is configured.
        """
        if self.research is None:
            raise ProviderNotConfigured(web_not_configured(), provider="web-search")
        carved = self.ledger.carve(budget or DEFAULT_CHILD_BUDGET)
        handle = ChildHandle(
            question=question, budget=carved, depth=Depth(depth), freshness=Freshness(freshness)
        )
        self.children.append(handle)
        return handle

    def group(self) -> ChildGroup:
        """A group to run researcher children in: ``async with session.group() as g: g.spawn(...)``."""
        return ChildGroup(self)

    async def delegate(
        self,
        question: str,
        *,
        depth: Depth | str = Depth.STANDARD,
        budget: Budget | None = None,
        freshness: Freshness = Freshness.AUTO,
    ) -> WebResearchResult:
        """Run one researcher child to completion and return its structured result."""
        handle = self.reserve(
            question, depth=depth, budget=budget, freshness=freshness
        )  # typed errors raise here, unwrapped
        async with self.group() as group:
            group.launch(handle)
        if handle.result is None:
            raise ProviderUnavailable(
                f"the researcher child ended without a result ({handle.status}: {handle.error})",
                provider="researcher",
                retryable=handle.status == "failed",
            )
        return handle.result


NOT_CONFIGURED_HINT = WEB_BACKEND_HINT
"""What to tell a user who asks for web research without a backend (``simone.runtime.WEB_BACKEND_HINT``)."""


def child_budget(
    depth: Depth | str = Depth.STANDARD,
    *,
    wall_s: float = 60.0,
    max_queries: int | None = None,
    max_fetches: int | None = None,
) -> Budget:
    """What a researcher child asks for at ``depth`` (the parent's :meth:`BudgetLedger.carve` may lower it).

    Its queries, fetches and tokens are the depth's preset (``simone.workflows.research.DEPTH_PRESETS``),
    lowered to ``max_queries`` and ``max_fetches`` when they are given.
    """
    wanted = lowest(depth_preset(depth).limits(), {"queries": max_queries, "fetches": max_fetches})
    return Budget(**wanted.model_dump(), wall_s=wall_s, max_children=0)


DEFAULT_CHILD_BUDGET = child_budget(Depth.STANDARD)
"""A researcher child's default share (the ``standard`` depth of DESIGN.md), lowered to what is left."""


class ChildGroup:
    """Researcher children of one session running concurrently (an anyio task group)."""

    def __init__(self, parent: Session) -> None:
        self.parent = parent
        self._group: TaskGroup | None = None
        self.handles: list[ChildHandle] = []

    async def __aenter__(self) -> ChildGroup:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._group is not None
        return await self._group.__aexit__(*exc_info)

    def spawn(
        self, question: str, *, depth: Depth | str = Depth.STANDARD, budget: Budget | None = None
    ) -> ChildHandle:
        """Start a researcher child with a budget carved from the parent's (see :meth:`Session.reserve`).

        Raises:
            BudgetExceeded: too many children are running, or the parent has nothing left to give.
            ProviderNotConfigured: no research runner is configured.
        """
        return self.launch(self.parent.reserve(question, depth=depth, budget=budget))

    def launch(self, handle: ChildHandle) -> ChildHandle:
        """Start a child reserved with :meth:`Session.reserve`."""
        if self._group is None:
            raise RuntimeError("launch children inside 'async with session.group() as group'")
        if handle.status != "pending":
            raise RuntimeError(f"this child was already launched ({handle.status})")
        handle.status = "running"
        self.handles.append(handle)
        self._group.start_soon(self._run, handle)
        return handle

    def cancel_all(self) -> None:
        """Cancel every child of this group."""
        for handle in self.handles:
            handle.cancel()

    async def _run(self, handle: ChildHandle) -> None:
        parent = self.parent
        runner = parent.research
        assert runner is not None
        caps = ResearchCaps(
            **handle.budget.limits().model_dump(), depth=handle.depth, wall_s=handle.budget.wall_s
        )
        context = derive(
            parent.context,
            caller=Caller.RESEARCHER,
            token_budget=max(1, handle.budget.tokens),
            deadline=time.time() + handle.budget.wall_s,
        )
        child = Session(
            profile=RESEARCHER,
            context=context,
            registry=parent.registry,
            budget=handle.budget,
            research=runner,
            parent=parent,
            clock=parent._clock,
        )
        try:
            with handle._scope:
                with anyio.move_on_after(handle.budget.wall_s) as timer:
                    handle.result = research_result(
                        await child.call(
                            "web_research",
                            {
                                "question": handle.question,
                                "depth": handle.depth,
                                "freshness": handle.freshness,
                            },
                        )
                    )
                if timer.cancelled_caught:
                    handle.result = runner.interrupted(
                        handle.question,
                        caps,
                        f"the researcher's wall time of {handle.budget.wall_s:g}s ran out before it finished",
                    )
                handle.status = "done"
        except Exception as exc:  # noqa: BLE001 -- one child's failure must not sink its siblings
            handle.status = "failed"
            handle.error = f"{type(exc).__name__}: {exc}"
        finally:
            if handle.status == "running":  # cancelled, by the handle or from outside
                handle.status = "cancelled"
            parent.ledger.settle(handle.budget, child.ledger)
            handle._done.set()
