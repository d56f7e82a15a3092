"""Choosing the memory backend from the settings: PostgreSQL when ``memory.url`` is set, else SQLite."""

from __future__ import annotations

import time
from typing import Any

import anyio
from simone.providers.memory.postgres import PostgresMemoryStore
from simone.providers.memory.sqlite import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION, SQLiteMemoryStore
from simone.runtime import ConfigError, Settings, SimoneError


def memory_backend(settings: Settings) -> str:
    """``"postgres"`` when ``memory.url`` names a PostgreSQL server, else ``"sqlite"``.

    Raises:
        ConfigError: a ``memory.url`` of another scheme.
    """
    url = settings.memory.url
    if not url:
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres"
    raise ConfigError(
        f"memory.url must be a postgresql:// URL (got scheme {url.split(':', 1)[0]!r}); "
        "leave it unset for the embedded SQLite file at memory.path"
    )


def open_memory_store(settings: Settings, **kwargs: Any) -> SQLiteMemoryStore | PostgresMemoryStore:
    """The memory store the settings select (not opened yet: ``async with`` it)."""
    if memory_backend(settings) == "postgres":
        return PostgresMemoryStore.from_settings(settings, **kwargs)
    return SQLiteMemoryStore.from_settings(settings, **kwargs)


async def memory_backend_status(settings: Settings, *, timeout_s: float = 10.0) -> dict[str, Any]:
    """The memory backend for ``simone doctor``: backend, address (never a password), schema, answers.

    ``answers`` is ``True`` when the store opened (and migrated) within ``timeout_s``; otherwise
    ``error`` says why. A SQLite file that does not exist yet is reported, not created.
    """
    try:
        backend = memory_backend(settings)
        store = open_memory_store(settings)
    except SimoneError as exc:
        return {"backend": "unknown", "answers": False, "error": str(exc)}
    if isinstance(store, SQLiteMemoryStore):
        out: dict[str, Any] = {"backend": backend, "address": str(store.path)}
        if not await anyio.Path(store.path).exists():
            out.update(answers=True, schema_version=None, note="no memory yet: created on the first write")
            return out
    else:
        out = {"backend": backend, "address": store.address}
    started = time.perf_counter()
    try:
        with anyio.fail_after(timeout_s):
            async with store:
                version = (
                    store.schema_version if isinstance(store, PostgresMemoryStore) else SQLITE_SCHEMA_VERSION
                )
        out.update(answers=True, schema_version=version, ms=round((time.perf_counter() - started) * 1000, 1))
    except TimeoutError:
        out.update(answers=False, error=f"timeout: no answer within {timeout_s:g} s")
    except SimoneError as exc:
        out.update(answers=False, error=str(exc))
    return out
