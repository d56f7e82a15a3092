"""Locators a team can open: a chunk's path as a repository URL or relative to a root, not this machine's.

By default a chunk's path is the file's absolute path on the indexing machine
(``/home/ana/docs/x.md#L30-L41``): right for one person, useless — and revealing — to the other hosts
of a team that search the same index. ``[index] locator_base`` sets, at index time, what is stored
instead (the path column, so every locator and ``path`` metadata shows it):

* a URL, ``"https://github.com/acme/handbook/blob/main"``: the URL joined with the file's path
  relative to the top of its git work tree (or to the folder given to index, outside git); GitHub
  and GitLab read ``#L30-L41`` as a line range;
* a root folder, ``"~/work/handbook"``: the path relative to it (``docs/x.md#L30-L41``); every
  folder indexed must lie under it;
* a map of local roots to URLs or prefixes, ``{ "~/work/handbook" = "https://…/blob/main",
  "~/notes" = "notes" }``: the longest root that holds the file wins; ``""`` stores the bare
  relative path (at most one root may map to it, or two files could share a locator).

Each mapping is reversible (:meth:`LocatorMap.local`), which is how files that vanished from a
folder are found among the stored locators.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from simone.providers.documents._git import work_tree_top
from simone.runtime import InvalidRequest

LocatorBase = str | Mapping[str, str] | None
"""The ``[index] locator_base`` setting: ``None`` (absolute paths), a URL, a root folder, or a map."""


@dataclass(frozen=True, slots=True)
class LocatorMap:
    """Local roots and what each is stored as (a URL or a prefix, ``""`` for bare relative paths).

    Attributes:
        roots: ``(local root, prefix)`` pairs; local roots are absolute POSIX paths.
    """

    roots: tuple[tuple[str, str], ...]

    def locate(self, path: str) -> str:
        """The stored path of the file at absolute ``path`` (unchanged when no root holds it)."""
        for root, prefix in sorted(self.roots, key=lambda pair: -len(pair[0])):
            if _under(path, root):
                return _join(prefix, path[len(root) :].lstrip("/"))
        return path

    def local(self, stored: str) -> str | None:
        """The absolute local path a stored path came from, or ``None`` when no root of this map made it."""
        for root, prefix in sorted(self.roots, key=lambda pair: -len(pair[1])):
            if not prefix:
                if not stored.startswith("/") and "://" not in stored:
                    return _join(root, stored)
            elif stored == prefix or stored.startswith(prefix + "/"):
                return _join(root, stored[len(prefix) :].lstrip("/"))
        return None

    def to_json(self) -> list[list[str]]:
        """JSON-ready pairs (stored with the collection, to clean up after the setting changes)."""
        return [[root, prefix] for root, prefix in self.roots]

    @classmethod
    def from_json(cls, raw: object) -> LocatorMap | None:
        """The map :meth:`to_json` wrote, or ``None`` for anything else."""
        if not isinstance(raw, list) or not raw:
            return None
        pairs = [
            tuple(p)
            for p in raw
            if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
        ]
        return cls(tuple((str(a), str(b)) for a, b in pairs)) if pairs else None


def locator_map(base: LocatorBase, paths: Sequence[str]) -> LocatorMap | None:
    """The map ``locator_base`` gives for indexing ``paths`` (absolute POSIX), or ``None`` (absolute paths).

    Raises:
        InvalidRequest: a path lies under no root of the setting, a URL would name two work trees,
            or two roots of a map store bare relative paths.
    """
    if base is None:
        return None
    if isinstance(base, str):
        if _is_url(base):
            return _url_map(base.rstrip("/"), paths)
        root = _local_root(base)
        _check_covered(paths, [root], f"index.locator_base {base!r}")
        return LocatorMap(((root, ""),))
    roots = {_local_root(key): value.strip().rstrip("/") for key, value in base.items()}
    bare = [root for root, prefix in roots.items() if not prefix]
    if len(bare) > 1:
        raise InvalidRequest(
            f"index.locator_base maps {len(bare)} roots ({', '.join(bare)}) to bare relative paths; "
            "give each but one a prefix (e.g. its name), or two files could share a locator"
        )
    _check_covered(paths, list(roots), "any root of index.locator_base")
    return LocatorMap(tuple(sorted(roots.items())))


def _url_map(url: str, paths: Sequence[str]) -> LocatorMap:
    tops: dict[str, None] = {}
    for path in paths:
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        tops[work_tree_top(folder) or Path(folder).as_posix()] = None
    if len(tops) > 1:
        raise InvalidRequest(
            f"index.locator_base {url!r} is one repository's URL, but the paths lie in {len(tops)} "
            f"folders ({', '.join(tops)}); index them separately, or map each root to its own URL "
            '(locator_base = { "/path/a" = "https://…/a/blob/main", … })'
        )
    return LocatorMap(tuple((top, url) for top in tops))


def _check_covered(paths: Sequence[str], roots: Sequence[str], what: str) -> None:
    outside = [path for path in paths if not any(_under(path, root) for root in roots)]
    if outside:
        raise InvalidRequest(
            f"{', '.join(outside)} is not under {what}, so its locators would show this machine's "
            "path; index a folder under it, or add its root to index.locator_base"
        )


def _local_root(text: str) -> str:
    return Path(os.path.abspath(os.path.expanduser(text))).as_posix()


def _is_url(text: str) -> bool:
    head, sep, _ = text.partition("://")
    return bool(sep) and head.isalpha()


def _join(prefix: str, relative: str) -> str:
    if not prefix:
        return relative
    if not relative:
        return prefix
    return f"{prefix.rstrip('/')}/{relative}"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
