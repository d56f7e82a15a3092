"""simone.workflows."""

from simone.workflows.research import (
    CRITIC_VERSION as CRITIC_VERSION,
    DEPTH_PRESETS as DEPTH_PRESETS,
    Confidence as Confidence,
    CriticBreakdown as CriticBreakdown,
    Depth as Depth,
    FetchMode as FetchMode,
    QueryRun as QueryRun,
    ResearchBudget as ResearchBudget,
    ResearchStatus as ResearchStatus,
    Source as Source,
    StopReason as StopReason,
    WebResearch as WebResearch,
    WebResearchRequest as WebResearchRequest,
    WebResearchResult as WebResearchResult,
)
from simone.workflows.retrieval import (
    RuleDecision as RuleDecision,
    SelectionDecision as SelectionDecision,
    SelectionPolicy as SelectionPolicy,
    SelectionRule as SelectionRule,
    retrieve as retrieve,
)

__all__: tuple[str, ...] = (
    "CRITIC_VERSION",
    "Confidence",
    "CriticBreakdown",
    "DEPTH_PRESETS",
    "Depth",
    "FetchMode",
    "QueryRun",
    "ResearchBudget",
    "ResearchStatus",
    "RuleDecision",
    "SelectionDecision",
    "SelectionPolicy",
    "SelectionRule",
    "Source",
    "StopReason",
    "WebResearch",
    "WebResearchRequest",
    "WebResearchResult",
    "retrieve",
)
