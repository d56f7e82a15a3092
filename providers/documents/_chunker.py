"""Structure-aware chunking sized with the embedding model's own tokenizer.

A document is cut into sections at Markdown headings (HTML arrives as Markdown from trafilatura; PDF
pages, slides, sheets and the headings of office, e-book, e-mail, notebook, reStructuredText and AsciiDoc
files arrive as Markdown from the format readers, tables as pipe tables, one row a line),
each section into blocks (paragraphs, fenced code blocks, runs of code lines), and blocks are packed
greedily into chunks whose *embedded* text — a short context line (title › heading path) plus the
chunk — fits the model's window, special tokens included. A block too long for one chunk is split
by lines, a line too long by sentences, a sentence too long by token offsets. Consecutive chunks of a section share a small overlap
of whole lines. Every chunk keeps the exact 1-based line range of the text it holds.

A pipe table too long for one chunk is split only between rows, and every chunk after its first
starts with the table's header and delimiter lines again (counted in its tokens), so each chunk reads
as a table with its column names; rows are not overlapped. The repeated header lies outside the
chunk's line range, which stays that of the rows it holds: ``text`` is the header line, the delimiter
line, then exactly lines ``line_start…line_end``. A single row too long for a chunk is cut by
sentences like any long line, and its pieces go without the header; a row that fits a chunk only
without the header, or a header wider than :data:`TABLE_HEADER_MAX_SHARE` of the chunk, goes without
it too.

Token counts come from the model's real tokenizer (WordPiece for all-MiniLM-L6-v2, 256 tokens):
a chunk sized by characters would be silently truncated by the model and its tail never embedded.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Protocol

from simone.providers.documents._loaders import MARKDOWN_KINDS, LoadedDocument
from simone.runtime import ConfigError

CHUNKER_VERSION = 5
"""Bumped whenever the same text would be chunked differently (files are then re-chunked).

