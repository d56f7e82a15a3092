from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from simone.runtime import WebSettings
from simone.runtime.text import default_analyzer
from simone.workflows.research import (
    CRITIC_VERSION,
    CRITIC_WEIGHTS,
    DEPTH_PRESETS,
    CriticBreakdown,
    Depth,
    DepthPreset,
    ResearchLimits,
    SourceView,
    WebResearchRequest,
    critique,
    find_contradictions,
    follow_up_queries,
    initial_queries,
    lowest,
    resolve_budget,
)
from simone.workflows.research._critic import authority_of, parse_date, recency_need

NOW = 1_735_689_600.0  # 2025-01-01
QUESTION = "What is the maximum depth of Lake Varnholm?"


def judge(sources: list[SourceView], **kw: object):  # type: ignore[no-untyped-def]
    options: dict[str, object] = {"min_sources": 2, "floor": 0.35, "attempted": 3, "failed": 0, "now": NOW}
    options.update(kw)
    return critique(QUESTION, sources, **options)  # type: ignore[arg-type]


def test_weights_add_up_and_version_is_reported() -> None:
    assert abs(sum(CRITIC_WEIGHTS.values()) - 1.0) < 1e-9
    assert judge([]).version == CRITIC_VERSION


def test_no_evidence_means_no_confidence() -> None:
    confidence = judge([])
    assert confidence.value == 0.0 and not confidence.sufficient and not confidence.satisfied
    assert "No evidence" in confidence.explanation


def test_two_agreeing_sites_satisfy_the_critic() -> None:
    confidence = judge(
        [
            SourceView("lakes.test", "Lake Varnholm has a maximum depth of 212 metres.", True, "2024-03-01"),
            SourceView(
                "geography.test", "The maximum depth of Lake Varnholm is 212 metres.", True, "2023-06-15"
            ),
        ]
    )
    b = confidence.breakdown
    assert b.coverage == 1.0 and b.independence == 1.0 and b.corroboration == 1.0 and b.missing_terms == []
    assert confidence.satisfied and confidence.sufficient
    assert b.sites_per_term["varnholm"] == 2


def test_missing_terms_and_too_few_sites_are_reported() -> None:
    confidence = judge([SourceView("lakes.test", "Lake Varnholm is a glacial lake.", True)])
    b = confidence.breakdown
    assert set(b.missing_terms) >= {"depth"} and b.distinct_sites == 1 and b.independence == 0.5
    assert not confidence.satisfied
    assert "not covered" in confidence.explanation


def test_contradictions_lower_corroboration_and_block_satisfaction() -> None:
    agree = judge(
        [
            SourceView("a.test", "Lake Varnholm has a maximum depth of 212 metres.", True),
            SourceView("b.test", "Lake Varnholm reaches a maximum depth of 212 metres.", True),
        ]
    )
    disagree = judge(
        [
            SourceView("a.test", "Lake Varnholm has a maximum depth of 212 metres.", True),
            SourceView("b.test", "Lake Varnholm reaches a maximum depth of 230 metres.", True),
        ]
    )
    assert disagree.breakdown.contradictions == ["a.test gives 212 where b.test gives 230"]
    assert disagree.breakdown.corroboration < agree.breakdown.corroboration
    assert disagree.value < agree.value and not disagree.satisfied


def test_contradiction_detection_ignores_loose_figures() -> None:
    words = default_analyzer().word_terms(QUESTION)
    sources = [
        SourceView("a.test", "Lake Varnholm is 212 metres deep at most; surveyed in 2019.", True),
        SourceView("b.test", "Unrelated: 5 ferries and 3 trails.", True),
    ]
    assert find_contradictions(words, sources, default_analyzer()) == []


