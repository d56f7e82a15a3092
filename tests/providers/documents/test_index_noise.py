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
            assert report.files_found == len(DOCUMENTS) + len(NOISE) == 18
            assert report.files_indexed == len(DOCUMENTS) == report.files_total
            skipped = {s.path: skip_category(s.reason) for s in report.skipped}
            assert skipped == {name: category for name, (category, _) in NOISE.items()}
            assert dict(skip_summary([s.reason for s in report.skipped])) == {
                "stylesheets and scripts": 4,
                "site navigation": 5,
                "images and media": 2,
                "generated": 3,
            }
            assert found_line(report) == (
                "files found 18: 4 indexed, 0 unchanged, 14 skipped (site navigation 5, "
                "stylesheets and scripts 4, generated 3, images and media 2)"
            )
            paths = set((await index.collection.rows(columns=["path"]))["path"].to_pylist())  # type: ignore[union-attr]
            assert {Path(p).relative_to(site).as_posix() for p in paths} == set(DOCUMENTS)
            reason = next(s.reason for s in report.skipped if s.path == "css/custom.css")
            assert reason.startswith("stylesheet or script, skipped by default") and "include" in reason

            again = await index.index_paths([site])
            assert (again.files_found, again.files_unchanged, len(again.skipped)) == (18, 4, 14)

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
            (reason,) = [s.reason for s in report.skipped if s.path == "src/app.js"]
            assert reason == "matched index.skip ('src/')" and skip_category(reason) == "index.skip"
            assert report.files_found == 18

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
        "files found 19: 4 indexed, 0 unchanged, 15 skipped (site navigation 5, stylesheets and scripts 4"
        in out
    )
    assert "skipped empty.md: empty file" in out
    assert "nav.html" not in out and "logo.png" not in out  # counted, not listed

    assert main(["--data-dir", data, "index", str(site), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "files found 19: 0 indexed, 4 unchanged, 15 skipped" in out
    assert "skipped nav.html: site navigation, skipped by default" in out
    assert "skipped img/logo.png: image or media, skipped by default" in out

    assert (
        main(["--data-dir", data, "index", str(site), "--include", "*.png", "--skip", "*.scss", "--json"])
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    reasons = {s["path"]: s["reason"] for s in payload["skipped"]}
    assert "styles/theme.scss" in reasons and reasons["img/logo.png"].startswith("unsupported file type")
    assert payload["files_found"] == 19 and payload["files_deleted"] == 1
