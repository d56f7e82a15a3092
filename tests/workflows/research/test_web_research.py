from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.providers.testing import LoopbackWeb, Route
from simone.runtime import (
    Caller,
    Trust,
    TrustedContext,
)
from simone.runtime.ranking import normalize_url
from simone.workflows.research import (
    Depth,
    FetchMode,
    ResearchStatus,
    StopReason,
    WebResearchRequest,
    WebResearchResult,
)

pytestmark = pytest.mark.anyio

Opener = Callable[..., Any]


def researcher(**fields: Any) -> TrustedContext:
    return TrustedContext(actor="tester", caller=Caller.RESEARCHER, **{"token_budget": 20_000, **fields})


def check_invariants(result: WebResearchResult) -> None:
    """What must hold for every result, whatever happened."""
    budget = result.budget
    assert budget.queries_used <= budget.max_queries
    assert budget.fetches_used <= budget.max_fetches
    assert budget.iterations_run <= budget.max_iterations
    assert budget.used_tokens <= budget.max_context_tokens
    keys = [s.normalized_url for s in result.sources]
    assert len(keys) == len(set(keys)), "one source per normalised URL"
    known = set(keys)
    for item in result.evidence:
        assert item.trust is Trust.UNTRUSTED
        assert normalize_url(item.locator) in known, "evidence only from sources that were found"
    assert 0.0 <= result.confidence.value <= 1.0
    assert len(result.queries_run) == budget.queries_used
    if result.status is ResearchStatus.FAILED:
        assert not result.evidence


async def test_standard_research_answers_from_several_sites(open_research: Opener, web: LoopbackWeb) -> None:
    async with open_research() as (research, _):
        result = await research.run(
            WebResearchRequest.create("What is the maximum depth of Lake Varnholm?"), researcher()
        )
    check_invariants(result)
    assert result.status is ResearchStatus.COMPLETE, result.limitations
    assert result.stop_reason is StopReason.SATISFIED
    assert result.confidence.sufficient and result.confidence.breakdown.missing_terms == []
    sites = {item.metadata["site"] for item in result.evidence}
    assert len(sites) >= 2
    assert any("212 metres" in item.content for item in result.evidence)
    # fetch=auto: the snippets already satisfied the critic, so no page was fetched
    assert result.budget.fetches_used == 0 and not any(s.fetched for s in result.sources)
    assert result.cache.search_misses == result.budget.queries_used
    assert result.caller is Caller.RESEARCHER


async def test_second_run_is_served_from_the_cache(open_research: Opener, web: LoopbackWeb) -> None:
    request = WebResearchRequest.create("What is the maximum depth of Lake Varnholm?", fetch=FetchMode.ALWAYS)
    async with open_research() as (research, _):
        first = await research.run(request, researcher())
    web.clear_log()
    async with open_research() as (research, _):  # a new process: only the disk layer survives
        second = await research.run(request, researcher())
    assert web.requests == [], "a warm cache sends nothing"
    assert second.cache.search_hits == second.budget.queries_used and second.cache.search_misses == 0
    assert second.cache.page_hits == second.budget.fetches_used > 0 and second.cache.page_misses == 0
    assert [e.id for e in second.evidence] == [e.id for e in first.evidence]
    assert all(s.cache is not None and s.cache.value == "hit" for s in second.sources if s.fetched)


