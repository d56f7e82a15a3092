"""A data directory only its owner reads: what ``simone index`` and ``simone memory`` create, and doctor's warning."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from simone.agents.cli import main

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes only")


@pytest.fixture
def lenient_umask() -> Iterator[None]:
    """A umask that would leave every new file readable and writable by the group and readable by all."""
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_what_simone_creates_in_a_new_data_dir_only_its_owner_can_read(
    isolated_env: Path, lenient_umask: None, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = isolated_env / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Deploys\n\nDeploys happen on Tuesdays after the review.\n")
    data = isolated_env / "data"
    assert main(["--data-dir", str(data), "index", str(docs), "--json"]) == 0
    assert (
        main(["--data-dir", str(data), "memory", "add", "note", "Gateway timeout is 30 s", "--actor", "a"])
        == 0
    )
    capsys.readouterr()

    assert _mode(data) == 0o700
    for name in ("memory.sqlite3", "embedding-cache.sqlite3", "index"):
        assert (data / name).exists(), f"{name} was not created"
    exposed = [
        f"{path.relative_to(data)} {oct(_mode(path))}"
        for path in [data, *data.rglob("*")]
        if not path.is_symlink() and _mode(path) & 0o077
    ]
    assert exposed == [], f"readable or writable by others: {exposed}"

    assert main(["--data-dir", str(data), "doctor", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["exposed"] == []


def test_doctor_warns_about_a_data_dir_others_can_read_and_says_how_to_fix_it(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = isolated_env / "data"
    data.mkdir()
    data.chmod(0o755)  # made by hand, or by an older version
    main(["--data-dir", str(data), "doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    (entry,) = [e for e in report["exposed"] if e["path"] == str(data)]
    assert "0755" in entry["why"] and entry["fix"] == f"chmod -R go-rwx {data}"
    assert _mode(data) == 0o755, "doctor reports; it does not change a folder the user made"

    main(["--data-dir", str(data), "doctor"])
    out = capsys.readouterr().out
    assert "readable by other users" in out and "chmod -R go-rwx" in out
