"""The PostgreSQL backend of memory: one database shared by every process and host (``simone[postgres]``).

Importing this package does not import psycopg; opening a store does.
"""

from simone.providers.memory.postgres._schema import SCHEMA_VERSION as SCHEMA_VERSION
from simone.providers.memory.postgres._store import PostgresMemoryStore as PostgresMemoryStore

__all__ = (
    "PostgresMemoryStore",
    "SCHEMA_VERSION",
)
