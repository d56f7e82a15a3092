from __future__ import annotations

import json
import time
from email.utils import formatdate
from pathlib import Path

import httpx
import pytest
from simone.providers.testing import LoopbackWeb, Route
from simone.providers.web import (
    BraveBackend,
    SearxngBackend,
    TavilyBackend,
    backends_from_settings,
    parse_retry_after,
    truncate_query,
)
from simone.runtime import (
    ConfigError,
    InvalidResponse,
    ProviderNotConfigured,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    WebSettings,
)

pytestmark = pytest.mark.anyio


def json_route(payload: object, status: int = 200, **headers: str) -> Route:
    return Route(
        status=status,
        body=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **headers},
    )


async def test_searxng_answers_from_the_loopback_index(web: LoopbackWeb) -> None:
    async with httpx.AsyncClient() as client:
        page = await SearxngBackend(web.search_url, client).search(
            "Lake Varnholm depth", count=3, timeout_s=5
        )
    assert page.backend == "searxng" and len(page.hits) == 3
    assert [h.rank for h in page.hits] == [1, 2, 3]
    assert all(h.url.startswith("http://") and h.title for h in page.hits)
    assert "varnholm" in page.hits[0].url
    request = next(r for r in web.requests if r.path == "/search")
    assert "format=json" in request.query


async def test_429_then_success_honours_retry_after(web: LoopbackWeb) -> None:
    web.script_search(Route(status=429, body=b"slow down", headers={"Retry-After": "1"}))
    started = time.perf_counter()
    async with httpx.AsyncClient() as client:
        page = await SearxngBackend(web.search_url, client).search("Lake Varnholm", count=2, timeout_s=5)
    assert page.hits and time.perf_counter() - started >= 1.0
    assert web.count(path_prefix="/search") == 2


async def test_429_beyond_the_deadline_is_rate_limited(web: LoopbackWeb) -> None:
    web.script_search(Route(status=429, body=b"", headers={"Retry-After": "120"}))
    async with httpx.AsyncClient() as client:
        with pytest.raises(RateLimited) as info:
            await SearxngBackend(web.search_url, client).search("Lake Varnholm", count=2, timeout_s=3)
    assert info.value.retry_after_s == 120 and info.value.retryable
    assert web.count(path_prefix="/search") == 1  # it did not wait two minutes


async def test_server_errors_and_malformed_answers(web: LoopbackWeb) -> None:
    async with httpx.AsyncClient() as client:
        backend = SearxngBackend(web.search_url, client)
        web.script_search(Route(status=500, body=b"boom"))
        with pytest.raises(ProviderUnavailable, match="500"):
            await backend.search("q", count=2, timeout_s=3)
        web.script_search(Route(body=b"<html>not json</html>", headers={"Content-Type": "text/html"}))
        with pytest.raises(InvalidResponse, match="malformed JSON"):
            await backend.search("q", count=2, timeout_s=3)
        web.script_search(json_route({"results": "nope"}))
        with pytest.raises(InvalidResponse, match="result list"):
            await backend.search("q", count=2, timeout_s=3)
        web.script_search(json_route([1, 2, 3]))
        with pytest.raises(InvalidResponse):
            await backend.search("q", count=2, timeout_s=3)
        web.script_search(Route(body=b"{}", delay_s=3))
        with pytest.raises(ProviderTimeout):
            await backend.search("q", count=2, timeout_s=0.5)


@pytest.mark.parametrize("depth", [1000, 100_000])
async def test_an_answer_nested_too_deep_is_an_invalid_response(web: LoopbackWeb, depth: int) -> None:
    body = ('{"results":' + "[" * depth + "]" * depth + "}").encode()
    web.script_search(Route(body=body, headers={"Content-Type": "application/json"}))
    async with httpx.AsyncClient() as client:
        with pytest.raises(InvalidResponse, match="malformed JSON") as info:
            await SearxngBackend(web.search_url, client).search("q", count=2, timeout_s=5)
    assert info.value.kind == "invalid_response"


async def test_malformed_entries_are_skipped_and_counted(web: LoopbackWeb) -> None:
    web.script_search(
        json_route(
            {
                "results": [
                    {"url": "javascript:alert(1)", "title": "x"},
                    {"title": "no url"},
                    "not an object",
                    {"url": "https://ok.example/a", "title": 42, "content": None, "score": float("inf")},
                    {"url": "https://ok.example/b", "title": "B", "publishedDate": "2024-01-02T00:00:00"},
                ],
                "unresponsive_engines": [["google", "timeout"]],
            }
        )
    )
    async with httpx.AsyncClient() as client:
        page = await SearxngBackend(web.search_url, client).search("q", count=10, timeout_s=3)
    assert [h.url for h in page.hits] == ["https://ok.example/a", "https://ok.example/b"]
    assert page.hits[0].title == "" and page.hits[0].score is None
    assert page.hits[1].published == "2024-01-02T00:00:00"
    assert page.skipped == 3 and page.partial
    assert any("google" in note for note in page.notes)


