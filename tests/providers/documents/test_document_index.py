"""The document index with the real ONNX model and real LanceDB in temp dirs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pytest
from simone.providers.documents import (
    DocumentIndex,
    DocumentIndexProvider,
    DocumentStore,
    SpaceCalibration,
    _provider,
)
from simone.providers.documents._store import FTS_INDEX
from simone.providers.embeddings import ONNX_SPACE, OnnxMiniLMEmbedder
from simone.providers.testing import HashEmbedder
from simone.runtime import (
    EmbeddingChain,
    EmbeddingKind,
    EmbeddingSpace,
    EmbeddingSpaceMismatch,
    IndexSettings,
    InvalidRequest,
    ProviderNotConfigured,
    ProviderUnavailable,
    Router,
    SearchMode,
    Status,
    TrustedContext,
)
from simone.runtime.ranking import SHIFTED_VOTE_SHARPNESS, VOTE_SHARPNESS, WeightedRRF

CONTEXT = TrustedContext(actor="tester")


class Counting:
    """Delegates to an embedder and counts the texts it was asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts = 0
        self.calls = 0

    @property
    def space(self) -> EmbeddingSpace:
        return self.inner.space  # type: ignore[no-any-return]

    @property
    def tokenizer(self) -> Any:
        return getattr(self.inner, "tokenizer", None)

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        self.calls += 1
        if kind == "document":  # the chain's space probe is a query
            self.texts += len(texts)
        return await self.inner.embed(texts, kind=kind)  # type: ignore[no-any-return]


_STORE: dict[str, Any] = {}
"""Where this module's indexes live: a local folder, or the S3 bucket of the running parametrisation."""


