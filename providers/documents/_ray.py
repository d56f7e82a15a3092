"""Indexing on a Ray cluster: ``simone index PATH… --ray [ADDRESS|auto]`` (``pip install 'simone[ray]'``).

The driver (the process that runs ``simone index``) keeps everything that decides *which* rows are
written and *how*: it finds the files, reads each one's digest and skips the unchanged ones before
any work is shipped, looks vectors up in the table and in the persistent embedding cache, writes
every row with the same ``merge_insert`` as local indexing (so every store the index supports works,
the S3 URI included), stores rows pending when embedding fails, deletes the chunks of vanished
files and maintains the indexes. Two kinds of work go to the cluster:

* **reading and chunking** — a Ray Data pipeline of the changed files (``map_batches`` over
  :class:`~simone.providers.documents.FilePreparer`, order preserved, streamed back to the driver a
  block at a time, so memory stays bounded by the pipeline's back-pressure);
* **embedding** — ``workers`` Ray actors, each of which builds the embedding chain once (the same
  settings, so the same model files) and embeds the driver's batches in the collection's pinned
  space. At most ``2 × workers`` batches are in flight, the calls are the ones a local run makes
  (sorted by token count, :data:`~simone.providers.documents._index.EMBED_STEP` texts), so the
  vectors are those of a local run.

An actor whose process dies is restarted by Ray and its call retried (``max_restarts``,
``max_task_retries``); a file that fails to load is skipped with its reason; a Ray Data task that
fails past its retries turns its files into skips (their old chunks are kept) and the run goes on.

The files must be readable at the same path on every node (a shared file system, or a one-machine
cluster); ``simone`` must be installed on the nodes. ``ray`` is imported only when a run asks for it.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt
from simone.providers.documents._index import EMBED_STEP, PREPARE_GROUP, FilePreparer, _Prepared
from simone.providers.documents._loaders import SkippedFile, SourceFile, file_digest, read_bytes
from simone.runtime import (
    AsyncResource,
    ConfigError,
    EmbeddingChain,
    EmbeddingSettings,
    EmbeddingSpace,
    ProviderError,
    ProviderNotConfigured,
    ProviderUnavailable,
)

RAY_EXTRA = "pip install 'simone[ray]'"
"""How to install what ``--ray`` needs."""

IN_FLIGHT_PER_WORKER = 2
"""Embedding calls queued per worker: one running, one waiting, so no worker idles between calls."""

READY_TIMEOUT_S = 600.0
"""How long the workers may take to start and load the models (a worker that cannot be placed never does)."""

ACTOR_RESTARTS = 3
"""How often Ray restarts an embedding worker whose process died (and retries its calls)."""

ChainFactory = Callable[[], EmbeddingChain]
"""Builds the embedding chain on a worker (picklable: it is shipped to the cluster)."""


def import_ray() -> ModuleType:
    """``ray`` with Ray Data, or :class:`ProviderNotConfigured` naming the extra to install."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise ProviderNotConfigured(
            f"indexing with --ray needs Ray with Ray Data, which is not installed ({exc}); "
            f"install the extra: {RAY_EXTRA}",
            provider="document-index",
        ) from exc
    return ray


def default_chain_factory(embeddings: EmbeddingSettings, data_dir: str | Path | None) -> ChainFactory:
    """The chain ``[embeddings]`` describes, built on the worker (see :func:`build_chain`)."""
    from simone.providers.embeddings import build_chain

    return partial(build_chain, embeddings, data_dir=data_dir)


class EmbeddingWorker:
    """One Ray actor: the embedding chain, built once, answering the driver's batches.

    Failures come back as values (the :class:`ProviderError`), not as Ray task errors, so the driver
    records them as it records a local chain's (rows left pending), while a dead process is Ray's to
    restart.
    """

    def __init__(self, factory: ChainFactory) -> None:
        self._factory = factory
        self._stack: AsyncExitStack | None = None
        self._chain: EmbeddingChain | None = None

    async def _open(self) -> EmbeddingChain:
        if self._chain is None:
            stack = AsyncExitStack()
            self._chain = await stack.enter_async_context(self._factory())
            self._stack = stack
        return self._chain

    async def ready(self, spaces: Sequence[EmbeddingSpace] = ()) -> dict[str, Any]:
        """Build the chain (loads the models); the spaces it can embed and this worker's process id."""
        chain = await self._open()
        own = [embedder.space for embedder in chain.embedders]
        extra = list(chain.extra_spaces)
        return {"pid": os.getpid(), "spaces": [space.key for space in [*own, *extra]]}

    async def embed(self, texts: list[str], space: EmbeddingSpace) -> npt.NDArray[np.float32] | ProviderError:
        """Document vectors of ``texts`` in ``space``, or the chain's failure."""
        try:
            chain = await self._open()
            return await chain.embed(texts, space=space, kind="document")
        except ProviderError as exc:
            return exc

    async def close(self) -> None:
        """Close the chain (models, HTTP clients)."""
        if self._stack is not None:
            stack, self._stack, self._chain = self._stack, None, None
            await stack.aclose()


