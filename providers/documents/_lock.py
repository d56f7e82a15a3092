"""One writer per collection: an OS advisory lock (``flock``) on a file beside the collection's table.

Two processes writing one collection at once both insert the chunks neither has seen yet, and
LanceDB commits both appends: the chunks are then stored twice. Every write of the document index
(indexing, ``--embed-pending``, ``--rebuild-ann``) therefore holds the collection's lock file
``<index folder>/<collection>.lock`` exclusively. The kernel drops an ``flock`` when its process
ends, however it ends (``kill -9`` included), so a crashed writer never leaves the lock held; the
pid written into the file only serves the message of the writer that was refused.

An index on S3 (``[index] uri = "s3://…"``) has no local file to lock: it is locked by a lock object
with a lease in the bucket instead (:mod:`._object_lock`). Windows has no ``flock``: there, a
deployment must keep to one writer itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from simone.runtime import ProviderUnavailable, owner_only_dir

LOCK_SUFFIX = ".lock"
"""The lock file of collection ``name`` is ``<index folder>/<name>.lock``."""


class CollectionBusy(ProviderUnavailable):
    """Another process is writing the collection (retryable: it is free once that process ends)."""


class WriterLock:
    """The exclusive writer lock of one collection, taken without waiting.

    Use it as a context manager; entering it raises :class:`CollectionBusy` when another process
    (or another open index in this process) holds it. ``uri`` is the store's folder; for an
    object-store URI the lock does nothing (:class:`~._object_lock.ObjectStoreLock` is used there).
    """

    def __init__(self, uri: str, collection: str) -> None:
        self.collection = collection
        self.path = None if "://" in uri else Path(uri) / f"{collection}{LOCK_SUFFIX}"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock now, or raise :class:`CollectionBusy` naming the holder's pid."""
        try:
            import fcntl
        except ImportError:  # Windows: no flock; one writer is then up to the user
            return
        if self.path is None or self._fd is not None:
            return
        owner_only_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise CollectionBusy(
                f"collection {self.collection!r} is being written by another process{holder}; "
                "only one writer per collection is allowed (two would store chunks twice). "
                "Wait for it to finish, then run again",
                provider="document-index",
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Let the lock go (closing the file drops the ``flock``)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""
