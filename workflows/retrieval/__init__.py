"""The retrieval workflow: a selection policy made of data rules, then the router.

``retrieve(router, request, context, policy=...)`` is a plain async function; swap the policy, the
router or its providers to compose your own workflow (see docs/composing.md).
"""

from simone.workflows.retrieval._policy import (
    CURRENT_OR_SOURCED_TERMS as CURRENT_OR_SOURCED_TERMS,
    DEFAULT_RESTRICTIONS as DEFAULT_RESTRICTIONS,
    DEFAULT_RULES as DEFAULT_RULES,
    RuleDecision as RuleDecision,
    SelectionDecision as SelectionDecision,
    SelectionPolicy as SelectionPolicy,
    SelectionRule as SelectionRule,
)
from simone.workflows.retrieval._workflow import (
    DEFAULT_POLICY as DEFAULT_POLICY,
    retrieve as retrieve,
    select as select,
)

__all__ = (
    "CURRENT_OR_SOURCED_TERMS",
    "DEFAULT_POLICY",
    "DEFAULT_RESTRICTIONS",
    "DEFAULT_RULES",
    "RuleDecision",
    "SelectionDecision",
    "SelectionPolicy",
    "SelectionRule",
    "retrieve",
    "select",
)
