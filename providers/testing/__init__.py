"""Test doubles and helpers for the providers layer: reuse these instead of writing a new fake per test.

Runtime's doubles (:mod:`simone.runtime.testing`) are re-exported here, so a provider's tests need one
import; the agents layer has its own (:mod:`simone.agents.testing`).

* Providers and embedders — :class:`FunctionProvider`, :class:`StaticProvider` and :func:`make_evidence`,
  :class:`SlowProvider`, :class:`FailingProvider`, :class:`HashEmbedder` (from :mod:`simone.runtime.testing`).
* The loopback web — :class:`LoopbackWeb`: a SearXNG-compatible search API and pages under virtual hosts
  on 127.0.0.1, scripted answers (:class:`Route`), a request log (:class:`LoggedRequest`).
* The fixture web — :data:`FIXTURE_PAGES` (data in ``fixture_web.json``, shipped here),
  :func:`add_fixture_site`, :func:`fixture_html`, :func:`load_fixture_pages` for a site of your own.
* A loopback embedding server — :class:`LoopbackEmbeddingServer`: OpenAI-compatible and Ollama embedding
  endpoints on 127.0.0.1 that can be scripted to misbehave (:data:`EmbeddingServerMode`).
* A loopback rerank server — :class:`LoopbackRerankServer`: every rerank shape (Cohere-style
  ``results``, ``data``, TEI's bare list) on 127.0.0.1, scored by word overlap
  (:func:`overlap_score`) and scriptable to misbehave (:data:`RerankServerMode`); a tiny cross-encoder
  ONNX graph with the bundled tokenizer (:func:`write_tiny_cross_encoder`).
* Clocks and ids — :class:`SecondsClock` (``time.time``-like, for caches and the web), and memory's
  :class:`ManualClock` and :class:`SequentialIds` (exact replays of a memory store).
"""

from simone.providers.memory import ManualClock as ManualClock, SequentialIds as SequentialIds
from simone.providers.testing._cross_encoder import write_tiny_cross_encoder as write_tiny_cross_encoder
from simone.providers.testing._embedding_server import (
    LoopbackEmbeddingServer as LoopbackEmbeddingServer,
    Mode as EmbeddingServerMode,
)
from simone.providers.testing._fixture_site import (
    FIXTURE_PAGES as FIXTURE_PAGES,
    FIXTURE_WEB_FILE as FIXTURE_WEB_FILE,
    FixturePage as FixturePage,
    add_fixture_site as add_fixture_site,
    fixture_html as fixture_html,
    load_fixture_pages as load_fixture_pages,
)
from simone.providers.testing._rerank_server import (
    LoopbackRerankServer as LoopbackRerankServer,
    RerankServerMode as RerankServerMode,
    overlap_score as overlap_score,
)
from simone.providers.testing._web import (
    LoggedRequest as LoggedRequest,
    LoopbackPage as LoopbackPage,
    LoopbackWeb as LoopbackWeb,
    Route as Route,
)
from simone.runtime.testing import (
    FailingProvider as FailingProvider,
    FunctionProvider as FunctionProvider,
    HashEmbedder as HashEmbedder,
    ResponseFunction as ResponseFunction,
    SecondsClock as SecondsClock,
    SlowProvider as SlowProvider,
    StaticProvider as StaticProvider,
    make_evidence as make_evidence,
)

__all__ = (
    "EmbeddingServerMode",
    "FIXTURE_PAGES",
    "FIXTURE_WEB_FILE",
    "FailingProvider",
    "FixturePage",
    "FunctionProvider",
    "HashEmbedder",
    "LoggedRequest",
    "LoopbackEmbeddingServer",
    "LoopbackPage",
    "LoopbackRerankServer",
    "LoopbackWeb",
    "ManualClock",
    "RerankServerMode",
    "ResponseFunction",
    "Route",
    "SecondsClock",
    "SequentialIds",
    "SlowProvider",
    "StaticProvider",
    "add_fixture_site",
    "fixture_html",
    "load_fixture_pages",
    "make_evidence",
    "overlap_score",
    "write_tiny_cross_encoder",
)
