"""One Depth and preset table, one "not configured" message, query limits read from the config."""

from __future__ import annotations

import pytest
from simone.agents import (
    DEPTH_PRESETS,
    ResearchArgs,
    RetrieveContextArgs,
    ToolRegistry,
    builtin_tools,
    child_budget,
)
from simone.agents._tools import ORCHESTRATOR
from simone.runtime import (
    MAX_QUERY_CHARS,
    Depth,
    InvalidRequest,
    Router,
    RouterSettings,
    web_not_configured,
)
from simone.workflows import research


def test_one_depth_and_one_preset_table() -> None:
    assert research.Depth is Depth and DEPTH_PRESETS is research.DEPTH_PRESETS
    assert [Depth(name) for name in ("basic", "standard", "deep")] == list(Depth)  # plain names read
    for depth, preset in DEPTH_PRESETS.items():
        budget = child_budget(depth.value)
        assert (budget.queries, budget.fetches, budget.tokens) == (
            preset.queries,
            preset.fetches,
            preset.tokens,
        )


def test_research_args_show_depth_and_freshness_as_plain_enums() -> None:
    properties = ResearchArgs.model_json_schema()["properties"]
    assert properties["depth"] == {
        "default": "standard",
        "description": "how much work: basic, standard or deep (more searches and pages)",
        "enum": ["basic", "standard", "deep"],
        "title": "Depth",
        "type": "string",
    }
    assert properties["freshness"]["enum"] == ["auto", "fresh", "cached"]
    assert ResearchArgs.model_validate({"question": "q", "depth": "deep"}).depth is Depth.DEEP


def test_one_not_configured_message() -> None:
    message = web_not_configured()
    assert message.startswith("web research is not configured: no search backend is configured")
    assert "SIMONE_WEB__SEARXNG_URL" in message and "SIMONE_WEB__TAVILY_API_KEY" in message


def test_the_tools_validate_queries_against_the_configured_limit() -> None:
    assert RouterSettings().max_query_chars == MAX_QUERY_CHARS
    default = {t.name: t for t in builtin_tools(Router([]))}
    assert default["retrieve_context"].args is RetrieveContextArgs
    registry = ToolRegistry()
    registry.extend(builtin_tools(Router([], max_query_chars=100), max_query_chars=100))
    spec = {s.name: s for s in registry.specs(ORCHESTRATOR)}
    for name in ("retrieve_context", "retrieve_memory"):
        assert spec[name].parameters["properties"]["query"]["maxLength"] == 100
        tool = registry.get(name)
        assert issubclass(tool.args, default[name].args)
        assert registry.parse(tool, {"query": "x" * 100}).query == "x" * 100
        with pytest.raises(InvalidRequest, match="at most 100 characters"):
            registry.parse(tool, {"query": "x" * 101})
