import anyio
import pytest
from simone.providers.testing import FunctionProvider, make_evidence
from simone.runtime import (
    Caller,
    ConfigError,
    ProviderKind,
    Router,
    Status,
    TrustedContext,
    UnknownProvider,
)
from simone.workflows.retrieval import SelectionPolicy, SelectionRule, retrieve, select


def _router() -> tuple[Router, dict[str, FunctionProvider]]:
    providers = {
        "memory": FunctionProvider(
            "memory",
            lambda r, c: make_evidence(
                "memory", ["the memory note about deployments"], kind=ProviderKind.MEMORY
            ),
            kind=ProviderKind.MEMORY,
        ),
        "docs": FunctionProvider(
            "docs",
            lambda r, c: make_evidence(
                "docs", ["deployments use blue green switching"], kind=ProviderKind.DOCUMENT_INDEX
            ),
            kind=ProviderKind.DOCUMENT_INDEX,
        ),
        "web": FunctionProvider(
            "web",
            lambda r, c: make_evidence("web", ["a web page"], kind=ProviderKind.WEB_SEARCH),
            kind=ProviderKind.WEB_SEARCH,
        ),
    }
    return Router(list(providers.values())), providers


def _ctx(caller: Caller = Caller.ORCHESTRATOR, **scope: str) -> TrustedContext:
    return TrustedContext(actor="alice", caller=caller, **scope)


def test_orchestrator_gets_memory_and_documents_and_web_is_dropped_with_a_reason() -> None:
    router, providers = _router()

    async def main() -> None:
        result = await retrieve(router, router.request("what is the latest deployment process?"), _ctx())
        assert [s.provider for s in result.request.selected] == ["memory", "docs"]
        assert [s.provider for s in result.request.dropped] == ["web"]
        reason = result.request.dropped[0].reason
        assert "current-or-sourced" in reason and "researcher" in reason and "forbidden" not in reason
        assert result.status is Status.COMPLETE
        assert providers["web"].calls == []
        assert all("rule " in s.reason for s in result.request.selected)

    anyio.run(main)


def test_explicit_web_request_from_orchestrator_is_forbidden_and_never_reaches_the_provider() -> None:
    router, providers = _router()

    async def main() -> None:
        request = router.request("anything", providers=("web",))
        result = await retrieve(router, request, _ctx())
        assert result.status is Status.FORBIDDEN
        assert result.evidence == []
        assert providers["web"].calls == []
        assert result.request.dropped[0].reason.startswith("forbidden")

        mixed = await retrieve(router, router.request("anything", providers=("web", "docs")), _ctx())
        assert [s.provider for s in mixed.request.selected] == ["docs"]
        assert [s.provider for s in mixed.request.dropped] == ["web"]
        assert mixed.status is Status.COMPLETE

    anyio.run(main)


def test_researcher_gets_web_search() -> None:
    router, providers = _router()

    async def main() -> None:
        result = await retrieve(router, router.request("deployment"), _ctx(Caller.RESEARCHER))
        assert "web" in [s.provider for s in result.request.selected]
        assert len(providers["web"].calls) == 1
        explicit = await retrieve(router, router.request("x", providers=("web",)), _ctx(Caller.RESEARCHER))
        assert explicit.status is Status.COMPLETE

    anyio.run(main)


def test_rules_are_data_and_every_decision_is_explained() -> None:
    router, _ = _router()
    policy = SelectionPolicy(
        [
            SelectionRule(
                name="docs-only-for-howto", select=("docs",), when_any_term=("how",), reason="how-to"
            ),
            SelectionRule(name="memory-in-projects", select=("memory",), when_scope=("project",), reason="p"),
        ],
        fallback_to_all=False,
    )
    decision = select(router, router.request("How do I deploy?"), _ctx(), policy=policy)
    assert [s.provider for s in decision.selected] == ["docs"]
    by_rule = {d.rule: d for d in decision.rules}
    assert by_rule["docs-only-for-howto"].fired and "'how'" in by_rule["docs-only-for-howto"].why
    assert not by_rule["memory-in-projects"].fired
    assert "no project" in by_rule["memory-in-projects"].why
    assert "did not fire" in decision.explain()

    with_project = select(router, router.request("deploy"), _ctx(project="p1"), policy=policy)
    assert [s.provider for s in with_project.selected] == ["memory"]

    # "how" must match as a word, not inside "show"
    none = select(router, router.request("show me"), _ctx(), policy=policy)
    assert none.selected == []


