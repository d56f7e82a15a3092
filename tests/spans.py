"""Pytest plugin: ``spans`` — an in-memory OpenTelemetry exporter behind the process's tracer provider.

OpenTelemetry lets a process set its global tracer provider once, so the plugin installs one SDK
provider with an in-memory exporter at the first use and every test that asks for ``spans`` gets that
exporter, emptied. Spans recorded by code under test (through simone.runtime.tracing) land there.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()
_installed = False


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The in-memory exporter every span of this process reaches, emptied before the test."""
    global _installed
    if not _installed:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            pytest.fail("another tracer provider was installed first; spans cannot be observed")
        _installed = True
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
