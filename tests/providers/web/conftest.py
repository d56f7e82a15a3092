from __future__ import annotations

from collections.abc import Iterator

import pytest
from simone.providers.testing import LoopbackWeb, add_fixture_site
from simone.providers.web import FetchPolicy
from simone.providers.web._fetcher import parse_networks

LOOPBACK_ONLY = parse_networks(["127.0.0.1/32"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def web() -> Iterator[LoopbackWeb]:
    with LoopbackWeb() as loopback:
        add_fixture_site(loopback)
        yield loopback


@pytest.fixture
def policy() -> FetchPolicy:
    """Loopback allowed explicitly (127.0.0.1 only), short timeouts, a small byte cap."""
    return FetchPolicy(
        allowed_networks=LOOPBACK_ONLY,
        request_timeout_s=2.0,
        total_timeout_s=3.0,
        max_bytes=256 * 1024,
        max_redirects=3,
    )
