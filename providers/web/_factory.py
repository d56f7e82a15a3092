"""Web search's provider factory (``[web]``, only with a search backend): ``FACTORY``.

It opens the web layer (:func:`~simone.providers.web.open_web`: backends, the safe fetcher, the research
cache), offers the researcher-only ``web`` provider and publishes the open stack (:data:`WEB_STACK`),
over which the agents layer runs bounded web research. The provider refuses every caller but the
researcher and the research workflow (:data:`~simone.providers.web.WEB_CALLERS`; the selection policy
restricts the ``web-search`` kind the same way, as data).

This module imports nothing heavy: the web layer's modules are imported when the factory opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simone.runtime import OpenedProviders, ProviderFactory, ProviderSetup, Settings, Shared, WebSettings

if TYPE_CHECKING:
    from simone.providers.web._stack import WebStack


def _stack_type() -> type[WebStack]:
    from simone.providers.web._stack import WebStack

    return WebStack


WEB_STACK: Shared[WebStack] = Shared("web_stack", _stack_type)
"""The open web layer (searcher, fetcher, cache, settings)."""


def web_configured(settings: Settings) -> bool:
    """Whether any search backend is configured (a URL for SearXNG, a key for Brave or Tavily)."""
    web = settings.web
    return bool(web.backends or web.searxng_url or web.brave_api_key or web.tavily_api_key)


async def open_web_search(setup: ProviderSetup[WebSettings]) -> OpenedProviders:
    """The ``web`` provider over the web layer the settings describe.

    ``setup.options`` go to :func:`~simone.providers.web.open_web` (``transport``, ``resolver``,
    ``clock``, ``cache_dir``) — tests use them to reach a loopback web.
    """
    from simone.providers.web._stack import open_web

    web = await setup.stack.enter_async_context(open_web(setup.settings, **setup.options))
    return OpenedProviders(providers=[web.provider()], published={WEB_STACK: web})


FACTORY: ProviderFactory[WebSettings] = ProviderFactory(
    section="web",
    settings=WebSettings,
    open=open_web_search,
    enabled=lambda settings, section: web_configured(settings),
    order=30,
    publishes=(WEB_STACK,),
)
"""Web search and research (``[web]``, only with a search backend): the researcher-only ``web`` provider."""