@pytest.fixture(params=["local", "s3"], autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test of this suite runs on a local folder and on an S3 server (moto, on loopback)."""
    _STORE.clear()
    if request.param == "s3":
        s3 = request.getfixturevalue("s3_index")
        _STORE.update(uri=s3.uri, storage_options=s3.storage_options)
    yield request.param
    _STORE.clear()


def _store(tmp_path: Path) -> DocumentStore:
    if _STORE:
        return DocumentStore(_STORE["uri"], _STORE["storage_options"])
    return DocumentStore(tmp_path / "index")


def _index(tmp_path: Path, chain: EmbeddingChain, **kwargs: Any) -> DocumentIndex:
    settings = kwargs.pop("settings", IndexSettings())
    return DocumentIndex(_store(tmp_path), chain, settings=settings, **kwargs)


def _many_notes(tmp_path: Path, count: int) -> Path:
    """``count`` one-section Markdown notes, each about its own item, in ``tmp_path/many``."""
    root = tmp_path / "many"
    root.mkdir()
    for number in range(count):
        (root / f"n{number:03d}.md").write_text(f"# Note {number}\n\nTopic {number} about item{number}.\n")
    return root


async def _search(index: DocumentIndex, query: str, mode: SearchMode, **fields: Any) -> Any:
    context = fields.pop("context", CONTEXT)
    request = Router([]).request(query, mode=mode, **fields)
    return await DocumentIndexProvider(index).retrieve(request, context)


def test_incremental_reindex_embeds_only_what_changed(
    tmp_path: Path, tree: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    counting = Counting(onnx)

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([counting])) as index:
            first = await index.index_paths([tree])
            assert first.space == ONNX_SPACE.key
            assert first.files_indexed == 4 and first.chunks >= 4
            assert first.embedded == first.chunks == counting.texts
            assert first.pending == first.pending_left == 0
            assert "built the full-text index" in first.maintenance

            counting.texts = 0
            again = await index.index_paths([tree])
            assert (again.files_unchanged, again.files_indexed, again.chunks, again.embedded) == (4, 0, 0, 0)
            assert counting.texts == 0

            faq = tree / "faq.md"
            faq.write_text(faq.read_text().replace("one embedded table", "one embedded Arrow table"))
            changed = await index.index_paths([tree])
            assert changed.files_indexed == 1 and changed.files_unchanged == 3
            assert changed.embedded == counting.texts == 1
            assert changed.reused == changed.chunks - 1

            rows = await index.collection.rows(columns=["path", "text"])  # type: ignore[union-attr]
            texts = [
                t
                for p, t in zip(rows["path"].to_pylist(), rows["text"].to_pylist(), strict=True)
                if p.endswith("faq.md")
            ]
            assert any("one embedded Arrow table" in t for t in texts)
            assert not any("one embedded table" in t for t in texts)

            (tree / "notes.txt").unlink()
            counting.texts = 0
            removed = await index.index_paths([tree])
            assert removed.files_deleted == 1 and counting.texts == 0
            paths = set((await index.collection.rows(columns=["path"]))["path"].to_pylist())  # type: ignore[union-attr]
            assert not any(p.endswith("notes.txt") for p in paths)
            result = await _search(index, "quarterly report Friday", SearchMode.LEXICAL)
            assert not any("notes.txt" in e.locator for e in result.evidence)

    anyio.run(go)


def test_search_modes_rank_the_right_file_first(tmp_path: Path, tree: Path, onnx: OnnxMiniLMEmbedder) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx])) as index:
            await index.index_paths([tree])
            for mode in SearchMode:
                result = await _search(index, "what Python version do I need to install simone", mode)
                assert result.evidence, mode
                top = result.evidence[0]
                assert top.locator.split("#")[0].endswith("guides/install.md"), (mode, top.locator)
                assert top.metadata["method"] == mode.value
                assert top.metadata["space"] == ONNX_SPACE.key
                assert result.degraded == [] and result.leg_failures == []
            semantic = await _search(index, "money back after buying", SearchMode.SEMANTIC)
            assert semantic.evidence[0].locator.split("#")[0].endswith("billing.py")
            hybrid = await _search(index, "refund policy days since purchase", SearchMode.HYBRID)
            top = hybrid.evidence[0]
            assert set(top.metadata["leg_ranks"]) == {"lexical", "semantic"}
            assert top.locator.endswith(f"#L{top.metadata['line_start']}-L{top.metadata['line_end']}")
            votes = hybrid.details["votes"]  # each leg weighted by its confidence
            assert set(votes) == {"lexical", "semantic"} and max(v["weight"] for v in votes.values()) == 1.0
            expected = sum(votes[leg]["weight"] / (60 + r) for leg, r in top.metadata["leg_ranks"].items())
            assert top.score == pytest.approx(expected, rel=1e-4)

    anyio.run(go)


def test_project_scoping_and_metadata_filters(tmp_path: Path, tree: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "plan.md").write_text("# Roadmap\n\nThe beta project ships the refund feature in May.\n")

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(32)])) as index:
            await index.index_paths([tree], project="alpha")
            await index.index_paths([other], project="beta")
            await index.index_paths([other])  # the same file, indexed without a project: global
            alpha = TrustedContext(actor="a", project="alpha")
            beta = TrustedContext(actor="b", project="beta")
            nobody = TrustedContext(actor="c")
            seen = {}
            for name, context in [("alpha", alpha), ("beta", beta), ("none", nobody)]:
                result = await _search(index, "refund", SearchMode.LEXICAL, context=context)
                seen[name] = {(e.metadata["project"], Path(e.metadata["path"]).name) for e in result.evidence}
            assert seen["alpha"] == {("alpha", "billing.py"), (None, "plan.md")}
            assert seen["beta"] == {("beta", "plan.md"), (None, "plan.md")}
            assert seen["none"] == {(None, "plan.md")}

            code = await _search(index, "refund", SearchMode.HYBRID, context=alpha, filters={"kind": "code"})
            assert {e.metadata["kind"] for e in code.evidence} == {"code"}
            prefix = (tree / "guides").as_posix() + "/"
            guides = await _search(
                index, "pip", SearchMode.LEXICAL, context=alpha, filters={"path_prefix": prefix}
            )
            assert guides.evidence and all(e.metadata["path"].startswith(prefix) for e in guides.evidence)
            with pytest.raises(InvalidRequest, match="trusted context"):
                await _search(
                    index, "refund", SearchMode.LEXICAL, context=nobody, filters={"project": "alpha"}
                )
            with pytest.raises(InvalidRequest, match="unknown document filter"):
                await _search(index, "refund", SearchMode.LEXICAL, filters={"colour": "red"})

    anyio.run(go)


def test_a_single_project_table_searches_without_the_project_test_yet_never_leaks(
    tmp_path: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simone.providers.documents._store import Collection

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(32)])) as index:
            await index.index_paths([tree], project="alpha")
            table = index.collection
            assert table is not None
            assert await table.only_projects(["", "alpha"]) and not await table.only_projects([""])
            alpha = TrustedContext(actor="a", project="alpha")
            found = await _search(index, "refund", SearchMode.HYBRID, context=alpha)
            assert found.evidence and {e.metadata["project"] for e in found.evidence} == {"alpha"}
            # A writer adds another project's rows between the check and the search: the legs run
            # unscoped, and the rows are still read with the project test, so nothing leaks.
            monkeypatch.setattr(Collection, "only_projects", _always_only)
            nobody = TrustedContext(actor="c")
            for mode in SearchMode:
                leaked = await _search(index, "refund", mode, context=nobody)
                assert leaked.evidence == [], mode
                assert sum(leaked.details["legs"].values()) > 0, (
                    "the legs ran unscoped and found alpha's rows"
                )

    anyio.run(go)


async def _always_only(self: Any, projects: Sequence[str], version: int | None = None) -> bool:
    return True


def test_rows_added_after_the_fts_build_are_found(tmp_path: Path, tree: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(32)])) as index:
            await index.index_paths([tree])
            collection = index.collection
            assert collection is not None
            assert FTS_INDEX in await collection.index_names()
            late = tree / "late.md"
            late.write_text("# Late\n\nThe zeppelin timetable arrived after the index was built.\n")
            # Write the new file's rows without the maintenance step that refreshes the index.
            prepared = index._prepare(next(s for s in _sources(tree) if s.path.name == "late.md"), {}, "")
            assert prepared.chunks is not None and prepared.terms is not None
            from simone.providers.documents._index import _row

            rows = [_row(c, t, None, 0.0) for c, t in zip(prepared.chunks, prepared.terms, strict=True)]
            await collection.replace_files("", [prepared.path], collection.to_arrow(rows))
            stats = await collection.table.index_stats(FTS_INDEX)
            assert stats.num_unindexed_rows >= 1
            found = await _search(index, "zeppelin timetable", SearchMode.LEXICAL)
            assert [Path(e.metadata["path"]).name for e in found.evidence][:1] == ["late.md"]
            # ... and after the index is brought up to date.
            report = await index.index_paths([tree])
            assert report.files_unchanged == 5 and report.pending_filled == 1
            stats = await collection.table.index_stats(FTS_INDEX)
            assert stats.num_unindexed_rows == 0
            found = await _search(index, "zeppelin timetable", SearchMode.LEXICAL)
            assert [Path(e.metadata["path"]).name for e in found.evidence][:1] == ["late.md"]

    anyio.run(go)


def _sources(root: Path) -> list[Any]:
    from simone.providers.documents import SourceFile, discover

    return [s for s in discover([root], max_file_bytes=10**6) if isinstance(s, SourceFile)]


def test_a_collection_of_another_space_or_dimension_is_refused(tmp_path: Path, tree: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)])) as index:
            await index.index_paths([tree])
            assert index.space is not None and index.space.dimension == 16
            with pytest.raises(EmbeddingSpaceMismatch, match="16-dimensional"):
                index.collection.check_vectors(np.ones((1, 384), dtype=np.float32), 1)  # type: ignore[union-attr]
        with pytest.raises(EmbeddingSpaceMismatch, match=r"hash:hash:16.*not onnx:all-MiniLM-L6-v2:384"):
            async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)]), space=ONNX_SPACE):
                pass
        # A table that simone did not make (here: 768-dimensional vectors, no recorded space).
        import lancedb

        if _STORE:
            db = await lancedb.connect_async(_STORE["uri"], storage_options=_STORE["storage_options"])
        else:
            db = await lancedb.connect_async(str(tmp_path / "index"))
        schema = pa.schema([pa.field("id", pa.string()), pa.field("vector", pa.list_(pa.float32(), 768))])
        await db.create_table("foreign", schema=schema)
        with pytest.raises(EmbeddingSpaceMismatch, match="records no embedding space"):
            async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)]), collection="foreign"):
                pass
        # A recorded space whose vector column disagrees with it.
        meta = {
            b"simone.space": EmbeddingSpace(provider="x", model="m", dimension=384).model_dump_json().encode()
        }
        bad = pa.schema(
            [pa.field("id", pa.string()), pa.field("vector", pa.list_(pa.float32(), 768))], metadata=meta
        )
        await db.create_table("altered", schema=bad)
        with pytest.raises(EmbeddingSpaceMismatch, match="holds 768 dimensions"):
            async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)]), collection="altered"):
                pass

    anyio.run(go)


def test_unavailable_embedder_stores_pending_rows_and_lexical_carries_on(tmp_path: Path, tree: Path) -> None:
    hashing = HashEmbedder(32)

    async def go() -> None:
        chain = EmbeddingChain([hashing], min_samples=2, window=4)
        async with _index(tmp_path, chain) as index:
            await index.index_paths([tree / "faq.md"])
            hashing.error = ProviderUnavailable("the embedding server is down", provider="hash")
            report = await index.index_paths([tree])
            assert report.pending == report.chunks - 0 and report.pending > 0
            assert report.pending_left == report.pending
            assert report.failures and "stored as pending" in report.failures[0]
            rows = await index.collection.rows("vector IS NULL", ["vector"])  # type: ignore[union-attr]
            assert rows.num_rows == report.pending  # null vectors, never zero vectors
            for _ in range(2):
                result = await _search(index, "quarterly report", SearchMode.HYBRID)
                assert result.evidence and result.evidence[0].metadata["method"] == "lexical"
                assert any("semantic leg unavailable" in d for d in result.degraded)
                (failure,) = result.leg_failures
                assert (failure.leg, failure.kind) == ("semantic", "unavailable")
            assert chain.health().degraded
            semantic_only = await _search(index, "quarterly report", SearchMode.SEMANTIC)
            assert semantic_only.evidence and semantic_only.degraded

            hashing.error = None
            filled = await index.embed_pending()
            assert filled.pending_filled == report.pending and filled.pending_left == 0
            result = await _search(index, "quarterly report", SearchMode.HYBRID)
            assert result.degraded == [] and result.leg_failures == []
            assert result.evidence[0].metadata["method"] == "hybrid"

    anyio.run(go)


def test_pending_rows_are_reported_as_degraded_semantic_coverage(tmp_path: Path, tree: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(32)])) as index:
            report = await index.index_paths([tree], embed=False)
            assert report.pending == report.chunks and report.embedded == 0
            result = await _search(index, "refund", SearchMode.HYBRID)
            assert any("wait for embedding" in reason for reason in result.degraded)
            lexical = await _search(index, "refund", SearchMode.LEXICAL)
            assert lexical.degraded == []

    anyio.run(go)


def test_an_empty_index_is_not_configured_and_bad_paths_are_refused(tmp_path: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(8)])) as index:
            with pytest.raises(ProviderNotConfigured, match="simone index"):
                await _search(index, "anything", SearchMode.HYBRID)
            with pytest.raises(InvalidRequest, match="does not exist"):
                await index.index_paths([tmp_path / "missing"])
            with pytest.raises(ProviderNotConfigured):
                await index.embed_pending()

    anyio.run(go)


def test_router_marks_the_result_partial_with_the_leg_failure(tmp_path: Path, tree: Path) -> None:
    hashing = HashEmbedder(32)

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([hashing])) as index:
            await index.index_paths([tree])
            hashing.error = ProviderUnavailable("down for maintenance", provider="hash")
            router = Router([DocumentIndexProvider(index)])
            result = await router.retrieve(router.request("installation requirements"), CONTEXT)
            assert result.status is Status.PARTIAL
            assert any(f.leg == "semantic" and "down for maintenance" in f.message for f in result.failures)
            assert result.evidence

    anyio.run(go)


def test_the_embedding_cache_spares_a_second_collection(tmp_path: Path, tree: Path) -> None:
    from simone.providers.embeddings import EmbeddingCache

    hashing = HashEmbedder(32)

    async def go() -> None:
        async with EmbeddingCache(tmp_path / "cache.sqlite3") as cache:
            chain = EmbeddingChain([hashing])
            async with _index(tmp_path, chain, cache=cache, collection="one") as index:
                first = await index.index_paths([tree])
            texts = hashing.texts_embedded
            assert texts == first.embedded + 1  # the space probe
            async with _index(tmp_path, chain, cache=cache, collection="two") as index:
                second = await index.index_paths([tree])
            assert second.embedded == 0 and second.cached == first.embedded
            assert hashing.texts_embedded == texts + 1  # only the new collection's space probe

    anyio.run(go)


def test_new_chunk_settings_rechunk_unchanged_files(tmp_path: Path, tree: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)])) as index:
            first = await index.index_paths([tree])
        async with _index(
            tmp_path,
            EmbeddingChain([HashEmbedder(16)]),
            settings=IndexSettings(chunk_tokens=64, chunk_overlap_tokens=8),
        ) as index:
            second = await index.index_paths([tree])
            assert second.files_indexed == first.files_indexed == 4
            assert second.files_unchanged == 0
            again = await index.index_paths([tree])
            assert again.files_unchanged == 4 and again.chunks == 0

    anyio.run(go)


@pytest.mark.parametrize("kind", ["ivf_flat", "ivf_hnsw_sq"])
def test_the_ann_index_is_built_past_the_threshold_and_new_rows_are_still_found(
    tmp_path: Path, kind: str
) -> None:
    root = _many_notes(tmp_path, 300)
    config = IndexSettings(ann_min_rows=256, ann_index=kind)  # type: ignore[arg-type]

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(256)]), settings=config) as index:
            report = await index.index_paths([root])
            assert any(f"built the {kind} vector index" in note for note in report.maintenance)
            assert "vector_idx" in await index.collection.index_names()  # type: ignore[union-attr]
            hit = await _search(index, "Note 123: topic 123 about item123", SearchMode.SEMANTIC)
            assert Path(hit.evidence[0].metadata["path"]).name == "n123.md"
            expected = {"ivf_flat": ("IvfFlat", 17), "ivf_hnsw_sq": ("IvfHnswSq", 1)}[kind]
            assert await index.collection.vector_index() == expected  # type: ignore[union-attr]
            (root / "late.md").write_text("# Late\n\nA zeppelin arrives late.\n")
            again = await index.index_paths([root])
            # a small table: the new vector rebuilds the index instead of being merged into it
            assert any(f"rebuilt the {kind} vector index" in note for note in again.maintenance)
            stats = await index.collection.table.index_stats("vector_idx")  # type: ignore[union-attr]
            assert stats.num_unindexed_rows == 0 and stats.num_indexed_rows == 301
            late = await _search(index, "zeppelin arrives late", SearchMode.SEMANTIC)
            assert Path(late.evidence[0].metadata["path"]).name == "late.md"

    anyio.run(go)


def test_above_the_rebuild_size_new_vectors_are_folded_in_until_rebuild_ann(tmp_path: Path) -> None:
    root = _many_notes(tmp_path, 300)
    config = IndexSettings(ann_min_rows=256, ann_rebuild_rows=100, ann_rebuild_share=0.5)

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(256)]), settings=config) as index:
            await index.index_paths([root])
            (root / "late.md").write_text("# Late\n\nA zeppelin arrives late.\n")
            again = await index.index_paths([root])
            assert any("folded 1 new vectors into the vector index" in n for n in again.maintenance)
            assert not any("rebuilt the" in note for note in again.maintenance), again.maintenance
            late = await _search(index, "zeppelin arrives late", SearchMode.SEMANTIC)
            assert Path(late.evidence[0].metadata["path"]).name == "late.md"
            done = await index.rebuild_ann()
            assert len(done) == 1 and "built the ivf_flat vector index over 301 vectors" in done[0]
            stats = await index.collection.table.index_stats("vector_idx")  # type: ignore[union-attr]
            assert stats.num_unindexed_rows == 0 and stats.num_indices == 1

    anyio.run(go)


def test_probe_share_scales_nprobes_with_the_partitions(tmp_path: Path) -> None:
    from simone.providers.documents._store import build_where

    root = _many_notes(tmp_path, 300)

    async def go() -> None:
        chain = EmbeddingChain([HashEmbedder(256)])
        async with _index(tmp_path, chain, settings=IndexSettings(ann_min_rows=256)) as index:
            await index.index_paths([root])
            table = index.collection
            assert table is not None and await table.vector_index() == ("IvfFlat", 17)
            where = build_where([""], {})
            vectors = await chain.embed([f"Note {n} item{n}" for n in range(0, 300, 15)], space=table.space)
            one_probe_missed = 0
            for vector in vectors:
                exact = await table.search_vector(vector, where, 10, exact=True)
                # every partition probed (a share of 1.0 lifts nprobes 1 to 17): the exact answer
                every = await table.search_vector(vector, where, 10, nprobes=1, probe_share=1.0)
                assert every[0].id == exact[0].id  # (equal similarities further down may swap)
                assert [h.score for h in every] == pytest.approx([h.score for h in exact], abs=1e-5)
                one = await table.search_vector(vector, where, 10, nprobes=1)
                one_probe_missed += [h.score for h in one] != pytest.approx(
                    [h.score for h in exact], abs=1e-5
                )
            assert one_probe_missed, "one probe of 17 partitions should miss neighbours: the share matters"

    anyio.run(go)


def test_many_write_batches_are_compacted_before_the_indexes_are_built(tmp_path: Path) -> None:
    root = _many_notes(tmp_path, 200)
    config = IndexSettings(write_batch_chunks=16)

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)]), settings=config) as index:
            report = await index.index_paths([root])
            assert report.chunks == 200
            assert any(note.startswith("compacted ") for note in report.maintenance), report.maintenance
            table = index.collection
            assert table is not None
            stats = await table.table.stats()
            assert stats["fragment_stats"]["num_fragments"] == 1 and stats["num_rows"] == 200
            hit = await _search(index, "item123", SearchMode.LEXICAL)
            assert Path(hit.evidence[0].metadata["path"]).name == "n123.md"

    anyio.run(go)


def test_a_table_from_before_the_card_column_gets_it_on_open(tmp_path: Path, tree: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)])) as index:
            await index.index_paths([tree], project="p\tq")  # a tab in the project: still parsed
            assert index.collection is not None
            await index.collection.table.drop_columns(["card"])  # as tables were written before
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)])) as index:
            assert index.collection is not None
            assert "card" in (await index.collection.table.schema()).names
            found = await _search(
                index,
                "quarterly budget",
                SearchMode.LEXICAL,
                context=TrustedContext(actor="t", project="p\tq"),
            )
            first = found.evidence[0].metadata
            stored = (await index.collection.rows(f"id = '{first['chunk_id']}'")).to_pylist()[0]
            for name in ("project", "kind", "language", "line_start", "line_end"):
                assert first[name] == stored[name], name
            assert first["project"] == "p\tq"
            assert 1 <= first["line_start"] <= first["line_end"]
            assert found.evidence[0].locator.endswith(f"#L{first['line_start']}-L{first['line_end']}")
            again = await index.index_paths([tree], project="p\tq")  # writes work on the migrated table
            assert again.files_unchanged == again.files_total

    anyio.run(go)


def test_reads_by_row_id_are_checked_against_id_and_project(tmp_path: Path, tree: Path) -> None:
    from simone.providers.documents._store import build_where, project_of, unpack_row

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)])) as index:
            await index.index_paths([tree], project="alpha")
            table = index.collection
            assert table is not None
            hits = await table.search_terms(
                "budget report refund install", build_where(["", "alpha"], {}), 10
            )
            assert len(hits) >= 2 and all(hit.row is not None for hit in hits)
            ids = [hit.id for hit in hits]
            hints = {hit.id: hit.row for hit in hits if hit.row is not None}
            visible = ["", "alpha"]
            where = build_where(visible, {})
            by_id = await table.fetch(ids, where)
            assert set(by_id) == set(ids)
            assert await table.fetch(ids, where, rows=hints, projects=visible) == by_id
            # Stale hints (rows moved by a compaction): each taken row's id is checked, and the
            # ids whose row does not match are read by id instead.
            swapped = dict(zip(ids, [hints[i] for i in reversed(ids)], strict=True))
            assert await table.fetch(ids, where, rows=swapped, projects=visible) == by_id
            gone = {i: 10**12 + n for n, i in enumerate(ids)}
            assert await table.fetch(ids, where, rows=gone, projects=visible) == by_id
            # Taken rows outside the caller's projects are not returned, whatever the hint says.
            assert await table.fetch(ids, build_where([""], {}), rows=hints, projects=[""]) == {}
            # Rows read by the search itself are the rows a read by id gives, with the same project.
            read = await table.search_terms("budget report refund install", where, 10, read=True)
            assert [hit.id for hit in read] == ids
            assert {hit.id: unpack_row(hit.columns or {}) for hit in read} == by_id
            assert {project_of(hit.columns or {}) for hit in read} == {"alpha"}
            vector = (await index.chain.embed(["budget report"], space=table.space, kind="query"))[0]
            near = await table.search_vector(vector, where, 5, exact=True, read=True)
            assert near and all(hit.columns is not None for hit in near)
            assert {hit.id: unpack_row(hit.columns or {}) for hit in near} == await table.fetch(
                [hit.id for hit in near], where
            )

    anyio.run(go)


def test_a_damaged_card_is_a_typed_error(tmp_path: Path, tree: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)])) as index:
            await index.index_paths([tree])
            table = index.collection
            assert table is not None
            await table.table.update({"card": "markdown"})  # altered outside simone
            with pytest.raises(ProviderUnavailable, match="damaged card column"):
                await _search(index, "quarterly budget", SearchMode.LEXICAL)

    anyio.run(go)


def test_rebuild_ann_before_any_index_run_is_a_clear_error(tmp_path: Path) -> None:
    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([HashEmbedder(16)])) as index:
            with pytest.raises(ProviderNotConfigured, match="simone index PATH"):
                await index.rebuild_ann()

    anyio.run(go)


def test_changed_lexical_analysis_re_analyses_every_file_without_re_embedding(
    tmp_path: Path, tree: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    from simone.runtime.text import Analyzer

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx])) as index:
            first = await index.index_paths([tree])
        ignoring = Analyzer(ignore_words=["quarterly"])
        assert ignoring.signature != Analyzer().signature
        async with _index(tmp_path, EmbeddingChain([onnx]), analyzer=ignoring) as index:
            again = await index.index_paths([tree])
            assert again.files_indexed == first.files_indexed and again.files_unchanged == 0
            assert again.embedded == 0 and again.reused == first.chunks
            assert index.collection is not None
            terms = (await index.collection.rows(columns=["terms"]))["terms"].to_pylist()
            assert not any("quarterli" in t.split() or "quarterly" in t.split() for t in terms)
            unchanged = await index.index_paths([tree])
            assert unchanged.files_unchanged == first.files_indexed

    anyio.run(go)


class _Steered:
    """Hash vectors, except that texts holding ``near`` get the query's own vector (a test double
    whose semantic leg is sure of another document than the lexical leg)."""

    def __init__(self, near: str, query: str) -> None:
        self.inner = HashEmbedder(32, model="steered")
        self.near = near
        self.query = query

    @property
    def space(self) -> EmbeddingSpace:
        return self.inner.space

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        vectors = self.inner.vectors(texts)
        if kind == "document":
            (query_vector,) = self.inner.vectors([self.query])
            for row, text in enumerate(texts):
                if self.near in text:
                    vectors[row] = query_vector
        return vectors


def _pin_case(tmp_path: Path) -> tuple[Path, str, _Steered]:
    """Five files, a question the lexical leg answers with restart.md and a semantic leg steered to kestrel.md."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "restart.md").write_text(
        "# Restarts\n\nThe zephyr cluster restarts at 03:00 after the kestrel backup.\n"
    )
    (docs / "kestrel.md").write_text("# Kestrel\n\nThe kestrel backup copies the zephyr volumes to tape.\n")
    (docs / "lunch.md").write_text("# Canteen\n\nLunch is served from noon; the menu changes weekly.\n")
    (docs / "trains.md").write_text("# Travel\n\nTrains to the coast leave hourly from platform four.\n")
    (docs / "desk.md").write_text("# Desks\n\nHot desks are booked a day ahead at the front desk.\n")
    query = "zephyr cluster restarts kestrel backup"
    return docs, query, _Steered(near="kestrel backup copies", query=query)


