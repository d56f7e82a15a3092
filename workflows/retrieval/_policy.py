"""Provider selection as data: rules a developer can read, change and extend, each decision explained.

A :class:`SelectionRule` names the providers it selects (by kind or by instance name), the conditions
under which it fires (query terms, scope keys present in the trusted context, callers) and the reason
recorded in the result. A :class:`SelectionPolicy` evaluates every rule in order, then applies the
caller restrictions: web search is for the researcher and the research workflow only. For anyone else
an auto-selected web provider is *dropped with a recorded reason*; an *explicit* request for it is
``forbidden``. An explicit provider list always wins over the rules.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from simone.runtime import (
    SCOPE_KEYS,
    Caller,
    ConfigError,
    ProviderKind,
    ProviderSelection,
    TrustedContext,
    describe_validation_error,
)

FORBIDDEN_MARK = "forbidden"
"""The router reports ``forbidden`` when every dropped provider's reason carries this word."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SelectionRule(_Frozen):
    """One selection rule. It fires when *all* of its conditions hold (no condition: it always fires).

    Attributes:
        name: a short identifier shown in every decision.
        select: provider kinds (``memory``, ``document-index``…) or instance names it selects.
        reason: why these providers answer this kind of question (shown in the result).
        when_any_term: fires only if the query contains at least one of these words or phrases
            (compared after NFKC and case folding, on word boundaries).
        when_scope: fires only if the trusted context has every one of these scope keys set.
        callers: fires only for these callers (empty: any caller).
    """

    name: Annotated[str, Field(min_length=1, max_length=64)]
    select: Annotated[tuple[str, ...], Field(min_length=1)]
    reason: Annotated[str, Field(min_length=1)]
    when_any_term: tuple[str, ...] = ()
    when_scope: tuple[str, ...] = ()
    callers: tuple[Caller, ...] = ()

    def evaluate(self, query: str, context: TrustedContext) -> tuple[bool, str]:
        """Whether the rule fires for ``query`` in ``context``, and a sentence saying why (not)."""
        notes: list[str] = []
        if self.callers:
            names = ", ".join(c.value for c in self.callers)
            if context.caller not in self.callers:
                return False, f"the caller is {context.caller.value}, not one of {names}"
            notes.append(f"the caller is {context.caller.value}")
        scope = context.scope()
        missing = [key for key in self.when_scope if key not in scope]
        if missing:
            return False, f"the context has no {', '.join(missing)}"
        if self.when_scope:
            notes.append(f"the context has {', '.join(self.when_scope)}")
        if self.when_any_term:
            folded = _fold(query)
            hits = [term for term in self.when_any_term if _contains(folded, _fold(term))]
            if not hits:
                shown = ", ".join(self.when_any_term[:8]) + (" …" if len(self.when_any_term) > 8 else "")
                return False, f"the query mentions none of: {shown}"
            notes.append("the query mentions " + ", ".join(repr(t) for t in hits[:3]))
        return True, "; ".join(notes) if notes else "it has no conditions (applies to every question)"


class RuleDecision(_Frozen):
    """How one rule was decided for one request."""

    rule: str
    fired: bool
    why: str
    providers: list[str] = Field(default_factory=list)


class SelectionDecision(_Frozen):
    """The outcome of a policy: what is asked, what was dropped, and every rule's decision.

    ``unserved`` records the rules that fired but asked nobody for one of their selectors (none is
    registered, or the caller may not use it): ``provider`` is the selector, ``reason`` the rule's
    ``rule <name>: <reason> (<why it fired>)``. The orchestrator reads it to decide delegation, so the
    policy is evaluated once per question.
    """

    selected: list[ProviderSelection]
    dropped: list[ProviderSelection]
    rules: list[RuleDecision]
    unserved: list[ProviderSelection] = Field(default_factory=list)

    def unserved_reasons(self, selector: str) -> list[str]:
        """The reasons of the fired rules whose ``selector`` (a kind or a name) asked nobody."""
        return [s.reason for s in self.unserved if s.provider == selector]

    def explain(self) -> str:
        """A plain multi-line explanation of the decision."""
        lines = [f"ask {s.provider}: {s.reason}" for s in self.selected]
        lines += [f"drop {s.provider}: {s.reason}" for s in self.dropped]
        lines += [f"rule {r.rule}: {'fired' if r.fired else 'did not fire'} ({r.why})" for r in self.rules]
        return "\n".join(lines)


CURRENT_OR_SOURCED_TERMS: tuple[str, ...] = (
    "latest",
    "current",
    "currently",
    "today",
    "news",
    "recent",
    "recently",
    "this week",
    "this month",
    "this year",
    "right now",
    "source",
    "sources",
    "cite",
    "according to",
    "published",
    "release",
    "released",
    "price",
    "on the web",
    "online",
    "internet",
)
"""Words that mark a question as current or source-backed (the default web rule; replace at will)."""

