from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from simone.providers.testing import LoopbackWeb, Route
from simone.providers.web import WebSearchProvider, WebStack, open_web
from simone.runtime import (
    AccessDenied,
    Caller,
    ProviderNotConfigured,
    ProviderUnavailable,
    RetrievalRequest,
    Router,
    Settings,
    Status,
    Trust,
    TrustedContext,
)

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def stack(web: LoopbackWeb, tmp_path: Path, **fields: Any) -> AsyncIterator[WebStack]:
    settings = Settings(
        data_dir=tmp_path,
        web={
            "searxng_url": web.search_url,
            "allowed_networks": ["127.0.0.1/32"],
            "request_timeout_s": 2.0,
            "total_timeout_s": 3.0,
            **fields,
        },
    )
    async with open_web(settings, resolver=web.resolver()) as opened:
        yield opened


def ctx(caller: Caller) -> TrustedContext:
    return TrustedContext(actor="tester", caller=caller)


async def test_orchestrator_is_refused_researcher_allowed(web: LoopbackWeb, tmp_path: Path) -> None:
    async with stack(web, tmp_path) as opened:
        provider = opened.provider()
        request = RetrievalRequest.create("Lake Varnholm maximum depth")
        for caller in (Caller.ORCHESTRATOR, Caller.SYSTEM):
            with pytest.raises(AccessDenied) as info:
                await provider.retrieve(request, ctx(caller))
            assert info.value.kind == "forbidden" and "researcher" in info.value.message
        assert web.count(path_prefix="/search") == 0, "refused before any request"
        response = await provider.retrieve(request, ctx(Caller.RESEARCHER))
    assert response.evidence
    first = response.evidence[0]
    assert first.trust is Trust.UNTRUSTED and first.provider.value == "web-search"
    assert first.locator.startswith("http://") and "212 metres" in " ".join(
        e.content for e in response.evidence
    )
    assert first.metadata["fetched"] in (True, False) and "search_rank" in first.metadata
    assert response.details["cache"]["search_misses"] == 1


async def test_router_reports_forbidden_for_the_orchestrator(web: LoopbackWeb, tmp_path: Path) -> None:
    async with stack(web, tmp_path) as opened:
        router = Router([opened.provider()])
        refused = await router.retrieve(
            RetrievalRequest.create("Lake Varnholm", providers=("web",)), ctx(Caller.ORCHESTRATOR)
        )
        allowed = await router.retrieve(
            RetrievalRequest.create("Lake Varnholm", providers=("web",)), ctx(Caller.RESEARCHER)
        )
    assert refused.status is Status.FORBIDDEN and refused.evidence == []
    assert refused.failures[0].kind == "forbidden"
    assert allowed.status in (Status.COMPLETE, Status.PARTIAL) and allowed.evidence


async def test_not_configured_and_all_backends_down(web: LoopbackWeb, tmp_path: Path) -> None:
    async with stack(web, tmp_path, searxng_url=None) as opened:
        with pytest.raises(ProviderNotConfigured):
            await opened.provider().retrieve(RetrievalRequest.create("q"), ctx(Caller.RESEARCHER))
    web.script_search(Route(status=503, body=b"down"))
    async with stack(web, tmp_path) as opened:
        with pytest.raises(ProviderUnavailable, match="every web search backend failed"):
            await opened.provider().retrieve(RetrievalRequest.create("q"), ctx(Caller.RESEARCHER))


async def test_failed_fetch_keeps_snippet_and_degrades(web: LoopbackWeb, tmp_path: Path) -> None:
    broken = web.add_route("/gone", Route(status=404, body=b"gone"), host="broken.test")
    web.set_search(
        lambda query, limit: [
            {"url": broken, "title": "Varnholm depth", "content": "Lake Varnholm depth is 212 metres."}
        ]
    )
    async with stack(web, tmp_path) as opened:
        provider = WebSearchProvider(opened.searcher, opened.cache, fetch_top=1)
        response = await provider.retrieve(RetrievalRequest.create("Varnholm depth"), ctx(Caller.RESEARCHER))
    assert [e.content for e in response.evidence] == ["Lake Varnholm depth is 212 metres."]
    assert response.evidence[0].metadata["fetch_status"] == "http_status"
    assert response.degraded and response.leg_failures[0].leg == "fetch"