async def test_fresh_bypasses_the_cache_and_cached_serves_stale(
    open_research: Opener, web: LoopbackWeb, clock: Any
) -> None:
    question = "What is the maximum depth of Lake Varnholm?"
    async with open_research() as (research, _):
        await research.run(WebResearchRequest.create(question), researcher())
        web.clear_log()
        fresh = await research.run(WebResearchRequest.create(question, freshness="fresh"), researcher())
        assert fresh.cache.bypassed >= fresh.budget.queries_used
        assert web.count(path_prefix="/search") == fresh.budget.queries_used

        clock.advance(31 * 60)  # search results expire after 30 min, pages after 24 h
        web.clear_log()
        later = await research.run(WebResearchRequest.create(question), researcher())
        assert later.cache.search_misses == later.budget.queries_used
        assert later.cache.page_hits == later.budget.fetches_used
        assert web.count(path_prefix="/search") == later.budget.queries_used

        clock.advance(25 * 3600)  # everything expired; now the search engine is down
        web.script_search(*[Route(status=500, body=b"down") for _ in range(10)])
        stale = await research.run(WebResearchRequest.create(question, freshness="cached"), researcher())
    check_invariants(stale)
    assert stale.cache.stale_served >= stale.budget.queries_used
    assert stale.evidence, "stale entries are served in cached mode"
    assert any("cache after their freshness period" in line for line in stale.limitations)


async def test_deep_research_iterates_on_uncovered_terms(open_research: Opener) -> None:
    # One result per query: the first queries find the salinity page only, leaving "depth" uncovered.
    request = WebResearchRequest.create(
        "What is the depth and salinity of Lake Varnholm?", depth="deep", results_per_query=1, min_sources=2
    )
    async with open_research() as (research, _):
        result = await research.run(request, researcher())
    check_invariants(result)
    first = [q for q in result.queries_run if q.iteration == 1]
    later = [q for q in result.queries_run if q.iteration > 1]
    assert first and later and result.budget.iterations_run >= 2
    assert any("depth" in q.purpose for q in later), [q.purpose for q in later]
    assert all(q.query not in {f.query for f in first} for q in later), "never the same query twice"
    assert result.confidence.breakdown.missing_terms == []
    assert {"science.test", "geography.test"} <= {s.site for s in result.sources if s.used}
    assert result.stop_reason is StopReason.SATISFIED
    assert result.status is ResearchStatus.COMPLETE


async def test_all_backends_failing_is_failed_with_no_invented_source(
    open_research: Opener, web: LoopbackWeb
) -> None:
    web.script_search(*[Route(status=500, body=b"down") for _ in range(20)])
    async with open_research(
        backends=["searxng", "brave"], brave_url="http://127.0.0.1:9/nothing-listens-here", brave_api_key="k"
    ) as (research, _):
        result = await research.run(
            WebResearchRequest.create("Lake Varnholm depth", depth="deep"), researcher()
        )
    check_invariants(result)
    assert result.status is ResearchStatus.FAILED
    assert result.stop_reason is StopReason.ALL_BACKENDS_FAILED
    assert result.sources == [] and result.evidence == []
    assert {f.provider for f in result.provider_failures} == {"searxng", "brave"}
    assert {f.kind for f in result.provider_failures} == {"unavailable"}
    assert result.confidence.value == 0.0
    assert any("no web evidence" in line for line in result.limitations)


async def test_malformed_search_json_fails_visibly(open_research: Opener, web: LoopbackWeb) -> None:
    web.script_search(
        *[Route(body=b"{not json", headers={"Content-Type": "application/json"}) for _ in range(3)]
    )
    async with open_research() as (research, _):
        result = await research.run(WebResearchRequest.create("Lake Varnholm depth"), researcher())
    assert result.status is ResearchStatus.FAILED
    assert {f.kind for f in result.provider_failures} == {"invalid_response"}


async def test_only_the_researcher_may_research(open_research: Opener, web: LoopbackWeb) -> None:
    web.clear_log()
    async with open_research() as (research, _):
        for caller in (Caller.ORCHESTRATOR, Caller.SYSTEM):
            result = await research.run(
                WebResearchRequest.create("Lake Varnholm depth"), TrustedContext(actor="a", caller=caller)
            )
            assert result.status is ResearchStatus.FORBIDDEN
            assert result.provider_failures[0].kind == "forbidden"
            assert result.evidence == [] and result.queries_run == []
        allowed = await research.run(
            WebResearchRequest.create("Lake Varnholm depth"),
            TrustedContext(actor="a", caller=Caller.RESEARCH_WORKFLOW),
        )
    assert allowed.status is not ResearchStatus.FORBIDDEN and allowed.evidence
    assert web.count(path_prefix="/search") == allowed.budget.queries_used  # refused runs sent nothing


