"""simone.workflows.research — bounded web research: plan → search → fetch → pack, and the critic."""

from simone.workflows.research._budget import resolve_budget as resolve_budget
from simone.workflows.research._critic import (
    CRITIC_VERSION as CRITIC_VERSION,
    WEIGHTS as CRITIC_WEIGHTS,
    SourceView as SourceView,
    critique as critique,
    find_contradictions as find_contradictions,
)
from simone.workflows.research._models import (
    DEPTH_PRESETS as DEPTH_PRESETS,
    MAX_QUESTION_CHARS as MAX_QUESTION_CHARS,
    Confidence as Confidence,
    CriticBreakdown as CriticBreakdown,
    Depth as Depth,
    DepthPreset as DepthPreset,
    FetchMode as FetchMode,
    QueryRun as QueryRun,
    ResearchBudget as ResearchBudget,
    ResearchLimits as ResearchLimits,
    ResearchStatus as ResearchStatus,
    Source as Source,
    StopReason as StopReason,
    WebResearchRequest as WebResearchRequest,
    WebResearchResult as WebResearchResult,
    depth_of as depth_of,
    depth_preset as depth_preset,
    lowest as lowest,
)
from simone.workflows.research._plan import (
    PlannedQuery as PlannedQuery,
    follow_up_queries as follow_up_queries,
    initial_queries as initial_queries,
)
from simone.workflows.research._workflow import WebResearch as WebResearch

__all__ = (
    "CRITIC_VERSION",
    "CRITIC_WEIGHTS",
    "Confidence",
    "CriticBreakdown",
    "DEPTH_PRESETS",
    "Depth",
    "DepthPreset",
    "FetchMode",
    "MAX_QUESTION_CHARS",
    "PlannedQuery",
    "QueryRun",
    "ResearchBudget",
    "ResearchLimits",
    "ResearchStatus",
    "Source",
    "SourceView",
    "StopReason",
    "WebResearch",
    "WebResearchRequest",
    "WebResearchResult",
    "critique",
    "depth_of",
    "depth_preset",
    "find_contradictions",
    "follow_up_queries",
    "initial_queries",
    "lowest",
    "resolve_budget",
)
