"""Resolving a run's limits: depth preset, lowered by the request, bounded by the configured caps."""

from __future__ import annotations

from simone.runtime import WebSettings
from simone.workflows.research._models import DEPTH_PRESETS, Depth, ResearchBudget, WebResearchRequest

_FIELDS: tuple[tuple[str, str, str | None], ...] = (
    # (request/budget field, preset field, cap field in WebSettings)
    ("max_queries", "queries", "max_queries"),
    ("max_fetches", "fetches", "max_fetches"),
    ("max_iterations", "iterations", "max_iterations"),
    ("results_per_query", "results_per_query", "max_results_per_query"),
    ("min_sources", "min_sources", None),
    ("max_context_tokens", "context_tokens", "max_context_tokens"),
)


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
    preset = DEPTH_PRESETS[Depth(request.depth)]
    values: dict[str, int] = {}
    lowered: list[str] = []
    for field, preset_field, cap_field in _FIELDS:
        preset_value = int(getattr(preset, preset_field))
        asked = getattr(request, field)
        value = preset_value if asked is None else min(int(asked), preset_value)
        if asked is not None and asked > preset_value:
            lowered.append(
                f"{field} {asked} was lowered to {preset_value}, the most a {request.depth.value} run may use"
            )
        if cap_field is not None:
            cap = int(getattr(caps, cap_field))
            if value > cap:
                lowered.append(f"{field} {value} was lowered to the configured cap web.{cap_field} = {cap}")
                value = cap
        values[field] = value
    if context_tokens is not None and values["max_context_tokens"] > context_tokens:
        lowered.append(
            f"max_context_tokens {values['max_context_tokens']} was lowered to the caller's budget of {context_tokens}"
        )
        values["max_context_tokens"] = max(1, context_tokens)
    reachable = values["max_queries"] * values["results_per_query"]
    if values["min_sources"] > reachable:
        lowered.append(
            f"min_sources {values['min_sources']} was lowered to {reachable}, the most the queries can find"
        )
        values["min_sources"] = reachable
    values["max_iterations"] = min(values["max_iterations"], values["max_queries"])
    return ResearchBudget(depth=request.depth, lowered=lowered, **values)
