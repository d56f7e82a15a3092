"""A page fetch over real loopback HTTP is one CLIENT span with the host and the status, no path."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from simone.providers.testing import LoopbackWeb
from simone.providers.web import FetchError, FetchPolicy, SafeFetcher

pytestmark = pytest.mark.anyio


async def test_a_fetched_page_is_a_span_with_its_status(
    web: LoopbackWeb, policy: FetchPolicy, spans: InMemorySpanExporter
) -> None:
    async with SafeFetcher(policy, resolver=web.resolver()) as fetcher:
        page = await fetcher.fetch(web.url("/varnholm", host="lakes.test"))
    assert page.status_code == 200
    (span,) = [s for s in spans.get_finished_spans() if s.name == "GET"]
    attributes = dict(span.attributes or {})
    assert attributes["server.address"] == "lakes.test"
    assert attributes["http.response.status_code"] == 200
    assert not any("varnholm" in str(value) for value in attributes.values())


async def test_a_refused_fetch_records_the_reason(
    web: LoopbackWeb, policy: FetchPolicy, spans: InMemorySpanExporter
) -> None:
    async with SafeFetcher(policy, resolver=web.resolver()) as fetcher:
        with pytest.raises(FetchError) as info:
            await fetcher.fetch(web.url("/no-such-page", host="lakes.test"))
    (span,) = [s for s in spans.get_finished_spans() if s.name == "GET"]
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "FetchError"
    assert (span.attributes or {})["simone.error.reason"] == info.value.reason
