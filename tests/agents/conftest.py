from collections.abc import Iterator
from pathlib import Path

import pytest
from simone.providers.testing import LoopbackWeb, add_fixture_site
from simone.runtime import Settings, WebSettings


@pytest.fixture
def loopback_web() -> Iterator[LoopbackWeb]:
    """The fixture web of the web-research tests, on 127.0.0.1."""
    with LoopbackWeb() as web:
        add_fixture_site(web)
        yield web


@pytest.fixture
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No SIMONE_* variable or ./simone.toml from the developer's machine leaks into a test."""
    import os

    for key in list(os.environ):
        if key.startswith("SIMONE_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def web_settings(isolated_env: Path, loopback_web: LoopbackWeb) -> Settings:
    """Settings with the loopback web as the SearXNG backend (loopback allowed for the fetcher)."""
    return Settings(
        data_dir=isolated_env / "data",
        web=WebSettings(searxng_url=loopback_web.search_url, allowed_networks=["127.0.0.0/8"]),
    )