DEFAULT_RULES: tuple[SelectionRule, ...] = (
    SelectionRule(
        name="general-context",
        select=(ProviderKind.MEMORY.value,),
        reason="memory holds the actor's notes, todos, facts and task state (general context)",
    ),
    SelectionRule(
        name="conversation-context",
        select=(ProviderKind.SESSION_MEMORY.value,),
        when_scope=("conversation",),
        reason="the event belongs to a conversation whose recent turns may hold the context",
    ),
    SelectionRule(
        name="project-documents",
        select=(ProviderKind.DOCUMENT_INDEX.value,),
        reason="project and document questions are answered from the indexed documents",
    ),
    SelectionRule(
        name="current-or-sourced",
        select=(ProviderKind.WEB_SEARCH.value,),
        when_any_term=CURRENT_OR_SOURCED_TERMS,
        reason="the question asks for current or source-backed information",
    ),
    SelectionRule(
        name="researcher-web",
        select=(ProviderKind.WEB_SEARCH.value,),
        callers=(Caller.RESEARCHER, Caller.RESEARCH_WORKFLOW),
        reason="the researcher and the research workflow search the web for every question",
    ),
)
"""The default rules of DESIGN.md ("Retrieval → Selection"), in order."""

DEFAULT_RESTRICTIONS: Mapping[str, tuple[Caller, ...]] = {
    ProviderKind.WEB_SEARCH.value: (Caller.RESEARCHER, Caller.RESEARCH_WORKFLOW),
}
"""Provider kinds only some callers may use."""


