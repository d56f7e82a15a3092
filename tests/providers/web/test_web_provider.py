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
