"""Freshness: ``watch_index`` follows edits, additions and deletions; a git tree re-reads only what changed.

Real ONNX model, real LanceDB in a temp dir, the real watchfiles watcher on a temp folder, real git.
Waits are bounded and fail with what was awaited; nothing asserts how long anything took.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.providers.documents import (
    DocumentIndex,
    DocumentIndexProvider,
    DocumentStore,
    WatchRun,
    refresh_periodically,
    watch_index,
)
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.runtime import EmbeddingChain, IndexSettings, Router, SearchMode, TrustedContext

CONTEXT = TrustedContext(actor="tester")
WAIT_S = 60.0
"""The most a test waits for the index to reflect a change before it fails (it polls)."""


def _index(tmp_path: Path, onnx: OnnxMiniLMEmbedder, **settings: object) -> DocumentIndex:
    return DocumentIndex(
        DocumentStore(tmp_path / "index"), EmbeddingChain([onnx]), settings=IndexSettings(**settings)
    )


async def _texts(index: DocumentIndex, query: str) -> list[tuple[str, str]]:
    """``(file name, text)`` of the lexical hits for ``query``."""
    request = Router([]).request(query, mode=SearchMode.LEXICAL)
    result = await DocumentIndexProvider(index).retrieve(request, CONTEXT)
    return [(Path(e.locator.split("#")[0]).name, e.content) for e in result.evidence]


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    with anyio.move_on_after(WAIT_S):
        while True:  # polling the index: a search is what a user would do
            if await check():
                return
            await anyio.sleep(0.1)
    pytest.fail(f"the index did not reflect the change within the bound: {what}")


def test_watch_reindexes_edited_added_and_removed_files(tmp_path: Path, onnx: OnnxMiniLMEmbedder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text("# Deploying\n\nDeploys happen on Tuesdays.\n")
    (docs / "faq.md").write_text("# FAQ\n\nAsk the platform team.\n")
    runs: list[WatchRun] = []

    async def go() -> None:
        stop = anyio.Event()
        async with _index(tmp_path, onnx, use_git=False) as index, anyio.create_task_group() as tasks:
            tasks.start_soon(
                lambda: watch_index(index, [docs], on_run=runs.append, debounce_ms=200, stop=stop)
            )

            async def initial_done() -> bool:
                return any(run.kind == "initial" for run in runs)

            await _until(initial_done, "the first full run")
            assert runs[0].report is not None and runs[0].report.files_indexed == 2

            async def deploys_on(day: str) -> bool:
                return any(
                    name == "deploy.md" and day in text for name, text in await _texts(index, "deploys")
                )

            (docs / "deploy.md").write_text("# Deploying\n\nDeploys happen on Thursdays now.\n")
            await _until(lambda: deploys_on("Thursdays"), "the edit of deploy.md")
            assert not await deploys_on("Tuesdays")

            (docs / "rollback.md").write_text("# Rollback\n\nA rollback restores the previous release.\n")
            (docs / "styles.css").write_text("body { color: red }\n")  # noise: counted, not indexed

            async def rollback_found() -> bool:
                return any(name == "rollback.md" for name, _ in await _texts(index, "rollback release"))

            await _until(rollback_found, "the new file rollback.md")

            (docs / "faq.md").unlink()

            async def faq_gone() -> bool:
                return not any(name == "faq.md" for name, _ in await _texts(index, "platform team"))

            await _until(faq_gone, "the removal of faq.md")
            stop.set()

        changes = [run for run in runs if run.kind == "changes"]
        assert changes and all(run.report is not None for run in changes)
        # Each batch read only what it saw change; the others were kept without being read.
        edit = next(run for run in changes if any(p.endswith("deploy.md") for p in run.modified))
        assert edit.report is not None and edit.report.files_indexed == 1 and edit.report.files_not_read == 1
        removal = next(run for run in changes if any(p.endswith("faq.md") for p in run.deleted))
        assert removal.report is not None and removal.report.files_deleted == 1
        assert any(s.path == "styles.css" for run in changes for s in run.report.skipped)  # type: ignore[union-attr]

    anyio.run(go)


def test_refresh_periodically_picks_up_a_change_at_the_next_tick(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe first version mentions apples.\n")
    runs: list[WatchRun] = []

    async def go() -> None:
        stop = anyio.Event()
        async with _index(tmp_path, onnx, use_git=False) as index, anyio.create_task_group() as tasks:
            tasks.start_soon(
                lambda: refresh_periodically(index, [docs], every_s=0.2, on_run=runs.append, stop=stop)
            )

            async def ticked() -> bool:
                return bool(runs)

            await _until(ticked, "the first scheduled run")
            (docs / "a.md").write_text("# A\n\nThe second version mentions pears.\n")

            async def pears() -> bool:
                return any("pears" in text for _, text in await _texts(index, "pears"))

            await _until(pears, "the scheduled re-index of a.md")
            stop.set()
        assert all(run.kind == "scheduled" for run in runs)

    anyio.run(go)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_a_git_tree_rereads_only_the_files_changed_since_the_last_indexed_commit(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    _git(repo, "init", "-q")
    for number in range(5):
        (repo / "docs" / f"page{number}.md").write_text(
            f"# Page {number}\n\nTopic {number} of the handbook.\n"
        )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")

    async def go() -> None:
        async with _index(tmp_path, onnx, use_gitignore=False) as index:
            first = await index.index_paths([repo])
            assert first.files_indexed == 5 and first.files_not_read == 0
            assert first.git and "every file compared by digest" in first.git[0]

            (repo / "docs" / "page2.md").write_text("# Page 2\n\nTopic two now covers refunds.\n")
            _git(repo, "commit", "-qam", "second")
            head = _git(repo, "rev-parse", "HEAD")
            second = await index.index_paths([repo])
            assert (second.files_indexed, second.files_unchanged, second.files_not_read) == (1, 4, 4)
            assert (
                f"at commit {head[:12]}" in second.git[0] and "1 file(s) changed in commits" in second.git[0]
            )
            assert any("refunds" in text for _, text in await _texts(index, "refunds"))

            # An uncommitted edit is read too (the working tree is what is indexed)…
            (repo / "docs" / "page3.md").write_text(
                "# Page 3\n\nTopic three, edited but not committed: gifts.\n"
            )
            third = await index.index_paths([repo])
            assert (third.files_indexed, third.files_not_read) == (1, 4)
            # … and read again once reverted, though git then calls it clean.
            _git(repo, "checkout", "--", "docs/page3.md")
            fourth = await index.index_paths([repo])
            assert (fourth.files_indexed, fourth.files_not_read) == (1, 4)
            assert not any("gifts" in text for _, text in await _texts(index, "gifts"))

            nothing = await index.index_paths([repo])
            assert (nothing.files_indexed, nothing.files_unchanged, nothing.files_not_read) == (0, 5, 5)

            # A file git ignores changes without git noticing: it is always read.
            (repo / ".gitignore").write_text("generated.md\n")
            (repo / "docs" / "generated.md").write_text("# Generated\n\nFirst build: lemons.\n")
            _git(repo, "add", ".gitignore")
            _git(repo, "commit", "-qm", "ignore")
            await index.index_paths([repo])
            (repo / "docs" / "generated.md").write_text("# Generated\n\nSecond build: limes.\n")
            rebuilt = await index.index_paths([repo])
            assert rebuilt.files_indexed == 1
            assert any("limes" in text for _, text in await _texts(index, "limes"))

            _git(repo, "rm", "-q", "docs/page4.md")
            _git(repo, "commit", "-qm", "third")
            removed = await index.index_paths([repo])
            assert (removed.files_deleted, removed.files_not_read) == (1, 4)  # generated.md is read

    anyio.run(go)


def test_serve_keeps_the_watched_folders_fresh(tmp_path: Path) -> None:
    """``simone serve``'s refresh (agents/cli/_refresh.py) over ``[index] watch``, as the server runs it."""
    from simone.agents.cli._refresh import keep_fresh
    from simone.runtime import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "oncall.md").write_text("# On call\n\nThe on-call rotation changes every Monday.\n")
    settings = Settings(data_dir=tmp_path / "data", index=IndexSettings(watch=[docs], refresh_seconds=5))
    lines: list[str] = []

    async def go() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: keep_fresh(settings, say=lines.append))

            async def refreshed() -> bool:
                return any(line.startswith("refreshed the index: 1 file(s) indexed") for line in lines)

            await _until(refreshed, "the first refresh of [index] watch")
            tasks.cancel_scope.cancel()
        async with DocumentIndex.open(settings) as index:
            assert any("on-call rotation" in text for _, text in await _texts(index, "rotation"))

    anyio.run(go)
    assert lines[0] == "keeping 1 folder(s) fresh, every 5 s ([index] watch)"