3: titles come from the first heading outside code fences (a fenced ``#`` comment titled files before),
and chunks carry the title in their embedded context line.
4: PDF pages, slides, sheets and office, e-book, e-mail, notebook, reStructuredText and AsciiDoc
headings are sections (the format readers); PDF tables are tables.
5: a table too long for one chunk is cut between rows only, its header repeated in every chunk."""

CONTEXT_MAX_TOKENS = 24
"""The context line (title › headings) is cut to this many tokens so the chunk keeps most room."""

HEADING_SEPARATOR = " › "


class TokenCounter(Protocol):
    """Counts tokens the way the embedding model does."""

    @property
    def special_tokens(self) -> int:
        """Tokens the model adds around every input (``[CLS]`` and ``[SEP]`` for BERT)."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` without special tokens."""
        ...

    def split(self, text: str, max_tokens: int) -> list[str]:
        """``text`` cut at token boundaries into pieces of at most ``max_tokens`` tokens."""
        ...

    def token_starts(self, text: str) -> Sequence[int] | None:
        """Start offsets of ``text``'s tokens, or ``None`` when spans cannot be counted from them.

        A counter returns offsets only when its counts add up over text split at whitespace and
        punctuation (a BERT pre-tokenizer does: no token crosses such a boundary), so the chunker
        tokenises each document once and counts every line, sentence and chunk from the offsets.
        ``None`` makes the chunker tokenise each of those pieces on its own.
        """
        ...


TOKEN_BLOCK_CHARS = 65_536
"""Characters (rounded up to a line end) tokenised at once when a document's offsets are taken."""

_ADDITIVE_PIPELINE = ("BertNormalizer", "BertPreTokenizer", "WordPiece")
"""Normalizer, pre-tokenizer and model whose token counts add up over whitespace/punctuation splits."""


class HFTokenCounter:
    """A :class:`TokenCounter` over a Hugging Face ``tokenizers.Tokenizer``.

    The tokenizer is copied with padding and truncation turned off, so counts are real lengths.
    """

    def __init__(self, tokenizer: object) -> None:
        from tokenizers import Tokenizer

        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(tokenizer).__name__}")
        copy = Tokenizer.from_str(tokenizer.to_str())
        copy.no_padding()
        copy.no_truncation()
        self._tokenizer = copy
        self._special = copy.num_special_tokens_to_add(False)
        pipeline = tuple(type(part).__name__ for part in (copy.normalizer, copy.pre_tokenizer, copy.model))
        self._additive = pipeline == _ADDITIVE_PIPELINE

    @property
    def special_tokens(self) -> int:
        """Tokens added around every input."""
        return self._special

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts without special tokens."""
        if not texts:
            return []
        # encode_batch_fast (tokenizers >= 0.20) skips the character offsets counts do not need
        # (~30 % less time); the chunker counts through token_starts where it can.
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        encodings = encode(list(texts), add_special_tokens=False)
        return [len(encoding.ids) for encoding in encodings]

    def token_starts(self, text: str) -> Sequence[int] | None:
        """Character offsets where ``text``'s tokens start (BERT-style tokenizers), else ``None``.

        Tokenised in blocks of whole lines (about :data:`TOKEN_BLOCK_CHARS` characters; a newline is a
        boundary no token crosses), so a 10 MB file never holds millions of offset tuples at once;
        the offsets are kept as machine integers.
        """
        if not self._additive:
            return None
        starts = array("q")
        begin = 0
        while begin < len(text):
            end = text.find("\n", begin + TOKEN_BLOCK_CHARS) if len(text) - begin > TOKEN_BLOCK_CHARS else -1
            end = len(text) if end == -1 else end
            encoding = self._tokenizer.encode(text[begin:end], add_special_tokens=False)
            starts.extend(begin + start for start, _ in encoding.offsets)
            begin = end
        return starts

    def split(self, text: str, max_tokens: int) -> list[str]:
        """Cut ``text`` at token boundaries (character offsets of the tokens)."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        offsets = encoding.offsets
        pieces: list[str] = []
        for start in range(0, len(offsets), max_tokens):
            window = offsets[start : start + max_tokens]
            begin = window[0][0] if start else 0
            end = offsets[start + max_tokens][0] if start + max_tokens < len(offsets) else len(text)
            piece = text[begin:end].strip()
            if piece:
                pieces.append(piece)
        return pieces


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of a document, as stored in the index.

    Attributes:
        id: sha256 of project, path, line range and digest (stable while the text stays put).
        project: the project it was indexed for (``""``: visible to every project).
        path: the file's absolute POSIX path.
        title: the document title.
        heading: the heading path of its section (outermost first).
        text: the chunk's text, exactly the lines ``line_start``…``line_end`` of the document
            (a piece of one line when a single line was too long); a later chunk of a long table
            starts with the table's header and delimiter lines, repeated from above its range.
        embed_text: what is embedded: the context line (when the text does not already carry it)
            and the text.
        line_start: 1-based first line.
        line_end: 1-based last line (inclusive).
        ordinal: position of the chunk in its document.
        tokens: model tokens of ``embed_text`` including special tokens.
        digest: sha256 of ``embed_text`` — the embedding cache key within a space.
        file_digest: sha256 of the file's bytes and the chunker's signature (see :meth:`Chunker.state`).
        kind: the document kind; ``language`` the source language for code.
    """

    id: str
    project: str
    path: str
    title: str
    heading: tuple[str, ...]
    text: str
    embed_text: str
    line_start: int
    line_end: int
    ordinal: int
    tokens: int
    digest: str
    file_digest: str
    kind: str
    language: str

    @property
    def locator(self) -> str:
        """Where the chunk is: ``path#page=N`` in a PDF, ``path#slide=N`` in a deck, else ``path#Lstart-Lend``."""
        return chunk_locator(self.path, self.kind, self.heading, self.line_start, self.line_end)


_PAGE_HEADING = re.compile(r"^Page (\d+)$")
_SLIDE_HEADING = re.compile(r"^Slide (\d+)(?::|$)")