def test_fallback_asks_every_permitted_provider() -> None:
    router, _ = _router()
    policy = SelectionPolicy([SelectionRule(name="never", select=("x",), when_any_term=("zzz",), reason="r")])
    decision = select(router, router.request("hello"), _ctx(), policy=policy)
    assert [s.provider for s in decision.selected] == ["memory", "docs"]
    assert [s.provider for s in decision.dropped] == ["web"]


def test_session_memory_only_inside_a_conversation() -> None:
    session = FunctionProvider("turns", lambda r, c: [], kind=ProviderKind.SESSION_MEMORY)
    router = Router([session])
    outside = select(router, router.request("q"), _ctx())
    assert [s.provider for s in outside.selected] == ["turns"]
    assert "no rule selected" in outside.selected[0].reason  # only the fallback asks it
    inside = select(router, router.request("q"), _ctx(conversation="c1"))
    assert [s.provider for s in inside.selected] == ["turns"]
    assert "conversation-context" in inside.selected[0].reason


def test_unknown_explicit_provider_and_bad_rules_are_typed_errors() -> None:
    router, _ = _router()

    async def main() -> None:
        with pytest.raises(UnknownProvider):
            await retrieve(router, router.request("q", providers=("nope",)), _ctx())

    anyio.run(main)
    rule = SelectionRule(name="a", select=("docs",), reason="r")
    with pytest.raises(ConfigError):
        SelectionPolicy([rule, rule])
    with pytest.raises(ConfigError):
        SelectionPolicy([SelectionRule(name="b", select=("docs",), when_scope=("planet",), reason="r")])


def test_rules_from_data_come_first_and_bad_rules_say_which() -> None:
    router, _ = _router()
    policy = SelectionPolicy.from_data(
        [
            {
                "name": "web-words",
                "select": ["docs"],
                "when_any_term": ["wiki"],
                "reason": "the wiki is in docs",
            }
        ]
    )
    assert policy.rules[0].name == "web-words" and len(policy.rules) > 1
    decision = select(router, router.request("search the wiki"), _ctx(), policy=policy)
    reasons = {s.provider: s.reason for s in decision.selected}
    assert "rule web-words" in reasons["docs"]  # the data rule came first, so its reason is recorded
    only = SelectionPolicy.from_data(
        [{"name": "m", "select": ["memory"], "reason": "r"}], include_defaults=False
    )
    assert [r.name for r in only.rules] == ["m"]
    with pytest.raises(ConfigError, match="'broken'.*select"):
        SelectionPolicy.from_data([{"name": "broken", "reason": "no targets"}])
    with pytest.raises(ConfigError, match="callers"):
        SelectionPolicy.from_data([{"name": "c", "select": ["docs"], "reason": "r", "callers": ["admin"]}])


def test_the_decision_records_rules_that_fired_but_asked_nobody() -> None:
    router, _ = _router()
    latest = "what is the latest deployment process?"
    decision = select(router, router.request(latest), _ctx())
    web_reasons = decision.unserved_reasons(ProviderKind.WEB_SEARCH.value)
    assert len(web_reasons) == 1
    assert web_reasons[0].startswith("rule current-or-sourced: the question asks for current")
    assert "the query mentions 'latest'" in web_reasons[0]
    # the researcher is allowed the web: nothing is unserved
    assert select(router, router.request(latest), _ctx(Caller.RESEARCHER)).unserved == []
    # no web provider registered at all: the fired rule is still recorded
    local = Router([p for name, p in router.providers.items() if name != "web"])
    assert select(local, local.request(latest), _ctx()).unserved_reasons("web-search") == web_reasons
    assert select(local, local.request("deployment process"), _ctx()).unserved == []

    async def main() -> None:
        result = await retrieve(local, local.request(latest), _ctx())
        assert [s.reason for s in result.request.unserved] == web_reasons

    anyio.run(main)
