"""Every relative link in the README, docs/*.md and benchmarks/README.md points at a file (and heading) that exists."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "benchmarks" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    ]
)

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
# [text](target) — text may hold a code span or emphasis but no nested brackets; an optional "title" after.
_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|`[^`]*`)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def _strip_code(text: str) -> str:
    """Markdown without fenced blocks; code spans outside links blanked, so `[x](y)` in code is no link."""
    text = _FENCE.sub("", text)
    # A code span inside a link's text is kept: blank only spans that are not followed by "](".
    return _CODE_SPAN.sub(lambda m: m.group(0) if text[m.end() : m.end() + 2] == "](" else "", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    kept = []
    for char in text:
        if char in " -_" or unicodedata.category(char)[0] in "LN":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub gives the headings of ``path`` (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for match in _HEADING.finditer(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    """The relative link targets of ``path`` (web and mail links left out)."""
    targets = _LINK.findall(_strip_code(path.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def broken_links(path: Path) -> list[str]:
    """The links of ``path`` whose file or heading does not exist, each with why."""
    broken = []
    for target in relative_links(path):
        file_part, _, fragment = target.partition("#")
        resolved = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target}: no such file {resolved}")
        elif fragment and not resolved.is_file():
            broken.append(f"{target}: an anchor into a folder")
        elif fragment and resolved.suffix == ".md" and unquote(fragment).lower() not in anchors(resolved):
            broken.append(f"{target}: no heading with anchor #{fragment} in {resolved.name}")
    return broken


def test_the_documents_exist() -> None:
    for path in (ROOT / "README.md", ROOT / "benchmarks" / "README.md", ROOT / "docs" / "limits.md"):
        assert path.is_file(), path


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    assert broken_links(path) == []


def test_the_readme_links_the_limits_and_the_benchmarks() -> None:
    links = set(relative_links(ROOT / "README.md"))
    assert "docs/limits.md" in links, "'Limits, stated plainly' must be one click from the README"
    assert "benchmarks/README.md" in links
    assert "benchmarks/results/report.md" in links
    assert "Limits, stated plainly" in (ROOT / "docs" / "limits.md").read_text(encoding="utf-8")


def test_the_checker_catches_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text(
        "# Limits, stated plainly\n\n## Scale (`scale.py`)\n", encoding="utf-8"
    )
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#limits-stated-plainly) [ok](other.md#scale-scalepy) [ok](#here)\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere) [web](https://example.com)\n"
        "`[code](not-a-link.md)`\n\n```\n[fenced](fenced.md)\n```\n\n## Here\n",
        encoding="utf-8",
    )
    assert [b.split(":")[0] for b in broken_links(page)] == ["missing.md", "other.md#nowhere"]
