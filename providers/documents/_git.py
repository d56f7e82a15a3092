"""What git knows about a folder being indexed: its work tree, checked-out commit and changed files.

The ``git`` command runs in a subprocess (no library: every machine that has a work tree has
git, and its own answer is the reference); each call is bounded by :data:`GIT_TIMEOUT_S` and any
failure — git missing, not a work tree, a repository without commits, an unknown commit after a
rebase and ``gc`` — answers ``None``, so the index falls back to comparing content digests.
``GIT_OPTIONAL_LOCKS=0`` keeps ``git status`` from taking the repository's index lock (an editor
or a ``git commit`` running beside the indexer never meets a lock of ours).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 30.0
"""Seconds one git call may take (a status of a large tree on a slow disk takes a few)."""

_SAFE_CONFIG = (
    "-c",
    "core.quotepath=off",
    # a folder being indexed may hold a repository someone else wrote: its own config must not make
    # `git status` run a program (core.fsmonitor is a command git runs; so is a diff or filter driver)
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "diff.external=",
)
"""Options every git call runs with."""


@dataclass(frozen=True, slots=True)
class GitTree:
    """A work tree at its checked-out commit.

    Attributes:
        top: the work tree's top folder (absolute POSIX).
        commit: the full hash of ``HEAD``.
        dirty: paths (relative to ``top``) that differ from ``HEAD``: modified, staged, deleted,
            renamed (both names) or untracked and not ignored.
        tracked: paths (relative to ``top``) in git's index: only these can be vouched for (an
            ignored file changes without git noticing).
    """

    top: str
    commit: str
    dirty: frozenset[str]
    tracked: frozenset[str] = frozenset()


def _git(folder: str | Path, *args: str) -> str | None:
    """The output of ``git -C folder ARGS`` (surrogate-escaped), or ``None`` when it fails."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", "-C", os.fspath(folder), *_SAFE_CONFIG, *args],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape")


def work_tree_top(folder: str | Path) -> str | None:
    """The top of the git work tree that holds ``folder`` (absolute POSIX), or ``None``."""
    out = _git(folder, "rev-parse", "--show-toplevel")
    return Path(out.strip()).as_posix() if out and out.strip() else None


def git_tree(folder: str | Path) -> GitTree | None:
    """The work tree holding ``folder`` at its checked-out commit, or ``None`` (no git, no commit)."""
    top = work_tree_top(folder)
    if top is None:
        return None
    head = _git(top, "rev-parse", "--verify", "--quiet", "HEAD")
    if head is None or not head.strip():
        return None
    status = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    if status is None:
        return None
    dirty = frozenset(entry[3:] for entry in status.split("\0") if len(entry) > 3)
    listed = _git(top, "ls-files", "-z", "--cached")
    if listed is None:
        return None
    tracked = frozenset(name for name in listed.split("\0") if name)
    return GitTree(top=top, commit=head.strip(), dirty=dirty, tracked=tracked)


def changed_between(top: str, since: str, commit: str) -> frozenset[str] | None:
    """Paths (relative to ``top``) that differ between commits ``since`` and ``commit``, or ``None``.

    ``None`` when ``since`` is no longer known (rewritten history): everything must be compared.
    """
    if since == commit:
        return frozenset()
    out = _git(top, "diff", "--name-only", "-z", "--no-renames", since, commit, "--")
    if out is None:
        return None
    return frozenset(name for name in out.split("\0") if name)
