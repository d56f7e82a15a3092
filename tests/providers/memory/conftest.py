from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from simone.providers.memory import ManualClock, PostgresMemoryStore, SequentialIds, SQLiteMemoryStore
from simone.runtime import (
    Caller,
    MemorySettings,
    TrustedContext,
)
from simone.runtime.text import default_analyzer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(tick=timedelta(milliseconds=1))


@pytest.fixture
def make_store(tmp_path: Path, clock: ManualClock) -> Callable[..., SQLiteMemoryStore]:
    def make(name: str = "memory.sqlite3", **kwargs: Any) -> SQLiteMemoryStore:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("ids", SequentialIds())
        kwargs.setdefault("analyzer", default_analyzer())
        return SQLiteMemoryStore(tmp_path / name, **kwargs)

    return make


BACKENDS = ["sqlite", "postgres"]
"""Every memory backend: the ``store`` fixture runs each behaviour test on each of them."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The memory backend under test (tests bound to SQLite's file ask for ``make_store`` instead)."""
    return str(request.param)


@pytest.fixture
def make_any_store(
    backend: str,
    make_store: Callable[..., SQLiteMemoryStore],
    request: pytest.FixtureRequest,
    clock: ManualClock,
) -> Callable[..., Any]:
    """A store of the backend under test: SQLite in ``tmp_path``, or PostgreSQL in a fresh database."""
    if backend == "sqlite":
        return make_store
    url = request.getfixturevalue("postgres_url")

    def make(name: str = "memory", **kwargs: Any) -> PostgresMemoryStore:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("ids", SequentialIds())
        kwargs.setdefault("analyzer", default_analyzer())
        return PostgresMemoryStore(url, **kwargs)

    return make


@pytest.fixture
async def store(make_any_store: Callable[..., Any]) -> AsyncIterator[Any]:
    async with make_any_store(
        settings=MemorySettings(checklist_max_depth=3, max_body_chars=10_000)
    ) as opened:
        yield opened


@pytest.fixture
def alice() -> TrustedContext:
    return TrustedContext(actor="alice", conversation="c1", project="apollo")


@pytest.fixture
def bob() -> TrustedContext:
    return TrustedContext(actor="bob", conversation="c2", project="apollo")


@pytest.fixture
def system() -> TrustedContext:
    return TrustedContext(actor="owner", caller=Caller.SYSTEM)