def test_a_lexical_hit_the_lexical_leg_is_sure_of_stays_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, query, steered = _pin_case(tmp_path)  # the semantic leg's sure pick: kestrel.md

    async def go() -> Any:
        async with _index(tmp_path, EmbeddingChain([steered])) as index:
            await index.index_paths([docs])
            return await _search(index, query, SearchMode.HYBRID)

    result = anyio.run(go)
    votes = result.details["votes"]
    first = result.evidence[0]
    assert first.metadata["leg_ranks"]["lexical"] == 1 and first.locator.split("#")[0].endswith("restart.md")
    assert votes["lexical"]["pinned"] == first.metadata["chunk_id"]
    assert votes["semantic"]["weight"] == 1.0 and votes["lexical"]["weight"] < 1.0  # outvoted, yet first
    assert result.evidence[1].locator.split("#")[0].endswith("kestrel.md")
    assert first.score == result.evidence[1].score  # tied with the fused head it displaced

    # Without the pin, the sure semantic leg's pick leads.
    monkeypatch.setattr("simone.providers.documents._provider.LEXICAL_PIN", None)
    unpinned = anyio.run(go)
    assert unpinned.evidence[0].locator.split("#")[0].endswith("kestrel.md")
    assert "pinned" not in unpinned.details["votes"]["lexical"]


