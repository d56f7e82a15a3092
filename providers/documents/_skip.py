"""Files that are found but are noise to a search: skipped by default, counted, and overridable.

A documentation folder holds more than documents: a built site's stylesheets and scripts, its
navigation pages (``nav.html``, ``genindex.html``, ``search.html``, Sphinx's ``_static/`` and
``_sources/``), images and fonts, lockfiles and build output. Indexed, they crowd the results
with menus and minified code; reported one line each, they bury what went wrong. The rules below
skip them (the report counts them by category, and lists them with ``--verbose``):

=======================  ==========================================================================
category                 what (gitignore-style patterns, matched below the folder given to index)
=======================  ==========================================================================
stylesheet or script     ``*.css``, source maps, minified and bundled files (``*.min.*``,
                         ``*.bundle.js``), scripts inside asset folders (``_static/``, ``static/``,
                         ``assets/``, ``js/``, ``vendor/``, ``public/``); a ``src/app.js`` stays
site navigation          ``nav.html``, ``toc.html``, ``sidebar.html``, ``sitemap.*``,
                         ``genindex*.html``, ``search.html``, ``py-modindex.html``, ``404.html``,
                         ``searchindex.js``, ``search_index.json``, ``objects.inv``, and the
                         folders ``_static/``, ``_sources/``, ``_images/``
image or media           pictures, icons, fonts, audio and video
generated file           lockfiles (``package-lock.json``, ``poetry.lock``, ``*.lock``, ``go.sum``…)
                         and build output (``build/``, ``dist/``, ``_build/``, ``target/``,
                         ``htmlcov/``, ``_modules/``)
=======================  ==========================================================================

``[index] include`` patterns (or ``simone index --include``) index a file despite these defaults;
``[index] skip`` patterns (``--skip``) skip more, reported as ``matched index.skip``. A file named
on the command line itself is never skipped by the defaults.

A folder a rule matches whole (``build/``, ``_static/``, a ``--skip drafts/``) is not walked: its
files are never listed, so it is reported once, as the folder (``dist/``), and the summary line
counts it among the folders skipped, not among the files (:func:`folder_reason`). While
``[index] include`` patterns are set, the default rules skip file by file (an included file may lie
inside a folder they would skip); ``[index] skip`` folders are still left unwalked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import pathspec

STYLESHEET_OR_SCRIPT = "stylesheet or script"
SITE_NAVIGATION = "site navigation"
IMAGE_OR_MEDIA = "image or media"
GENERATED = "generated file"
MATCHED_SKIP = "matched index.skip"

_ASSET_FOLDERS = ("_static", "static", "assets", "js", "vendor", "public")

DEFAULT_SKIPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        SITE_NAVIGATION,
        (
            "_static/", "_sources/", "_images/",
            "nav.html", "navigation.html", "navbar.html", "toc.html", "sidebar.html",
            "sitemap.html", "sitemap.xml", "sitemap.xml.gz", "genindex.html", "genindex-*.html",
            "search.html", "py-modindex.html", "modindex.html", "404.html",
            "searchindex.js", "search_index.json", "objects.inv",
        ),
    ),
    (
        STYLESHEET_OR_SCRIPT,
        (
            "*.css", "*.map", "*.min.*", "*-min.js", "*.bundle.js", "*.chunk.js",
            *(f"**/{folder}/**/*.{ext}" for folder in _ASSET_FOLDERS for ext in ("js", "mjs", "cjs")),
        ),
    ),
    (
        IMAGE_OR_MEDIA,
        tuple(
            f"*.{ext}"
            for ext in (
                "png", "jpg", "jpeg", "gif", "svg", "svgz", "webp", "ico", "bmp", "tif", "tiff", "avif",
                "heic", "psd", "woff", "woff2", "ttf", "otf", "eot", "mp3", "mp4", "m4a", "wav", "ogg",
                "webm", "mov", "avi", "mkv", "flac",
            )
        ),
    ),
    (
        GENERATED,
        (
            "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock",
            "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "Gemfile.lock", "composer.lock",
            "go.sum", "flake.lock", "*.lock",
            "build/", "dist/", "_build/", "target/", "htmlcov/", "coverage/", "_modules/",
            "site-packages/", "__generated__/",
        ),
    ),
)  # fmt: skip
"""The default skip rules: a category and its gitignore-style patterns (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class SkipRules:
    """Which files found under a folder are skipped as noise, and why.

    Args:
        skip: more patterns to skip (``[index] skip``; reported as ``matched index.skip``).
        include: patterns indexed even though a default rule would skip them (``[index] include``).
        defaults: apply :data:`DEFAULT_SKIPS` (``False``: only ``skip``).

    Patterns are gitignore-style, matched against the path relative to the folder given to index
    (a pattern without a slash matches at any depth; ``name/`` matches a folder and what it holds);
    the defaults also match a file whose suffix differs only in case (``PHOTO.JPG``).
    """

    skip: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    defaults: bool = True

    @classmethod
    def of(cls, skip: Iterable[str] = (), include: Iterable[str] = (), *, defaults: bool = True) -> SkipRules:
        """Rules from any iterables of patterns."""
        return cls(tuple(skip), tuple(include), defaults)

    def reason(self, relative: str) -> str | None:
        """Why the file at ``relative`` (POSIX, below its root) is skipped, or ``None`` to index it."""
        rule = self._match(relative)
        if rule is None:
            return None
        category, pattern = rule
        if category == MATCHED_SKIP:
            return f"{MATCHED_SKIP} ({pattern!r})"
        return f"{category}, skipped by default ({pattern!r}; [index] include = [{pattern!r}] indexes it)"

    def folder_reason(self, relative: str) -> str | None:
        """Why the folder at ``relative`` (POSIX, below its root, ending in ``/``) is skipped unwalked.

        ``None`` when it is walked: no rule matches the folder itself, or a default rule does while
        ``include`` patterns are set (they may re-include a file inside it).
        """
        folder = relative if relative.endswith("/") else relative + "/"
        for pattern in self.skip:
            if _spec((pattern,)).match_file(folder):
                return f"{MATCHED_SKIP} ({pattern!r}; a folder, not walked)"
        if not self.defaults or self.include:
            return None
        for category, patterns in DEFAULT_SKIPS:
            for pattern in patterns:
                if _spec((pattern,)).match_file(folder):
                    return (
                        f"{category}, skipped by default ({pattern!r}; a folder, not walked; "
                        f"[index] include = [{pattern!r}] indexes it)"
                    )
        return None

    def _match(self, relative: str) -> tuple[str, str] | None:
        for pattern in self.skip:
            if _spec((pattern,)).match_file(relative):
                return MATCHED_SKIP, pattern
        if not self.defaults or (self.include and _spec(self.include).match_file(relative)):
            return None
        stem, dot, suffix = relative.rpartition(".")
        folded = f"{stem}.{suffix.lower()}" if dot and "/" not in suffix else relative  # PHOTO.JPG
        for category, patterns in DEFAULT_SKIPS:
            for pattern in patterns:
                spec = _spec((pattern,))
                if spec.match_file(relative) or (folded != relative and spec.match_file(folded)):
                    return category, pattern
        return None


_SPECS: dict[tuple[str, ...], pathspec.GitIgnoreSpec] = {}


def _spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    """The compiled spec of ``patterns`` (cached: the rules are few and asked once per file)."""
    spec = _SPECS.get(patterns)
    if spec is None:
        spec = _SPECS[patterns] = pathspec.GitIgnoreSpec.from_lines(patterns)
    return spec


_CATEGORY_LABELS: dict[str, str] = {
    STYLESHEET_OR_SCRIPT: "stylesheets and scripts",
    SITE_NAVIGATION: "site navigation",
    IMAGE_OR_MEDIA: "images and media",
    GENERATED: "generated",
    MATCHED_SKIP: "index.skip",
}


def skip_category(reason: str) -> str:
    """A short label grouping skip reasons for the summary line (``images and media``, ``too large``…)."""
    for category, label in _CATEGORY_LABELS.items():
        if reason.startswith(category):
            return label
    if reason.startswith("unsupported file type"):
        return "unsupported type"
    if "-byte limit" in reason:
        return "too large"
    if reason.startswith(("binary", "cannot decode")):
        return "binary"
    head = reason.split(":", 1)[0].split("(", 1)[0].split(";", 1)[0].strip()
    return head[:40] or "other"


class _Skipped(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def reason(self) -> str: ...


def is_folder(path: str) -> bool:
    """Whether a skipped entry is a folder (its path ends in ``/``): its files were never listed."""
    return path.endswith("/")


def skipped_counts(skipped: Iterable[_Skipped]) -> str:
    """The skipped part of the summary line: files by category, then folders skipped unwalked.

    ``14 skipped (site navigation 3, images and media 2)`` and, when folders were not walked (their
    files neither listed nor counted), ``; 3 folders not walked (generated 2, site navigation 1)``.
    """
    items = list(skipped)
    files = [item.reason for item in items if not is_folder(item.path)]
    folders = [item.reason for item in items if is_folder(item.path)]
    text = f"{len(files):,} skipped"
    groups = skip_summary(files)
    if groups:
        text += " (" + ", ".join(f"{label} {count:,}" for label, count in groups) + ")"
    if folders:
        shown = ", ".join(f"{label} {count:,}" for label, count in skip_summary(folders))
        text += f"; {len(folders):,} folder{'s' if len(folders) != 1 else ''} not walked ({shown})"
    return text


def skip_summary(reasons: Sequence[str]) -> list[tuple[str, int]]:
    """``(label, count)`` per :func:`skip_category`, most frequent first (ties by label)."""
    counts = Counter(skip_category(reason) for reason in reasons)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))
