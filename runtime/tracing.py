"""Spans for every call, route, provider leg, embedding and page fetch — ids and timings, never content.

simone speaks the OpenTelemetry *API* only (``opentelemetry-api``): without an SDK configured by the
application every span here is a no-op that costs a function call. With one (``opentelemetry-sdk``
and an exporter, set up by whoever runs simone), the spans follow the semantic conventions where they
exist:

* a tool call over MCP: a ``SERVER`` span ``tools/call {tool}`` with ``mcp.method.name``,
  ``gen_ai.operation.name = execute_tool`` and ``gen_ai.tool.name`` (MCP conventions); its parent is
  the caller's trace when the request's ``_meta`` carries a W3C ``traceparent``;
* a routed request: ``retrieval`` (GenAI retrieval span) with the providers asked and the outcome;
* each provider leg: ``retrieval {provider}`` with ``gen_ai.data_source.id`` = the provider;
* the rerank stage after fusion: ``rerank {reranker}`` with the candidates sent and their places
  before and after;
* an embedding call: ``embeddings {model}`` with ``gen_ai.operation.name = embeddings``,
  ``gen_ai.request.model`` and ``gen_ai.provider.name``;
* a page fetch: a ``CLIENT`` span ``GET`` with ``http.request.method``, ``server.address`` and
  ``http.response.status_code`` — the host only, not the path or the query string.

**No content** goes into a span: no query text, no evidence, no page text, no URL path, no exception
message (messages can quote the input) — only names, counts, statuses and the error's type
(``error.type``). Trace and span ids come from the active context, so the spans of one call nest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from urllib.parse import urlsplit

from opentelemetry import context as otel_context, propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

__all__ = [
    "TRACER_NAME",
    "embedding_span",
    "fail",
    "fetch_span",
    "leg_span",
    "rerank_span",
    "retrieval_span",
    "tool_call_span",
]

TRACER_NAME = "simone"
"""The instrumentation scope every simone span is recorded under."""


@functools.cache
def _version() -> str:
    # read once: importlib.metadata parses the package's METADATA on every call (~0.7 ms per span)
    try:
        return version("simone")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


def _tracer() -> trace.Tracer:
    # Looked up per span (cheap): an SDK installed after import still receives every span.
    return trace.get_tracer(TRACER_NAME, _version())


def _clean(attributes: Mapping[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    return {key: value for key, value in attributes.items() if value is not None}


@contextmanager
def _span(
    name: str,
    attributes: Mapping[str, AttributeValue | None],
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    parent: otel_context.Context | None = None,
) -> Iterator[Span]:
    with _tracer().start_as_current_span(
        name,
        context=parent,
        kind=kind,
        attributes=_clean(attributes),
        record_exception=False,  # an exception's message may quote the input: only its type is kept
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            fail(span, type(exc).__qualname__)
            for detail in ("kind", "reason"):  # typed errors' own codes (e.g. a fetch's "robots")
                value = getattr(exc, detail, None)
                if isinstance(value, str):
                    span.set_attribute(f"simone.error.{detail}", value)
            raise


def fail(span: Span, error_type: str) -> None:
    """Mark ``span`` as failed with ``error_type`` (a class or failure-kind name, never a message)."""
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR))


@contextmanager
def tool_call_span(
    tool: str,
    *,
    meta: Mapping[str, object] | None = None,
    session_id: str | None = None,
    request_id: str | int | None = None,
) -> Iterator[Span]:
    """The server span of one MCP ``tools/call``.

    ``meta`` (the request's ``_meta``) may carry the caller's ``traceparent``/``tracestate``, which
    makes this span a child of the caller's.
    """
    carrier = {key: value for key, value in (meta or {}).items() if isinstance(value, str)}
    parent = propagate.extract(carrier) if carrier else None
    with _span(
        f"tools/call {tool}",
        {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "mcp.session.id": session_id,
            "jsonrpc.request.id": None if request_id is None else str(request_id),
        },
        kind=SpanKind.SERVER,
        parent=parent,
    ) as span:
        yield span


@contextmanager
def retrieval_span(providers: list[str], *, mode: str, limit: int) -> Iterator[Span]:
    """One routed request over ``providers`` (names only).

    Set the outcome with :func:`fail` or ``span.set_attribute`` (``simone.status``,
    ``simone.evidence.count``) before it ends.
    """
    with _span(
        "retrieval",
        {
            "gen_ai.operation.name": "retrieval",
            "simone.providers": providers,
            "simone.mode": mode,
            "gen_ai.request.top_k": limit,
        },
    ) as span:
        yield span


@contextmanager
def leg_span(provider: str) -> Iterator[Span]:
    """One provider's leg of a routed request."""
    with _span(
        f"retrieval {provider}",
        {"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": provider},
    ) as span:
        yield span


@contextmanager
def rerank_span(reranker: str, candidates: int) -> Iterator[Span]:
    """The rerank stage after fusion: ``candidates`` fused items sent to ``reranker``.

    The stage sets ``simone.rerank.status`` (``reranked`` or ``kept_fused``) and, when it reordered,
    ``simone.rerank.before`` (each new place's fused place, 1-based) and ``simone.rerank.moved``.
    """
    with _span(
        f"rerank {reranker}",
        {
            "gen_ai.operation.name": "rerank",
            "gen_ai.provider.name": reranker,
            "simone.rerank.candidates": candidates,
        },
    ) as span:
        yield span


@contextmanager
def embedding_span(model: str, *, provider: str, inputs: int, purpose: str) -> Iterator[Span]:
    """One embedding call: ``inputs`` texts for ``purpose`` (``query`` or ``document``).

    ``model`` and ``provider`` are the space's (``provider`` is the family: ``onnx``, ``openai``…).
    """
    with _span(
        f"embeddings {model}",
        {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.request.model": model,
            "gen_ai.provider.name": provider,
            "simone.embedding.inputs": inputs,
            "simone.embedding.purpose": purpose,
        },
    ) as span:
        yield span


@contextmanager
def fetch_span(url: str) -> Iterator[Span]:
    """One page fetch (``GET``): the host and port, never the path or the query string.

    Set ``http.response.status_code`` on the span once the answer is in.
    """
    parts = urlsplit(url)
    with _span(
        "GET",
        {
            "http.request.method": "GET",
            "server.address": parts.hostname,
            "server.port": parts.port,
            "url.scheme": parts.scheme or None,
        },
        kind=SpanKind.CLIENT,
    ) as span:
        yield span
