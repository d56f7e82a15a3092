"""Owner-only folders and files whatever the umask (``simone.runtime._owner_only``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from simone.runtime import (
    SQLITE_SIDECARS,
    DiskcacheStore,
    exposure,
    owner_only_dir,
    owner_only_file,
    tighten_tree,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes only")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o000, 0o002, 0o022], ids=["umask000", "umask002", "umask022"])
def lenient_umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The test runs under a umask that would leave new files readable (or writable) by others."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_created_folders_are_0700_whatever_the_umask(tmp_path: Path, lenient_umask: int) -> None:
    target = owner_only_dir(tmp_path / "a" / "b" / "c")
    assert target.is_dir()
    for folder in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert _mode(folder) == 0o700, oct(_mode(folder))
    assert exposure(target) is None


def test_an_existing_folder_keeps_its_mode_and_is_reported(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    owner_only_dir(shared)
    assert _mode(shared) == 0o755
    why = exposure(shared)
    assert why is not None and "0755" in why and "others" in why


def test_created_files_are_0600_and_existing_ones_are_tightened_with_their_sidecars(
    tmp_path: Path, lenient_umask: int
) -> None:
    fresh = tmp_path / "data" / "memory.sqlite3"
    owner_only_file(fresh, sidecars=SQLITE_SIDECARS)
    assert fresh.is_file() and fresh.stat().st_size == 0
    assert _mode(fresh) == 0o600 and _mode(fresh.parent) == 0o700

    old = tmp_path / "old.sqlite3"
    old.write_bytes(b"kept")
    wal = tmp_path / "old.sqlite3-wal"
    wal.write_bytes(b"wal")
    for path in (old, wal):
        path.chmod(0o644)
    owner_only_file(old, sidecars=SQLITE_SIDECARS)
    assert old.read_bytes() == b"kept", "an existing file is never truncated"
    assert _mode(old) == 0o600 and _mode(wal) == 0o600
    assert not (tmp_path / "old.sqlite3-shm").exists(), "missing sidecars are not created"


def test_tighten_tree_takes_group_and_other_bits_off_everything_but_links(tmp_path: Path) -> None:
    root = tmp_path / "index"
    (root / "t.lance" / "data").mkdir(parents=True)
    data = root / "t.lance" / "data" / "x.lance"
    data.write_bytes(b"rows")
    for path in (root, root / "t.lance", root / "t.lance" / "data"):
        path.chmod(0o775)
    data.chmod(0o664)
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours to change")
    outside.chmod(0o644)
    (root / "link").symlink_to(outside)

    assert tighten_tree(root) == 4
    assert [_mode(p) for p in (root, root / "t.lance", root / "t.lance" / "data")] == [0o700] * 3
    assert _mode(data) == 0o600
    assert _mode(outside) == 0o644, "a link's target is left alone"
    assert tighten_tree(root) == 0, "a second pass changes nothing"


def test_the_diskcache_store_keeps_every_value_in_its_owner_only_file(
    tmp_path: Path, lenient_umask: int
) -> None:
    directory = tmp_path / "web-cache"
    big_page = "x" * 200_000  # above diskcache's own 32 KiB file threshold

    async def main() -> str | None:
        store = DiskcacheStore(directory)
        await store.open()
        try:
            await store.set("page", big_page, expire_s=None)
            return await store.get("page")
        finally:
            await store.close()

    assert anyio.run(main) == big_page
    files = [p for p in directory.rglob("*") if p.is_file()]
    assert {p.name for p in files} <= {"cache.db", *(f"cache.db{s}" for s in SQLITE_SIDECARS)}
    for path in [directory, *directory.rglob("*")]:
        assert not _mode(path) & 0o077, f"{path} is {oct(_mode(path))}"
