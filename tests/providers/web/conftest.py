from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def load_hostile() -> Any:
    """``tests/providers/web/hostile.py`` as a module (the tests folder is no package)."""
    name = "_simone_tests_hostile_web"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "providers" / "web" / "hostile.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def hostile() -> Iterator[Any]:
    """A raw-socket server on 127.0.0.1 serving every hostile kind at ``/<kind>``."""
    with load_hostile().HostileWeb() as server:
        yield server