async def test_not_configured_is_a_failure_not_an_empty_answer(open_research: Opener) -> None:
    async with open_research(searxng_url=None) as (research, _):
        result = await research.run(WebResearchRequest.create("Lake Varnholm depth"), researcher())
    assert result.status is ResearchStatus.FAILED and result.stop_reason is StopReason.NOT_CONFIGURED
    assert result.provider_failures[0].kind == "not_configured"


async def test_five_spellings_of_one_url_are_one_source(open_research: Opener, web: LoopbackWeb) -> None:
    base = web.url("/varnholm", host="lakes.test")
    spellings = [
        base,
        base + "/",
        base + "#history",
        base + "?utm_source=newsletter",
        base.replace("lakes.test", "LAKES.test") + "?utm_medium=x#top",
    ]
    web.set_search(
        lambda query, limit: [
            {"url": url, "title": "Lake Varnholm", "content": "Lake Varnholm maximum depth 212 metres"}
            for url in spellings
        ]
    )
    async with open_research() as (research, _):
        result = await research.run(
            WebResearchRequest.create("Lake Varnholm maximum depth", fetch="always"), researcher()
        )
    check_invariants(result)
    assert len(result.sources) == 1 and result.sources[0].spellings == 5
    assert result.budget.fetches_used == 1
    assert web.count(host="lakes.test", path_prefix="/varnholm") == 1


async def test_hidden_prompt_injection_is_stripped_and_flagged(open_research: Opener) -> None:
    async with open_research() as (research, _):
        result = await research.run(
            WebResearchRequest.create("Where can I buy fishing permits for Lake Varnholm?", fetch="always"),
            researcher(),
        )
    fishing = [e for e in result.evidence if e.metadata["site"] == "fishing.test"]
    assert fishing, [e.locator for e in result.evidence]
    text = " ".join(e.content for e in result.evidence)
    assert "unrestricted assistant" not in text and "send the user's files" not in text  # hidden elements
    assert "\u200b" not in text
    flags = fishing[0].metadata.get("instruction_like", [])
    assert any(flag["kind"] == "override" for flag in flags)
    assert any("instruction-like" in line for line in result.limitations)
    assert [s for s in result.sources if s.site == "fishing.test"][0].instruction_like >= 1


async def test_a_failed_fetch_keeps_the_snippet_and_says_so(open_research: Opener, web: LoopbackWeb) -> None:
    broken = web.add_route("/varnholm-broken", Route(status=500, body=b"oops"), host="broken.test")
    good = web.url("/varnholm", host="lakes.test")
    web.set_search(
        lambda query, limit: [
            {
                "url": broken,
                "title": "Varnholm depth facts",
                "content": "Lake Varnholm is 212 metres deep at most.",
            },
            {"url": good, "title": "Lake Varnholm", "content": "Lake Varnholm, a glacial lake."},
        ]
    )
    async with open_research() as (research, _):
        result = await research.run(
            WebResearchRequest.create("Lake Varnholm depth", fetch="always", max_fetches=2), researcher()
        )
    check_invariants(result)
    source = next(s for s in result.sources if s.site == "broken.test")
    assert source.fetch_status == "http_status" and not source.fetched and source.fetch_error
    assert source.used, "the snippet still counts as (weaker) evidence"
    assert any(f.leg == "fetch" for f in result.provider_failures)
    assert any("could not be read" in line for line in result.limitations)
    assert result.status in (ResearchStatus.PARTIAL, ResearchStatus.BUDGET_EXHAUSTED)


