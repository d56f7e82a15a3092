"""Files only their owner reads: the data directory ``0700``, databases, caches and index files ``0600``.

Memory, the embedding cache, the research cache and the index hold every actor's text; a local user who
is not their owner must not read them, whatever the process's umask. The folders simone creates are made
``0700`` (the XDG base-directory rule for a missing data folder) and its SQLite files ``0600`` before
SQLite opens them (SQLite gives its ``-wal``/``-shm``/``-journal`` files the main file's mode). Files
another library writes (LanceDB's data and manifests, diskcache's value files) are tightened after each
write with :func:`tighten_tree`; until then they lie inside an owner-only folder.

An existing folder or file that simone owns and that others can read is tightened when it is opened
(older versions created them ``0755``/``0644``); a folder the user chose and that already existed is left
as it is, and ``simone doctor`` warns about it (:func:`exposure`).

On Windows (no POSIX modes) every function is a no-op.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OWNER_DIR = 0o700
"""The mode of a folder simone creates."""

OWNER_FILE = 0o600
"""The mode of a file simone creates."""

SQLITE_SIDECARS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database (tightened with it)."""

_POSIX = os.name == "posix"
_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def owner_only_dir(path: str | os.PathLike[str]) -> Path:
    """Make ``path`` a folder (with its missing parents), each folder created here mode ``0700``.

    Folders that already exist keep their mode (see :func:`exposure`).

    Raises:
        OSError: a folder cannot be created (read-only, a file in the way, no permission).
    """
    folder = Path(path)
    missing: list[Path] = []
    probe = folder
    while not probe.exists() and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for item in reversed(missing):
        try:
            item.mkdir(mode=OWNER_DIR)
        except FileExistsError:  # another process made it first: its mode is that process's choice
            if not item.is_dir():
                raise
            continue
        if _POSIX:
            os.chmod(item, OWNER_DIR)  # mkdir's mode is masked by the umask; this one is not
    return folder


def owner_only_file(path: str | os.PathLike[str], *, sidecars: tuple[str, ...] = ()) -> None:
    """Create ``path`` empty with mode ``0600`` if it is missing; tighten it (and ``sidecars``) if not.

    Its folder is created with :func:`owner_only_dir`. ``sidecars`` are suffixes of files kept beside
    it (:data:`SQLITE_SIDECARS` for a database): those that exist are tightened too. A file the process
    cannot open or does not own is left for the caller's own open to report.

    Raises:
        OSError: the folder cannot be created.
    """
    target = Path(path)
    owner_only_dir(target.parent)
    if not _POSIX:
        return
    try:
        fd = os.open(target, os.O_RDONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), OWNER_FILE)
    except OSError:  # unreadable, a directory, a read-only folder: the caller's open says what it is
        return
    try:
        _tighten_fd(fd)
    finally:
        os.close(fd)
    for suffix in sidecars:
        _tighten_path(target.with_name(target.name + suffix))


def tighten_tree(root: str | os.PathLike[str]) -> int:
    """Take group and other permissions off every folder and file under ``root`` (and ``root``).

    For what other libraries write inside simone's folders (LanceDB, diskcache). Files owned by another
    user, links and vanished entries are skipped. Returns how many modes were changed.
    """
    if not _POSIX:
        return 0
    base = Path(root)
    changed = int(_tighten_path(base))
    for folder, dirs, files in os.walk(base):
        for name in (*dirs, *files):
            changed += _tighten_path(Path(folder) / name)
    return changed


def exposure(path: str | os.PathLike[str]) -> str | None:
    """Why others can read ``path`` (``"mode 0755: others can list and read it"``), or ``None``.

    ``None`` also when it does not exist or on Windows.
    """
    if not _POSIX:
        return None
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if not mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH | stat.S_IWGRP | stat.S_IWOTH):
        return None
    who = " and ".join(
        name for name, bits in (("its group", stat.S_IRWXG), ("others", stat.S_IRWXO)) if mode & bits
    )
    return f"mode {mode:04o}: {who} can reach it"


def _tighten_fd(fd: int) -> bool:
    info = os.fstat(fd)
    mode = stat.S_IMODE(info.st_mode)
    if not mode & _OTHERS or info.st_uid != os.geteuid():
        return False
    os.fchmod(fd, mode & ~_OTHERS)
    return True


def _tighten_path(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode) or not mode & _OTHERS or info.st_uid != os.geteuid():
        return False
    try:
        os.chmod(path, mode & ~_OTHERS)
    except OSError:
        return False
    return True
