from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from simone.providers.testing import LoopbackWeb, SecondsClock, add_fixture_site
from simone.providers.web import WebStack, open_web
from simone.runtime import Settings
from simone.workflows.research import WebResearch


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as loopback:
        add_fixture_site(loopback)
        yield loopback


@pytest.fixture
def clock() -> SecondsClock:
    return SecondsClock()


def web_settings(web: LoopbackWeb, tmp_path: Path, **web_fields: Any) -> Settings:
    fields: dict[str, Any] = {
        "searxng_url": web.search_url,
        "allowed_networks": ["127.0.0.1/32"],
        "request_timeout_s": 2.0,
        "total_timeout_s": 3.0,
        "search_timeout_s": 3.0,
        "cache_dir": tmp_path / "web-cache",
    }
    fields.update(web_fields)
    return Settings(data_dir=tmp_path, web=fields)


@pytest.fixture
def open_research(web: LoopbackWeb, tmp_path: Path, clock: SecondsClock) -> Callable[..., Any]:
    @asynccontextmanager
    async def opener(**web_fields: Any) -> AsyncIterator[tuple[WebResearch, WebStack]]:
        settings = web_settings(web, tmp_path, **web_fields)
        async with open_web(settings, resolver=web.resolver(), clock=clock) as stack:
            yield WebResearch.from_stack(stack), stack

    return opener