async def test_long_queries_are_cut_and_say_so(web: LoopbackWeb) -> None:
    long_query = "Varnholm " + " ".join(f"word{i}" for i in range(200))
    async with httpx.AsyncClient() as client:
        page = await SearxngBackend(web.search_url, client).search(long_query, count=2, timeout_s=3)
    assert page.query_truncated and len(page.query) <= SearxngBackend.max_query_chars
    assert any("cut" in note for note in page.notes)
    sent, cut = truncate_query(" ".join(["w"] * 80), 400, 50)
    assert cut and len(sent.split()) == 50


async def test_unreachable_backend_is_unavailable() -> None:
    async with httpx.AsyncClient() as client:
        with pytest.raises(ProviderUnavailable, match="is it running"):
            await SearxngBackend("http://127.0.0.1:9", client).search("q", count=2, timeout_s=2)


async def test_brave_and_tavily_speak_their_apis(web: LoopbackWeb) -> None:
    brave_url = web.add_route(
        "/brave",
        json_route(
            {
                "web": {
                    "results": [
                        {
                            "url": "https://a.example/",
                            "title": "A",
                            "description": "about a",
                            "page_age": "2024-05-01",
                        }
                    ]
                }
            }
        ),
    )
    tavily_url = web.add_route(
        "/tavily",
        json_route(
            {"results": [{"url": "https://t.example/", "title": "T", "content": "about t", "score": 0.9}]}
        ),
    )
    async with httpx.AsyncClient() as client:
        brave = await BraveBackend("brave-key", client, url=brave_url).search("q", count=5, timeout_s=3)
        tavily = await TavilyBackend("tavily-key", client, url=tavily_url).search("q", count=5, timeout_s=3)
    assert brave.hits[0].snippet == "about a" and brave.hits[0].published == "2024-05-01"
    assert tavily.hits[0].score == 0.9
    brave_request = next(r for r in web.requests if r.path == "/brave")
    tavily_request = next(r for r in web.requests if r.path == "/tavily")
    assert brave_request.headers["x-subscription-token"] == "brave-key"
    assert tavily_request.headers["authorization"] == "Bearer tavily-key"
    assert json.loads(tavily_request.body)["query"] == "q"


async def test_a_refused_key_is_a_configuration_problem(web: LoopbackWeb) -> None:
    url = web.add_route("/brave401", json_route({"error": "bad key"}, status=401))
    async with httpx.AsyncClient() as client:
        with pytest.raises(ProviderNotConfigured, match="API key"):
            await BraveBackend("wrong", client, url=url).search("q", count=5, timeout_s=3)


def test_backends_from_settings() -> None:
    client = httpx.AsyncClient()
    assert backends_from_settings(WebSettings(), client) == []
    settings = WebSettings(searxng_url="http://127.0.0.1:8888", tavily_api_key="t")
    assert [b.name for b in backends_from_settings(settings, client)] == ["searxng", "tavily"]
    with pytest.raises(ProviderNotConfigured, match="SIMONE_WEB__BRAVE_API_KEY"):
        backends_from_settings(WebSettings(backends=["brave"]), client)
    with pytest.raises(ProviderNotConfigured, match="searxng_url"):
        backends_from_settings(WebSettings(backends=["searxng"]), client)
    with pytest.raises(ProviderNotConfigured):
        SearxngBackend("file:///tmp", client)


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("nonsense") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("-5") == 0.0
    when = formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (parse_retry_after(when) or 0) <= 61


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from simone.runtime import load_settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMONE_WEB__BRAVE_API_KEY", "from-env")
    monkeypatch.setenv("SIMONE_WEB__ALLOWED_NETWORKS", '["127.0.0.1/32"]')
    settings = load_settings()
    assert (
        settings.web.brave_api_key is not None and settings.web.brave_api_key.get_secret_value() == "from-env"
    )
    assert "from-env" not in repr(settings.web)
    assert [b.name for b in backends_from_settings(settings.web, httpx.AsyncClient())] == ["brave"]
    (tmp_path / "simone.toml").write_text('[web]\nbrave_api_key = "in-a-file"\n')
    with pytest.raises(ConfigError, match="SIMONE_WEB__BRAVE_API_KEY"):
        load_settings()
