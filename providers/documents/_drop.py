"""Removing a collection: its table and its sibling tables (one per extra embedding space), under its lock.

``simone index --drop NAME`` uses it, e.g. to remove the bundled handbook's collection (``simone ask``
indexes it on a fresh machine, into a collection of its own).
"""

from __future__ import annotations

import anyio
from simone.providers.documents._location import IndexLocation
from simone.providers.documents._lock import WriterLock
from simone.providers.documents._object_lock import ObjectStoreLock
from simone.providers.documents._store import DocumentStore
from simone.runtime import InvalidRequest, Settings


def _tables_of(names: list[str], collection: str) -> list[str]:
    """The tables of ``collection``: its own and its extra spaces' (``<collection>--<space>``)."""
    return sorted(name for name in names if name == collection or name.startswith(f"{collection}--"))


async def drop_collection(settings: Settings, collection: str) -> list[str]:
    """Drop ``collection`` (every table of it) from the index the settings name; returns the tables dropped.

    Holds the collection's writer lock while it drops, so an indexer writing it at the same time is
    refused (``CollectionBusy``) rather than left writing into a table that is gone.

    Raises:
        InvalidRequest: the index holds no collection of that name (the message lists those it holds).
        CollectionBusy: another process is writing it.
    """
    location = IndexLocation.from_settings(settings)
    if not location.remote and not await anyio.Path(location.uri).exists():
        raise InvalidRequest(
            f"there is no index at {location.uri} yet, so no collection {collection!r} to drop"
        )
    async with DocumentStore.at(location) as store:
        names = await store.collection_names()
        tables = _tables_of(names, collection)
        if not tables:
            held = sorted(name for name in names if "--" not in name)
            raise InvalidRequest(
                f"the index {location.describe()['uri']} holds no collection {collection!r}; it holds "
                f"{', '.join(held) or 'none'}"
            )
        if location.remote:
            async with ObjectStoreLock(location, collection, lease_s=settings.index.lock_lease_s).hold():
                for table in tables:
                    await store.drop_collection(table)
        else:
            with WriterLock(location.uri, collection):
                for table in tables:
                    await store.drop_collection(table)
    return tables