class _BrokenBackend:
    name = "broken"

    async def search(self, query: str, *, count: int, timeout_s: float) -> Any:
        raise KeyError("a bug inside the backend")


async def test_a_backend_bug_becomes_a_failure_and_the_next_backend_answers(
    web: LoopbackWeb, tmp_path: Path
) -> None:
    from simone.providers.web import SearxngBackend, WebSearcher

    async with stack(web, tmp_path) as opened:
        searcher = WebSearcher(
            [_BrokenBackend(), SearxngBackend(web.search_url, opened.searcher.backends[0]._client)],  # type: ignore[attr-defined]
            opened.fetcher,
        )
        outcome = await searcher.search("Lake Varnholm", count=3, cache=opened.cache.session())
    assert outcome.page is not None and outcome.page.backend == "searxng"
    assert outcome.failures[0].provider == "broken" and outcome.failures[0].kind == "error"
    assert "KeyError" in outcome.failures[0].message


HOSTILE_STATUS = {
    "redirect-javascript": "blocked_url",
    "redirect-data": "blocked_url",
    "redirect-mailto": "blocked_url",
    "short-body": "invalid_content",
    "bad-chunks": "invalid_content",
    "reset": "unreachable",
    "stall": "timeout",
}

GOOD_PAGES = (
    "lakes.test/varnholm",
    "geography.test/nordic-lakes/varnholm-depth",
    "science.test/varnholm-salinity",
)


def _results(web: LoopbackWeb, hostile: Any, kinds: Any) -> list[dict[str, str]]:
    good = [p for p in web.pages if f"{p.host}{p.path}" in GOOD_PAGES]
    results = [{"url": p.url, "title": p.title, "content": f"Lake Varnholm depth. {p.snippet}"} for p in good]
    results += [
        {
            "url": hostile.url(f"/{kind}"),
            "title": f"Varnholm {kind}",
            "content": f"Lake Varnholm depth ({kind}).",
        }
        for kind in kinds
    ]
    return results


async def test_hostile_pages_fail_alone_and_good_pages_keep_their_evidence(
    web: LoopbackWeb, hostile: Any, tmp_path: Path
) -> None:
    """Issue 15 (4): one hostile page (javascript:/data:/mailto: redirect, short body, bad chunk,
    reset, stall) raised out of the provider and every page's evidence was lost."""
    results = _results(web, hostile, HOSTILE_STATUS)
    web.set_search(lambda query, limit: results)
    async with stack(web, tmp_path, request_timeout_s=1.0, total_timeout_s=1.5) as opened:
        provider = WebSearchProvider(
            opened.searcher, opened.cache, fetch_top=len(results), max_results=len(results)
        )
        response = await provider.retrieve(
            RetrievalRequest.create("Lake Varnholm depth", limit=len(results)), ctx(Caller.RESEARCHER)
        )
    by_url = {e.locator: e for e in response.evidence}
    fetched = [e for e in response.evidence if e.metadata["fetched"]]
    assert len(fetched) == len(GOOD_PAGES), [e.metadata for e in response.evidence]
    assert any("212 metres" in e.content for e in fetched)
    for kind, status in HOSTILE_STATUS.items():
        item = by_url[hostile.url(f"/{kind}")]
        assert not item.metadata["fetched"] and item.metadata["fetch_status"] == status, (kind, item.metadata)
    assert len([f for f in response.leg_failures if f.leg == "fetch"]) == len(HOSTILE_STATUS)
    assert any("could not be fetched" in line for line in response.degraded)


def _heavy_page() -> bytes:
    links = "".join(f'<a href="/p{i}">l{i}</a>' for i in range(200_000))
    return f"<html><head><title>Varnholm links</title></head><body>{links}</body></html>".encode()