@dataclass(slots=True)
class RayStats:
    """What the executor shipped, for reports and benchmarks.

    Attributes:
        files_shipped: changed files sent to the cluster to be read and chunked.
        files_kept: files decided on the driver (unchanged, unreadable or too big).
        calls: embedding calls sent to the workers.
        texts: texts in those calls.
        worker_pids: the process id of each worker (as last reported).
        failed_tasks: Ray Data failures past the retries (their files were skipped).
    """

    files_shipped: int = 0
    files_kept: int = 0
    calls: int = 0
    texts: int = 0
    worker_pids: list[int] = field(default_factory=list)
    failed_tasks: list[str] = field(default_factory=list)


class RayExecutor(AsyncResource):
    """Prepares files with Ray Data and embeds chunks on Ray actors (an :class:`IndexExecutor`).

    ::

        async with DocumentIndex.open(settings) as index, RayExecutor.from_settings(settings) as ray_run:
            report = await index.index_paths(paths, executor=ray_run)

    Args:
        chain_factory: builds the embedding chain on each worker (:func:`default_chain_factory`).
        address: the cluster: ``None`` starts a local one (or uses the one this process already
            joined), ``"auto"`` joins the running one, else ``host:port`` or ``ray://host:port``.
        workers: embedding actors (each loads the models once).
        batch_texts: texts per embedding call. The default, :data:`EMBED_STEP` (128), makes exactly
            the calls of a local run, so the vectors are bit-for-bit the local ones; another size
            groups the texts otherwise, and the int8 model (activations quantised per call) then
            gives vectors that differ in the 2nd-3rd decimal (measured: 2.4e-2 at most).
        cpus_per_worker: Ray CPUs each embedding actor reserves.
        prepare_cpus: Ray CPUs each read-and-chunk task reserves (``0``: they share the cores).
        local_cpus: CPUs of a local cluster started here (``None``: Ray's default, all cores).
    """

    def __init__(
        self,
        chain_factory: ChainFactory,
        *,
        address: str | None = None,
        workers: int = 2,
        batch_texts: int = EMBED_STEP,
        cpus_per_worker: float = 1.0,
        prepare_cpus: float = 0.0,
        local_cpus: int | None = None,
    ) -> None:
        if workers < 1:
            raise ConfigError("--ray-workers must be at least 1")
        if batch_texts < 1:
            raise ConfigError("--ray-batch must be at least 1")
        if cpus_per_worker < 0 or prepare_cpus < 0:
            raise ConfigError("Ray CPU reservations must be >= 0")
        self.ray = import_ray()
        self._factory = chain_factory
        self._address = address
        self._workers_wanted = workers
        self._batch_texts = batch_texts
        self._cpus_per_worker = cpus_per_worker
        self._prepare_cpus = prepare_cpus
        self._local_cpus = local_cpus
        self._started_ray = False
        self._actors: list[Any] = []
        self._load: list[int] = []
        self.stats = RayStats()

    @classmethod
    def from_settings(cls, settings: Any, **options: Any) -> RayExecutor:
        """An executor whose workers build the chain ``settings.embeddings`` describes."""
        return cls(default_chain_factory(settings.embeddings, settings.data_dir), **options)

    # -- lifetime ----------------------------------------------------------------------------------

    async def open(self) -> None:
        """Join (or start) the cluster and start the embedding actors; ``async with`` calls it."""
        await anyio.to_thread.run_sync(self._start)

    async def close(self) -> None:
        """Stop the actors (and a cluster started here), even when the caller is being cancelled."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._stop)

    def _start(self) -> None:
        ray = self.ray
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "configure_logging": True,
                "logging_level": logging.ERROR,
            }
            if self._address is None:
                options["num_cpus"] = self._local_cpus
            try:
                ray.init(address=self._address, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self._address or "a new local cluster"
                raise ProviderUnavailable(
                    f"could not join the Ray cluster at {where}: {exc}; start it with 'ray start --head' "
                    "or pass --ray with no address for a local one",
                    provider="ray",
                ) from exc
            self._started_ray = True
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        context = self.ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.print_on_execution_start = False
        remote = ray.remote(EmbeddingWorker).options(
            num_cpus=self._cpus_per_worker,
            max_restarts=ACTOR_RESTARTS,
            max_task_retries=ACTOR_RESTARTS,
        )
        self._actors = [remote.remote(self._factory) for _ in range(self._workers_wanted)]
        self._load = [0] * len(self._actors)
        try:
            answers = ray.get([actor.ready.remote() for actor in self._actors], timeout=READY_TIMEOUT_S)
        except ray.exceptions.RayError as exc:
            cpus = ray.cluster_resources().get("CPU", 0)
            self._stop()
            raise ProviderUnavailable(
                f"the {self._workers_wanted} Ray embedding worker(s) did not start within {READY_TIMEOUT_S:g} s "
                f"({type(exc).__name__}: {str(exc)[:300]}); each reserves {self._cpus_per_worker:g} CPU and the "
                f"cluster has {cpus:g}: lower --ray-workers or add nodes",
                provider="ray",
            ) from exc
        self.stats.worker_pids = [int(answer["pid"]) for answer in answers]

    def _stop(self) -> None:
        ray = self.ray
        for actor in self._actors:
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - the actor is going away either way
                pass
            ray.kill(actor)
        self._actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    @property
    def workers(self) -> list[Any]:
        """The embedding actors' handles (e.g. to watch or kill one)."""
        return list(self._actors)

    @property
    def concurrency(self) -> int:
        """Embedding calls in flight at once: :data:`IN_FLIGHT_PER_WORKER` per worker."""
        return max(1, len(self._actors)) * IN_FLIGHT_PER_WORKER

    @property
    def batch_texts(self) -> int:
        """Texts per embedding call (the index cuts its sorted texts into calls of this size)."""
        return self._batch_texts

    # -- embedding ---------------------------------------------------------------------------------

    async def embed(self, texts: list[str], space: EmbeddingSpace) -> npt.NDArray[np.float32]:
        """``texts`` embedded in ``space`` by the least busy worker, cut into :attr:`batch_texts` calls."""
        if not self._actors:
            raise ProviderUnavailable("the Ray executor is not started (use 'async with')", provider="ray")
        parts: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(texts), self._batch_texts):
            parts.append(await self._call(texts[start : start + self._batch_texts], space))
        return np.concatenate(parts) if parts else np.empty((0, space.dimension), dtype=np.float32)

    async def _call(self, texts: list[str], space: EmbeddingSpace) -> npt.NDArray[np.float32]:
        slot = min(range(len(self._actors)), key=self._load.__getitem__)
        self._load[slot] += 1
        self.stats.calls += 1
        self.stats.texts += len(texts)
        try:
            ref = self._actors[slot].embed.remote(texts, space)
            answer = await anyio.to_thread.run_sync(self.ray.get, ref, abandon_on_cancel=True)
        except self.ray.exceptions.RayError as exc:
            raise ProviderUnavailable(
                f"a Ray embedding worker failed past its {ACTOR_RESTARTS} restarts: {exc}", provider="ray"
            ) from exc
        finally:
            self._load[slot] -= 1
        if isinstance(answer, ProviderError):
            raise answer
        vectors: npt.NDArray[np.float32] = np.asarray(answer, dtype=np.float32)
        return vectors

    # -- reading and chunking ----------------------------------------------------------------------

    async def prepared(
        self, preparer: FilePreparer, sources: Sequence[SourceFile], existing: dict[str, str], project: str
    ) -> AsyncIterator[list[_Prepared]]:
        """Unchanged and unreadable files decided here; the others read and chunked on the cluster.

        The groups handed back are the local run's: :data:`PREPARE_GROUP` consecutive files of
        ``sources`` each, in order, whatever the blocks the cluster returns. The index cuts its
        write batches at group ends, and the batches decide which texts are embedded together (the
        int8 model's activations are quantised per call), so the same groups give the same vectors.
        """
        decided, shipped = await anyio.to_thread.run_sync(self._triage, preparer, sources, existing)
        self.stats.files_kept += len(decided)
        self.stats.files_shipped += len(shipped)
        ready: dict[int, _Prepared] = dict(decided)
        position = {id(source): number for number, source in enumerate(sources)}
        windows = [
            range(start, min(start + PREPARE_GROUP, len(sources)))
            for start in range(0, len(sources), PREPARE_GROUP)
        ]
        async for number, item in self._shipped_results(preparer, shipped, existing, project):
            ready[position[id(shipped[number])]] = item
            while windows and all(i in ready for i in windows[0]):
                yield [ready.pop(i) for i in windows.pop(0)]
        while windows:  # only the driver's own decisions remain
            yield [ready.pop(i) for i in windows.pop(0)]

    async def _shipped_results(
        self, preparer: FilePreparer, shipped: list[SourceFile], existing: dict[str, str], project: str
    ) -> AsyncIterator[tuple[int, _Prepared]]:
        """``(index in shipped, result)`` for every shipped file, as the cluster returns them.

        A Ray Data failure past its retries (or a block that never comes back) turns the files not
        returned into skips that keep their old chunks: never into vanished files.
        """
        if not shipped:
            return
        stored = [preparer.stored_path(source) for source in shipped]
        known = {path: existing[path] for path in stored if path in existing}
        iterator = self._pipeline(preparer, shipped, known, project)
        returned: set[int] = set()
        reason = "its Ray task returned nothing"
        while True:
            try:
                batch = await anyio.to_thread.run_sync(next, iterator, None)
            except Exception as exc:  # noqa: BLE001 - a failed task must not end the run: its files are skipped
                reason = f"its Ray task failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                self.stats.failed_tasks.append(reason)
                break
            if batch is None:
                break
            for number, blob in zip(batch["i"], batch["prepared"], strict=True):
                returned.add(int(number))
                yield int(number), pickle.loads(blob)
        for number, source in enumerate(shipped):
            if number not in returned:
                skipped = SkippedFile(source.display, reason, False)
                yield number, _Prepared(source, stored[number], skipped=skipped)

    @staticmethod
    def _triage(
        preparer: FilePreparer, sources: Sequence[SourceFile], existing: dict[str, str]
    ) -> tuple[dict[int, _Prepared], list[SourceFile]]:
        """Files decided on the driver (by position: unchanged, unreadable) and the ones to ship.

        ``existing`` is keyed by the stored path (:meth:`FilePreparer.stored_path`: the
        ``locator_base`` form when one is set), as a local run looks files up.
        """
        decided: dict[int, _Prepared] = {}
        shipped: list[SourceFile] = []
        for number, source in enumerate(sources):
            path = preparer.stored_path(source)
            if path not in existing:
                shipped.append(source)
                continue
            try:
                data = read_bytes(source, preparer.settings.max_file_bytes)
            except Exception as exc:  # noqa: BLE001 - as FilePreparer.prepare_safely: one bad file is a skip
                reason = f"could not be read: {type(exc).__name__}: {exc}"
                decided[number] = _Prepared(source, path, skipped=SkippedFile(source.display, reason, False))
                continue
            if isinstance(data, SkippedFile):
                decided[number] = _Prepared(source, path, skipped=data)
            elif existing[path] == preparer.chunker.state(file_digest(data)):
                decided[number] = _Prepared(source, path, unchanged=True)
            else:
                shipped.append(source)
        return decided, shipped

    def _pipeline(
        self, preparer: FilePreparer, shipped: list[SourceFile], existing: dict[str, str], project: str
    ) -> Any:
        """The Ray Data pipeline over the shipped files: an iterator of blocks (``i``, ``prepared``)."""
        ray = self.ray
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        sources_ref = ray.put(shipped)
        preparer_ref = ray.put(preparer)

        def prepare(batch: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
            sources: list[SourceFile] = ray.get(sources_ref)
            worker_preparer: FilePreparer = ray.get(preparer_ref)
            indices = [int(i) for i in batch["i"]]
            blobs = [
                pickle.dumps(worker_preparer.prepare_safely(sources[i], existing, project)) for i in indices
            ]
            out = np.empty(len(blobs), dtype=object)
            out[:] = blobs
            return {"i": np.asarray(indices, dtype=np.int64), "prepared": out}

        # from_items puts the (small) index column in the object store from here: no read task that
        # would wait for a CPU the embedding actors hold.
        blocks = max(1, -(-len(shipped) // PREPARE_GROUP))
        dataset = ray.data.from_items([{"i": i} for i in range(len(shipped))], override_num_blocks=blocks)
        dataset = dataset.map_batches(
            prepare,
            batch_size=PREPARE_GROUP,
            batch_format="numpy",
            num_cpus=self._prepare_cpus,
            compute=ray.data.TaskPoolStrategy(size=max(1, min(self._workers_wanted, blocks))),
        )
        return iter(dataset.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=1))
