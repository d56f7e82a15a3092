"""simone.workflows."""

from simone.workflows.retrieval import (
    RuleDecision as RuleDecision,
    SelectionDecision as SelectionDecision,
    SelectionPolicy as SelectionPolicy,
    SelectionRule as SelectionRule,
    retrieve as retrieve,
)

__all__: tuple[str, ...] = (
    "RuleDecision",
    "SelectionDecision",
    "SelectionPolicy",
    "SelectionRule",
    "retrieve",
)