def test_failures_authority_and_freshness() -> None:
    base = [
        SourceView("a.gov", "Lake Varnholm maximum depth 212", True),
        SourceView("b.test", "Lake Varnholm maximum depth 212", False),
    ]
    clean = judge(base)
    failing = judge(base, attempted=4, failed=2)
    assert failing.breakdown.failures == 0.5 and failing.value < clean.value
    assert authority_of("data.gov", True) == 1.0 and authority_of("en.wikipedia.org", True) == 0.85
    assert authority_of("blog.test", True) == 0.6 and authority_of("blog.test", False) == 0.45
    assert authority_of("ox.ac.uk", True) == 1.0
    assert recency_need("What is the latest version of Python?", None, NOW) == 365.0
    assert recency_need("Who built the Eiffel tower?", None, NOW) is None
    assert recency_need("Eiffel tower", 30.0, NOW) == 30.0
    assert recency_need("Events in 2025", None, NOW) == 365.0
    recent = critique(
        "latest depth of Lake Varnholm",
        [SourceView("a.test", "Lake Varnholm depth", True, "2024-12-01")],
        min_sources=1,
        floor=0.3,
        attempted=1,
        failed=0,
        now=NOW,
    )
    old = critique(
        "latest depth of Lake Varnholm",
        [SourceView("a.test", "Lake Varnholm depth", True, "2015-01-01")],
        min_sources=1,
        floor=0.3,
        attempted=1,
        failed=0,
        now=NOW,
    )
    undated = critique(
        "latest depth of Lake Varnholm",
        [SourceView("a.test", "Lake Varnholm depth", True, None)],
        min_sources=1,
        floor=0.3,
        attempted=1,
        failed=0,
        now=NOW,
    )
    assert (
        recent.breakdown.freshness == 1.0
        and old.breakdown.freshness == 0.1
        and undated.breakdown.freshness == 0.3
    )
    assert parse_date("2024-02-30") is None and parse_date("2024") is not None and parse_date("soon") is None