class _CountingEmbedder:
    """A real embedder (the runtime's own) that counts the document texts it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.documents = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def space(self) -> Any:
        return self.inner.space

    async def embed(self, texts: Any, *, kind: Any = "document") -> Any:
        if kind == "document":
            self.documents += len(texts)
        return await self.inner.embed(texts, kind=kind)


def test_serve_refreshes_with_the_runtime_s_embedding_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One worker: the refresh runs beside the open runtime and embeds with the chain it published."""
    import functools

    from simone.agents._runtime import Runtime
    from simone.agents.cli._refresh import refreshing
    from simone.agents.serve._app import ServeOptions, create_app
    from simone.providers.documents import DOCUMENT_INDEX
    from simone.runtime import EMBEDDING_CHAIN, Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "oncall.md").write_text("# On call\n\nThe on-call rotation changes every Monday.\n")
    settings = Settings(
        data_dir=tmp_path / "data",
        embeddings={"cache": False, "chain": ["onnx"], "onnx_threads": 1},
        index=IndexSettings(watch=[docs], refresh_seconds=5),
    )
    seen: dict[str, Any] = {}

    def beside(runtime: Runtime) -> Any:
        chain = runtime.published.get(EMBEDDING_CHAIN)
        index = runtime.published.get(DOCUMENT_INDEX)
        assert chain is not None and index is not None and index.chain is chain
        counting = _CountingEmbedder(chain.embedders[0])
        seen["counting"] = counting
        runtime.published.put(EMBEDDING_CHAIN, EmbeddingChain([counting]))  # type: ignore[list-item]
        return functools.partial(refreshing, settings)(runtime)

    app = create_app(settings, ServeOptions(open_actor="tester"), beside=beside)

    async def go() -> None:
        async with app.router.lifespan_context(app):
            said: list[str] = []

            async def refreshed() -> bool:
                said.append(capsys.readouterr().err)
                return "refreshed the index: 1 file(s) indexed" in "".join(said)

            await _until(refreshed, "the first refresh beside the served runtime")
        assert seen["counting"].documents >= 1, "the refresh embedded with the runtime's chain"

    anyio.run(go)
