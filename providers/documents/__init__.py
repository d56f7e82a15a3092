"""The document index: loaders, structure-aware chunking, the LanceDB store and the router provider."""

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
from simone.providers.documents._lock import CollectionBusy as CollectionBusy
from simone.providers.documents._provider import DocumentIndexProvider as DocumentIndexProvider
from simone.providers.documents._ray import (
    RayExecutor as RayExecutor,
    RayStats as RayStats,
    import_ray as import_ray,
)
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
    "FilePreparer",
    "HFTokenCounter",
    "INDEX_FOLDER",
    "IndexExecutor",
    "IndexLocation",
    "IndexReport",
    "LoadedDocument",
    "RayExecutor",
    "RayStats",
    "SkippedFile",
    "SourceFile",
    "SpaceCalibration",
    "TokenCounter",
    "calibrate",
    "calibrate_missing",
    "count_duplicates",
    "discover",
    "duplicate_chunks",
    "has_shipped_calibration",
    "import_ray",
    "index_backend_status",
    "load_file",
    "read_calibration",
    "relevance_report",
    "relevance_rule",
    "repair_duplicates",
)
