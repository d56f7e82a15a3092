"""Budgets of sessions: tokens, queries, fetches, wall time and concurrent children, carved for children.

A parent *carves* a child's budget out of what it has left: the allotment is reserved at once (so
two children can never be promised the same tokens), the child's use is charged to it, and what the
child did not use returns to the parent when it ends. A child can never exceed its allotment: every
charge past it raises :class:`~simone.runtime.BudgetExceeded`, and its wall time is a hard deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

from pydantic import Field
from simone.runtime import BudgetExceeded
from simone.workflows.research import ResearchLimits, lowest


class Budget(ResearchLimits):
    """What a session may spend: its research limits, wall time and concurrent children.

    Attributes:
        tokens: evidence and model tokens.
        queries: web search queries.
        fetches: page fetches.
        wall_s: seconds of wall time.
        max_children: children running at the same time.
    """

    tokens: Annotated[int, Field(ge=0)] = 16_000
    queries: Annotated[int, Field(ge=0)] = 12
    fetches: Annotated[int, Field(ge=0)] = 10
    wall_s: Annotated[float, Field(gt=0)] = 120.0
    max_children: Annotated[int, Field(ge=0)] = 3


class BudgetUse(ResearchLimits):
    """What a session has spent so far (its tokens, queries and fetches), and what running children hold."""

    elapsed_s: float = 0.0
    children_started: int = 0
    reserved: ResearchLimits = ResearchLimits()
    """The allotments of the children still running (returned or charged when each ends)."""


def _plus(a: ResearchLimits, b: ResearchLimits, sign: int = 1) -> ResearchLimits:
    return ResearchLimits(
        queries=a.queries + sign * b.queries,
        fetches=a.fetches + sign * b.fetches,
        tokens=a.tokens + sign * b.tokens,
    )


class BudgetLedger:
    """Mutable accounting of one session's :class:`Budget`. Single event loop: no lock needed.

    Args:
        budget: the allotment.
        clock: a monotonic clock (``time.monotonic``; inject a fake one in tests).
    """

    def __init__(self, budget: Budget, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self._clock = clock
        self._started = clock()
        self.spent = ResearchLimits()
        self.children_active = 0
        self.children_started = 0
        self._reserved = ResearchLimits()

    # -- what is left -------------------------------------------------------------------------
    def elapsed_s(self) -> float:
        """Seconds since the session started."""
        return self._clock() - self._started

    def remaining_wall_s(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.budget.wall_s - self.elapsed_s())

    def available(self) -> Budget:
        """What is left to spend or carve (tokens, queries and fetches net of reservations)."""
        held = _plus(self.spent, self._reserved)
        return Budget(
            tokens=max(0, self.budget.tokens - held.tokens),
            queries=max(0, self.budget.queries - held.queries),
            fetches=max(0, self.budget.fetches - held.fetches),
            wall_s=max(1e-3, self.remaining_wall_s()),
            max_children=self.budget.max_children,
        )

    def use(self) -> BudgetUse:
        """A snapshot of what was spent and reserved."""
        return BudgetUse(
            tokens=self.spent.tokens,
            queries=self.spent.queries,
            fetches=self.spent.fetches,
            elapsed_s=round(self.elapsed_s(), 4),
            children_started=self.children_started,
            reserved=self._reserved,
        )

    # -- spending -----------------------------------------------------------------------------
    def charge(self, *, tokens: int = 0, queries: int = 0, fetches: int = 0) -> None:
        """Spend; anything past the allotment raises and spends nothing.

        Raises:
            BudgetExceeded: the charge would go past what is left, or the wall time is up.
        """
        if tokens < 0 or queries < 0 or fetches < 0:
            raise ValueError("charges are never negative")
        left = self.available()
        over = [
            f"{what}: needs {need}, {have} left"
            for what, need, have in (
                ("tokens", tokens, left.tokens),
                ("queries", queries, left.queries),
                ("fetches", fetches, left.fetches),
            )
            if need > have
        ]
        if self.remaining_wall_s() <= 0:
            over.append(f"wall time: {self.budget.wall_s:g}s spent")
        if over:
            raise BudgetExceeded("the session's budget is exhausted (" + "; ".join(over) + ")")
        self.spent = _plus(self.spent, ResearchLimits(queries=queries, fetches=fetches, tokens=tokens))

    def carve(self, wanted: Budget) -> Budget:
        """Reserve a child's allotment: ``wanted``, lowered to what is left.

        Raises:
            BudgetExceeded: ``max_children`` children are already running, or nothing is left.
        """
        if self.children_active >= self.budget.max_children:
            raise BudgetExceeded(
                f"{self.children_active} child session(s) already running; the limit is "
                f"{self.budget.max_children} (wait for one to finish or raise max_children)"
            )
        left = self.available()
        if self.remaining_wall_s() <= 0:
            raise BudgetExceeded(f"the session's wall time of {self.budget.wall_s:g}s is spent")
        child = lowest(wanted, left).model_copy(
            update={
                "wall_s": min(wanted.wall_s, self.remaining_wall_s()),
                "max_children": min(wanted.max_children, left.max_children),
            }
        )
        self._reserved = _plus(self._reserved, child)
        self.children_active += 1
        self.children_started += 1
        return child

    def settle(self, carved: Budget, used: BudgetUse | BudgetLedger) -> None:
        """A child ended: release its reservation and charge what it really used (never more)."""
        if isinstance(used, BudgetLedger):
            used = used.use()
        self._reserved = _plus(self._reserved, carved, -1)
        self.spent = _plus(self.spent, lowest(used.limits(), carved))
        self.children_active -= 1
