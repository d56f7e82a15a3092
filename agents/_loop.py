"""The bounded tool-calling loop of a chat model.

Bounds: ``max_steps`` model turns, ``max_tokens`` model tokens (also charged to the session's budget,
which bounds them further), and a cap on repeating the very same call. Every tool call goes through the :class:`~simone.agents.ToolRegistry` with the session's own
context; the model's output never supplies scope. Malformed arguments, unknown tools, invalid
arguments, refused calls and failing tools become error messages the model can read (and steps in
the record); a call that carries a scope of its own raises :class:`~simone.runtime.ScopeViolation`
and ends the run. A model that fails (timeout, 500…) ends the loop with a structured failure the
caller can fall back from.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from simone.agents._budget import BudgetLedger
from simone.agents._chat import ChatMessage, ChatModel, ToolCall, Usage
from simone.agents._evidence import EvidenceLedger
from simone.agents._synthesis import StepRecord
from simone.agents._tool_text import render_tool_result
from simone.agents._tools import AgentProfile, ToolContext, ToolRegistry, UnknownTool
from simone.runtime import (
    AccessDenied,
    BudgetExceeded,
    InvalidRequest,
    ProviderError,
    ProviderFailure,
    ScopeViolation,
    loads_untrusted,
)


class LoopLimits(BaseModel):
    """The bounds of one loop.

    Attributes:
        max_steps: model turns (each may ask for several tool calls).
        max_tokens: model tokens (prompt + completion, as the model reports them).
        max_repeats: how often the very same call (name and arguments) may run; further repeats are
            refused, and a model that keeps repeating is stopped.
        max_calls_per_step: tool calls served from one model turn; the rest are refused.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: Annotated[int, Field(ge=1, le=100)] = 8
    max_tokens: Annotated[int, Field(ge=1)] = 8000
    max_repeats: Annotated[int, Field(ge=1)] = 1
    max_calls_per_step: Annotated[int, Field(ge=1)] = 8


StopReason = Literal["answered", "max_steps", "max_tokens", "repeated_calls", "model_failed"]


