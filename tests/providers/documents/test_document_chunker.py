"""The chunker, with the real all-MiniLM-L6-v2 tokenizer: windows, structure, line ranges, overlap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from simone.providers.documents import Chunk, Chunker, HFTokenCounter, LoadedDocument
from simone.providers.documents._chunker import chunk_id, text_digest
from simone.providers.embeddings import load_tokenizer
from simone.runtime import ConfigError

TOKENIZER = load_tokenizer(max_tokens=None, pad=False)
COUNTER = HFTokenCounter(TOKENIZER)


def _doc(text: str, kind: str = "markdown", title: str = "Doc") -> LoadedDocument:
    return LoadedDocument(path="/p/doc.md", kind=kind, title=title, text=text, digest="d" * 64)  # type: ignore[arg-type]


def _model_tokens(text: str) -> int:
    return len(TOKENIZER.encode(text, add_special_tokens=True).ids)


def _check_invariants(doc: LoadedDocument, chunks: list[Chunk], window: int = 256) -> None:
    lines = doc.text.split("\n")
    for chunk in chunks:
        assert _model_tokens(chunk.embed_text) <= window, chunk
        assert chunk.tokens == _model_tokens(chunk.embed_text)
        span = "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        if chunk.text not in span:  # a later chunk of a table: its header and rule, then its lines
            header, rule, rows = chunk.text.split("\n", 2)
            above = lines[: chunk.line_start - 1]
            assert any(above[i : i + 2] == [header, rule] for i in range(len(above) - 1)), chunk
            assert rows == span, (chunk.line_start, chunk.line_end)
        assert chunk.digest == text_digest(chunk.embed_text)
        assert chunk.id == chunk_id(chunk.project, chunk.path, chunk.line_start, chunk.line_end, chunk.digest)
        assert chunk.embed_text.endswith(chunk.text)


def test_the_counter_copies_the_tokenizer_without_truncation_or_padding() -> None:
    padded = load_tokenizer(max_tokens=128, pad=True)
    counter = HFTokenCounter(padded)
    long_text = "word " * 400
    assert counter.count_many([long_text]) == [400]
    assert counter.special_tokens == 2
    assert padded.truncation is not None  # the original is left as it was


def test_sections_follow_headings_and_keep_their_path() -> None:
    text = "# Title\n\nIntro paragraph.\n\n## Setup\n\n### Linux\n\nUse apt.\n\n## Usage\n\nRun it.\n"
    chunker = Chunker(COUNTER)
    chunks = chunker.chunk(_doc(text, title="Title"), project="p1")
    assert [c.heading for c in chunks] == [
        ("Title",),
        ("Title", "Setup", "Linux"),  # "## Setup" has only a heading: it travels with its child
        ("Title", "Usage"),
    ]
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 3), (5, 9), (11, 13)]
    assert chunks[0].embed_text == "# Title\n\nIntro paragraph."  # already starts with its title
    assert chunks[2].embed_text.startswith("Title › Usage\n## Usage")
    assert all(c.project == "p1" for c in chunks)
    assert [c.ordinal for c in chunks] == [0, 1, 2]
    _check_invariants(_doc(text, title="Title"), chunks)


def test_long_sections_are_split_under_the_window_with_overlap() -> None:
    paragraphs = [
        f"Paragraph {i} talks about topic {i} with enough words to take some room in the window."
        for i in range(60)
    ]
    text = "# Long\n\n" + "\n\n".join(paragraphs) + "\n"
    doc = _doc(text, title="Long")
    chunks = Chunker(COUNTER, max_tokens=128, overlap_tokens=24).chunk(doc)
    assert len(chunks) > 5
    _check_invariants(doc, chunks, window=128)
    for previous, current in zip(chunks, chunks[1:], strict=False):
        assert current.line_start <= previous.line_end, "consecutive chunks share their edge lines"
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.line_start, chunk.line_end + 1))
    non_blank = {i + 1 for i, line in enumerate(text.split("\n")) if line.strip()}
    assert non_blank <= covered


def test_a_code_fence_stays_whole_when_it_fits() -> None:
    fence = "```python\ndef f():\n\n    return 1\n```"
    text = "# T\n\n" + ("Some words here. " * 40) + "\n\n" + fence + "\n\nAfter.\n"
    doc = _doc(text, title="T")
    chunks = Chunker(COUNTER, max_tokens=128, overlap_tokens=0).chunk(doc)
    holding = [c for c in chunks if "def f():" in c.text]
    assert len(holding) == 1
    assert "```python\ndef f():\n\n    return 1\n```" in holding[0].text
    _check_invariants(doc, chunks, window=128)


def test_a_single_huge_line_is_cut_at_token_boundaries() -> None:
    line = " ".join(f"token{i}" for i in range(2000))
    doc = _doc(line, kind="text", title="one-line.txt")
    chunks = Chunker(COUNTER).chunk(doc)
    assert len(chunks) > 5
    assert all(c.line_start == c.line_end == 1 for c in chunks)
    assert len({c.id for c in chunks}) == len(chunks)
    _check_invariants(doc, chunks)
    assert "token0" in chunks[0].text and "token1999" in chunks[-1].text


def test_code_is_chunked_by_blank_line_blocks_with_the_file_name_as_context() -> None:
    functions = [f"def function_{i}(x):\n    return x * {i} + {i}\n" for i in range(80)]
    text = "\n".join(functions)
    doc = LoadedDocument(
        path="/p/m.py", kind="code", title="m.py", text=text, digest="e" * 64, language="python"
    )
    chunks = Chunker(COUNTER).chunk(doc)
    assert len(chunks) > 1
    _check_invariants(doc, chunks)
    assert all(c.embed_text.startswith("m.py\n") for c in chunks)
    for chunk in chunks:  # a block is never cut in the middle when it fits
        assert chunk.text.startswith("def ")


def test_ids_are_stable_and_change_with_the_text() -> None:
    text = "# A\n\nalpha\n\n# B\n\nbeta\n"
    first = Chunker(COUNTER).chunk(_doc(text))
    again = Chunker(COUNTER).chunk(_doc(text))
    assert [c.id for c in first] == [c.id for c in again]
    changed = Chunker(COUNTER).chunk(_doc(text.replace("beta", "gamma")))
    assert first[0].id == changed[0].id
    assert first[1].id != changed[1].id
    other_project = Chunker(COUNTER).chunk(_doc(text), project="x")
    assert first[0].id != other_project[0].id


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ConfigError, match="no room"):
        Chunker(COUNTER, max_tokens=10)
    with pytest.raises(ConfigError, match="lower the overlap"):
        Chunker(COUNTER, max_tokens=64, overlap_tokens=40)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300),
            st.sampled_from(
                ["# H1", "## H2", "```", "", "", "    code = 1", "- item", "| a | b |", "| --- | --- |"]
            ),
        ),
        max_size=60,
    )
)
def test_any_text_gives_chunks_inside_the_window(lines: list[str]) -> None:
    text = "\n".join(lines)
    doc = _doc(text)
    chunks = Chunker(COUNTER, max_tokens=64, overlap_tokens=8).chunk(doc)
    _check_invariants(doc, chunks, window=64)


def test_a_long_paragraph_line_is_packed_by_sentences_with_its_heading() -> None:
    sentences = [f"Finding number {i} was confirmed in a cohort of {i * 10} patients." for i in range(40)]
    text = "# Abstract title\n\n" + "  ".join(sentences) + "\n"
    doc = _doc(text, title="Abstract title")
    chunks = Chunker(COUNTER).chunk(doc)
    _check_invariants(doc, chunks)
    assert len(chunks) >= 2
    assert chunks[0].text.startswith("# Abstract title\n\nFinding number 0")
    assert (chunks[0].line_start, chunks[0].line_end) == (1, 3)
    for chunk in chunks:
        assert chunk.text.rstrip().endswith("patients."), "pieces end at a sentence boundary"
    assert all(c.embed_text.startswith("Abstract title\n") for c in chunks[1:])


class _RecountingCounter:
    """The real counter without token offsets: every span is tokenised on its own (the slow path)."""

    special_tokens = COUNTER.special_tokens
    count_many = staticmethod(COUNTER.count_many)
    split = staticmethod(COUNTER.split)

    def token_starts(self, text: str) -> None:
        return None


_WORDS = st.sampled_from(
    [
        "cell",
        "unbelievable",
        "naïve",
        "Zürich",
        "日本語",
        "です。",
        "x",
        "(a)",
        "e.g.",
        "1.5",
        "—",
        "😀",
        "\t",
        "",
        "Ωμέγα",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.lists(
                st.tuples(_WORDS, st.sampled_from([" ", " ", "  ", ". ", "! ", "; ", "。"])), max_size=80
            ).map(lambda parts: "".join(word + gap for word, gap in parts)),
            st.sampled_from(
                ["# Title", "## Part", "```", "", "    code()", "- item", "| k | v |", "| --- | --- |"]
            ),
        ),
        max_size=30,
    )
)
def test_counts_from_one_tokenization_match_tokenising_every_piece(lines: list[str]) -> None:
    # The chunker counts lines, sentences and chunks from the document's token offsets; the
    # chunks must be exactly those of counting each piece by tokenising it again.
    doc = _doc("\n".join(lines))
    fast = Chunker(COUNTER, max_tokens=48, overlap_tokens=6).chunk(doc)
    slow = Chunker(_RecountingCounter(), max_tokens=48, overlap_tokens=6).chunk(doc)
    assert fast == slow
    _check_invariants(doc, fast, window=48)


def test_offsets_are_offered_only_for_tokenizers_whose_counts_add_up() -> None:
    assert list(COUNTER.token_starts("Hello wörld, 日本") or []) == [0, 6, 11, 13, 14]
    from tokenizers import Tokenizer, models, pre_tokenizers

    other = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    assert HFTokenCounter(other).token_starts("any text") is None


def test_offsets_of_a_long_document_are_taken_in_blocks_of_whole_lines() -> None:
    from simone.providers.documents._chunker import TOKEN_BLOCK_CHARS

    line = "Zürich's naïve cell-biology 日本語 results (e.g. 1.5%) were unbelievable.\r"
    text = "\n".join(f"{i} {line}" for i in range(3 * TOKEN_BLOCK_CHARS // len(line)))
    assert len(text) > 2 * TOKEN_BLOCK_CHARS  # three blocks at least
    whole = [start for start, _ in TOKENIZER.encode(text, add_special_tokens=False).offsets]
    assert list(COUNTER.token_starts(text) or []) == whole
