"""The document index: loaders, structure-aware chunking, the LanceDB store and the router provider."""

from simone.providers.documents._chunker import (
    Chunk as Chunk,
    Chunker as Chunker,
    HFTokenCounter as HFTokenCounter,
    TokenCounter as TokenCounter,
)
from simone.providers.documents._index import (
    DocumentIndex as DocumentIndex,
    IndexReport as IndexReport,
)
from simone.providers.documents._integrity import (
    count_duplicates as count_duplicates,
    duplicate_chunks as duplicate_chunks,
    repair_duplicates as repair_duplicates,
)
from simone.providers.documents._loaders import (
    LoadedDocument as LoadedDocument,
    SkippedFile as SkippedFile,
    SourceFile as SourceFile,
    discover as discover,
    load_file as load_file,
)
from simone.providers.documents._location import (
    INDEX_FOLDER as INDEX_FOLDER,
    IndexLocation as IndexLocation,
    index_backend_status as index_backend_status,
)
from simone.providers.documents._lock import CollectionBusy as CollectionBusy
from simone.providers.documents._provider import DocumentIndexProvider as DocumentIndexProvider
from simone.providers.documents._store import (
    Collection as Collection,
    CollectionInfo as CollectionInfo,
    DocumentStore as DocumentStore,
)

__all__ = (
    "Chunk",
    "Chunker",
    "Collection",
    "CollectionBusy",
    "CollectionInfo",
    "DocumentIndex",
    "DocumentIndexProvider",
    "DocumentStore",
    "HFTokenCounter",
    "INDEX_FOLDER",
    "IndexLocation",
    "IndexReport",
    "LoadedDocument",
    "SkippedFile",
    "SourceFile",
    "TokenCounter",
    "count_duplicates",
    "discover",
    "duplicate_chunks",
    "index_backend_status",
    "load_file",
    "repair_duplicates",
)