async def test_a_stalled_and_a_heavy_page_fit_the_routers_deadline(
    web: LoopbackWeb, hostile: Any, tmp_path: Path
) -> None:
    """Issue 15 (5): without a context deadline, fetches got the fetcher's total (here 30 s) while the
    router gave the provider its timeout; a 5 MB page of 200k links took 13 s to extract. The router
    cancelled the provider and every page was lost."""
    heavy = web.add_route("/links", Route(body=_heavy_page()), host="heavy.test")
    results = _results(web, hostile, ["stall"])
    results.append({"url": heavy, "title": "Varnholm links", "content": "Lake Varnholm depth links."})
    web.set_search(lambda query, limit: results)
    async with stack(
        web, tmp_path, request_timeout_s=30.0, total_timeout_s=30.0, max_bytes=8 * 1024 * 1024
    ) as opened:
        provider = WebSearchProvider(
            opened.searcher, opened.cache, fetch_top=len(results), max_results=len(results)
        )
        router = Router([provider], provider_timeout_s=6.0)
        result = await router.retrieve(
            RetrievalRequest.create("Lake Varnholm depth", providers=("web",), limit=len(results)),
            ctx(Caller.RESEARCHER),
        )
    # within its deadline: a provider past it would be a timeout failure with no evidence
    assert result.status in (Status.COMPLETE, Status.PARTIAL), result.failures
    assert any("212 metres" in e.content for e in result.evidence)
    stalled = [e for e in result.evidence if e.locator == hostile.url("/stall")]
    assert stalled and stalled[0].metadata["fetch_status"] == "timeout"
    assert hostile.url("/stall") in {e.locator for e in result.evidence}


async def test_a_lone_surrogate_in_a_search_result_is_replaced(web: LoopbackWeb, tmp_path: Path) -> None:
    """Issue 15 (6): valid JSON "\\ud800" in a result title crashed the cache write."""
    page = web.url("/varnholm", host="lakes.test")
    web.set_search(
        lambda query, limit: [
            {
                "url": page,
                "title": "Varnholm \ud800 depth",
                "content": "Lake Varnholm depth \udfff is 212 metres.",
            },
            {"url": "http://lakes.test/\ud800", "title": "bad url", "content": "Lake Varnholm depth."},
        ]
    )
    async with stack(web, tmp_path) as opened:
        provider = WebSearchProvider(opened.searcher, opened.cache, fetch_top=0)
        response = await provider.retrieve(
            RetrievalRequest.create("Lake Varnholm depth"), ctx(Caller.RESEARCHER)
        )
        again = await provider.retrieve(
            RetrievalRequest.create("Lake Varnholm depth"), ctx(Caller.RESEARCHER)
        )
    assert [e.content for e in response.evidence] == ["Lake Varnholm depth \ufffd is 212 metres."]
    assert response.evidence[0].title == "Varnholm \ufffd depth"
    assert response.details["cache"]["writes"] == 1 and again.details["cache"]["search_hits"] == 1
    for item in response.evidence:
        (item.content + item.title + item.locator).encode("utf-8")


async def test_an_extraction_past_the_pages_share_is_a_timeout(
    web: LoopbackWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 (5): extraction ran in a thread that cancellation could not stop, past any deadline."""
    import threading

    import anyio
    from simone.providers.web import _searcher

    release, finished = threading.Event(), threading.Event()

    def slow_extract(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)  # set by the test once fetch_page returned (the 30 s only end a hang)
        finished.set()
        raise AssertionError("the result of an abandoned extraction is never used")

    monkeypatch.setattr(_searcher, "extract_page", slow_extract)
    async with stack(web, tmp_path) as opened:
        outcome = await opened.searcher.fetch_page(
            web.url("/varnholm", host="lakes.test"), cache=opened.cache.session(), timeout_s=0.8
        )
        returned_while_extracting = not finished.is_set()
        release.set()  # let the abandoned worker thread end inside the test
        await anyio.to_thread.run_sync(finished.wait, 30, limiter=anyio.CapacityLimiter(1))
    assert returned_while_extracting, "fetch_page waited for the extraction thread"
    assert outcome.page is None and outcome.reason == "timeout" and outcome.failure is not None
    assert "extracting" in outcome.failure.message
