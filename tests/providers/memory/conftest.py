from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from simone.providers.memory import ManualClock, SequentialIds, SQLiteMemoryStore
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


@pytest.fixture
async def store(make_store: Callable[..., SQLiteMemoryStore]) -> AsyncIterator[SQLiteMemoryStore]:
    async with make_store(settings=MemorySettings(checklist_max_depth=3, max_body_chars=10_000)) as opened:
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