texts = st.text(alphabet=st.sampled_from(list("abc Lake Varnholm depth maximum 0123456789 .")), max_size=120)
views = st.lists(
    st.builds(
        SourceView,
        st.sampled_from(["a.test", "b.test", "c.gov"]),
        texts,
        st.booleans(),
        st.one_of(st.none(), st.sampled_from(["2024-01-01", "2001-05-05", "bad"])),
    ),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(views, st.integers(1, 6), st.integers(0, 10), st.integers(0, 10), st.floats(0, 1))
def test_confidence_is_bounded_and_deterministic(
    sources: list[SourceView], min_sources: int, attempted: int, failed: int, floor: float
) -> None:
    failed = min(failed, attempted)
    one = critique(
        QUESTION, sources, min_sources=min_sources, floor=floor, attempted=attempted, failed=failed, now=NOW
    )
    two = critique(
        QUESTION, sources, min_sources=min_sources, floor=floor, attempted=attempted, failed=failed, now=NOW
    )
    assert one == two
    assert 0.0 <= one.value <= 1.0
    b = one.breakdown
    for part in (b.coverage, b.independence, b.authority, b.freshness, b.corroboration, b.failures):
        assert 0.0 <= part <= 1.0
    assert one.sufficient == (one.value >= floor)
    if one.satisfied:
        assert not b.missing_terms and b.distinct_sites >= min_sources and not b.contradictions


def test_initial_queries_are_distinct_and_bounded() -> None:
    analyzer = default_analyzer()
    queries = initial_queries("What is the depth and salinity of Lake Varnholm?", analyzer, 6)
    assert len({q.query.casefold() for q in queries}) == len(queries) <= 6
    assert queries[0].query == "What is the depth and salinity of Lake Varnholm?"
    assert "What" not in queries[1].query  # stop words dropped from the key-word query
    assert len(initial_queries("Varnholm", analyzer, 5)) == 1


def test_follow_ups_target_what_is_missing() -> None:
    analyzer = default_analyzer()
    breakdown = CriticBreakdown(
        coverage=0.75,
        independence=0.5,
        authority=0.6,
        freshness=1,
        corroboration=0,
        failures=1,
        covered_terms=["salinity", "lake", "varnholm"],
        missing_terms=["depth"],
        sites_per_term={"salinity": 1, "lake": 1, "varnholm": 1, "depth": 0},
        distinct_sites=1,
        min_sources=2,
        contradictions=["a.test gives 212 where b.test gives 230"],
    )
    question = "What is the depth and salinity of Lake Varnholm?"
    follow = follow_up_queries(question, analyzer, breakdown, ["science.test"], [question], 10)
    assert follow[0].query == "Varnholm depth" and "depth" in follow[0].purpose
    assert any("212" in q.query and "230" in q.query for q in follow)
    assert any("-site:science.test" in q.query for q in follow)
    assert all(q.query != question for q in follow)
    asked = [q.query for q in follow]
    assert not [
        q
        for q in follow_up_queries(question, analyzer, breakdown, [], asked + [question], 10)
        if q.query in asked
    ]


@settings(max_examples=300, deadline=None)
@given(
    depth=st.sampled_from(list(Depth)),
    values=st.fixed_dictionaries(
        {},
        optional={
            "max_queries": st.integers(1, 10**6),
            "max_fetches": st.integers(0, 10**6),
            "max_iterations": st.integers(1, 10**6),
            "results_per_query": st.integers(1, 10**6),
            "min_sources": st.integers(1, 10**6),
            "max_context_tokens": st.integers(1, 10**9),
        },
    ),
    caps=st.fixed_dictionaries(
        {
            "max_queries": st.integers(1, 100),
            "max_fetches": st.integers(0, 100),
            "max_iterations": st.integers(1, 20),
            "max_results_per_query": st.integers(1, 50),
            "max_context_tokens": st.integers(1, 10**6),
        }
    ),
    context_tokens=st.one_of(st.none(), st.integers(1, 10**6)),
)
def test_budgets_never_exceed_presets_or_caps(
    depth: Depth, values: dict[str, int], caps: dict[str, int], context_tokens: int | None
) -> None:
    request = WebResearchRequest.create("Lake Varnholm depth", depth=depth, **values)
    settings_ = WebSettings(**caps)
    budget = resolve_budget(request, settings_, context_tokens=context_tokens)
    preset = DEPTH_PRESETS[depth]
    assert 1 <= budget.max_queries <= min(preset.queries, settings_.max_queries)
    assert 0 <= budget.max_fetches <= min(preset.fetches, settings_.max_fetches)
    assert 1 <= budget.max_iterations <= min(preset.iterations, settings_.max_iterations, budget.max_queries)
    assert 1 <= budget.results_per_query <= min(preset.results_per_query, settings_.max_results_per_query)
    assert 1 <= budget.max_context_tokens <= min(preset.tokens, settings_.max_context_tokens)
    if context_tokens is not None:
        assert budget.max_context_tokens <= context_tokens
    assert 1 <= budget.min_sources <= preset.min_sources
    for name, asked in values.items():
        if asked < getattr(budget, name) and name != "min_sources":
            raise AssertionError(f"{name}: asked {asked}, got more")


_counts = st.integers(0, 10**6)
_limits = st.builds(ResearchLimits, queries=_counts, fetches=_counts, tokens=_counts)
_asked = st.fixed_dictionaries(
    {},
    optional={name: st.one_of(st.none(), _counts) for name in ("queries", "fetches", "tokens", "iterations")},
)


@settings(max_examples=200, deadline=None)
@given(
    depth=st.sampled_from(list(Depth)), asked=_asked, caps=st.lists(st.one_of(st.none(), _limits), max_size=3)
)
def test_lowest_is_the_one_min_of_preset_request_and_caps(
    depth: Depth, asked: dict[str, int | None], caps: list[ResearchLimits | None]
) -> None:
    preset = DEPTH_PRESETS[depth]
    limits = lowest(preset, asked, *caps)
    assert type(limits) is DepthPreset  # the preset's other fields ride along, lowered only when named
    for name, start in preset.model_dump().items():
        bounds = [asked.get(name)] + [
            cap.model_dump()[name] for cap in caps if cap is not None and name in cap.model_dump()
        ]
        assert limits.model_dump()[name] == min([start] + [b for b in bounds if b is not None])
    assert lowest(preset) is preset and lowest(preset, {"queries": None}, None) is preset


def test_lowest_refuses_a_limit_it_does_not_carry() -> None:
    with pytest.raises(ValueError, match="ResearchLimits has no limit named 'iterations'"):
        lowest(ResearchLimits(queries=1), {"iterations": 1})
