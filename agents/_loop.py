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
    seen: dict[str, int] = {}
    strikes = 0
    ledger_of_session = tool_context.ledger
    record = outcome.steps

    for step in range(1, limits.max_steps + 1):
        left = limits.max_tokens - outcome.usage.total_tokens
        if ledger_of_session is not None:
            left = min(left, ledger_of_session.available().tokens)
        if left <= 0:
            outcome.stop_reason = "max_tokens"
            return outcome
        try:
            response = await model.complete(history, tools=specs, max_tokens=left)
        except ProviderError as exc:
            outcome.stop_reason = "model_failed"
            outcome.failure = ProviderFailure.from_error(f"chat:{model.name}", exc)
            record.append(StepRecord(step=step, action="model", detail=exc.message, outcome="error"))
            return outcome
        outcome.usage = outcome.usage + response.usage
        session_spent = False
        if ledger_of_session is not None:  # model tokens count against the session's budget too
            available = ledger_of_session.available().tokens
            ledger_of_session.charge(tokens=min(response.usage.total_tokens, available))
            session_spent = response.usage.total_tokens >= available
        message = response.message
        history.append(message)
        if not message.tool_calls:
            outcome.text = message.content
            outcome.stop_reason = "answered"
            record.append(StepRecord(step=step, action="answer", detail=f"{len(message.content)} characters"))
            return outcome
        if outcome.usage.total_tokens >= limits.max_tokens or session_spent:
            outcome.stop_reason = "max_tokens"
            record.append(
                StepRecord(step=step, action="model", detail="token budget spent", outcome="skipped")
            )
            return outcome
        for index, call in enumerate(message.tool_calls):
            if index >= limits.max_calls_per_step:
                reply = f"refused: at most {limits.max_calls_per_step} tool calls per turn"
                record.append(StepRecord(step=step, action=call.name, detail=reply, outcome="refused"))
                history.append(ChatMessage(role="tool", content=reply, tool_call_id=call.id, name=call.name))
                continue
            key = _call_key(call)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > limits.max_repeats:
                strikes += 1
                reply = (
                    f"refused: this exact call to {call.name!r} already ran {seen[key] - 1} time(s); "
                    "use its result above, change the arguments, or answer"
                )
                record.append(StepRecord(step=step, action=call.name, detail=reply, outcome="refused"))
                history.append(ChatMessage(role="tool", content=reply, tool_call_id=call.id, name=call.name))
                continue
            reply, result = await _serve(registry, profile, tool_context, call, ledger, render, step, record)
            if result is not None:
                outcome.results.append(result)
            history.append(ChatMessage(role="tool", content=reply, tool_call_id=call.id, name=call.name))
        if strikes > limits.max_repeats:
            outcome.stop_reason = "repeated_calls"
            return outcome
    outcome.stop_reason = "max_steps"
    return outcome


async def _serve(
    registry: ToolRegistry,
    profile: AgentProfile,
    tool_context: ToolContext,
    call: ToolCall,
    ledger: EvidenceLedger,
    render: ResultRenderer,
    step: int,
    record: list[StepRecord],
) -> tuple[str, BaseModel | None]:
    try:
        result = await registry.call(profile, tool_context, call.name, call.arguments)
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
    return render(call.name, result, ledger), result
