"""A folder being indexed may hold a repository someone else configured: git must not run its programs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from simone.providers.documents._git import git_tree


def test_a_repositorys_fsmonitor_command_is_never_run(tmp_path: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is not installed: the git-aware indexing tests need it (apt-get install git)")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.md").write_text("# A\n\ntext\n")

    def run(*args: str) -> None:
        subprocess.run([git, "-C", str(repo), *args], check=True, capture_output=True)

    run("init", "-q")
    run("add", "a.md")
    run("-c", "user.email=t@example.test", "-c", "user.name=t", "commit", "-qm", "first")
    marker = tmp_path / "ran"
    run("config", "core.fsmonitor", f"touch {marker}; false")  # what a hostile .git/config could say
    tree = git_tree(repo)
    assert tree is not None and tree.tracked == frozenset({"a.md"})
    assert not marker.exists()  # simone's git calls turned the repository's fsmonitor off