@dataclass
class LoopOutcome:
    """How a loop ended."""

    text: str | None
    stop_reason: StopReason
    steps: list[StepRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    failure: ProviderFailure | None = None
    results: list[BaseModel] = field(default_factory=list)


ResultRenderer = Callable[[str, BaseModel, EvidenceLedger], str]


def _call_key(call: ToolCall) -> str:
    try:
        parsed = loads_untrusted(call.arguments)
        canonical = json.dumps(parsed, sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = call.arguments
    return f"{call.name}\x1f{canonical}"


async def run_tool_loop(
    model: ChatModel,
    registry: ToolRegistry,
    profile: AgentProfile,
    tool_context: ToolContext,
    messages: Sequence[ChatMessage],
    ledger: EvidenceLedger,
    *,
    limits: LoopLimits | None = None,
    render: ResultRenderer = render_tool_result,
) -> LoopOutcome:
    """Run ``model`` with ``profile``'s tools until it answers or a bound is reached.

    Raises:
        ScopeViolation: a tool call carried scope of its own (the run is not continued).
    """
    limits = limits or LoopLimits()
    history = list(messages)
    specs = registry.specs(profile)
    outcome = LoopOutcome(text=None, stop_reason="max_steps")
    toolbox = _Toolbox(registry, profile, tool_context, ledger, render)
    seen: dict[str, int] = {}
    strikes = 0
    session = tool_context.ledger

    for step in range(1, limits.max_steps + 1):
        left = _tokens_left(limits, outcome.usage, session)
        if left <= 0:
            return _stop(outcome, "max_tokens")
        try:
            response = await model.complete(history, tools=specs, max_tokens=left)
        except ProviderError as exc:
            outcome.failure = ProviderFailure.from_error(f"chat:{model.name}", exc)
            failed = StepRecord(step=step, action="model", detail=exc.message, outcome="error")
            return _stop(outcome, "model_failed", failed)
        outcome.usage = outcome.usage + response.usage
        session_spent = _charge_session(session, response.usage)
        message = response.message
        history.append(message)
        if not message.tool_calls:
            outcome.text = message.content
            answer = StepRecord(step=step, action="answer", detail=f"{len(message.content)} characters")
            return _stop(outcome, "answered", answer)
        if outcome.usage.total_tokens >= limits.max_tokens or session_spent:
            spent = StepRecord(step=step, action="model", detail="token budget spent", outcome="skipped")
            return _stop(outcome, "max_tokens", spent)
        strikes += await _serve_turn(toolbox, message.tool_calls, step, limits, seen, history, outcome)
        if strikes > limits.max_repeats:
            return _stop(outcome, "repeated_calls")
    return _stop(outcome, "max_steps")


def _stop(outcome: LoopOutcome, reason: StopReason, why: StepRecord | None = None) -> LoopOutcome:
    """End the loop with ``reason``, recording the step that says why (if one does)."""
    outcome.stop_reason = reason
    if why is not None:
        outcome.steps.append(why)
    return outcome


def _tokens_left(limits: LoopLimits, usage: Usage, session: BudgetLedger | None) -> int:
    """The model tokens the next turn may spend: the loop's bound, clamped to the session's budget."""
    left = limits.max_tokens - usage.total_tokens
    if session is not None:
        left = min(left, session.available().tokens)
    return left


def _charge_session(session: BudgetLedger | None, usage: Usage) -> bool:
    """Charge a turn's model tokens to the session's budget too; whether they spent all it had left."""
    if session is None:
        return False
    available = session.available().tokens
    session.charge(tokens=min(usage.total_tokens, available))
    return usage.total_tokens >= available


async def _serve_turn(
    toolbox: _Toolbox,
    calls: Sequence[ToolCall],
    step: int,
    limits: LoopLimits,
    seen: dict[str, int],
    history: list[ChatMessage],
    outcome: LoopOutcome,
) -> int:
    """Serve (or refuse) one turn's tool calls, each reply added to ``history``; the repeats refused."""
    strikes = 0
    for index, call in enumerate(calls):
        refusal, repeated = _refusal(call, index, limits, seen)
        if repeated:
            strikes += 1
        if refusal is not None:
            reply = refusal
            outcome.steps.append(StepRecord(step=step, action=call.name, detail=reply, outcome="refused"))
        else:
            reply, result = await toolbox.serve(call, step, outcome.steps)
            if result is not None:
                outcome.results.append(result)
        history.append(ChatMessage(role="tool", content=reply, tool_call_id=call.id, name=call.name))
    return strikes


def _refusal(call: ToolCall, index: int, limits: LoopLimits, seen: dict[str, int]) -> tuple[str | None, bool]:
    """Why the ``index``-th call of a turn is refused (``None``: serve it), and whether as a repeat.

    A call within the turn's cap is counted in ``seen`` (by name and canonical arguments).
    """
    if index >= limits.max_calls_per_step:
        return f"refused: at most {limits.max_calls_per_step} tool calls per turn", False
    key = _call_key(call)
    seen[key] = seen.get(key, 0) + 1
    if seen[key] > limits.max_repeats:
        return (
            f"refused: this exact call to {call.name!r} already ran {seen[key] - 1} time(s); "
            "use its result above, change the arguments, or answer"
        ), True
    return None, False


@dataclass(frozen=True)
class _Toolbox:
    """What serving one tool call needs: the registry, the profile, the session's context and ledgers."""

    registry: ToolRegistry
    profile: AgentProfile
    tool_context: ToolContext
    ledger: EvidenceLedger
    render: ResultRenderer

    async def serve(
        self, call: ToolCall, step: int, record: list[StepRecord]
    ) -> tuple[str, BaseModel | None]:
        """Run ``call``: the reply the model reads and the result (``None`` when the call failed)."""
        try:
            result = await self.registry.call(self.profile, self.tool_context, call.name, call.arguments)
        except ScopeViolation as exc:
            record.append(StepRecord(step=step, action=call.name, detail=str(exc), outcome="refused"))
            raise
        except UnknownTool as exc:
            record.append(StepRecord(step=step, action=call.name, detail=str(exc), outcome="error"))
            return f"error: {exc}", None
        except InvalidRequest as exc:
            record.append(StepRecord(step=step, action=call.name, detail=str(exc), outcome="error"))
            return f"error: {exc}; fix the arguments and call again", None
        except AccessDenied as exc:
            record.append(StepRecord(step=step, action=call.name, detail=exc.message, outcome="refused"))
            return f"refused: {exc.message}", None
        except BudgetExceeded as exc:
            record.append(StepRecord(step=step, action=call.name, detail=str(exc), outcome="refused"))
            return f"refused: {exc}; answer with what you have", None
        except ProviderError as exc:
            record.append(StepRecord(step=step, action=call.name, detail=exc.message, outcome="error"))
            return f"error ({exc.kind}): {exc.message}", None
        except Exception as exc:  # noqa: BLE001 -- a tool bug becomes an error the model reads; cancellation propagates
            detail = f"{type(exc).__name__}: {exc}"
            record.append(StepRecord(step=step, action=call.name, detail=detail, outcome="error"))
            return f"error: the tool failed ({detail})", None
        record.append(StepRecord(step=step, action=call.name, detail=call.arguments[:200]))
        return self.render(call.name, result, self.ledger), result
