"""Building the web layer from the configuration: backends, fetcher, cache, searcher, provider."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import httpx
from simone.providers.web._backends import BraveBackend, SearchBackend, SearxngBackend, TavilyBackend
from simone.providers.web._fetcher import FetchPolicy, Resolver, SafeFetcher
from simone.providers.web._provider import WebSearchProvider
from simone.providers.web._searcher import WebSearcher
from simone.runtime import Freshness, ProviderNotConfigured, ResearchCache, Settings, WebSettings


def backends_from_settings(web: WebSettings, client: httpx.AsyncClient) -> list[SearchBackend]:
    """The configured backends, in order (``web.backends``, or every configured one).

    Raises:
        ProviderNotConfigured: a backend named in ``web.backends`` lacks its URL or key.
    """
    names = list(web.backends)
    explicit = bool(names)
    if not names:
        if web.searxng_url:
            names.append("searxng")
        if web.brave_api_key is not None:
            names.append("brave")
        if web.tavily_api_key is not None:
            names.append("tavily")
    backends: list[SearchBackend] = []
    for name in names:
        if name == "searxng":
            if not web.searxng_url:
                if explicit:
                    raise ProviderNotConfigured(
                        "web.backends lists searxng but web.searxng_url is not set", provider=name
                    )
                continue
            backends.append(SearxngBackend(web.searxng_url, client))
        elif name == "brave":
            key = web.brave_api_key.get_secret_value() if web.brave_api_key else ""
            backends.append(BraveBackend(key, client, url=web.brave_url))
        elif name == "tavily":
            key = web.tavily_api_key.get_secret_value() if web.tavily_api_key else ""
            backends.append(TavilyBackend(key, client, url=web.tavily_url))
    return backends


@dataclass(slots=True)
class WebStack:
    """The open web layer: searcher (backends + fetcher), cache and settings."""

    settings: WebSettings
    searcher: WebSearcher
    cache: ResearchCache
    fetcher: SafeFetcher

    def provider(self, *, name: str = "web", freshness: Freshness = Freshness.AUTO) -> WebSearchProvider:
        """The router provider over this stack (researcher-only)."""
        return WebSearchProvider(
            self.searcher,
            self.cache,
            name=name,
            fetch_top=min(2, self.settings.max_fetches),
            max_results=self.settings.max_results_per_query,
            passages_per_source=self.settings.passages_per_source,
            freshness=freshness,
        )


@asynccontextmanager
async def open_web(
    settings: Settings,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    resolver: Resolver | None = None,
    clock: Callable[[], float] = time.time,
    cache_dir: str | None = None,
) -> AsyncIterator[WebStack]:
    """Open the web layer the configuration describes; everything is closed on exit.

    Args:
        settings: the configuration (``settings.web``; the cache in the Redis server at
            ``web.cache_url``, else under ``web.cache_dir`` or ``<data_dir>/web-cache``).
        transport: an httpx transport for the search and page clients (tests).
        resolver: the fetcher's resolver (tests map loopback host names).
        clock: the cache's clock (tests expire entries with it).
        cache_dir: overrides the cache directory (not used with ``web.cache_url``).

    An unconfigured web (no backend) still opens: searches then fail as ``not_configured``.
    """
    web = settings.web
    directory = cache_dir or web.cache_dir or (settings.data_dir / "web-cache")
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                transport=transport, timeout=httpx.Timeout(web.search_timeout_s), trust_env=False
            )
        )
        cache = await stack.enter_async_context(
            ResearchCache(
                directory,
                url=web.cache_url,
                password=web.cache_password.get_secret_value() if web.cache_password else None,
                clock=clock,
                stale_keep_s=web.cache_stale_keep_s,
            )
        )
        fetcher = await stack.enter_async_context(
            SafeFetcher(FetchPolicy.from_settings(web), resolver=resolver, transport=transport)
        )
        searcher = WebSearcher(
            backends_from_settings(web, client),
            fetcher,
            search_ttl_s=web.search_ttl_s,
            page_ttl_s=web.page_ttl_s,
            search_timeout_s=web.search_timeout_s,
        )
        yield WebStack(settings=web, searcher=searcher, cache=cache, fetcher=fetcher)
