"""The document index: incremental indexing of files into a LanceDB collection, and search.

::

    async with DocumentIndex.open(settings) as index:
        report = await index.index_paths(["docs/"])
        provider = DocumentIndexProvider(index)   # a Provider for the router

Indexing is incremental: a file whose bytes have the same sha256 as when it was indexed is not read
further; a changed file is re-chunked and only chunks whose text is new are embedded (vectors are
reused from the table, then from the persistent embedding cache keyed by (space, digest)); files
that vanished (or no longer qualify) lose their chunks. Each batch of files is written in one
``merge_insert`` commit, so a run killed at any point leaves a consistent index that the next run
completes. When the collection's space has no working embedder, rows are stored as *pending* (null
vector) and embedded by the next run or :meth:`DocumentIndex.embed_pending`.

A collection may carry **more than one embedding space**: the chain's own (the *primary* table,
which also holds the full-text index) and each of the chain's extra spaces
(``[embeddings] extra_spaces``), kept in a sibling table ``<collection>--<space>`` with the same rows
and that space's vectors. A sibling added to an existing collection starts with every row pending
and is filled at its own pace; a space whose embedder fails leaves its rows pending without
touching the other spaces.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Collection as AnyCollection, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import numpy as np
import numpy.typing as npt
import pyarrow as pa
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from simone.providers.documents._chunker import Chunk, Chunker, HFTokenCounter, TokenCounter
from simone.providers.documents._git import GitTree, changed_between, git_tree
from simone.providers.documents._integrity import repair_duplicates
from simone.providers.documents._loaders import (
    SkippedFile,
    SourceFile,
    discover,
    file_digest,
    load_bytes,
    read_bytes,
)
from simone.providers.documents._location import INDEX_FOLDER as INDEX_FOLDER, IndexLocation
from simone.providers.documents._locators import LocatorMap, locator_map
from simone.providers.documents._lock import WriterLock
from simone.providers.documents._object_lock import ObjectStoreLock
from simone.providers.documents._skip import SkipRules, is_folder
from simone.providers.documents._store import Collection, CollectionInfo, DocumentStore, card_of, now
from simone.runtime import (
    EmbeddingChain,
    EmbeddingSpace,
    EmbeddingSpaceMismatch,
    IndexSettings,
    InvalidRequest,
    ProviderError,
    ProviderNotConfigured,
    Settings,
    tighten_tree,
)
from simone.runtime.text import (
    BM25_TITLE_WEIGHT,
    Analyzer,
)

PREPARE_GROUP = 16
"""Files read and chunked per worker-thread call."""

PREPARE_AHEAD = 4
"""Groups of prepared files that may wait for the embedder (bounds memory)."""

EMBED_STEP = 128
"""Texts per chain call, so the progress advances while a write batch is embedded.

A write batch's texts are sorted by token count first, and the ONNX embedder runs batches of 32
sorted the same way, so cutting the sorted texts into calls of a multiple of 32 pads exactly as much
as one call of the whole batch would."""

TITLE_WEIGHT = BM25_TITLE_WEIGHT
"""Title terms are repeated this many times in the terms column (BM25: titles count three times)."""


@dataclass(slots=True)
class IndexReport:
    """What an indexing run did (also the progress snapshot passed to the callback).

    Attributes:
        collection: the collection written.
        space: the collection's embedding space key.
        files_found: every file found (after excludes): those read plus those skipped on sight
            (noise such as stylesheets and images, unsupported types, too large…); the files of a
            folder skipped unwalked are not listed, so not counted (the folder is in ``skipped``).
        files_total: files found to read (``files_found`` less the ones skipped on sight).
        files_done: files considered so far.
        files_indexed: new or changed files written.
        files_unchanged: files with the same digest as before (nothing done).
        files_not_read: of the unchanged, those not even read: git says they did not change since
            the last indexed commit, or ``--watch`` saw no event for them.
        files_deleted: files whose chunks were removed (vanished or no longer qualifying).
        chunks: chunks written.
        embedded: chunks embedded by a model in this run.
        cached: chunk vectors read from the persistent embedding cache.
        reused: chunk vectors reused from the table (unchanged text in a changed file).
        pending: chunks stored without a vector in this run (their embedder was unavailable).
        pending_filled: previously pending chunks embedded in this run.
        pending_left: chunks still waiting for a vector at the end.
        extra_spaces: per extra space (key): ``embedded``, ``cached``, ``reused``, ``pending``
            (stored without a vector this run), ``pending_filled`` and ``pending_left``.
        skipped: files not indexed, each with its reason; a path ending in ``/`` is a folder
            skipped whole, its files not listed (``build/``, an unreadable folder).
        read_in_part: files indexed without some of their parts, each with what was left out (a PDF
            page with no text layer, an e-book chapter that is missing, an attachment that could not
            be decoded…): the rest of the file is searchable, those parts are not.
        failures: embedding or store failures, in plain words.
        maintenance: what was done to the indexes afterwards.
        git: per git work tree indexed, its commit and what was compared, in plain words.
        elapsed_s: wall-clock seconds.
    """

    collection: str
    space: str
    files_found: int = 0
    files_total: int = 0
    files_done: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_not_read: int = 0
    files_deleted: int = 0
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    reused: int = 0
    pending: int = 0
    pending_filled: int = 0
    pending_left: int = 0
    extra_spaces: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: list[SkippedFile] = field(default_factory=list)
    read_in_part: list[SkippedFile] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    maintenance: list[str] = field(default_factory=list)
    git: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = {
            name: getattr(self, name) for name in self.__slots__ if name not in ("skipped", "read_in_part")
        }
        out["skipped"] = [{"path": s.path, "reason": s.reason} for s in self.skipped]
        out["read_in_part"] = [{"path": s.path, "reason": s.reason} for s in self.read_in_part]
        return out


ProgressCallback = Callable[[IndexReport], None]

_LEFT_OUT = re.compile(r"\b(?:skipped|left out|missing|could not be)\b")
"""A loader's note that names a part of the file it did not read (its other notes are harmless)."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    source: SourceFile
    path: str
    chunks: list[Chunk] | None = None
    terms: list[str] | None = None
    skipped: SkippedFile | None = None
    unchanged: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FilePreparer:
    """Reads, loads, chunks and analyses files: the work before embedding, in a thread or on a Ray worker.

    A file whose digest (with the chunker's state) is the one ``existing`` records is ``unchanged``;
    a file that cannot be read or loaded is skipped with its reason. ``locators`` maps a file to
    the path stored for it (``[index] locator_base``; the absolute path without it).
    """

    settings: IndexSettings
    chunker: Chunker
    analyzer: Analyzer
    locators: LocatorMap | None = None

    def stored_path(self, source: SourceFile) -> str:
        """The path stored for ``source``'s chunks (its locator without the line range)."""
        path = source.path.as_posix()
        return path if self.locators is None else self.locators.locate(path)

    def prepare_group(
        self, group: Sequence[SourceFile], existing: dict[str, str], project: str
    ) -> list[_Prepared]:
        """Each file of ``group`` prepared (see :meth:`prepare_safely`), in order."""
        return [self.prepare_safely(source, existing, project) for source in group]

    def prepare_safely(self, source: SourceFile, existing: dict[str, str], project: str) -> _Prepared:
        """:meth:`prepare`, with any failure of that one file turned into a skip with its reason.

        A loader or the chunker may raise anything on a file (a missing optional package, a
        library bug on malformed input): that file is skipped — its old chunks kept, as the cause
        may pass — and the run goes on.
        """
        try:
            return self.prepare(source, existing, project)
        except Exception as exc:  # noqa: BLE001 - one bad file must never end the run
            reason = f"could not be loaded: {type(exc).__name__}: {exc}"
            return _Prepared(
                source, self.stored_path(source), skipped=SkippedFile(source.display, reason, False)
            )

    def prepare(self, source: SourceFile, existing: dict[str, str], project: str) -> _Prepared:
        """Read ``source``; unchanged (digest as in ``existing``), skipped, or its chunks and terms."""
        path = self.stored_path(source)
        data = read_bytes(source, self.settings.max_file_bytes)
        if isinstance(data, SkippedFile):
            return _Prepared(source, path, skipped=data)
        if existing.get(path) == self.chunker.state(file_digest(data)):
            return _Prepared(source, path, unchanged=True)
        loaded = load_bytes(source, data)
        if isinstance(loaded, SkippedFile):
            return _Prepared(source, path, skipped=loaded)
        if loaded.path != path:
            loaded = dataclasses.replace(loaded, path=path)
        chunks = self.chunker.chunk(loaded, project=project)
        if not chunks:
            return _Prepared(source, path, skipped=SkippedFile(source.display, "no text to index"))
        return _Prepared(
            source, path, chunks=chunks, terms=[self.terms(c) for c in chunks], notes=loaded.notes
        )

    def terms(self, chunk: Chunk) -> str:
        """The chunk's lexical terms: the title's (weighted), the heading's, then the body's."""
        title = self.analyzer.terms(chunk.title)
        heading = self.analyzer.terms(
            " ".join(chunk.heading[1:] if chunk.heading[:1] == (chunk.title,) else chunk.heading)
        )
        body = self.analyzer.terms(chunk.text)
        return " ".join([*(title * TITLE_WEIGHT), *heading, *body])


