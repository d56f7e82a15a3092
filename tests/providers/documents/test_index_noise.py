"""Noise: stylesheets, scripts, site navigation, images and generated files are skipped and counted.

Real ONNX model, real LanceDB in a temp dir; the CLI runs in-process on the same kind of tree.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from simone.agents.cli import main
from simone.agents.cli._index import found_line
from simone.providers.documents import DocumentIndex, DocumentStore, SkipRules, skip_category, skip_summary
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.runtime import EmbeddingChain, IndexSettings

DOCUMENTS = {
    "index.md": "# Handbook\n\nHow the team deploys the billing service on Tuesdays.\n",
    "guides/install.md": "# Install\n\nInstall the command line tool with pip.\n",
    "src/app.js": "export function deployBilling() {\n  return 'tuesday';\n}\n",
    "styles/theme.scss": "$brand: #336699;\n",
}
NOISE = {
    "css/custom.css": ("stylesheets and scripts", "body { color: #333; }\n"),
    "js/menu.js": ("stylesheets and scripts", "document.querySelector('nav').hidden = false;\n"),
    "vendor/jquery.min.js": ("stylesheets and scripts", "!function(e){}(window);\n"),
    "app.js.map": ("stylesheets and scripts", '{"version": 3}\n'),
    "nav.html": ("site navigation", "<html><body><nav><a href='/'>Home</a></nav></body></html>\n"),
    "genindex.html": ("site navigation", "<html><body><h1>Index</h1></body></html>\n"),
    "search.html": ("site navigation", "<html><body><form>Search</form></body></html>\n"),
    "_static/doctools.js": ("site navigation", "var Documentation = {};\n"),
    "_sources/index.md.txt": ("site navigation", "Handbook source copy\n"),
    "img/logo.png": ("images and media", "\x89PNG fake"),
    "img/diagram.svg": ("images and media", "<svg></svg>\n"),
    "package-lock.json": ("generated", '{"lockfileVersion": 3}\n'),
    "poetry.lock": ("generated", "# generated\n"),
    "dist/bundle.md": ("generated", "# Built copy\n\nA copy of the handbook.\n"),
}


FOLDERS = {"_static/": "site navigation", "_sources/": "site navigation", "dist/": "generated"}
"""The noise folders a default rule matches whole: skipped unwalked, reported once each."""

SKIPPED = {
    **{name: category for name, (category, _) in NOISE.items() if not name.startswith(tuple(FOLDERS))},
    **FOLDERS,
}
"""What a default run reports skipped: the noise files outside those folders, then the folders."""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A documentation folder as a new user has one: 4 documents and 14 files of noise."""
    root = tmp_path / "site"
    for name, text in DOCUMENTS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    for name, (_, text) in NOISE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    return root


def _index(tmp_path: Path, onnx: OnnxMiniLMEmbedder, **settings: object) -> DocumentIndex:
    return DocumentIndex(
        DocumentStore(tmp_path / "index"), EmbeddingChain([onnx]), settings=IndexSettings(**settings)
    )