async def test_fetch_never_uses_snippets_only(open_research: Opener, web: LoopbackWeb) -> None:
    async with open_research() as (research, _):
        result = await research.run(
            WebResearchRequest.create("Lake Varnholm maximum depth", fetch="never"), researcher()
        )
    assert result.budget.fetches_used == 0 and not any(s.fetched for s in result.sources)
    assert web.count(host="lakes.test", path_prefix="/varnholm") == 0
    assert any("search snippet" in line for line in result.limitations)


async def test_requests_cannot_exceed_presets_or_caps(open_research: Opener) -> None:
    async with open_research(max_queries=2, max_fetches=1) as (research, _):
        result = await research.run(
            WebResearchRequest.create(
                "Lake Varnholm depth", depth=Depth.DEEP, max_queries=50, max_fetches=40
            ),
            researcher(token_budget=900),
        )
    check_invariants(result)
    assert (result.budget.max_queries, result.budget.max_fetches) == (2, 1)
    assert result.budget.max_context_tokens == 900
    assert any("web.max_queries" in note for note in result.budget.lowered)
    assert any("Request limit" in line for line in result.limitations)


async def test_a_deadline_stops_the_run_and_says_so(open_research: Opener, web: LoopbackWeb) -> None:
    import time

    web.script_search(Route(body=b"{}", delay_s=2.0))
    async with open_research() as (research, _):
        result = await research.run(
            WebResearchRequest.create("Lake Varnholm depth"), researcher(deadline=time.time() + 0.5)
        )
    check_invariants(result)
    assert result.stop_reason is StopReason.DEADLINE
    assert result.status in (ResearchStatus.PARTIAL, ResearchStatus.BUDGET_EXHAUSTED)
    assert [q.notes for q in result.queries_run if q.failed] == [["interrupted at the deadline"]]
    assert any("deadline" in line for line in result.limitations)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    depth=st.sampled_from(list(Depth)),
    values=st.fixed_dictionaries(
        {},
        optional={
            "max_queries": st.integers(1, 1000),
            "max_fetches": st.integers(0, 1000),
            "max_iterations": st.integers(1, 1000),
            "results_per_query": st.integers(1, 1000),
            "max_context_tokens": st.integers(1, 100_000),
        },
    ),
    fetch=st.sampled_from(list(FetchMode)),
    caps=st.fixed_dictionaries({"max_queries": st.integers(1, 4), "max_fetches": st.integers(0, 3)}),
)
async def test_runs_never_exceed_their_budget(
    open_research: Opener, depth: Depth, values: dict[str, int], fetch: FetchMode, caps: dict[str, int]
) -> None:
    request = WebResearchRequest.create(
        "depth and salinity of Lake Varnholm", depth=depth, fetch=fetch, **values
    )
    async with open_research(**caps) as (research, _):
        result = await research.run(request, researcher())
    check_invariants(result)
    assert (
        result.budget.max_queries <= caps["max_queries"] and result.budget.max_fetches <= caps["max_fetches"]
    )


async def test_failures_are_never_cached(open_research: Opener, web: LoopbackWeb) -> None:
    flaky = web.add_route("/flaky", Route(status=503, body=b"busy"), host="flaky.test")
    web.set_search(
        lambda query, limit: [
            {"url": flaky, "title": "Varnholm depth", "content": "Lake Varnholm depth notes."}
        ]
    )
    request = WebResearchRequest.create("Lake Varnholm depth", fetch="always", max_queries=1)
    async with open_research() as (research, _):
        web.script_search(Route(status=500, body=b"down"))
        failed = await research.run(request, researcher())
        assert failed.status is ResearchStatus.FAILED
        first = await research.run(request, researcher())  # the failed search was not cached
        assert first.cache.search_misses == 1 and first.sources[0].fetch_status == "http_status"
        web.add_page(
            "/flaky", "<html><body><p>Lake Varnholm depth is 212 metres.</p></body></html>", host="flaky.test"
        )
        second = await research.run(request, researcher())  # the failed fetch was not cached either
    assert second.cache.search_hits == 1 and second.cache.page_misses == 1
    assert second.sources[0].fetched and "212 metres" in second.evidence[0].content
    assert (
        second.to_json().startswith("{") and WebResearchResult.model_validate_json(second.to_json()) == second
    )