class IndexExecutor(Protocol):
    """Where an indexing run prepares files and embeds chunks (``None``: here, in threads).

    The distributed runner (:class:`~simone.providers.documents.RayExecutor`) implements it; the
    index keeps everything else on the driver (digests, reuse and cache look-ups, writes, deletions
    of vanished files, pending rows, index maintenance), so the rows are those of a local run.
    """

    @property
    def concurrency(self) -> int:
        """Embedding calls that may be in flight at once."""
        ...

    @property
    def batch_texts(self) -> int:
        """Texts per embedding call (:data:`EMBED_STEP` gives exactly the local run's calls)."""
        ...

    def prepared(
        self, preparer: FilePreparer, sources: Sequence[SourceFile], existing: dict[str, str], project: str
    ) -> AsyncIterator[list[_Prepared]]:
        """``sources`` prepared by ``preparer`` (every one exactly once; order kept within a group)."""
        ...

    async def embed(self, texts: list[str], space: EmbeddingSpace) -> npt.NDArray[np.float32]:
        """Document vectors of ``texts`` in ``space`` (raises :class:`ProviderError` like the chain)."""
        ...


@runtime_checkable
class _WithTokenizer(Protocol):
    """An embedder that shows its model's tokenizer (the bundled ONNX embedder does)."""

    @property
    def tokenizer(self) -> object: ...


def _bundled_counter(chain: EmbeddingChain | None) -> TokenCounter:
    """The tokenizer of the chain's ONNX embedder, or the bundled one."""
    if chain is not None:
        for embedder in chain.embedders:
            tokenizer = embedder.tokenizer if isinstance(embedder, _WithTokenizer) else None
            if tokenizer is not None:
                try:
                    return HFTokenCounter(tokenizer)
                except TypeError:
                    continue
    from simone.providers.embeddings import load_tokenizer

    return HFTokenCounter(load_tokenizer(max_tokens=None, pad=False))