@pytest.mark.parametrize("lexical_top_share", [0.4, 0.6])
def test_the_pin_yields_only_to_a_surer_leg_on_the_lexical_legs_footing(
    tmp_path: Path, lexical_top_share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A space calibrated on this collection whose leg found the own chunk first at least as often as
    the lexical leg (0.5 against 0.4) reads on the lexical leg's footing (a shifted curve): when it is
    surer, the weights decide the head. One that did worse (0.5 against 0.6) keeps the pin."""
    docs, query, steered = _pin_case(tmp_path)
    sharpness: list[float] = []
    weigh = WeightedRRF.from_confidence

    def spy(log_odds: dict[str, float], **kw: Any) -> WeightedRRF:
        sharpness.append(kw["sharpness"])
        return weigh(log_odds, **kw)

    monkeypatch.setattr(_provider.WeightedRRF, "from_confidence", staticmethod(spy))

    async def go() -> Any:
        async with _index(tmp_path, EmbeddingChain([steered])) as index:
            await index.index_paths([docs])
            table = index.collection
            assert table is not None
            table.calibration = SpaceCalibration(
                space=table.space.key, margin=0.05, band=0.1, floor=0.9, questions=40, absent=20,
                answered=0.9, absent_empty=0.8, default_answered=0.9, default_absent_empty=0.5,
                chunks=5, fitted_at=1.0, vote_intercept=2.0, vote_slope=10.0, top_share=0.5,
                vote_shift=-1.0, lexical_top_share=lexical_top_share,
            )  # fmt: skip
            return await _search(index, query, SearchMode.HYBRID)

    result = anyio.run(go)
    votes = result.details["votes"]
    assert votes["semantic"]["weight"] == 1.0 and votes["lexical"]["weight"] < 1.0
    first = result.evidence[0].locator.split("#")[0]
    if lexical_top_share < 0.5:
        assert votes["semantic"]["curve"] == "shifted"
        assert "pinned" not in votes["lexical"] and first.endswith("kestrel.md")
    else:
        assert votes["semantic"]["curve"] == "fitted"
        assert "pinned" in votes["lexical"] and first.endswith("restart.md")
    # a shifted curve is read with the gentler sharpness
    assert sharpness == [SHIFTED_VOTE_SHARPNESS if lexical_top_share < 0.5 else VOTE_SHARPNESS]