class SelectionPolicy:
    """Evaluates selection rules for a request and applies the caller restrictions.

    Args:
        rules: the rules, evaluated in order (default :data:`DEFAULT_RULES`).
        restrictions: provider kind or name → the callers allowed to use it
            (default: web search for the researcher and the research workflow only).
        fallback_to_all: when no rule selects a registered provider, ask every provider the caller
            may use (with that reason) instead of asking none.
    """

    def __init__(
        self,
        rules: Sequence[SelectionRule] = DEFAULT_RULES,
        *,
        restrictions: Mapping[str, Sequence[Caller]] | None = None,
        fallback_to_all: bool = True,
    ) -> None:
        names = [rule.name for rule in rules]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"selection rule names must be unique; repeated: {', '.join(duplicates)}")
        for rule in rules:
            bad = [key for key in rule.when_scope if key not in SCOPE_KEYS]
            if bad:
                raise ConfigError(
                    f"rule {rule.name!r} names unknown scope key(s) {bad}; use some of {list(SCOPE_KEYS)}"
                )
        self.rules: tuple[SelectionRule, ...] = tuple(rules)
        source = DEFAULT_RESTRICTIONS if restrictions is None else restrictions
        self.restrictions: dict[str, tuple[Caller, ...]] = {k: tuple(v) for k, v in source.items()}
        self.fallback_to_all = fallback_to_all

    @classmethod
    def from_data(
        cls, rules: Sequence[Mapping[str, Any]], *, include_defaults: bool = True, **options: Any
    ) -> SelectionPolicy:
        """A policy from rules written as data (a TOML array of tables, JSON), before the defaults.

        Raises:
            ConfigError: a rule that does not validate, naming the rule and the field.
        """
        parsed: list[SelectionRule] = []
        for index, raw in enumerate(rules):
            try:
                parsed.append(SelectionRule.model_validate(dict(raw)))
            except ValidationError as exc:
                name = raw.get("name", f"#{index + 1}") if isinstance(raw, Mapping) else f"#{index + 1}"
                reasons = describe_validation_error(exc, limit=None, root="rule")
                raise ConfigError(f"selection rule {name!r} is invalid: {reasons}") from exc
        return cls((*parsed, *(DEFAULT_RULES if include_defaults else ())), **options)

    def with_rules(self, *rules: SelectionRule, first: bool = False) -> SelectionPolicy:
        """A copy of this policy with ``rules`` added (at the end, or first)."""
        combined = (*rules, *self.rules) if first else (*self.rules, *rules)
        return SelectionPolicy(combined, restrictions=self.restrictions, fallback_to_all=self.fallback_to_all)

    def allowed(self, name: str, kind: ProviderKind, caller: Caller) -> bool:
        """Whether ``caller`` may use the provider ``name`` of ``kind``."""
        for key in (name, kind.value):
            if key in self.restrictions and caller not in self.restrictions[key]:
                return False
        return True

    def _restriction_text(self, name: str, kind: ProviderKind) -> str:
        callers = self.restrictions.get(name) or self.restrictions.get(kind.value) or ()
        return ", ".join(c.value for c in callers) or "nobody"

    def _not_asked(self, name: str, kind: ProviderKind, caller: Caller) -> str:
        """Why the restricted provider ``name`` is not asked for ``caller``."""
        return (
            f"not asked: {kind.value} is only for {self._restriction_text(name, kind)} "
            f"and the caller is {caller.value}"
        )

    def decide(
        self,
        query: str,
        context: TrustedContext,
        providers: Mapping[str, ProviderKind],
        *,
        explicit: Sequence[str] | None = None,
    ) -> SelectionDecision:
        """Decide which of ``providers`` (name → kind) answer ``query`` for ``context``.

        An ``explicit`` list wins over the rules: each name is asked, except a restricted one the
        caller may not use, which is dropped as ``forbidden``. Unknown explicit names are left for the
        router to refuse.
        """
        if explicit is not None:
            return self._decide_explicit(explicit, providers, context.caller)
        tally = _Tally()
        decisions = [self._apply(rule, query, context, providers, tally) for rule in self.rules]
        if not tally.asked and self.fallback_to_all:
            self._fall_back(providers, context.caller, tally)
        order = list(providers)
        selected = [
            ProviderSelection(provider=n, reason=tally.asked[n]) for n in sorted(tally.asked, key=order.index)
        ]
        dropped = [
            ProviderSelection(provider=n, reason=tally.refused[n])
            for n in sorted(tally.refused, key=order.index)
            if n not in tally.asked
        ]
        return SelectionDecision(selected=selected, dropped=dropped, rules=decisions, unserved=tally.unserved)

    def _decide_explicit(
        self, explicit: Sequence[str], providers: Mapping[str, ProviderKind], caller: Caller
    ) -> SelectionDecision:
        """Ask every explicitly named provider, but drop a restricted one as ``forbidden``."""
        selected: list[ProviderSelection] = []
        dropped: list[ProviderSelection] = []
        for name in dict.fromkeys(explicit):
            kind = providers.get(name)
            if kind is not None and not self.allowed(name, kind, caller):
                reason = (
                    f"{FORBIDDEN_MARK}: {name} ({kind.value}) is only for "
                    f"{self._restriction_text(name, kind)}; the caller is {caller.value}"
                )
                dropped.append(ProviderSelection(provider=name, reason=reason))
            else:
                selected.append(ProviderSelection(provider=name, reason="named explicitly in the request"))
        return SelectionDecision(selected=selected, dropped=dropped, rules=[])

    def _apply(
        self,
        rule: SelectionRule,
        query: str,
        context: TrustedContext,
        providers: Mapping[str, ProviderKind],
        tally: _Tally,
    ) -> RuleDecision:
        """Evaluate ``rule`` and, when it fires, record what it asks, refuses and leaves unserved."""
        fired, why = rule.evaluate(query, context)
        if not fired:
            return RuleDecision(rule=rule.name, fired=False, why=why, providers=[])
        caller = context.caller
        tally.unserved += [
            ProviderSelection(provider=selector, reason=f"rule {rule.name}: {rule.reason} ({why})")
            for selector in rule.select
            if not self._serves(selector, providers, caller)
        ]
        targets = set(rule.select)
        matched = [n for n, k in providers.items() if n in targets or k.value in targets]
        if not matched:
            why += f"; no registered provider is {' or '.join(rule.select)}"
        text = f"rule {rule.name}: {rule.reason} ({why})"
        for name in matched:
            kind = providers[name]
            if self.allowed(name, kind, caller):
                tally.asked.setdefault(name, text)
            else:
                delegate = (
                    " (delegate the question to a researcher instead)"
                    if caller is Caller.ORCHESTRATOR
                    else ""
                )
                tally.refused.setdefault(name, f"{text}; {self._not_asked(name, kind, caller)}{delegate}")
        return RuleDecision(rule=rule.name, fired=True, why=why, providers=matched)

    def _serves(self, selector: str, providers: Mapping[str, ProviderKind], caller: Caller) -> bool:
        """Whether some provider ``caller`` may use is ``selector`` (by name or by kind)."""
        return any(
            (n == selector or k.value == selector) and self.allowed(n, k, caller)
            for n, k in providers.items()
        )

    def _fall_back(self, providers: Mapping[str, ProviderKind], caller: Caller, tally: _Tally) -> None:
        """No rule asked anyone: ask every provider ``caller`` may use, and say why the others are not."""
        for name, kind in providers.items():
            if self.allowed(name, kind, caller):
                tally.asked[name] = "no rule selected a provider; asking every provider the caller may use"
            elif name not in tally.refused:
                tally.refused[name] = self._not_asked(name, kind, caller)


@dataclass(slots=True)
class _Tally:
    """What the fired rules decided so far: provider name → the first reason it is asked or refused."""

    asked: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    unserved: list[ProviderSelection] = field(default_factory=list)
    """The fired rules' selectors that asked nobody."""


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _contains(folded_query: str, folded_term: str) -> bool:
    if not folded_term:
        return False
    return re.search(rf"(?<!\w){re.escape(folded_term)}(?!\w)", folded_query) is not None