class DocumentIndex:
    """One collection of the document index, with the chain that embeds it.

    Construct it with its parts (tests, custom set-ups) or with :meth:`open` from the settings.
    Enter it (``async with``) before use: that opens the store and the collection.

    Args:
        store: the LanceDB store (opened by the index when not open yet).
        chain: the embedding chain; the collection's space is chosen from it when the collection
            is created, and afterwards only embedders of that space are used.
        analyzer: the lexical analysis (the same for rows and queries).
        settings: the ``[index]`` section.
        collection: the collection name (``settings.collection`` by default).
        space: pin the space: a collection recorded in another space is refused
            (:class:`EmbeddingSpaceMismatch`), a new one is created in it.
        counter: the embedding model's tokenizer (the ONNX embedder's by default).
        cache: the persistent embedding cache, if any (opened by the caller).
    """

    def __init__(
        self,
        store: DocumentStore,
        chain: EmbeddingChain,
        *,
        analyzer: Analyzer | None = None,
        settings: IndexSettings | None = None,
        collection: str | None = None,
        space: EmbeddingSpace | None = None,
        counter: TokenCounter | None = None,
        cache: Any = None,
    ) -> None:
        self.settings = settings or IndexSettings()
        self.store = store
        self.chain = chain
        self.analyzer = analyzer or Analyzer()
        self.name = collection or self.settings.collection
        self.pinned_space = space
        self.cache = cache
        self._counter = counter
        self._chunker: Chunker | None = None
        self._collection: Collection | None = None
        self._extras: dict[str, Collection] = {}
        self._limiter = anyio.CapacityLimiter(1)
        self._write_lock = anyio.Lock()
        self._locators: LocatorMap | None = None
        """The run's locator map (set under the write lock, for the preparer)."""

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        *,
        chain: EmbeddingChain | None = None,
        collection: str | None = None,
        space: EmbeddingSpace | None = None,
    ) -> AsyncIterator[DocumentIndex]:
        """The index the settings describe, opened; closes everything it opened on exit.

        Args:
            settings: the whole configuration (data dir, ``[index]``, ``[embeddings]``, ``[lexical]``).
            chain: an embedding chain to use (entered by the caller); built from the settings and
                entered here otherwise.
            collection: the collection name (``settings.index.collection`` by default).
            space: pin the embedding space (see the class).
        """
        from simone.providers.embeddings import EmbeddingCache, build_chain

        async with AsyncExitStack() as stack:
            if chain is None:
                chain = await stack.enter_async_context(
                    build_chain(settings.embeddings, data_dir=settings.data_dir)
                )
            cache = None
            if settings.embeddings.cache:
                cache = await stack.enter_async_context(EmbeddingCache.in_data_dir(settings.data_dir))
            store = await stack.enter_async_context(DocumentStore.at(IndexLocation.from_settings(settings)))
            index = cls(
                store,
                chain,
                analyzer=Analyzer.from_settings(settings.lexical),
                settings=settings.index,
                collection=collection,
                space=space,
                cache=cache,
            )
            await stack.enter_async_context(index)
            yield index

    async def __aenter__(self) -> DocumentIndex:
        await self.store.open()
        await self._open_collection()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._collection = None
        self._extras = {}

    # -- collection and space ---------------------------------------------------------------------

    async def _open_collection(self) -> Collection | None:
        if self._collection is None:
            collection = await self.store.open_collection(self.name)
            if collection is not None and self.pinned_space is not None:
                if collection.space != self.pinned_space:
                    raise EmbeddingSpaceMismatch(
                        f"collection {self.name!r} holds vectors of space {collection.space.key} "
                        f"({'normalised' if collection.space.normalized else 'raw'}), not "
                        f"{self.pinned_space.key}; vectors of different models cannot be compared. "
                        "Index into a new collection for the new model, then drop the old one",
                        provider="document-index",
                    )
            self._collection = collection
        if self._collection is not None:
            for space in self.extra_spaces:
                if space.key not in self._extras:
                    extra = await self.store.open_collection(extra_table_name(self.name, space))
                    if extra is not None:
                        self._extras[space.key] = extra
        return self._collection

    @property
    def extra_spaces(self) -> tuple[EmbeddingSpace, ...]:
        """The extra spaces the collection carries (the chain's ``extra_spaces``), besides its own."""
        spaces = self.chain.extra_spaces
        own = self._collection.space if self._collection is not None else self.pinned_space
        return tuple(space for space in spaces if space != own)

    @property
    def extra_collections(self) -> dict[str, Collection]:
        """The sibling tables of the extra spaces that exist so far, by space key."""
        return dict(self._extras)

    def semantic_collections(self) -> list[tuple[str, Collection]]:
        """``(leg name, table)`` of every semantic leg: ``semantic`` (own space), ``semantic:<provider>``."""
        if self._collection is None:
            return []
        legs = [("semantic", self._collection)]
        legs += [(f"semantic:{extra.space.provider}", extra) for extra in self._extras.values()]
        return legs

    async def _ensure_extras(self, primary: Collection) -> None:
        """Create the missing sibling tables, each filled with every row as pending."""
        for space in self.extra_spaces:
            if space.key in self._extras:
                continue
            name = extra_table_name(self.name, space)
            extra = await self.store.open_collection(name)
            if extra is None:
                extra = await self.store.create_collection(name, space)
                async for batch in await primary.table.query().to_batches():
                    rows = pa.Table.from_batches([batch]).drop_columns(["vector"])
                    nulls = pa.nulls(rows.num_rows, type=extra.schema.field("vector").type)
                    await extra.table.add(rows.append_column(extra.schema.field("vector"), nulls))
            self._extras[space.key] = extra

    @property
    def collection(self) -> Collection | None:
        """The open collection, or ``None`` when nothing was indexed yet."""
        return self._collection

    @property
    def space(self) -> EmbeddingSpace | None:
        """The collection's embedding space (``None`` before the first index run)."""
        return self._collection.space if self._collection is not None else None

    async def _ensure_collection(self) -> Collection:
        collection = await self._open_collection()
        if collection is not None:
            return collection
        space = self.pinned_space or await self.chain.select_space()
        self._collection = await self.store.create_collection(self.name, space)
        return self._collection

    @property
    def chunker(self) -> Chunker:
        """The chunker, sized with the embedding model's tokenizer."""
        if self._chunker is None:
            counter = self._counter or _bundled_counter(self.chain)
            self._chunker = Chunker(
                counter,
                max_tokens=self.settings.chunk_tokens,
                overlap_tokens=self.settings.chunk_overlap_tokens,
                terms_signature=self.analyzer.signature,
            )
        return self._chunker

    # -- indexing ---------------------------------------------------------------------------------

    async def index_paths(
        self,
        paths: Sequence[str | Path],
        *,
        project: str = "",
        progress: ProgressCallback | None = None,
        embed: bool = True,
        executor: IndexExecutor | None = None,
        changed: AnyCollection[str | Path] | None = None,
    ) -> IndexReport:
        """Index the files under ``paths`` for ``project`` (``""``: visible to every project).

        Args:
            paths: files or folders.
            project: the project the chunks belong to.
            progress: called with the running report as files are read and chunks embedded and
                written (every :data:`EMBED_STEP` chunks at most).
            embed: embed new chunks now (``False`` stores them pending, e.g. for a quick lexical index).
            executor: prepare and embed elsewhere (e.g. on a Ray cluster, :class:`RayExecutor`);
                the rows written are the same.
            changed: the only files that may have changed since the last run (``--watch`` passes
                the files it saw events for): an indexed file outside it is kept without being
                read. ``None`` reads every file, or — in a git work tree (``[index] use_git``) —
                every file changed since the last indexed commit or not committed.

        The folders are walked every time, so added, removed and newly skipped files are found
        whatever ``changed`` says. Noise (stylesheets, site navigation, images, generated files:
        :mod:`._skip`) is skipped and counted. A file that cannot be read or loaded, whatever the
        reason, is reported in ``skipped`` and the run goes on with the others. Chunks stored twice
        (two writers at once, before the writer lock) are repaired first.

        Raises:
            InvalidRequest: a path does not exist, or lies outside ``[index] locator_base``.
            ProviderError: the collection's space could not be chosen (no embedder answered).
            CollectionBusy: another process is writing this collection.
        """
        started = time.perf_counter()
        if not paths:
            raise InvalidRequest("give at least one file or folder to index")
        async with self._writing():
            roots = [_absolute(p) for p in paths]
            found = await self._discover(paths)
            locators = await anyio.to_thread.run_sync(locator_map, self.settings.locator_base, roots)
            collection = await self._ensure_collection()
            await self._ensure_extras(collection)
            report = IndexReport(collection=self.name, space=collection.space.key)
            await self._repair(collection, report)
            sources = [item for item in found if isinstance(item, SourceFile)]
            report.skipped.extend(item for item in found if isinstance(item, SkippedFile))
            report.files_found = sum(
                1 for item in found if not (isinstance(item, SkippedFile) and is_folder(item.path))
            )
            report.files_total = len(sources)
            existing = await self._file_states(collection, project)
            records = await _read_records(collection)
            self._locators = locators
            preparer = self.preparer
            state = _RunState(embed=embed, executor=executor)
            seen: set[str] = set()
            trees: dict[str, GitTree] = {}
            trust: _Trust | None = None
            if changed is not None:
                trust = _Trust(frozenset(_absolute(c) for c in changed))
            elif self.settings.use_git:
                trust, trees = await anyio.to_thread.run_sync(
                    self._git_trust, roots, records, project, report, limiter=self._limiter
                )
            if trust is not None:
                sources = self._keep_unread(sources, trust, existing, preparer, report, seen)
            self._notify(progress, report)
            await self._prepare_and_write(
                sources, existing, collection, project, report, state, seen, progress
            )
            maps = [m for m in (locators, *_old_maps(records, project, roots)) if m is not None]
            await self._delete_gone(collection, project, roots, existing, seen, report, maps)
            self._notify(progress, report)
            if embed:
                await self._embed_all_pending(collection, report, state, progress)
            await self._finish(collection, report)
            await self._write_records(collection, records, project, roots, locators, trees, state, trust)
            report.elapsed_s = time.perf_counter() - started
            self._notify(progress, report)
            return report

    def _git_trust(
        self, roots: list[str], records: dict[str, Any], project: str, report: IndexReport
    ) -> tuple[_Trust | None, dict[str, GitTree]]:
        """What git says may have changed under ``roots`` since their last indexed commit (blocking).

        ``None`` (read every file) unless every root is in a work tree with a recorded commit of
        this chunker that git still knows; the trees are returned either way, to record their commit.
        """
        trees: dict[str, GitTree] = {}
        plans: list[_GitPlan] = []
        complete = True
        for root in roots:
            tree = git_tree(root if os.path.isdir(root) else os.path.dirname(root))
            if tree is None:
                complete = False
                continue
            trees[root] = tree
            inside = os.path.relpath(os.path.realpath(root), tree.top)
            record = records.get(_record_key(project, root), {}).get("git") or {}
            since = record.get("commit") if record.get("top") == tree.top else None
            if inside.startswith("..") or since is None or record.get("signature") != self.chunker.signature:
                complete = False
                report.git.append(f"{tree.top}: at commit {tree.commit[:12]}; every file compared by digest")
                continue
            changed = changed_between(tree.top, str(since), tree.commit)
            if changed is None:
                complete = False
                report.git.append(
                    f"{tree.top}: at commit {tree.commit[:12]}; the last indexed commit {str(since)[:12]} "
                    "is unknown to git now, every file compared by digest"
                )
                continue
            then = {
                name
                for key, value in records.items()
                if key.startswith(project + "\x1f") and (value.get("git") or {}).get("top") == tree.top
                for name in (value.get("git") or {}).get("dirty", ())
            }
            plans.append(_GitPlan(root, tree, changed | tree.dirty | then))
            report.git.append(
                f"{tree.top}: at commit {tree.commit[:12]}, since {str(since)[:12]}: "
                f"{len(changed)} file(s) changed in commits, {len(tree.dirty)} not committed"
            )
        return (_Trust(None, tuple(plans)) if complete and plans else None), trees

    def _keep_unread(
        self,
        sources: list[SourceFile],
        trust: _Trust,
        existing: dict[str, str],
        preparer: FilePreparer,
        report: IndexReport,
        seen: set[str],
    ) -> list[SourceFile]:
        """``sources`` less the indexed ones ``trust`` vouches for: counted unchanged, never read."""
        kept: list[SourceFile] = []
        for source in sources:
            path = preparer.stored_path(source)
            if existing.get(path) and trust.unchanged(source):
                seen.add(path)
                report.files_done += 1
                report.files_unchanged += 1
                report.files_not_read += 1
            else:
                kept.append(source)
        return kept

    async def _write_records(
        self,
        collection: Collection,
        records: dict[str, Any],
        project: str,
        roots: list[str],
        locators: LocatorMap | None,
        trees: dict[str, GitTree],
        state: _RunState,
        trust: _Trust | None,
    ) -> None:
        """Record, per indexed root, its locator map and git commit with the collection."""
        updated = dict(records)
        for root in roots:
            record: dict[str, Any] = {}
            if locators is not None:
                record["locators"] = locators.to_json()
            tree = trees.get(root)
            if tree is None and trust is not None and trust.changed is not None:
                # --watch read only what it saw change: the last commit recorded still holds.
                previous = records.get(_record_key(project, root), {}).get("git")
                if previous:
                    record["git"] = previous
            elif tree is not None:
                retry = await anyio.to_thread.run_sync(_names_in_tree, state.retry, root, tree.top)
                record["git"] = {
                    "top": tree.top,
                    "commit": tree.commit,
                    "dirty": sorted(tree.dirty | retry),
                    "signature": self.chunker.signature,
                }
            key = _record_key(project, root)
            if record:
                updated[key] = record
            else:
                updated.pop(key, None)
        if updated != records:
            await collection.table.update_field_metadata(
                {"path": "path", "metadata": {RECORDS_KEY: json.dumps(updated, sort_keys=True)}}
            )

    async def _prepare_and_write(
        self,
        sources: list[SourceFile],
        existing: dict[str, str],
        collection: Collection,
        project: str,
        report: IndexReport,
        state: _RunState,
        seen: set[str],
        progress: ProgressCallback | None,
    ) -> None:
        """Prepare ``sources`` while the prepared groups are embedded and written; the first failure raised.

        Reading and chunking (a worker thread, or ``state.executor``) run ahead of embedding and
        writing, so the model is never idle waiting for the next files. A failure on either side
        stops both and is re-raised unwrapped once they have stopped.
        """
        send, receive = anyio.create_memory_object_stream[list[_Prepared]](PREPARE_AHEAD)

        errors: list[Exception] = []
        async with anyio.create_task_group() as group_runner:
            group_runner.start_soon(self._produce, send, sources, existing, project, state.executor, errors)
            try:
                await self._consume(receive, collection, project, report, state, seen, progress)
            except Exception as exc:  # noqa: BLE001 - re-raised unwrapped after the task group
                errors.append(exc)
                group_runner.cancel_scope.cancel()
        if errors:
            raise errors[0]

    async def _produce(
        self,
        send: MemoryObjectSendStream[list[_Prepared]],
        sources: list[SourceFile],
        existing: dict[str, str],
        project: str,
        executor: IndexExecutor | None,
        errors: list[Exception],
    ) -> None:
        """Send ``sources`` prepared, group by group, then close ``send``; a failure goes to ``errors``."""
        async with send:
            try:
                if executor is not None:
                    prepared_groups = executor.prepared(self.preparer, sources, existing, project)
                    async for prepared in prepared_groups:
                        await send.send(prepared)
                    return
                for start in range(0, len(sources), PREPARE_GROUP):
                    group = sources[start : start + PREPARE_GROUP]
                    prepared = await anyio.to_thread.run_sync(
                        self._prepare_group, group, existing, project, limiter=self._limiter
                    )
                    await send.send(prepared)
            except Exception as exc:  # noqa: BLE001 - re-raised unwrapped after the task group
                errors.append(exc)

    async def _delete_gone(
        self,
        collection: Collection,
        project: str,
        roots: list[str],
        existing: dict[str, str],
        seen: set[str],
        report: IndexReport,
        maps: Sequence[LocatorMap] = (),
    ) -> None:
        """Delete, from every table, the chunks of the files under ``roots`` indexed before but not seen now.

        A stored path is under a root as it is (absolute) or once mapped back by one of ``maps``
        (the run's ``locator_base`` and the ones these roots were indexed with before).
        """

        def under_roots(path: str) -> bool:
            if any(_under(path, root) for root in roots):
                return True
            for locators in maps:
                local = locators.local(path)
                if local is not None and any(_under(local, root) for root in roots):
                    return True
            return False

        gone = sorted(path for path in existing if path not in seen and under_roots(path))
        if gone:
            for table in (collection, *self._extras.values()):
                await table.delete_files(project, gone)
            report.files_deleted = len(gone)

    async def embed_pending(
        self, *, progress: ProgressCallback | None = None, executor: IndexExecutor | None = None
    ) -> IndexReport:
        """Embed the chunks waiting for a vector (``simone index --embed-pending``), here or on ``executor``."""
        started = time.perf_counter()
        async with self._writing():
            collection = await self._existing_collection()
            report = IndexReport(collection=self.name, space=collection.space.key)
            await self._repair(collection, report)
            state = _RunState(embed=True, executor=executor)
            await self._embed_all_pending(collection, report, state, progress)
            await self._finish(collection, report)
            report.elapsed_s = time.perf_counter() - started
            self._notify(progress, report)
            return report

    async def _existing_collection(self) -> Collection:
        """The collection with its extra spaces; ProviderNotConfigured before the first index run."""
        collection = await self._open_collection()
        if collection is None:
            raise ProviderNotConfigured(
                f"collection {self.name!r} does not exist yet; run 'simone index PATH' first",
                provider="document-index",
            )
        await self._ensure_extras(collection)
        return collection

    async def rebuild_ann(self) -> list[str]:
        """Build every table's vector index afresh (``simone index --rebuild-ann``); what was done.

        For a collection above ``[index] ann_rebuild_rows`` whose small updates were folded into the
        existing index (slower searches), or after changing ``ann_index``. Tables with fewer than 256
        vectors get none (exact search). Raises ProviderNotConfigured before the first index run.
        """
        async with self._writing():
            collection = await self._existing_collection()
            done: list[str] = []
            for table in (collection, *self._extras.values()):
                embedded = await table.count() - await table.pending_count()
                if embedded < 256:
                    done.append(f"{table.name}: {embedded} vectors, exact search (no vector index)")
                    continue
                started = time.perf_counter()
                await table.build_ann(self.settings.ann_index, embedded)
                done.append(
                    f"{table.name}: built the {self.settings.ann_index} vector index over {embedded:,} "
                    f"vectors in {time.perf_counter() - started:.1f} s"
                )
            return done

    async def info(self) -> CollectionInfo | None:
        """The collection's counts and indexes (``None`` before the first index run)."""
        collection = await self._open_collection()
        return await collection.info() if collection is not None else None

    # -- internals --------------------------------------------------------------------------------

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """Hold this process's turn, then the collection's writer lock (one writer per collection).

        A local folder is locked by ``flock`` (:mod:`._lock`), an S3 index by a lock object with a
        lease in the bucket (:mod:`._object_lock`). In a local folder, what LanceDB wrote (its files
        follow the umask) is made owner-only afterwards, written or not (:func:`tighten_tree`).
        """
        async with self._write_lock:
            if self.store.location.remote:
                lock = ObjectStoreLock(self.store.location, self.name, lease_s=self.settings.lock_lease_s)
                async with lock.hold():
                    yield
            else:
                with WriterLock(self.store.uri, self.name):
                    try:
                        yield
                    finally:
                        with anyio.CancelScope(shield=True):
                            await anyio.to_thread.run_sync(tighten_tree, self.store.uri)

    async def _repair(self, collection: Collection, report: IndexReport) -> None:
        """Remove the chunks stored twice in any table of the collection; noted in ``maintenance``."""
        for table in (collection, *self._extras.values()):
            removed = await repair_duplicates(table)
            if removed:
                report.maintenance.append(
                    f"{table.name}: removed {removed:,} duplicate chunk(s) (written by two indexers at once)"
                )

    async def _consume(
        self,
        receive: MemoryObjectReceiveStream[list[_Prepared]],
        collection: Collection,
        project: str,
        report: IndexReport,
        state: _RunState,
        seen: set[str],
        progress: ProgressCallback | None,
    ) -> None:
        """Embed and write prepared files batch by batch, in the order they were found."""
        batch: list[_Prepared] = []
        batch_chunks = 0
        preparer = self.preparer
        async with receive:
            async for prepared in receive:
                for item in prepared:
                    report.files_done += 1
                    path = preparer.stored_path(item.source)  # a Ray skip carries the local path
                    if item.skipped is not None:
                        report.skipped.append(item.skipped)
                        if not item.skipped.stale:
                            seen.add(path)
                            state.retry.add(item.source.path.as_posix())
                        continue
                    seen.add(path)
                    if item.unchanged:
                        report.files_unchanged += 1
                        continue
                    batch.append(item)
                    batch_chunks += len(item.chunks or ())
                if batch_chunks >= self.settings.write_batch_chunks:
                    await self._write_batch(collection, project, batch, report, state, progress)
                    batch, batch_chunks = [], 0
                self._notify(progress, report)
        if batch:
            await self._write_batch(collection, project, batch, report, state, progress)

    async def _file_states(self, collection: Collection, project: str) -> dict[str, str]:
        """``path → digest`` of the files every table agrees on.

        A file some table lacks or holds at another digest (a run killed between tables) gets an
        empty digest, so it is indexed again everywhere.
        """
        states = await collection.file_states(project)
        for extra in self._extras.values():
            other = await extra.file_states(project)
            for path in other.keys() - states.keys():
                states[path] = ""
            for path, digest in states.items():
                if other.get(path) != digest:
                    states[path] = ""
        return states

    async def _embed_all_pending(
        self, collection: Collection, report: IndexReport, state: _RunState, progress: ProgressCallback | None
    ) -> None:
        await self._embed_pending(collection, report, state, progress)
        for key, extra in self._extras.items():
            tally = report.extra_spaces.setdefault(key, _extra_tally())
            await self._embed_pending(extra, report, state, progress, tally=tally)

    async def _finish(self, collection: Collection, report: IndexReport) -> None:
        """Index maintenance when something changed, then the pending counts."""
        changed = report.chunks or report.files_deleted or report.pending_filled or bool(report.maintenance)
        extra_filled = any(t["pending_filled"] for t in report.extra_spaces.values())
        if changed or extra_filled:
            report.maintenance += await self._maintain(collection)
            for extra in self._extras.values():
                report.maintenance += [
                    f"{extra.space.provider}: {step}" for step in await self._maintain(extra, full_text=False)
                ]
        report.pending_left = await collection.pending_count()
        for key, extra in self._extras.items():
            report.extra_spaces.setdefault(key, _extra_tally())["pending_left"] = await extra.pending_count()

    @property
    def skip_rules(self) -> SkipRules:
        """The noise rules of ``[index] skip`` / ``include`` over the defaults (:mod:`._skip`)."""
        return SkipRules.of(self.settings.skip, self.settings.include)

    async def _discover(self, paths: Sequence[str | Path]) -> list[SourceFile | SkippedFile]:
        rules = self.skip_rules

        def run() -> list[SourceFile | SkippedFile]:
            named = {_absolute(p) for p in paths}
            found: list[SourceFile | SkippedFile] = []
            for item in discover(
                paths,
                excludes=self.settings.exclude,
                max_file_bytes=self.settings.max_file_bytes,
                use_gitignore=self.settings.use_gitignore,
                prune=rules.folder_reason,
            ):
                if isinstance(item, SourceFile):
                    # A file named on the command line is indexed whatever the noise rules say.
                    reason = None if item.path.as_posix() in named else rules.reason(item.display)
                    found.append(item if reason is None else SkippedFile(item.display, reason))
                elif item.reason.startswith("unsupported file type"):
                    reason = rules.reason(item.path)
                    found.append(item if reason is None else SkippedFile(item.path, reason))
                else:
                    found.append(item)
            return found

        try:
            return await anyio.to_thread.run_sync(run, limiter=self._limiter)
        except FileNotFoundError as exc:
            raise InvalidRequest(f"{exc}; give existing files or folders to index") from exc

    @property
    def preparer(self) -> FilePreparer:
        """What reads, loads, chunks and analyses one file (picklable: it also runs on Ray workers)."""
        return FilePreparer(self.settings, self.chunker, self.analyzer, self._locators)

    def _prepare_group(
        self, group: Sequence[SourceFile], existing: dict[str, str], project: str
    ) -> list[_Prepared]:
        return self.preparer.prepare_group(group, existing, project)

    def _prepare(self, source: SourceFile, existing: dict[str, str], project: str) -> _Prepared:
        return self.preparer.prepare(source, existing, project)

    async def _vectors(
        self,
        collection: Collection,
        texts: list[str],
        digests: list[str],
        report: IndexReport,
        state: _RunState,
        tally: dict[str, int] | None = None,
        *,
        sizes: Sequence[int] | None = None,
        progress: ProgressCallback | None = None,
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Vectors for ``digests`` from the table, the cache, then the chain; missing ones stay out.

        Counts go to the report (own space) or to ``tally`` (an extra space). ``sizes`` are the
        texts' token counts (the order of the chain calls; character counts without them);
        ``progress`` is told after every chain call.
        """
        space = collection.space
        counts: _Counts = tally if tally is not None else _ReportCounts(report)
        found = await collection.vectors_for(digests)
        counts["reused"] += sum(1 for d in digests if d in found)
        wanted = {d: t for d, t in zip(digests, texts, strict=True) if d not in found}
        if not wanted or not state.embed or space.key in state.errors:
            return found
        executor = state.executor
        step = max(1, min(self.chain_batch, EMBED_STEP) if executor is None else executor.batch_texts)
        size = dict(zip(digests, sizes, strict=True)) if sizes is not None else {}
        keys = sorted(wanted, key=lambda digest: size.get(digest, len(wanted[digest])))  # see EMBED_STEP

        async def chain_embed(batch: list[str]) -> npt.NDArray[np.float32]:
            if executor is not None:
                return await executor.embed(batch, space)
            return await self.chain.embed(batch, space=space, kind="document")

        async def embed_part(part: list[str]) -> None:
            if space.key in state.errors:
                return
            part_texts = [wanted[k] for k in part]
            try:
                if self.cache is not None:
                    result = await self.cache.embed(part_texts, space=space, digests=part, embed=chain_embed)
                    vectors, hits = result.vectors, result.hits
                else:
                    vectors = await chain_embed(part_texts)
                    hits = 0
                collection.check_vectors(vectors, len(part))
            except ProviderError as exc:
                if space.key not in state.errors:
                    state.errors[space.key] = exc
                    report.failures.append(
                        f"embedding with space {space.key} failed ({exc.kind}): {exc.message}; "
                        "the remaining chunks are stored as pending and are found by lexical search "
                        "until 'simone index --embed-pending' (or the next run) embeds them"
                    )
                return
            counts["cached"] += hits
            counts["embedded"] += len(part) - hits
            found.update(zip(part, vectors, strict=True))
            self._notify(progress, report)

        parts = [keys[start : start + step] for start in range(0, len(keys), step)]
        if executor is None or executor.concurrency <= 1:
            for part in parts:
                await embed_part(part)
        else:
            # Calls in flight at once (each a separate worker's batch); results land by digest.
            limiter = anyio.CapacityLimiter(executor.concurrency)

            async def limited(part: list[str]) -> None:
                async with limiter:
                    await embed_part(part)

            async with anyio.create_task_group() as tasks:
                for part in parts:
                    tasks.start_soon(limited, part)
        return found

    @property
    def chain_batch(self) -> int:
        """Texts per chain call at most: a whole write batch (256–1,024), shortest texts first.

        Calls are cut further to :data:`EMBED_STEP` texts (sorted by token count, so the padding
        is the same) for the progress to advance.

        The embedder pads each of its batches to the longest text in it, so the larger the call
        the less padding: SciFact's 1,143 chunks (22–252 tokens) cost 206,953 padded tokens in
        calls of 256, 198,825 in calls of 512, 191,401 in one call, for 187,587 real tokens.
        """
        return min(max(self.settings.write_batch_chunks, 256), 1024)

    async def _write_batch(
        self,
        collection: Collection,
        project: str,
        batch: list[_Prepared],
        report: IndexReport,
        state: _RunState,
        progress: ProgressCallback | None = None,
    ) -> None:
        chunks = [chunk for item in batch for chunk in item.chunks or ()]
        terms = [t for item in batch for t in item.terms or ()]
        texts = [c.embed_text for c in chunks]
        digests = [c.digest for c in chunks]
        sizes = [c.tokens for c in chunks]
        vectors = await self._vectors(
            collection, texts, digests, report, state, sizes=sizes, progress=progress
        )
        stamp = now()
        rows = [
            _row(chunk, term, vectors.get(chunk.digest), stamp)
            for chunk, term in zip(chunks, terms, strict=True)
        ]
        paths = [item.path for item in batch]
        await collection.replace_files(project, paths, collection.to_arrow(rows))
        for key, extra in self._extras.items():
            tally = report.extra_spaces.setdefault(key, _extra_tally())
            extra_vectors = await self._vectors(
                extra, texts, digests, report, state, tally, sizes=sizes, progress=progress
            )
            for row, chunk in zip(rows, chunks, strict=True):
                row["vector"] = extra_vectors.get(chunk.digest)
            await extra.replace_files(project, paths, extra.to_arrow(rows))
            tally["pending"] += sum(1 for row in rows if row["vector"] is None)
        report.files_indexed += len(batch)
        report.read_in_part.extend(
            SkippedFile(item.path, note) for item in batch for note in item.notes if _LEFT_OUT.search(note)
        )
        report.chunks += len(chunks)
        report.pending += sum(1 for chunk in chunks if chunk.digest not in vectors)
        self._notify(progress, report)

    async def _embed_pending(
        self,
        collection: Collection,
        report: IndexReport,
        state: _RunState,
        progress: ProgressCallback | None,
        *,
        tally: dict[str, int] | None = None,
    ) -> None:
        total = await collection.pending_count()
        rounds = total // self.settings.write_batch_chunks + 2
        for _ in range(rounds):
            if collection.space.key in state.errors:
                return
            rows = await collection.pending_rows(self.settings.write_batch_chunks)
            if rows.num_rows == 0:
                return
            contexts = rows.column("context").to_pylist()
            texts = rows.column("text").to_pylist()
            digests = rows.column("digest").to_pylist()
            embed_texts = [f"{c}\n{t}" if c else t for c, t in zip(contexts, texts, strict=True)]
            sizes = rows.column("tokens").to_pylist()
            vectors = await self._vectors(
                collection, embed_texts, digests, report, state, tally, sizes=sizes, progress=progress
            )
            keep = [i for i, d in enumerate(digests) if d in vectors]
            if not keep:
                return
            subset = rows.take(keep)
            matrix = np.stack([vectors[digests[i]] for i in keep]).astype(np.float32)
            await collection.fill_vectors(subset, matrix)
            if tally is not None:
                tally["pending_filled"] += len(keep)
            else:
                report.pending_filled += len(keep)
            self._notify(progress, report)

    async def _maintain(self, collection: Collection, *, full_text: bool = True) -> list[str]:
        return await collection.maintain(
            ann_min_rows=self.settings.ann_min_rows,
            ann_kind=self.settings.ann_index,
            full_text=full_text,
            ann_rebuild_rows=self.settings.ann_rebuild_rows,
            ann_rebuild_share=self.settings.ann_rebuild_share,
        )

    @staticmethod
    def _notify(progress: ProgressCallback | None, report: IndexReport) -> None:
        if progress is not None:
            progress(report)


@dataclass(slots=True)
class _RunState:
    embed: bool
    executor: IndexExecutor | None = None
    errors: dict[str, ProviderError] = field(default_factory=dict)
    """The first embedding failure per space key: that space embeds nothing more this run."""
    retry: set[str] = field(default_factory=set)
    """Local paths skipped for a cause that may pass (unreadable): read again by the next run."""


@dataclass(frozen=True, slots=True)
class _GitPlan:
    root: str
    tree: GitTree
    changed: frozenset[str]
    """Paths relative to the work tree's top that may differ from what the index holds."""


@dataclass(frozen=True, slots=True)
class _Trust:
    """Which indexed files may be kept without reading them.

    The files ``--watch`` saw no event for (``changed``), or those git says did not change since
    the last indexed commit (``plans``).
    """

    changed: frozenset[str] | None = None
    plans: tuple[_GitPlan, ...] = ()

    def unchanged(self, source: SourceFile) -> bool:
        path = source.path.as_posix()
        if self.changed is not None:
            return path not in self.changed
        for plan in self.plans:
            if not _under(path, plan.root):
                continue
            real = os.path.realpath(path)
            relative = os.path.relpath(real, plan.tree.top)
            # Through a symlink, git tracks the link, not what it points to; an ignored file is not
            # tracked at all: such files are read.
            lexical = os.path.normpath(
                os.path.join(os.path.realpath(plan.root), os.path.relpath(path, plan.root))
            )
            return real == lexical and relative in plan.tree.tracked and relative not in plan.changed
        return False


def _names_in_tree(paths: set[str], root: str, top: str) -> set[str]:
    """``paths`` under ``root``, relative to the work tree's ``top`` (blocking: resolves links)."""
    return {os.path.relpath(os.path.realpath(path), top) for path in paths if _under(path, root)}


RECORDS_KEY = "simone.sources"
"""The ``path`` field's metadata key of the per-root records: locator map and last indexed commit."""


def _record_key(project: str, root: str) -> str:
    return f"{project}\x1f{root}"


async def _read_records(collection: Collection) -> dict[str, Any]:
    """The per-root records stored with the collection (``{}`` when none or unreadable)."""
    await collection.table.checkout_latest()
    schema: pa.Schema = await collection.table.schema()
    raw = (schema.field("path").metadata or {}).get(RECORDS_KEY.encode())
    if raw is None:
        return {}
    try:
        records = json.loads(raw)
    except ValueError:
        return {}
    return records if isinstance(records, dict) else {}


def _old_maps(records: dict[str, Any], project: str, roots: list[str]) -> list[LocatorMap | None]:
    """The locator maps ``roots`` were last indexed with (to find their files under the old locators)."""
    return [
        LocatorMap.from_json(records.get(_record_key(project, root), {}).get("locators")) for root in roots
    ]


def _extra_tally() -> dict[str, int]:
    return dict.fromkeys(("embedded", "cached", "reused", "pending", "pending_filled", "pending_left"), 0)


class _Counts(Protocol):
    def __getitem__(self, key: str) -> int: ...
    def __setitem__(self, key: str, value: int) -> None: ...


class _ReportCounts:
    """The own space's counters (``embedded``, ``cached``, ``reused``) on the report, by key."""

    def __init__(self, report: IndexReport) -> None:
        self._report = report

    def __getitem__(self, key: str) -> int:
        return int(getattr(self._report, key))

    def __setitem__(self, key: str, value: int) -> None:
        setattr(self._report, key, value)


def extra_table_name(collection: str, space: EmbeddingSpace) -> str:
    """The sibling table that holds ``collection``'s vectors of the extra ``space``."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{space.provider}-{space.model}-{space.dimension}")
    return f"{collection}--{slug}"


def _row(chunk: Chunk, terms: str, vector: npt.NDArray[np.float32] | None, stamp: float) -> dict[str, Any]:
    context = chunk.embed_text[: -len(chunk.text)].rstrip("\n") if chunk.embed_text != chunk.text else ""
    row = {
        "id": chunk.id,
        "project": chunk.project,
        "path": chunk.path,
        "title": chunk.title,
        "heading": " › ".join(chunk.heading),
        "kind": chunk.kind,
        "language": chunk.language,
        "text": chunk.text,
        "context": context,
        "terms": terms,
        "digest": chunk.digest,
        "file_digest": chunk.file_digest,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "ordinal": chunk.ordinal,
        "tokens": chunk.tokens,
        "indexed_at": stamp,
        "vector": vector,
    }
    row["card"] = card_of(row)
    return row


def _absolute(path: str | Path) -> str:
    # os.path.abspath only joins strings with the cwd (no I/O); Path.resolve would follow links.
    return Path(os.path.abspath(os.fspath(path))).as_posix()


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
