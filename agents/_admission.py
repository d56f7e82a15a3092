"""Event admission: the only way a :class:`~simone.runtime.TrustedContext` comes into being.

An event says who it comes from and where it belongs (actor, conversation, client, project, task,
thread) and carries the text. The runtime admits it under a role (the caller) with a deadline and a
token budget that the runtime, not the event, decides. An event with no actor is refused; an event
that tries to set the caller, the deadline or the budget is refused too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from simone.runtime import Caller, InvalidRequest, ScopeViolation, TrustedContext, describe_validation_error


class AdmissionRefused(InvalidRequest):
    """An event that cannot be admitted (no actor, malformed fields); the message says what to fix."""


TRUST_FIELDS = frozenset({"caller", "deadline", "token_budget", "role", "scope", "trusted_context"})
"""Fields only the runtime sets; an event that carries one is a forged scope."""


class Event(BaseModel):
    """An incoming event, before admission. Nothing in it is trusted until the runtime admits it.

    Attributes:
        actor: who the event comes from (required for admission).
        conversation, client, project, task, thread: where it belongs.
        text: the message or question.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str | None = None
    conversation: str | None = None
    client: str | None = None
    project: str | None = None
    task: str | None = None
    thread: str | None = None
    text: Annotated[str, Field(max_length=1_000_000)] = ""


def admit(
    event: Event | Mapping[str, Any],
    *,
    caller: Caller = Caller.ORCHESTRATOR,
    token_budget: int = 4000,
    timeout_s: float | None = None,
    now: float | None = None,
) -> TrustedContext:
    """Admit ``event`` into a trusted context for ``caller``.

    Args:
        event: the event (or a mapping with its fields, e.g. parsed JSON).
        caller: the role the runtime admits it under.
        token_budget: the most evidence tokens the context may receive.
        timeout_s: seconds from now until the context's deadline (``None``: no deadline).
        now: the current ``time.time()`` (for tests).

    Raises:
        AdmissionRefused: no actor, a blank actor, unknown fields or a bad budget.
        ScopeViolation: the event tries to set a field only the runtime sets (caller, deadline…).
    """
    if isinstance(event, Mapping):
        forged = sorted(TRUST_FIELDS.intersection(event))
        if forged:
            raise ScopeViolation(
                f"the event tries to set {', '.join(forged)}; only the runtime decides the caller, the "
                "deadline and the budget when it admits an event"
            )
        try:
            event = Event.model_validate(dict(event))
        except ValidationError as exc:
            reasons = describe_validation_error(exc, limit=None, root="event")
            raise AdmissionRefused(f"the event cannot be admitted: {reasons}") from exc
    if event.actor is None or not event.actor.strip():
        raise AdmissionRefused(
            "the event has no actor and is refused: every event must say who it comes from "
            "(set 'actor', e.g. the user or service id)"
        )
    if token_budget < 1:
        raise AdmissionRefused(f"the token budget must be >= 1, not {token_budget}")
    if timeout_s is not None and timeout_s <= 0:
        raise AdmissionRefused(f"the timeout must be > 0 seconds, not {timeout_s}")
    deadline = None if timeout_s is None else (time.time() if now is None else now) + timeout_s
    try:
        return TrustedContext(
            actor=event.actor,
            conversation=event.conversation,
            client=event.client,
            project=event.project,
            task=event.task,
            thread=event.thread,
            caller=caller,
            deadline=deadline,
            token_budget=token_budget,
        )
    except ValidationError as exc:
        reasons = describe_validation_error(exc, limit=None, root="event")
        raise AdmissionRefused(f"the event cannot be admitted: {reasons}") from exc


def derive(
    context: TrustedContext, *, caller: Caller, token_budget: int, deadline: float | None
) -> TrustedContext:
    """A child context: the same scope under another role, with a budget and deadline no wider.

    Used by the runtime when a session spawns a child (the researcher); model output never reaches it.
    """
    budget = min(token_budget, context.token_budget)
    if context.deadline is not None:
        deadline = context.deadline if deadline is None else min(deadline, context.deadline)
    return context.model_copy(update={"caller": caller, "token_budget": max(1, budget), "deadline": deadline})
