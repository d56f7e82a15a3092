"""The file token store: one JSON file, changed under an exclusive lock, read again when it changes.

Every change (a create, a revoke) holds an ``flock`` on ``<token file>.lock`` while it reads the file,
changes one record and replaces the file atomically (a scratch file beside it, ``fsync``, ``rename``,
then an ``fsync`` of the folder). Without that lock two writers would each load the file, change their
own copy and rename it into place, the later erasing the earlier: a revocation undone, a printed token
missing. The kernel drops an ``flock`` when its process ends, however it ends, so a crashed writer never
leaves it held.

A reader (a server's :meth:`~simone.agents.serve.TokenStore.verify`) calls ``stat`` on the file at every
call. The mode and owner are checked each time — a ``chmod`` that lets others read the file is refused
at the next call with :class:`~simone.agents.serve.UnsafeTokenFile`, though it leaves the
modification time alone — and the records are read again when the file's modification time, size or
inode changed, or while the file is younger than :data:`SETTLE_NS` (a change within one tick of the
filesystem's clock keeps the time; re-reading for that long never misses it).

Windows has no ``flock``: there, changes are still atomic, but two at once may lose one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from simone.agents.serve._tokens import TokenRecord, TokenStore, UnsafeTokenFile
from simone.runtime import ConfigError, ProviderUnavailable, owner_only_dir

LOCK_SUFFIX = ".lock"
"""The lock of token file ``F`` is ``F.lock``, beside it."""

SETTLE_NS = 2_000_000_000
"""A file changed less than this long before it was read is read again at the next call (2 s: the
coarsest common timestamp granularity, FAT's and some network filesystems')."""


class FileTokenStore(TokenStore):
    """The token file: create, list, revoke and verify tokens (see the module docstring).

    Args:
        path: the JSON file (created on the first :meth:`create`, mode ``0600``).
        uid: the user who must own it (default: this process's effective user).
        lock_timeout_s: how long a change waits for another process's lock before it gives up.
    """

    def __init__(self, path: Path | str, *, uid: int | None = None, lock_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.uid = uid if uid is not None else (os.geteuid() if hasattr(os, "geteuid") else None)
        self.lock_timeout_s = lock_timeout_s
        self._records: dict[str, TokenRecord] = {}
        self._stamp: tuple[int, int, int, int] | None = None
        self._read_ns = 0

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    @property
    def where(self) -> str:
        """The token file's path."""
        return str(self.path)

    # -- reading --------------------------------------------------------------------------------
    def _check(self, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"the token file {self.path} is not a regular file")
        if info.st_mode & 0o077:
            raise UnsafeTokenFile(
                f"the token file {self.path} may be read or changed by others "
                f"(mode {info.st_mode & 0o777:o}); run 'chmod 600 {self.path}'",
                path=self.path,
            )
        if self.uid is not None and info.st_uid != self.uid:
            raise UnsafeTokenFile(
                f"the token file {self.path} belongs to uid {info.st_uid}, not to uid {self.uid} that "
                f"runs simone (its owner could add tokens); run 'chown {self.uid} {self.path}', or "
                "manage tokens as the user that serves",
                path=self.path,
            )

    def _snapshot(self, *, fresh: bool) -> Mapping[str, TokenRecord]:
        if not fresh:
            try:
                info = os.stat(self.path)
            except FileNotFoundError:
                self._records, self._stamp = {}, None
                return self._records
            except OSError as exc:
                raise ConfigError(f"cannot read the token file {self.path}: {exc.strerror or exc}") from exc
            self._check(info)
            if _stamp(info) == self._stamp and info.st_mtime_ns < self._read_ns - SETTLE_NS:
                return self._records
        return self._read()

    def _read(self) -> dict[str, TokenRecord]:
        started = time.time_ns()
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            self._records, self._stamp = {}, None
            return self._records
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {self.path}: {exc.strerror or exc}") from exc
        with handle:
            info = os.fstat(handle.fileno())
            self._check(info)
            try:
                data = json.loads(handle.read().decode("utf-8"))
                records = {r["id"]: TokenRecord.from_json(r) for r in data.get("tokens", [])}
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ConfigError(f"the token file {self.path} is not valid: {exc}") from exc
        self._records, self._stamp, self._read_ns = records, _stamp(info), started
        return records

    # -- writing --------------------------------------------------------------------------------
    def _insert(self, record: TokenRecord) -> bool:
        with self._locked():
            records = dict(self._read())
            if record.grant.token_id in records:
                return False
            records[record.grant.token_id] = record
            self._save(records)
        return True

    def _revoke(self, token_id: str, moment: float) -> TokenRecord | None:
        with self._locked():
            records = dict(self._read())
            record = records.get(token_id)
            if record is None or record.revoked is not None:
                return record
            records[token_id] = record = dataclasses.replace(record, revoked=moment)
            self._save(records)
        return record

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the token file's lock, waiting at most ``lock_timeout_s`` for it."""
        try:
            import fcntl
        except ImportError:  # Windows: no flock (see the module docstring)
            yield
            return
        lock = self.path.with_name(self.path.name + LOCK_SUFFIX)
        try:
            owner_only_dir(self.path.parent)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise ConfigError(f"cannot open the token file's lock {lock}: {exc.strerror or exc}") from exc
        try:
            deadline = time.monotonic() + self.lock_timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise ProviderUnavailable(
                            f"the token file {self.path} stayed locked by another process for "
                            f"{self.lock_timeout_s:g} s ({lock}); try again",
                            provider="tokens",
                        ) from None
                    time.sleep(random.uniform(0.002, 0.01))
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _save(self, records: dict[str, TokenRecord]) -> None:
        body = json.dumps({"version": 1, "tokens": [r.to_json() for r in records.values()]}, indent=2)
        fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _sync_folder(self.path.parent)
        self._stamp = None


def _stamp(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_mtime_ns, info.st_size, info.st_ino, info.st_dev)


def _sync_folder(folder: Path) -> None:
    """``fsync`` the folder, so the rename survives a crash (not possible everywhere; best effort)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