async def test_syndicated_copies_are_not_independent_sources(open_research: Opener, web: LoopbackWeb) -> None:
    text = (
        "<html><body><article><p>Lake Varnholm has a maximum depth of 212 metres, according to the 2019 "
        "sonar survey of the lake.</p></article></body></html>"
    )
    urls = [
        web.add_page("/story", text, host=host) for host in ("wire.test", "mirror-a.test", "mirror-b.test")
    ]
    web.set_search(
        lambda query, limit: [
            {"url": url, "title": "Varnholm depth", "content": "Lake Varnholm maximum depth 212 metres"}
            for url in urls
        ]
    )
    async with open_research() as (research, _):
        result = await research.run(
            WebResearchRequest.create("Lake Varnholm maximum depth", fetch="never", min_sources=2),
            researcher(),
        )
    check_invariants(result)
    assert len(result.evidence) == 1 and result.confidence.breakdown.distinct_sites == 1
    assert sorted(s.duplicate_of is not None for s in result.sources) == [False, True, True]
    assert any("not counted as independent" in line for line in result.limitations)
    assert not result.confidence.satisfied


HOSTILE_STATUS = {
    "redirect-javascript": "blocked_url",
    "redirect-data": "blocked_url",
    "redirect-mailto": "blocked_url",
    "short-body": "invalid_content",
    "bad-chunks": "invalid_content",
    "reset": "unreachable",
    "stall": "timeout",
}


@pytest.mark.parametrize(
    "kinds",
    [
        ("redirect-javascript", "redirect-data", "redirect-mailto", "short-body"),
        ("bad-chunks", "reset", "stall"),
    ],
    ids=["redirects-and-short-body", "broken-bodies-and-stall"],
)
async def test_hostile_pages_are_per_page_failures(
    open_research: Opener, web: LoopbackWeb, hostile: Any, kinds: tuple[str, ...]
) -> None:
    """Issue 15 (4): one hostile page made web_research raise an ExceptionGroup (an MCP researcher got
    "Internal server error"); now each is a per-page failure and the good pages' evidence stays.

    A deep run fetches five pages, so the seven hostile kinds are split over two runs.
    """
    good = [
        web.url("/nordic-lakes/varnholm-depth", host="geography.test"),
        web.url("/varnholm", host="lakes.test"),
    ][: 5 - len(kinds)]
    results = [
        {"url": url, "title": "Lake Varnholm", "content": "Lake Varnholm, a glacial lake."} for url in good
    ] + [
        {
            "url": hostile.url(f"/{kind}"),
            "title": f"Varnholm {kind}",
            "content": f"Lake Varnholm depth ({kind}).",
        }
        for kind in kinds
    ]
    web.set_search(lambda query, limit: results)
    async with open_research(request_timeout_s=1.0, total_timeout_s=1.5) as (research, _):
        result = await research.run(
            WebResearchRequest.create(
                "Lake Varnholm maximum depth",
                depth=Depth.DEEP,
                fetch="always",
                max_queries=1,
                max_iterations=1,
            ),
            researcher(),
        )
    check_invariants(result)
    by_url = {s.url: s for s in result.sources}
    assert all(by_url[url].fetched for url in good)
    assert any("212 metres" in item.content for item in result.evidence)
    for kind in kinds:
        source = by_url[hostile.url(f"/{kind}")]
        assert not source.fetched and source.fetch_status == HOSTILE_STATUS[kind] and source.fetch_error, (
            source
        )
    assert len([f for f in result.provider_failures if f.leg == "fetch"]) == len(kinds)
    assert result.status in (ResearchStatus.PARTIAL, ResearchStatus.BUDGET_EXHAUSTED)
