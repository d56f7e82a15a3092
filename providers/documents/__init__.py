"""The document index: loaders, structure-aware chunking, the LanceDB store and the router provider."""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.providers.documents._calibration import (
        SpaceCalibration as SpaceCalibration,
        calibrate as calibrate,
        calibrate_missing as calibrate_missing,
        has_shipped_calibration as has_shipped_calibration,
        read_calibration as read_calibration,
        relevance_report as relevance_report,
        relevance_rule as relevance_rule,
    )
    from simone.providers.documents._chunker import (
        Chunk as Chunk,
        Chunker as Chunker,
        HFTokenCounter as HFTokenCounter,
        TokenCounter as TokenCounter,
    )
    from simone.providers.documents._drop import drop_collection as drop_collection
    from simone.providers.documents._factory import (
        DOCUMENT_INDEX as DOCUMENT_INDEX,
        LAZY_OPTION as LAZY_OPTION,
        LazyDocuments as LazyDocuments,
        open_documents as open_documents,
    )
    from simone.providers.documents._index import (
        DocumentIndex as DocumentIndex,
        FilePreparer as FilePreparer,
        IndexExecutor as IndexExecutor,
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
    from simone.providers.documents._locators import LocatorMap as LocatorMap, locator_map as locator_map
    from simone.providers.documents._lock import CollectionBusy as CollectionBusy
    from simone.providers.documents._provider import DocumentIndexProvider as DocumentIndexProvider
    from simone.providers.documents._ray import (
        RayExecutor as RayExecutor,
        RayStats as RayStats,
        import_ray as import_ray,
    )
    from simone.providers.documents._skip import (
        SkipRules as SkipRules,
        is_folder as is_folder,
        skip_category as skip_category,
        skip_summary as skip_summary,
        skipped_counts as skipped_counts,
    )
    from simone.providers.documents._store import (
        Collection as Collection,
        CollectionInfo as CollectionInfo,
        DocumentStore as DocumentStore,
    )
    from simone.providers.documents._watch import (
        WatchRun as WatchRun,
        refresh_periodically as refresh_periodically,
        watch_index as watch_index,
    )

__all__ = (
    "Chunk",
    "Chunker",
    "Collection",
    "CollectionBusy",
    "CollectionInfo",
    "DOCUMENT_INDEX",
    "DocumentIndex",
    "DocumentIndexProvider",
    "DocumentStore",
    "FilePreparer",
    "HFTokenCounter",
    "INDEX_FOLDER",
    "IndexExecutor",
    "IndexLocation",
    "IndexReport",
    "LAZY_OPTION",
    "LazyDocuments",
    "LoadedDocument",
    "LocatorMap",
    "RayExecutor",
    "RayStats",
    "SkipRules",
    "SkippedFile",
    "SourceFile",
    "SpaceCalibration",
    "TokenCounter",
    "WatchRun",
    "calibrate",
    "calibrate_missing",
    "count_duplicates",
    "discover",
    "drop_collection",
    "duplicate_chunks",
    "has_shipped_calibration",
    "import_ray",
    "index_backend_status",
    "is_folder",
    "load_file",
    "locator_map",
    "open_documents",
    "read_calibration",
    "refresh_periodically",
    "relevance_report",
    "relevance_rule",
    "repair_duplicates",
    "skip_category",
    "skip_summary",
    "skipped_counts",
    "watch_index",
)

_HOMES: dict[str, str] = {
    "drop_collection": "simone.providers.documents._drop",
    "DOCUMENT_INDEX": "simone.providers.documents._factory",
    "LAZY_OPTION": "simone.providers.documents._factory",
    "LazyDocuments": "simone.providers.documents._factory",
    "open_documents": "simone.providers.documents._factory",
    "Chunk": "simone.providers.documents._chunker",
    "Chunker": "simone.providers.documents._chunker",
    "Collection": "simone.providers.documents._store",
    "CollectionBusy": "simone.providers.documents._lock",
    "CollectionInfo": "simone.providers.documents._store",
    "DocumentIndex": "simone.providers.documents._index",
    "DocumentIndexProvider": "simone.providers.documents._provider",
    "DocumentStore": "simone.providers.documents._store",
    "FilePreparer": "simone.providers.documents._index",
    "HFTokenCounter": "simone.providers.documents._chunker",
    "INDEX_FOLDER": "simone.providers.documents._location",
    "IndexExecutor": "simone.providers.documents._index",
    "IndexLocation": "simone.providers.documents._location",
    "IndexReport": "simone.providers.documents._index",
    "LoadedDocument": "simone.providers.documents._loaders",
    "RayExecutor": "simone.providers.documents._ray",
    "RayStats": "simone.providers.documents._ray",
    "SkippedFile": "simone.providers.documents._loaders",
    "SourceFile": "simone.providers.documents._loaders",
    "SpaceCalibration": "simone.providers.documents._calibration",
    "TokenCounter": "simone.providers.documents._chunker",
    "calibrate": "simone.providers.documents._calibration",
    "calibrate_missing": "simone.providers.documents._calibration",
    "count_duplicates": "simone.providers.documents._integrity",
    "discover": "simone.providers.documents._loaders",
    "duplicate_chunks": "simone.providers.documents._integrity",
    "has_shipped_calibration": "simone.providers.documents._calibration",
    "import_ray": "simone.providers.documents._ray",
    "index_backend_status": "simone.providers.documents._location",
    "load_file": "simone.providers.documents._loaders",
    "read_calibration": "simone.providers.documents._calibration",
    "relevance_report": "simone.providers.documents._calibration",
    "relevance_rule": "simone.providers.documents._calibration",
    "repair_duplicates": "simone.providers.documents._integrity",
    "LocatorMap": "simone.providers.documents._locators",
    "locator_map": "simone.providers.documents._locators",
    "SkipRules": "simone.providers.documents._skip",
    "skip_category": "simone.providers.documents._skip",
    "skip_summary": "simone.providers.documents._skip",
    "skipped_counts": "simone.providers.documents._skip",
    "is_folder": "simone.providers.documents._skip",
    "WatchRun": "simone.providers.documents._watch",
    "refresh_periodically": "simone.providers.documents._watch",
    "watch_index": "simone.providers.documents._watch",
}
"""Where each exported name lives (imported on first use)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
