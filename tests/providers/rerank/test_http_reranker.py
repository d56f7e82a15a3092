"""The HTTP reranker against a loopback rerank server speaking each shape, and each way a server fails."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import anyio
import httpx
import pytest
from simone.providers.rerank import HttpReranker, RerankApi, read_scores, request_body
from simone.providers.testing import LoopbackRerankServer, StaticProvider, make_evidence, overlap_score
from simone.runtime import InvalidResponse, RerankOptions, RetrievalResult, Router, Status, TrustedContext

CTX = TrustedContext(actor="alice", token_budget=10_000)
QUERY = "solar panels on a roof"
# fused order: the best match for the query comes last, so a working rerank visibly moves it up
TEXTS = [
    "a recipe for bread with flour and water",
    "panels of a fence painted green",
    "solar power from panels",
    "solar panels mounted on a roof facing south",
]


@pytest.fixture
def server() -> Iterator[LoopbackRerankServer]:
    with LoopbackRerankServer(retry_after="0") as running:
        yield running


def retrieve(reranker: HttpReranker, *, timeout_s: float = 2.0) -> RetrievalResult:
    provider = StaticProvider("docs", make_evidence("docs", TEXTS))
    router = Router([provider], reranker=reranker, rerank=RerankOptions(candidates=10, timeout_s=timeout_s))

    async def go() -> RetrievalResult:
        async with reranker:
            return await router.retrieve(router.request(QUERY), CTX)

    return anyio.run(go)


def contents(result: RetrievalResult) -> list[str]:
    return [e.content for e in result.evidence]


EXPECTED = sorted(TEXTS, key=lambda t: -overlap_score(QUERY, f"x\n{t}"))


@pytest.mark.parametrize(
    ("api", "path_key", "answer_key"),
    [
        ("cohere", "documents", "results"),
        ("voyage", "documents", "data"),
        ("mixedbread", "input", "data"),
        ("tei", "texts", None),
    ],
)
def test_each_shape_reorders_the_fused_candidates(
    server: LoopbackRerankServer, api: RerankApi, path_key: str, answer_key: str | None
) -> None:
    result = retrieve(HttpReranker(server.url, api=api, model="rerank-model"))
    assert contents(result) == EXPECTED
    assert result.status is Status.COMPLETE and not result.failures
    assert result.trace.rerank is not None and result.trace.rerank.status == "reranked"
    ((_, body),) = server.requests
    assert body["query"] == QUERY and len(body[path_key]) == len(TEXTS)
    if api == "tei":
        assert "model" not in body and body["truncate"] is True
    else:
        assert body["model"] == "rerank-model"
    assert body.get("top_n", body.get("top_k", len(TEXTS))) == len(TEXTS)


def test_the_key_goes_in_the_authorization_header(server: LoopbackRerankServer) -> None:
    retrieve(HttpReranker(server.url, api_key="sk-test"))
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_answers_of_every_shape_are_read_alike() -> None:
    assert read_scores("r", {"results": [{"index": 1, "relevance_score": 0.9}]}, 2) == [None, 0.9]
    assert read_scores("r", {"data": [{"index": 0, "relevance_score": 0.5}]}, 1) == [0.5]
    assert read_scores("r", [{"index": 0, "score": 2}, {"index": 1, "score": -1.5}], 2) == [2.0, -1.5]
    for bad in (
        {"results": [{"index": 2, "relevance_score": 0.1}]},
        {"results": [{"index": 0, "relevance_score": "NaN"}]},
        {"results": [{"index": 0, "score": 1}, {"index": 0, "score": 2}]},
        {"results": [{"index": True, "score": 1}]},
        {"results": "nope"},
        {"unexpected": []},
    ):
        with pytest.raises(InvalidResponse):
            read_scores("r", bad, 2)
    assert request_body("tei", "q", ["a"], "m") == {
        "query": "q",
        "texts": ["a"],
        "raw_scores": False,
        "truncate": True,
    }


def test_a_429_whose_retry_after_fits_the_deadline_is_retried(server: LoopbackRerankServer) -> None:
    server.script.append("rate_limit")
    result = retrieve(HttpReranker(server.url))
    assert contents(result) == EXPECTED and not result.failures
    assert len(server.requests) == 2


def test_a_429_that_asks_for_longer_than_the_deadline_keeps_the_fused_order(
    server: LoopbackRerankServer,
) -> None:
    server.retry_after = "30"
    server.mode = "rate_limit"
    result = retrieve(HttpReranker(server.url, max_retry_wait_s=60.0))
    assert contents(result) == TEXTS and result.status is Status.PARTIAL
    (failure,) = result.failures
    assert failure.kind == "rate_limited" and failure.retry_after_s == 30.0
    assert "past the deadline" in failure.message
    assert len(server.requests) == 1
    assert any("rerank:http failed (rate_limited)" in note for note in result.limitations)


@pytest.mark.parametrize(
    ("mode", "kind"),
    [
        ("malformed_json", "invalid_response"),
        ("wrong_index", "invalid_response"),
        ("duplicate_index", "invalid_response"),
        ("nan", "invalid_response"),
        ("error500", "unavailable"),
    ],
)
def test_a_malformed_or_failing_answer_keeps_the_fused_order(
    server: LoopbackRerankServer, mode: str, kind: str
) -> None:
    server.mode = mode  # type: ignore[assignment]
    result = retrieve(HttpReranker(server.url))
    assert contents(result) == TEXTS and result.status is Status.PARTIAL
    assert [f.kind for f in result.failures] == [kind]
    assert result.trace.rerank is not None and result.trace.rerank.status == "kept_fused"


def test_a_server_that_hangs_times_out(server: LoopbackRerankServer) -> None:
    server.mode = "slow"
    result = retrieve(HttpReranker(server.url), timeout_s=0.3)
    assert contents(result) == TEXTS
    assert [f.kind for f in result.failures] == ["timeout"]


def test_a_server_that_is_down_is_unavailable() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = retrieve(HttpReranker(f"http://127.0.0.1:{port}/v1/rerank"))
    assert contents(result) == TEXTS and [f.kind for f in result.failures] == ["unavailable"]


def test_statuses_are_translated() -> None:
    def answer(status: int) -> httpx.Response:
        return httpx.Response(status, json={"error": "no"})

    for status, kind in ((401, "forbidden"), (404, "not_configured"), (422, "invalid_response")):
        transport = httpx.MockTransport(lambda request, s=status: answer(s))
        client = httpx.AsyncClient(transport=transport)
        result = retrieve(HttpReranker("http://rerank.test/v1/rerank", client=client))
        anyio.run(client.aclose)
        assert [f.kind for f in result.failures] == [kind]


def test_a_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="http"):
        HttpReranker("ftp://example/rerank")