def test_noise_is_skipped_by_default_and_counted_by_category(
    tmp_path: Path, site: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    async def go() -> None:
        async with _index(tmp_path, onnx, use_git=False) as index:
            report = await index.index_paths([site])
            # the files of _static/, _sources/ and dist/ are never listed: not found, not counted
            assert report.files_found == len(DOCUMENTS) + len(NOISE) - 3 == 15
            assert report.files_indexed == len(DOCUMENTS) == report.files_total
            skipped = {s.path: skip_category(s.reason) for s in report.skipped}
            assert skipped == SKIPPED
            assert dict(skip_summary([s.reason for s in report.skipped])) == {
                "stylesheets and scripts": 4,
                "site navigation": 5,
                "images and media": 2,
                "generated": 3,
            }
            assert found_line(report) == (
                "files found 15: 4 indexed, 0 unchanged, 11 skipped (stylesheets and scripts 4, "
                "site navigation 3, generated 2, images and media 2); 3 folders not walked "
                "(site navigation 2, generated 1)"
            )
            reason = next(s.reason for s in report.skipped if s.path == "dist/")
            assert reason.startswith("generated file, skipped by default ('dist/'; a folder, not walked")
            paths = set((await index.collection.rows(columns=["path"]))["path"].to_pylist())  # type: ignore[union-attr]
            assert {Path(p).relative_to(site).as_posix() for p in paths} == set(DOCUMENTS)
            reason = next(s.reason for s in report.skipped if s.path == "css/custom.css")
            assert reason.startswith("stylesheet or script, skipped by default") and "include" in reason

            again = await index.index_paths([site])
            assert (again.files_found, again.files_unchanged, len(again.skipped)) == (15, 4, 14)

    anyio.run(go)


def test_include_and_skip_override_the_defaults(tmp_path: Path, site: Path, onnx: OnnxMiniLMEmbedder) -> None:
    async def go() -> None:
        async with _index(tmp_path, onnx, use_git=False) as index:
            await index.index_paths([site])
        async with _index(
            tmp_path, onnx, use_git=False, include=["*.css", "_sources/"], skip=["src/"]
        ) as index:
            report = await index.index_paths([site])
            paths = {
                Path(p).relative_to(site).as_posix()
                for p in (await index.collection.rows(columns=["path"]))["path"].to_pylist()  # type: ignore[union-attr]
            }
            assert "css/custom.css" in paths and "_sources/index.md.txt" in paths
            assert "src/app.js" not in paths and report.files_deleted == 1  # now skipped: its chunks go
            (reason,) = [s.reason for s in report.skipped if s.path == "src/"]  # a folder, not walked
            assert reason == "matched index.skip ('src/'; a folder, not walked)"
            assert skip_category(reason) == "index.skip"
            # with include patterns the defaults skip file by file (an included file may lie in _sources/)
            assert {"_static/doctools.js", "dist/bundle.md"} <= {s.path for s in report.skipped}
            assert report.files_found == 17

    anyio.run(go)


def test_a_file_named_on_the_command_line_is_never_skipped_as_noise(
    tmp_path: Path, site: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    async def go() -> None:
        async with _index(tmp_path, onnx, use_git=False) as index:
            report = await index.index_paths([site / "css" / "custom.css"])
            assert (report.files_found, report.files_indexed, report.skipped) == (1, 1, [])

    anyio.run(go)


def test_skip_rules_patterns() -> None:
    rules = SkipRules()
    kept = [
        "src/app.js",
        "lib/util.mjs",
        "README.md",
        "docs/site.md",
        "build.md",
        "styles/a.scss",
        "locked.md",
    ]
    assert [rules.reason(p) for p in kept] == [None] * len(kept)
    skipped = {
        "a/b/assets/main.js": "stylesheet or script",
        "static/js/x.js": "stylesheet or script",
        "x/jquery.min.js": "stylesheet or script",
        "theme.min.css": "stylesheet or script",
        "docs/_build/html/index.html": "generated file",
        "deep/toc.html": "site navigation",
        "sitemap.xml": "site navigation",
        "genindex-A.html": "site navigation",
        "Cargo.lock": "generated file",
        "photo.JPG": "image or media",  # a suffix matches in any case
        "Pipfile.lock": "generated file",
    }
    for path, category in skipped.items():
        reason = rules.reason(path)
        assert reason is not None and reason.startswith(category), path
    assert SkipRules.of(include=["*"]).reason("nav.html") is None
    assert (
        SkipRules.of(skip=["drafts/"], defaults=False).reason("drafts/a.md")
        == "matched index.skip ('drafts/')"
    )
    assert SkipRules.of(defaults=False).reason("nav.html") is None


def test_folders_a_rule_matches_whole_are_not_walked(tmp_path: Path) -> None:
    from simone.providers.documents import SkippedFile, discover, skipped_counts

    rules = SkipRules()
    assert rules.folder_reason("docs/_build/") is not None and rules.folder_reason("build/")
    assert rules.folder_reason("static/") is None, "only the scripts inside an asset folder are noise"
    assert rules.folder_reason("guides/") is None
    assert SkipRules.of(include=["*.md"]).folder_reason("build/") is None, "includes: file by file"
    assert SkipRules.of(skip=["drafts/"], include=["*.md"]).folder_reason("a/drafts/") == (
        "matched index.skip ('drafts/'; a folder, not walked)"
    )
    root = tmp_path / "tree"
    for name in ("keep/a.md", "build/out.md", "build/deep/x/y.md", "static/js/app.js", "static/guide.md"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("# x\n")
    found = list(discover([root], max_file_bytes=10_000, prune=rules.folder_reason))
    folders = [item.path for item in found if isinstance(item, SkippedFile)]
    listed = sorted(item.display for item in found if not isinstance(item, SkippedFile))
    assert folders == ["build/"] and listed == ["keep/a.md", "static/guide.md", "static/js/app.js"]
    assert skipped_counts([item for item in found if isinstance(item, SkippedFile)]) == (
        "0 skipped; 1 folder not walked (generated 1)"
    )


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    for key in list(os.environ):
        if key.startswith("SIMONE_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_cli_prints_one_summary_line_and_lists_noise_only_when_verbose(
    clean_env: Path, site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (site / "empty.md").write_text("")  # a skip worth showing: not noise
    data = str(clean_env / "data")
    assert main(["--data-dir", data, "index", str(site)]) == 0
    out = capsys.readouterr().out
    assert (
        "files found 16: 4 indexed, 0 unchanged, 12 skipped (stylesheets and scripts 4, site navigation 3"
        in out
    )
    assert "; 3 folders not walked (site navigation 2, generated 1)" in out
    assert "skipped empty.md: empty file" in out
    assert "nav.html" not in out and "logo.png" not in out  # counted, not listed

    assert main(["--data-dir", data, "index", str(site), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "files found 16: 0 indexed, 4 unchanged, 12 skipped" in out
    assert "skipped nav.html: site navigation, skipped by default" in out
    assert "skipped _static/: site navigation, skipped by default ('_static/'; a folder, not walked" in out
    assert "skipped img/logo.png: image or media, skipped by default" in out

    assert (
        main(["--data-dir", data, "index", str(site), "--include", "*.png", "--skip", "*.scss", "--json"])
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    reasons = {s["path"]: s["reason"] for s in payload["skipped"]}
    assert "styles/theme.scss" in reasons and reasons["img/logo.png"].startswith("unsupported file type")
    assert payload["files_found"] == 19 and payload["files_deleted"] == 1
