"""Resolving a run's limits: depth preset, lowered by the request, bounded by the configured caps."""

from __future__ import annotations

from simone.runtime import WebSettings
from simone.workflows.research._models import (
    DEPTH_PRESETS,
    ResearchBudget,
    WebResearchRequest,
    lowest,
)

_NAMES: dict[str, tuple[str, str | None]] = {
    # preset field: (request/budget field, cap field in WebSettings)
    "queries": ("max_queries", "max_queries"),
    "fetches": ("max_fetches", "max_fetches"),
    "iterations": ("max_iterations", "max_iterations"),
    "results_per_query": ("results_per_query", "max_results_per_query"),
    "min_sources": ("min_sources", None),
    "tokens": ("max_context_tokens", "max_context_tokens"),
}


def resolve_budget(
    request: WebResearchRequest, caps: WebSettings, *, context_tokens: int | None = None
) -> ResearchBudget:
    """The limits of one run: ``min(request value or preset, preset, cap)`` for every field.

    Args:
        request: the research request (its values may only lower the depth's preset).
        caps: the configuration; its ``max_*`` fields are hard caps nothing exceeds.
        context_tokens: the caller's own token budget (the trusted context's), a further bound.

    Every lowered request value is noted in ``lowered``. ``min_sources`` is also bounded by what the
    queries can return at all.
    """
    preset = DEPTH_PRESETS[request.depth]
    asked_by, capped_by = request.model_dump(), caps.model_dump()
    asked = {name: asked_by[field] for name, (field, _) in _NAMES.items()}
    configured = {name: capped_by[cap] for name, (_, cap) in _NAMES.items() if cap is not None}
    wanted = lowest(preset, asked)
    capped = lowest(wanted, configured)
    caller = lowest(capped, {"tokens": None if context_tokens is None else max(1, context_tokens)})
    lowered: list[str] = []
    before, after = wanted.model_dump(), capped.model_dump()
    for name, (field, cap) in _NAMES.items():
        if asked[name] is not None and asked[name] > before[name]:
            lowered.append(
                f"{field} {asked[name]} was lowered to {before[name]}, the most a {request.depth.value} run may use"
            )
        if after[name] < before[name]:
            lowered.append(
                f"{field} {before[name]} was lowered to the configured cap web.{cap} = {after[name]}"
            )
    if caller.tokens < capped.tokens:
        lowered.append(
            f"max_context_tokens {capped.tokens} was lowered to the caller's budget of {context_tokens}"
        )
    final = caller.model_dump()
    values = {field: final[name] for name, (field, _) in _NAMES.items()}
    reachable = values["max_queries"] * values["results_per_query"]
    if values["min_sources"] > reachable:
        lowered.append(
            f"min_sources {values['min_sources']} was lowered to {reachable}, the most the queries can find"
        )
        values["min_sources"] = reachable
    values["max_iterations"] = min(values["max_iterations"], values["max_queries"])
    return ResearchBudget(depth=request.depth, lowered=lowered, **values)
