"""Spans carry ids, names, counts and error types — never the text of a query, a page or an error."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from simone.runtime import EmbeddingChain, ProviderUnavailable, Router, TrustedContext
from simone.runtime.testing import FailingProvider, HashEmbedder, StaticProvider, make_evidence
from simone.runtime.tracing import TRACER_NAME, fetch_span, leg_span, retrieval_span, tool_call_span

pytestmark = pytest.mark.anyio

SECRET = "the patient's private diagnosis"


def _values(exporter: InMemorySpanExporter) -> list[str]:
    return [
        str(value) for span in exporter.get_finished_spans() for value in (span.attributes or {}).values()
    ]


async def test_an_embedding_call_is_one_span_with_the_model_and_no_text(spans: InMemorySpanExporter) -> None:
    embedder = HashEmbedder(32, model="hash-32", provider="hash")
    async with EmbeddingChain([embedder]) as chain:
        space = await chain.select_space()
        spans.clear()
        await chain.embed([SECRET, "another text"], space=space, kind="query")
    (span,) = spans.get_finished_spans()
    assert span.name == "embeddings hash-32"
    assert span.instrumentation_scope is not None and span.instrumentation_scope.name == TRACER_NAME
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "embeddings"
    assert attributes["gen_ai.request.model"] == "hash-32"
    assert attributes["gen_ai.provider.name"] == "hash"
    assert attributes["simone.embedding.inputs"] == 2
    assert attributes["simone.embedding.purpose"] == "query"
    assert not any(SECRET in value for value in _values(spans))


async def test_a_failed_embedding_records_the_error_type_not_its_message(spans: InMemorySpanExporter) -> None:
    embedder = HashEmbedder(32)
    async with EmbeddingChain([embedder]) as chain:
        space = await chain.select_space()
        embedder.error = ProviderUnavailable(f"server said: {SECRET}", provider="hash")
        spans.clear()
        with pytest.raises(ProviderUnavailable):
            await chain.embed([SECRET], space=space)
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is None
    assert (span.attributes or {})["error.type"] == "ProviderUnavailable"
    assert (span.attributes or {})["simone.error.kind"] == "unavailable"
    assert span.events == ()  # no exception event: its message would quote the input
    assert not any(SECRET in value for value in _values(spans))


def test_a_tool_call_continues_the_callers_trace(spans: InMemorySpanExporter) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    meta = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01", "progressToken": 3}
    with tool_call_span("retrieve_context", meta=meta, session_id="s-1", request_id=7):
        with retrieval_span(["documents", "memory"], mode="hybrid", limit=8) as route:
            with leg_span("documents"):
                pass
            route.set_attribute("simone.status", "complete")
    finished = {span.name: span for span in spans.get_finished_spans()}
    assert set(finished) == {"tools/call retrieve_context", "retrieval", "retrieval documents"}
    call = finished["tools/call retrieve_context"]
    assert call.kind is SpanKind.SERVER
    assert format(call.context.trace_id, "032x") == trace_id
    assert call.parent is not None and format(call.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert dict(call.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "retrieve_context",
        "mcp.session.id": "s-1",
        "jsonrpc.request.id": "7",
    }
    route_span, leg = finished["retrieval"], finished["retrieval documents"]
    assert route_span.parent is not None and route_span.parent.span_id == call.context.span_id
    assert leg.parent is not None and leg.parent.span_id == route_span.context.span_id
    assert {span.context.trace_id for span in finished.values()} == {call.context.trace_id}
    assert (route_span.attributes or {})["simone.providers"] == ("documents", "memory")
    assert (leg.attributes or {})["gen_ai.data_source.id"] == "documents"


def test_a_tool_call_without_a_traceparent_starts_a_new_trace(spans: InMemorySpanExporter) -> None:
    with tool_call_span("remember", meta=None):
        pass
    (span,) = spans.get_finished_spans()
    assert span.parent is None and span.context.trace_id != 0


def test_a_fetch_span_names_the_host_never_the_path_or_query(spans: InMemorySpanExporter) -> None:
    with fetch_span(f"https://clinic.example:8443/records/{SECRET}?q={SECRET}"):
        pass
    (span,) = spans.get_finished_spans()
    assert span.kind is SpanKind.CLIENT and span.name == "GET"
    assert dict(span.attributes or {}) == {
        "http.request.method": "GET",
        "server.address": "clinic.example",
        "server.port": 8443,
        "url.scheme": "https",
    }


def test_without_an_sdk_the_api_is_a_no_op() -> None:
    # A fresh no-op tracer (what the API returns before anyone installs an SDK) records nothing.
    tracer = trace.NoOpTracerProvider().get_tracer(TRACER_NAME)
    with tracer.start_as_current_span("x") as span:
        assert not span.is_recording()


async def test_a_routed_request_is_a_retrieval_span_with_one_child_per_leg(
    spans: InMemorySpanExporter,
) -> None:
    router = Router(
        [
            StaticProvider("notes", make_evidence("notes", ["alpha text one", "alpha text two"])),
            FailingProvider("down", ProviderUnavailable(f"backend down: {SECRET}")),
        ]
    )
    result = await router.retrieve(router.request(SECRET), TrustedContext(actor="a"))
    finished = {span.name: span for span in spans.get_finished_spans()}
    assert set(finished) == {"retrieval", "retrieval notes", "retrieval down"}
    route = finished["retrieval"]
    attributes = dict(route.attributes or {})
    assert attributes["simone.providers"] == ("notes", "down")
    assert attributes["simone.status"] == result.status.value == "partial"
    assert attributes["simone.evidence.count"] == len(result.evidence) == 2
    assert attributes["simone.failures"] == ("down",)
    for leg in ("retrieval notes", "retrieval down"):
        parent = finished[leg].parent
        assert parent is not None and parent.span_id == route.context.span_id
    assert (finished["retrieval notes"].attributes or {})["simone.evidence.count"] == 2
    down = finished["retrieval down"]
    assert down.status.status_code is StatusCode.ERROR
    assert (down.attributes or {})["error.type"] == "unavailable"
    assert not any(SECRET in value for value in _values(spans))