def chunk_locator(path: str, kind: str, heading: Sequence[str] | str, line_start: int, line_end: int) -> str:
    """A chunk's locator from what is stored with it (``heading``: the path, or joined by ``' › '``).

    A PDF's sections are its pages (``## Page 3``) and a deck's its slides (``## Slide 3: Title``), so
    their chunks say ``#page=3`` (the fragment PDF viewers open) and ``#slide=3``; other chunks give
    their 1-based line range in the document's text.
    """
    parts = heading.split(HEADING_SEPARATOR) if isinstance(heading, str) else heading
    if kind in ("pdf", "pptx"):
        pattern, name = (_PAGE_HEADING, "page") if kind == "pdf" else (_SLIDE_HEADING, "slide")
        for part in reversed(parts):
            found = pattern.match(part)
            if found:
                return f"{path}#{name}={found[1]}"
    return f"{path}#L{line_start}-L{line_end}"


def chunk_id(project: str, path: str, line_start: int, line_end: int, digest: str) -> str:
    """The stable chunk id."""
    raw = f"{project}\x1f{path}\x1f{line_start}\x1f{line_end}\x1f{digest}"
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def text_digest(text: str) -> str:
    """sha256 of exactly the text that is embedded."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+(?=\S)|(?<=[。！？])")


@dataclass(slots=True)
class _Section:
    start: int
    end: int
    heading: tuple[str, ...]
    blocks: list[tuple[int, int]]
    body_lines: int = 0


class Chunker:
    """Splits documents into chunks that fit the embedding model's window.

    Args:
        counter: the model's tokenizer as a :class:`TokenCounter`.
        max_tokens: the model's window (256 for all-MiniLM-L6-v2), special tokens included.
        overlap_tokens: at most this many tokens of whole lines repeated from the previous chunk.
        terms_signature: what else derives the stored rows from the text (the document index passes
            its analyzer's signature, so changed lexical analysis re-analyses every file once).
    """

    def __init__(
        self,
        counter: TokenCounter,
        *,
        max_tokens: int = 256,
        overlap_tokens: int = 32,
        terms_signature: str = "",
    ) -> None:
        room = max_tokens - counter.special_tokens
        if room < 16:
            raise ConfigError(f"index.chunk_tokens={max_tokens} leaves no room for text; use at least 32")
        if overlap_tokens < 0 or overlap_tokens >= room // 2:
            raise ConfigError(
                f"index.chunk_overlap_tokens={overlap_tokens} must be under half of the chunk "
                f"({room // 2} for chunk_tokens={max_tokens}); lower the overlap"
            )
        self.counter = counter
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.terms_signature = terms_signature

    @property
    def signature(self) -> str:
        """What decides the chunks besides the text: a file is re-chunked when this changes."""
        base = f"chunker-v{CHUNKER_VERSION}:{self.max_tokens}:{self.overlap_tokens}"
        return f"{base}:terms-{self.terms_signature}" if self.terms_signature else base

    def chunk(self, document: LoadedDocument, *, project: str = "") -> list[Chunk]:
        """The chunks of ``document``, in order."""
        lines = document.text.split("\n")
        spans = _DocumentTokens(self.counter, document.text, lines)
        prefix = [0, *accumulate(spans.line_counts())]
        if document.kind in MARKDOWN_KINDS:
            sections = _markdown_sections(lines)
        else:
            sections = [_Section(0, len(lines) - 1, (), _paragraph_blocks(lines, 0, len(lines) - 1))]
        contexts, context_counts = self._contexts(document.title, sections)
        chunks: list[Chunk] = []
        counts: list[int | None] = []
        for section, context, context_tokens in zip(sections, contexts, context_counts, strict=True):
            budget = self.max_tokens - self.counter.special_tokens - context_tokens - (1 if context else 0)
            budget = max(budget, 16)
            for start, end, piece, count in self._pack(section, lines, prefix, budget, spans):
                if piece is None:
                    text = "\n".join(lines[start : end + 1]).strip("\n")
                    count = spans.exact(spans.line_span(start, end))
                else:
                    text = piece
                if not text.strip():
                    continue
                embed_text = self._embed_text(context, text)
                if count is not None and len(embed_text) > len(text):
                    count += context_tokens  # the context and a newline come before the text
                counts.append(count)
                chunks.append(
                    self._make(document, project, section, text, embed_text, start, end, len(chunks))
                )
        # Counts not derived from the document's tokens (another tokenizer, or a piece cut inside
        # a word) come from tokenising the embedded text itself: a chunk's count is always exact.
        unknown = [position for position, count in enumerate(counts) if count is None]
        for position, count in zip(
            unknown, self.counter.count_many([chunks[p].embed_text for p in unknown]), strict=True
        ):
            counts[position] = count
        special = self.counter.special_tokens
        return [
            _with_tokens(chunk, count + special)
            for chunk, count in zip(chunks, (c or 0 for c in counts), strict=True)
        ]

    def _contexts(self, title: str, sections: list[_Section]) -> tuple[list[str], list[int]]:
        """Each section's context line (title › headings, cut to a few tokens) and its token count."""
        contexts: list[str] = []
        for section in sections:
            parts: list[str] = []
            for part in (title, *section.heading):
                part = part.strip()
                if part and (not parts or parts[-1] != part):
                    parts.append(part)
            contexts.append(HEADING_SEPARATOR.join(parts))
        counts = self.counter.count_many(contexts)
        for position, count in enumerate(counts):
            if count > CONTEXT_MAX_TOKENS:
                contexts[position] = self.counter.split(contexts[position], CONTEXT_MAX_TOKENS)[0]
                counts[position] = self.counter.count_many([contexts[position]])[0]
        return contexts, counts

    @staticmethod
    def _embed_text(context: str, text: str) -> str:
        if not context:
            return text
        first = text.split("\n", 1)[0].lstrip("# ").strip()
        # The first chunk of a section usually starts with its own heading; repeating the context
        # then adds only the title, which the text may well hold already.
        if first and context.endswith(first) and context.count(HEADING_SEPARATOR) == 0:
            return text
        return f"{context}\n{text}"

    def _pack(
        self, section: _Section, lines: list[str], prefix: list[int], budget: int, spans: _DocumentTokens
    ) -> list[_Piece]:
        def tokens(start: int, end: int) -> int:
            return prefix[end + 1] - prefix[start]

        out: list[_Piece] = []
        current: tuple[int, int] | None = None
        for block_start, block_end in section.blocks:
            if tokens(block_start, block_end) > budget:
                pieces = self._split_block(block_start, block_end, lines, prefix, budget, spans)
                if current is not None:
                    merged = self._merge_head(
                        current, pieces[0], lines, prefix, budget - tokens(*current), spans
                    )
                    if merged is not None:
                        pieces[0] = merged
                    else:
                        out.append((current[0], current[1], None, None))
                    current = None
                out.extend(pieces)
                continue
            if current is None:
                current = (block_start, block_end)
            elif tokens(current[0], block_end) <= budget:
                current = (current[0], block_end)
            else:
                out.append((current[0], current[1], None, None))
                overlap = self._overlap_start(current, lines, prefix)
                if overlap is not None and tokens(overlap, block_end) <= budget:
                    current = (overlap, block_end)
                else:
                    current = (block_start, block_end)
        if current is not None:
            out.append((current[0], current[1], None, None))
        return out

    def _overlap_start(self, chunk: tuple[int, int], lines: list[str], prefix: list[int]) -> int | None:
        if self.overlap_tokens == 0:
            return None
        start, end = chunk
        best: int | None = None
        index = end
        while index > start and prefix[end + 1] - prefix[index] <= self.overlap_tokens:
            if lines[index].strip():
                best = index
            index -= 1
        return best

    def _split_block(
        self,
        start: int,
        end: int,
        lines: list[str],
        prefix: list[int],
        budget: int,
        spans: _DocumentTokens,
    ) -> list[_Piece]:
        """A block over the budget, packed by whole lines; a table by rows under its repeated header.

        A table's header and delimiter lines travel with its first row, and every later chunk of
        the table starts with them again (see :func:`_table_units`); its rows are not overlapped.
        """

        def tokens(first: int, last: int) -> int:
            return prefix[last + 1] - prefix[first]

        def cost(first: int, last: int, header: int | None) -> int:
            return tokens(first, last) + (tokens(header, header + 1) if header is not None else 0)

        out: list[_Piece] = []
        current: tuple[int, int, int | None] | None = None  # first line, last line, repeated header

        def close() -> None:
            if current is not None:
                out.append(self._table_piece(current, lines, spans))

        for unit_start, unit_end, header in _table_units(lines, start, end, prefix, budget):
            if tokens(unit_start, unit_end) > budget:  # a single line (a header unit is ungrouped)
                close()
                current = None
                out.extend(
                    (unit_start, unit_start, piece, piece_count)
                    for piece, piece_count in self._split_line(
                        lines[unit_start], budget, spans.line_offset(unit_start), spans
                    )
                )
                continue
            if current is not None and cost(current[0], unit_end, current[2]) <= budget:
                current = (current[0], unit_end, current[2])
                continue
            previous = current
            close()
            if header is not None:
                # A table's row starts the chunk: its header comes first when both fit.
                fits = cost(unit_start, unit_end, header) <= budget
                current = (unit_start, unit_end, header if fits else None)
                continue
            overlap = (
                self._overlap_start((previous[0], previous[1]), lines, prefix)
                if previous is not None
                else None
            )
            if overlap is not None and tokens(overlap, unit_end) <= budget:
                current = (overlap, unit_end, None)
            else:
                current = (unit_start, unit_end, None)
        close()
        return out

    def _table_piece(
        self, chunk: tuple[int, int, int | None], lines: list[str], spans: _DocumentTokens
    ) -> _Piece:
        """Lines ``first…last``, after the table header (and delimiter) at ``header`` when one is set."""
        first, last, header = chunk
        if header is None:
            return (first, last, None, None)
        text = "\n".join([*lines[header : header + 2], *lines[first : last + 1]]).strip("\n")
        head, body = (
            spans.exact(spans.line_span(header, header + 1)),
            spans.exact(spans.line_span(first, last)),
        )
        return (first, last, text, None if head is None or body is None else head + body)

    def _merge_head(
        self,
        head: tuple[int, int],
        piece: _Piece,
        lines: list[str],
        prefix: list[int],
        room: int,
        spans: _DocumentTokens,
    ) -> _Piece | None:
        """``head`` (whole lines, e.g. a heading) joined with the first piece of a split block, if it fits."""
        start, end, text, count = piece
        if text is None:
            whole = spans.exact(spans.line_span(start, end))
            if whole is None:
                whole = self.counter.count_many(["\n".join(lines[start : end + 1])])[0]
            return None if whole > room else (head[0], end, None, None)
        line = lines[start]
        lead = line[: len(line) - len(line.lstrip())]
        if not line.lstrip().startswith(text):
            return None
        if count is None:
            if self.counter.count_many([text])[0] > room:
                return None
            merged_count = None
        elif count > room:
            return None
        else:
            merged_count = prefix[start] - prefix[head[0]] + count  # whole lines, then the piece
        return (head[0], start, "\n".join(lines[head[0] : start]) + "\n" + lead + text, merged_count)

    def _split_line(
        self, line: str, budget: int, offset: int, spans: _DocumentTokens
    ) -> list[tuple[str, int | None]]:
        """A line over the budget, packed by sentences (with a one-sentence overlap when small).

        Each piece is an exact slice of the line, so it can be found in the document again; it
        comes with its token count when that is known without tokenising it again. ``offset`` is
        where the line starts in the document.
        """
        bounds: list[tuple[int, int]] = []
        begin = len(line) - len(line.lstrip())
        for match in _SENTENCE_END.finditer(line):
            if match.start() > begin:
                bounds.append((begin, match.start()))
            begin = match.end()
        if line[begin:].strip():
            bounds.append((begin, len(line.rstrip())))
        counts = spans.count([(offset + a, offset + b) for a, b in bounds])
        pieces: list[tuple[str, int | None]] = []

        def close(group: list[int]) -> None:
            first, last = bounds[group[0]][0], bounds[group[-1]][1]
            pieces.append((line[first:last], spans.exact((offset + first, offset + last))))

        current: list[int] = []
        used = 0
        for position, count in enumerate(counts):
            if count > budget:
                if current:
                    close(current)
                    current, used = [], 0
                # Cut inside the sentence at token boundaries (maybe mid-word): counted again later.
                a, b = bounds[position]
                pieces.extend((piece, None) for piece in self.counter.split(line[a:b], budget))
                continue
            if current and used + count > budget:
                close(current)
                last = current[-1]
                carry = counts[last] <= self.overlap_tokens and counts[last] + count <= budget
                current, used = ([last], counts[last]) if carry else ([], 0)
            current.append(position)
            used += count
        if current:
            close(current)
        return pieces

    def state(self, document_digest: str) -> str:
        """The per-file state stored with its chunks: the file's digest under this chunker."""
        return hashlib.sha256(f"{document_digest}\x1f{self.signature}".encode()).hexdigest()

    def _make(
        self,
        document: LoadedDocument,
        project: str,
        section: _Section,
        text: str,
        embed_text: str,
        start: int,
        end: int,
        ordinal: int,
    ) -> Chunk:
        digest = text_digest(embed_text)
        file_state = self.state(document.digest)
        line_start, line_end = start + 1, end + 1
        return Chunk(
            id=chunk_id(project, document.path, line_start, line_end, digest),
            project=project,
            path=document.path,
            title=document.title,
            heading=section.heading,
            text=text,
            embed_text=embed_text,
            line_start=line_start,
            line_end=line_end,
            ordinal=ordinal,
            tokens=0,
            digest=digest,
            file_digest=file_state,
            kind=document.kind,
            language=document.language,
        )


_Piece = tuple[int, int, str | None, int | None]
"""A packed chunk: first and last line, its text when it is not those whole lines, its token
count when known without tokenising it again (``None``: counted from the embedded text)."""


class _DocumentTokens:
    """Token counts of a document's spans, from one tokenization when the counter allows.

    With offsets from :meth:`TokenCounter.token_starts`, a span's count is the number of tokens
    starting inside it — exact for spans that begin and end at whitespace or punctuation (lines,
    sentences, runs of them). Without them every count tokenises its span's text.
    """

    def __init__(self, counter: TokenCounter, text: str, lines: list[str]) -> None:
        self._counter = counter
        self._text = text
        self._lines = lines
        self._offsets = [0, *accumulate(len(line) + 1 for line in lines)]
        self._starts = counter.token_starts(text)

    @property
    def additive(self) -> bool:
        """Whether counts come from the document's tokens (line counts then add up exactly)."""
        return self._starts is not None

    def line_offset(self, index: int) -> int:
        """Where line ``index`` starts in the document."""
        return self._offsets[index]

    def line_span(self, start: int, end: int) -> tuple[int, int]:
        """The document span of lines ``start``…``end`` (without the last newline)."""
        return self._offsets[start], self._offsets[end + 1] - 1

    def line_counts(self) -> list[int]:
        """Tokens per line."""
        if self._starts is None:
            return self._counter.count_many(self._lines)
        return self.count([self.line_span(index, index) for index in range(len(self._lines))])

    def count(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        """Tokens in each ``(begin, end)`` span, which must begin and end at whitespace or punctuation."""
        starts = self._starts
        if starts is None:
            return self._counter.count_many([self._text[begin:end] for begin, end in spans])
        return [bisect_left(starts, end) - bisect_left(starts, begin) for begin, end in spans]

    def exact(self, span: tuple[int, int]) -> int | None:
        """The span's count when it comes from the document's tokens, else ``None`` (count its text)."""
        return self.count([span])[0] if self.additive else None


def _with_tokens(chunk: Chunk, tokens: int) -> Chunk:
    return replace(chunk, tokens=tokens)


_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$")

TABLE_HEADER_MAX_SHARE = 0.5
"""A table header (with its delimiter line) is repeated only while it takes at most this share of a
chunk's budget; a wider header would leave too little room for rows, so its rows go on without it."""


def _table_units(
    lines: list[str], start: int, end: int, prefix: list[int], budget: int
) -> list[tuple[int, int, int | None]]:
    """Lines ``start…end`` as packing units ``(first, last, header)``.

    A unit is one line, except that a pipe table's header and delimiter lines form one unit with
    its first row (a chunk never ends on a header). Every later row of the table names the line of
    its header, which a chunk starting at that row repeats first. A unit over ``budget`` is
    returned line by line (the lines are then cut as any long line).
    """

    def tokens(first: int, last: int) -> int:
        return prefix[last + 1] - prefix[first]

    units: list[tuple[int, int, int | None]] = []
    index = start
    while index <= end:
        if not (index < end and _TABLE_ROW.match(lines[index]) and _TABLE_RULE.match(lines[index + 1])):
            units.append((index, index, None))
            index += 1
            continue
        header = index
        rows = header + 2
        while rows <= end and _TABLE_ROW.match(lines[rows]):
            rows += 1
        last_row = rows - 1
        repeat = header if tokens(header, header + 1) <= budget * TABLE_HEADER_MAX_SHARE else None
        if last_row >= header + 2 and tokens(header, header + 2) <= budget:
            units.append((header, header + 2, None))
        elif tokens(header, header + 1) <= budget:
            units.append((header, header + 1, None))
            if last_row >= header + 2:
                units.append((header + 2, header + 2, repeat))
        else:
            units += [(header, header, None), (header + 1, header + 1, None)]
            if last_row >= header + 2:
                units.append((header + 2, header + 2, repeat))
        units.extend((row, row, repeat) for row in range(header + 3, last_row + 1))
        index = last_row + 1
    return units


def _paragraph_blocks(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    blocks: list[tuple[int, int]] = []
    block_start: int | None = None
    for index in range(start, end + 1):
        if lines[index].strip():
            if block_start is None:
                block_start = index
        elif block_start is not None:
            blocks.append((block_start, index - 1))
            block_start = None
    if block_start is not None:
        blocks.append((block_start, end))
    return blocks


def _markdown_sections(lines: list[str]) -> list[_Section]:
    sections: list[_Section] = [_Section(0, -1, (), [])]
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    block_start: int | None = None

    def close_block(index: int) -> None:
        nonlocal block_start
        if block_start is not None:
            sections[-1].blocks.append((block_start, index))
            block_start = None

    for index, line in enumerate(lines):
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) <= set(fence[0]):
                fence = None
                close_block(index)
            continue
        fence_match = _FENCE.match(line)
        if fence_match:
            close_block(index - 1)
            block_start = index
            fence = fence_match.group(1)
            sections[-1].body_lines += 1
            continue
        heading = _ATX.match(line)
        if heading and heading.group(2).strip():
            close_block(index - 1)
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading.group(2).strip()))
            path = tuple(text for _, text in stack)
            previous = sections[-1]
            previous.end = index - 1
            if previous.body_lines == 0 and previous.blocks:
                # A heading with nothing under it travels with the next section.
                sections[-1] = _Section(previous.start, -1, path, list(previous.blocks))
            else:
                sections.append(_Section(index, -1, path, []))
            sections[-1].blocks.append((index, index))
            continue
        if line.strip():
            sections[-1].body_lines += 1
            if block_start is None:
                block_start = index
        else:
            close_block(index - 1)
    close_block(len(lines) - 1)
    sections[-1].end = len(lines) - 1
    return [section for section in sections if section.blocks]
