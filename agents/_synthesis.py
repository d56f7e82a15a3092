"""Grounded synthesis: numbered citations with source and locator, every limitation stated, abstention.

Two paths produce an :class:`Answer`:

* :class:`ExtractiveModel` — the offline default. It splits the evidence into answering units
  (sentences, list items, table rows, definition lines, code blocks verbatim), picks those that best
  cover the question's terms (the shared lexical analysis, IDF-weighted, greedy on new coverage; own
  memory first; by meaning too when asked to), cites each from [1] and says why it chose each.
* :func:`finalize` — for a chat model's text: ``[n]`` markers are checked against the evidence that was
  really shown; unknown numbers are removed and reported, never turned into a source.

Without evidence both abstain: the answer says nothing was found and lists why.
"""

from __future__ import annotations

import math
import re
import textwrap
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from simone.agents._chat import Usage
from simone.agents._evidence import EvidenceLedger
from simone.runtime import (
    EmbeddingChain,
    Evidence,
    EvidenceKey,
    ProviderError,
    ProviderKind,
    Trust,
    contain_untrusted,
)
from simone.runtime.text import (
    Analyzer,
    default_analyzer,
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Citation(_Frozen):
    """One cited piece of evidence.

    Attributes:
        number: the ``[n]`` used in the answer text.
        evidence_id: the evidence's stable id.
        provider: its provider kind; ``provider_name`` the instance.
        title, locator: where it comes from (path#L10-L24, URL, memory id).
        trust: trusted (own memory and documents) or untrusted (web).
        quote: the sentence(s) the answer took from it, when extractive.
    """

    number: int
    evidence_id: str
    provider: ProviderKind
    provider_name: str
    title: str
    locator: str
    trust: Trust
    quote: str = ""


class StepRecord(_Frozen):
    """One step of the plan or of the tool-calling loop, for the record."""

    step: int
    action: str
    detail: str = ""
    outcome: Literal["ok", "error", "refused", "skipped"] = "ok"


AnswerStatus = Literal["answered", "abstained", "failed"]


class Answer(_Frozen):
    """A grounded answer.

    Attributes:
        question: what was asked.
        status: answered, abstained (no usable evidence) or failed (the model or every source failed).
        text: the answer with ``[n]`` markers.
        citations: the cited evidence, by number.
        limitations: plain sentences of everything that weakened the answer.
        model: which model wrote it (``extractive`` offline).
        confidence: the research critic's confidence when web research ran.
        steps: what was done, in order.
        usage: chat-model tokens spent.
        research: the researcher children's structured results (JSON form).
    """

    question: str
    status: AnswerStatus
    text: str
    citations: list[Citation] = Field(default_factory=list)
    limitations: list[str] = Field(default_factory=list)
    model: str = "extractive"
    confidence: float | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    usage: Usage = Usage()
    research: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def abstained(self) -> bool:
        """Whether the answer declined for lack of evidence."""
        return self.status == "abstained"

    def render(self) -> str:
        """Plain text: the answer, its sources and its limitations."""
        lines = [self.text]
        if self.citations:
            lines.append("")
            lines.append("Sources:")
            for cite in self.citations:
                title = f"{cite.title} — " if cite.title else ""
                lines.append(
                    f"[{cite.number}] {title}{cite.provider_name} · {cite.locator} ({cite.trust.value})"
                )
        if self.limitations:
            lines.append("")
            lines.append("Limitations:")
            lines.extend(f"- {note}" for note in self.limitations)
        return "\n".join(lines)


def citation_for(number: int, item: Evidence, quote: str = "") -> Citation:
    """A citation of ``item`` under ``number``."""
    return Citation(
        number=number,
        evidence_id=item.id,
        provider=item.provider,
        provider_name=item.provider_name,
        title=item.title,
        locator=item.locator,
        trust=item.trust,
        quote=quote,
    )


_SENTENCE = re.compile(r"(?<=[.!?。！？])[\"'”’)\]]*\s+|(?<=[。！？])|\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.|#)\s)")
_MIN_SENTENCE_CHARS = 12
_INTRO_SENTENCES = 3
"""A code block is introduced by (at most) the last three sentences of the paragraph before it."""


UnitKind = Literal["sentence", "item", "row", "code", "definition"]


@dataclass(frozen=True)
class AnswerUnit:
    """One unit an extractive answer can quote.

    Attributes:
        text: the unit as quoted: a sentence, a list item, a table row under its header, a
            ``name=value`` or definition line whole, or a fenced code block verbatim with its language.
        kind: which of those it is.
        intro: for a code block, the prose unit just before it (the sentence that introduces it).
        before, after: for a sentence, the sentences around it in its paragraph (what it may refer
            back to, what may complete it).
    """

    text: str
    kind: UnitKind
    intro: str = ""
    before: str = ""
    after: str = ""


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\{?([\w+#.-]*)")
_COLON_FENCE = re.compile(r"^\s*:{3,}")
_TARGET = re.compile(r"^\s*(?:\([\w.:-]+\)=|\.\.\s+_[^:]+:.*)\s*$")
_DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:-]+)::\s*(\S*)")
_CODE_DIRECTIVES = (
    "code",
    "code-block",
    "sourcecode",
    "literalinclude",
    "doctest",
    "testcode",
    "example",
    "run",
)
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+])\1{2,}\s*$")
_MD_HEADING = re.compile(r"^\s*#{1,6}\s")
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d+[.)])\s+(?=\S)")
_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE_LINE = re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*(?::?-{3,}:?)?\s*$")
_DEFINITION = re.compile(r"^\s*(?:[`*]*[\w.\-\[\]'\"]+[`*]*\s*=\s*\S|:[\w .-]+:\s+\S|`[^`]+`\s*[:—–]\s+\S)")
_OPTION = re.compile(r"^\s*:[\w-]+:")


def _width(text: str) -> int:
    """Display width: a wide (CJK) character counts two, so a short CJK sentence is still a sentence."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_PROSE_EMPHASIS = re.compile(r"(?<![\w`])[*_]{1,3}(?=[^\s`])|(?<=[^\s`])[*_]{1,3}(?![\w`])")
_ROLE = re.compile(r"\{[\w:-]+\}(?=`)|(?<![\w`]):[\w:-]+:(?=`)")


def _prose(text: str) -> str:
    """``text`` with emphasis markers and role prefixes removed; inline code spans kept verbatim."""
    text = _ROLE.sub("", text)
    pieces: list[str] = []
    at = 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(_PROSE_EMPHASIS.sub("", text[at : span.start()]))
        pieces.append(span.group(0))
        at = span.end()
    pieces.append(_PROSE_EMPHASIS.sub("", text[at:]))
    return " ".join("".join(pieces).split())


def _indented_block(lines: list[str], start: int, base: int) -> tuple[list[str], int]:
    """The lines from ``start`` indented deeper than ``base`` (blank lines inside kept); next index."""
    body: list[str] = []
    index = start
    while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > base):
        body.append(lines[index])
        index += 1
    while body and not body[-1].strip():
        body.pop()
    while body and not body[0].strip():
        body.pop(0)
    return body, index


def _fenced(body: list[str], language: str) -> str:
    code = textwrap.dedent("\n".join(body)).strip("\n")
    return f"```{language}\n{code}\n```" if code.strip() else ""


def split_units(text: str) -> list[AnswerUnit]:
    """The answering units of ``text``, in order.

    Sentences come from the same segmentation in every language (``.!?`` and ``。！？``); a list item is
    one unit; a Markdown table row is one unit with the header and rule kept above it; a fenced code
    block (Markdown fences, reStructuredText ``::`` literal blocks and code directives) is one unit,
    verbatim, with its language, never flattened or cut; a ``name=value`` or definition line stays
    whole. Headings label sections and are not units.
    """
    lines = text.splitlines()
    units: list[AnswerUnit] = []
    paragraph: list[str] = []
    recent: list[str] = []  # the sentences of the paragraph just closed, while nothing else followed it

    def add(unit: AnswerUnit) -> None:
        if unit.kind == "code" or _width(unit.text) >= _MIN_SENTENCE_CHARS:
            units.append(unit)

    def flush() -> None:
        """Close the open paragraph into sentence units; remember its sentences for a code block."""
        if paragraph:
            joined = " ".join(line.strip() for line in paragraph)
            sentences = [s for s in (_prose(piece) for piece in _SENTENCE.split(joined)) if s]
            last = ""
            for i, sentence in enumerate(sentences):
                after = sentences[i + 1] if i + 1 < len(sentences) else ""
                add(AnswerUnit(sentence, "sentence", before=last, after=after))
                last = sentence
            paragraph.clear()
            recent[:] = sentences

    def intro() -> str:
        """The prose just before a code block.

        The paragraph that leads into it (its last ``_INTRO_SENTENCES`` sentences), else the list
        item or definition just before it.
        """
        flush()
        return " ".join(recent[-_INTRO_SENTENCES:])

    def close() -> None:
        """Close the open paragraph; what follows is not introduced by it."""
        flush()
        recent.clear()

    def code(body: list[str], language: str) -> None:
        before = intro()
        recent.clear()
        fenced = _fenced(body, language)
        if fenced:
            units.append(AnswerUnit(fenced, "code", before))

    index = 0
    fences = [i for i, line in enumerate(lines) if _FENCE.match(line)]
    if len(fences) % 2 and not _FENCE.match(lines[fences[0]]).group(3):  # type: ignore[union-attr]
        # the text starts inside a code block (a chunk cut through it): its first fence closes it
        code(lines[: fences[0]], "")
        index = fences[0] + 1
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if _COLON_FENCE.match(line) or _TARGET.match(line):  # MyST fences and targets: not statements
            close()
            index += 1
            continue
        if fence := _FENCE.match(line):
            marker = fence.group(2)
            end = index + 1
            while end < len(lines) and not (
                lines[end].strip().startswith(marker) and not lines[end].strip().strip(marker[0])
            ):
                end += 1
            code(lines[index + 1 : end], fence.group(3))
            index = end + 1
            continue
        if directive := _DIRECTIVE.match(line):
            name = directive.group(2).rsplit(":", 1)[-1]
            if name in _CODE_DIRECTIVES:
                start = index + 1
                while start < len(lines) and _OPTION.match(lines[start]):
                    start += 1
                body, index = _indented_block(lines, start, _indent(line))
                code(body, directive.group(3) if name != "literalinclude" else "")
                continue
            close()  # an admonition's body reads as prose
            index += 1
            continue
        if not stripped:
            flush()  # a blank line: the paragraph may still introduce a code block after it
            index += 1
            continue
        if _MD_HEADING.match(line):
            close()
            index += 1
            continue
        if _UNDERLINE.match(line):
            if len(paragraph) <= 1:  # a reStructuredText title (or a rule): not a statement
                paragraph.clear()
                recent.clear()
            else:
                close()
            index += 1
            continue
        if stripped.endswith("::") and index + 1 < len(lines):
            body, after = _indented_block(lines, index + 1, _indent(line))
            if body:
                lead = stripped[:-2].rstrip()
                if lead:
                    paragraph.append(lead + ":")
                code(body, "")
                index = after
                continue
        if _TABLE_LINE.match(line):
            close()
            header = ""
            if index + 1 < len(lines) and _TABLE_RULE_LINE.match(lines[index + 1]):
                header = f"{stripped}\n{lines[index + 1].strip()}\n"
                index += 2
            while index < len(lines) and _TABLE_LINE.match(lines[index]):
                row = lines[index].strip()
                if not _TABLE_RULE_LINE.match(row):
                    units.append(AnswerUnit(header + row, "row"))
                index += 1
            continue
        if item := _LIST_ITEM.match(line):
            close()
            depth = len(item.group(1))
            parts = [line[item.end() :].strip()]
            index += 1
            while (
                index < len(lines)
                and lines[index].strip()
                and _indent(lines[index]) > depth
                and not _LIST_ITEM.match(lines[index])
                and not _FENCE.match(lines[index])
            ):
                parts.append(lines[index].strip())
                index += 1
            add(AnswerUnit(_prose(" ".join(parts)), "item"))
            recent[:] = [_prose(" ".join(parts))]  # an item may introduce the code block after it
            continue
        if _DEFINITION.match(line):
            close()
            add(AnswerUnit(" ".join(stripped.split()), "definition"))
            recent[:] = [" ".join(stripped.split())]
            index += 1
            continue
        paragraph.append(line)
        index += 1
    flush()
    return units


def _own(item: Evidence) -> bool:
    """Whether ``item`` is memory the asking actor (or its project, or this conversation) wrote."""
    if item.provider is ProviderKind.SESSION_MEMORY:
        return True
    return item.provider is ProviderKind.MEMORY and item.metadata.get(EvidenceKey.SCOPE) not in (
        None,
        "global",
    )


@dataclass
class _Candidate:
    number: int
    item: Evidence
    position: int
    unit: AnswerUnit
    shown: str
    hits: frozenset[int]
    own: bool
    before: str = ""  # the sentences around it that share a word with the question, if any
    after: str = ""
    similarity: float | None = None


@dataclass
class Composition:
    """What :meth:`ExtractiveModel.select` chose.

    Attributes:
        text: the answer with ``[n]`` markers numbered from 1 in the order shown (empty: nothing relevant).
        citations: the cited evidence, numbered like the text.
        coverage: the share of the question's words the picked units cover.
        reasons: why each unit was chosen, one line each (for the answer's steps).
    """

    text: str = ""
    citations: list[Citation] = field(default_factory=list)
    coverage: float = 0.0
    reasons: list[str] = field(default_factory=list)


class ExtractiveModel:
    """Offline answers: the evidence units that best answer the question, each cited.

    Units (:func:`split_units`): sentences, list items, table rows under their header, definition and
    ``name=value`` lines, and fenced code blocks verbatim. Scoring: every word of the question (stop
    words aside) carries an IDF weight over all candidate units (ln(1 + N/df)); a unit covers a word
    when it shares any of the word's terms; a code block also covers the words of the paragraph that
    introduces it (its last three sentences), which is quoted with it. A unit's score is its covered
    weight share, plus ``code_bonus`` for an introduced code block (in API documentation the code is
    the answer), plus ``own_boost`` when it comes from the asking actor's own memory (or this
    conversation) and covers at least half of what the best unit covers (1 more when the question asks
    about the asker's own facts — "our", "my", "we": :func:`asks_about_own` — so that memory leads),
    plus ``semantic_weight`` × its
    cosine similarity to the question for the ``embed_limit`` best lexical candidates (embedded in one
    batch with the question, when an embedding chain is given), all divided by 1 + ``rank_decay``·rank
    of its evidence item (own memory is not divided: when it answers, it speaks first). With
    ``passage_rank``, a chunk that continues a better-ranked chunk of the same file (overlapping or
    touching lines) takes that chunk's rank: the chunker's cut does not demote the passage's second
    half. The best unit leads, with the sentences around it in its paragraph that share a word with
    the question when ``lead_context`` is set (what a "he" or "it" refers to, what completes it);
    further units join only when they cover words nothing picked covered yet and score at least
    ``follow_floor`` × the lead's score (a unit that shares one stray word is not an answer). Untrusted
    units flagged as instruction-like are never quoted. Citations are numbered from [1] in the order
    shown.

    The defaults were chosen on benchmarks/answer_quality.py (XQuAD-R, JSQuAD, KorQuAD, docs-QA):
    ``follow_floor`` 0.3 kept every set's hold rate and cut the answers by about a quarter;
    ``code_bonus`` 0.25 (from 0.1) answered more docs questions with their code and changes nothing
    where there is no code; ``rank_decay`` 0.2 and 0.15 lost 1–2 points on XQuAD-R, so it stays 0.3.

    ``embed_limit`` is 0 by default: on the answer-quality sets (benchmarks/answer_quality.py) the
    bundled MiniLM's similarity did not change which unit answers, and embedding even three units
    costs more than the rest of an ``ask``. A chain with a stronger (multilingual) model can turn it on.

    Args:
        analyzer: the shared lexical analysis (default: :func:`~simone.runtime.text.default_analyzer`).
        max_sentences: the most units in an answer.
        embeddings: the runtime's embedding chain (``None``: words only).
        semantic_weight, own_boost, rank_decay, code_bonus, lead_context, follow_floor,
            passage_rank: the scoring above.
        embed_limit: how many lexical candidates are embedded (0: none, words only).
    """

    name = "extractive"

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        *,
        max_sentences: int = 3,
        embeddings: EmbeddingChain | None = None,
        semantic_weight: float = 0.5,
        own_boost: float = 0.3,
        rank_decay: float = 0.3,
        code_bonus: float = 0.25,
        embed_limit: int = 0,
        lead_context: bool = True,
        follow_floor: float = 0.3,
        passage_rank: bool = True,
    ) -> None:
        self.analyzer = analyzer or default_analyzer()
        self.max_sentences = max_sentences
        self.embeddings = embeddings
        self.semantic_weight = semantic_weight
        self.own_boost = own_boost
        self.rank_decay = rank_decay
        self.code_bonus = code_bonus
        self.embed_limit = embed_limit
        self.lead_context = lead_context
        self.follow_floor = follow_floor
        self.passage_rank = passage_rank

    # -- candidates ---------------------------------------------------------------------------
    def _candidates(
        self, question: str, numbered: Sequence[tuple[int, Evidence]]
    ) -> tuple[list[frozenset[str]], list[_Candidate]]:
        words = [frozenset(terms) for _, terms in self.analyzer.word_terms(question) if terms]
        if not words or not numbered:
            return words, []
        wanted = frozenset().union(*words)

        def hits_of(text: str) -> frozenset[int]:
            terms = frozenset(self.analyzer.terms(text)) & wanted
            return frozenset(i for i, word in enumerate(words) if word & terms)

        candidates: list[_Candidate] = []
        items = [item for _, item in numbered]
        positions = _passage_positions(items) if self.passage_rank else list(range(len(items)))
        for (number, item), position in zip(numbered, positions, strict=True):
            content = item.content
            if item.trust is Trust.UNTRUSTED:
                content = contain_untrusted(content).text
            own = _own(item)
            untrusted = item.trust is Trust.UNTRUSTED

            def quotable(text: str, untrusted: bool = untrusted) -> str:
                """``text``, or nothing when it is untrusted and instruction-like (never quoted)."""
                return "" if text and untrusted and contain_untrusted(text).flags else text

            for unit in split_units(content):
                if unit.kind != "code" and unit.text.endswith(":"):
                    continue  # a lead-in says nothing by itself (its code block carries it)
                if not quotable(unit.text):
                    continue
                hits = hits_of(unit.text)
                shown = unit.text
                intro = quotable(unit.intro)
                if unit.kind == "code" and intro:
                    intro_hits = hits_of(intro)
                    if intro.endswith(":") or intro_hits:  # the prose that introduces it comes along
                        shown = f"{intro}\n{unit.text}"
                        hits |= intro_hits
                if hits:
                    before, after = quotable(unit.before), quotable(unit.after)
                    before = before if before and hits_of(before) else ""
                    after = after if after and hits_of(after) else ""
                    candidates.append(
                        _Candidate(number, item, position, unit, shown, hits, own, before, after)
                    )
        return words, candidates

    def _shortlist(self, words: list[frozenset[str]], candidates: list[_Candidate]) -> list[_Candidate]:
        idf = _idf(words, candidates)
        ranked = sorted(
            candidates,
            key=lambda c: -sum(idf[i] for i in c.hits) / (1 + self.rank_decay * c.position),
        )
        return ranked[: self.embed_limit]

    # -- composing ----------------------------------------------------------------------------
    def compose(
        self, question: str, numbered: Sequence[tuple[int, Evidence]]
    ) -> tuple[str, list[Citation], float]:
        """(text, citations, coverage) by words only; empty text when nothing is relevant.

        ``coverage`` is the share of the question's words (stop words aside) that the picked units
        cover; a word counts as covered when any of its terms (the word, its prefix, its synonym group)
        is in a picked unit. :meth:`answer` adds the meaning (embedding similarity) when a chain is set.
        """
        words, candidates = self._candidates(question, numbered)
        chosen = self._select(words, candidates, first_person=asks_about_own(question))
        return chosen.text, chosen.citations, chosen.coverage

    async def answer(self, question: str, numbered: Sequence[tuple[int, Evidence]]) -> Composition:
        """The composition by words and, when an embedding chain is set, by meaning.

        The question and the best lexical candidates are embedded in one batch; a chain that fails
        leaves the choice to the words (the reason says so).
        """
        words, candidates = self._candidates(question, numbered)
        note = ""
        chain = self.embeddings
        if chain is not None and candidates and chain.spaces and self.embed_limit > 0:
            shortlist = self._shortlist(words, candidates)
            try:
                vectors = await chain.embed(
                    [question, *(c.shown for c in shortlist)], space=chain.spaces[0], kind="query"
                )
            except ProviderError as exc:
                note = f"units chosen by words only: the embedder failed ({exc.kind}: {exc.message})"
            else:
                query = vectors[0]
                for candidate, vector in zip(shortlist, vectors[1:], strict=True):
                    candidate.similarity = float(
                        np.dot(query, vector) / (np.linalg.norm(query) * np.linalg.norm(vector) or 1.0)
                    )
        chosen = self._select(words, candidates, first_person=asks_about_own(question))
        if note:
            chosen.reasons.append(note)
        return chosen

    def _select(
        self, words: list[frozenset[str]], candidates: list[_Candidate], *, first_person: bool = False
    ) -> Composition:
        if not candidates:
            return Composition()
        idf = _idf(words, candidates)
        total = sum(idf) or 1.0
        best_lexical = max(sum(idf[i] for i in c.hits) for c in candidates) / total
        # a question about "our"/"my" facts: the asker's own memory that answers speaks first
        own_boost = self.own_boost + (1.0 if first_person else 0.0)

        def base(candidate: _Candidate) -> float:
            bonus = self.semantic_weight * (candidate.similarity or 0.0)
            share = sum(idf[i] for i in candidate.hits) / total
            if candidate.own and share >= 0.5 * best_lexical:
                bonus += own_boost
            if candidate.unit.kind == "code" and candidate.unit.intro:
                bonus += self.code_bonus
            return bonus

        covered: set[int] = set()
        picked: list[tuple[_Candidate, float]] = []
        used: set[int] = set()
        for _ in range(self.max_sentences):
            best: tuple[float, int] | None = None
            for index, candidate in enumerate(candidates):
                if index in used:
                    continue
                hits = candidate.hits
                if picked and (not (hits - covered) or any(candidate.shown in c.shown for c, _ in picked)):
                    continue  # nothing new: it would only pad the answer
                gain = (
                    sum(idf[i] for i in hits - covered) + 0.25 * sum(idf[i] for i in hits & covered)
                ) / total
                gain += base(candidate)
                if not candidate.own:  # own memory is not ranked down for where the fusion put it
                    gain /= 1 + self.rank_decay * candidate.position
                if best is None or gain > best[0] + 1e-12:
                    best = (gain, index)
            if best is None or (picked and best[0] < self.follow_floor * picked[0][1]):
                break  # nothing left that adds enough beside the lead
            used.add(best[1])
            chosen = candidates[best[1]]
            covered |= chosen.hits
            picked.append((chosen, best[0]))
        numbers: dict[int, int] = {}
        citations: dict[int, Citation] = {}
        text = ""
        reasons: list[str] = []
        if picked and self.lead_context:  # a neighbour of the lead is shown beside it, not apart
            lead = picked[0][0]
            around = {lead.before, lead.after} - {""}
            picked = picked[:1] + [
                (c, sc) for c, sc in picked[1:] if not (c.number == lead.number and c.shown in around)
            ]
        for rank, (candidate, score) in enumerate(picked):
            shown_number = numbers.setdefault(candidate.number, len(numbers) + 1)
            quoted = candidate.shown
            if rank == 0 and self.lead_context:
                # the sentence it may refer back to, and the one that may complete it
                quoted = " ".join(part for part in (candidate.before, quoted, candidate.after) if part)
            part = (
                f"{quoted}\n[{shown_number}]"
                if candidate.unit.kind == "code"
                else f"{quoted} [{shown_number}]"
            )
            if text:
                text += "\n\n" if "\n" in part or "\n" in text else " "
            text += part
            if shown_number in citations:
                old = citations[shown_number]
                citations[shown_number] = old.model_copy(update={"quote": f"{old.quote} … {quoted}"})
            else:
                citations[shown_number] = citation_for(shown_number, candidate.item, quoted)
            reasons.append(_reason(shown_number, candidate, len(words), score))
        coverage = len(covered) / len(words)
        return Composition(text, [citations[n] for n in sorted(citations)], round(coverage, 4), reasons)


_FIRST_PERSON = re.compile(
    r"(?i)\b(?:our|ours|my|mine|we|unser\w*|mein\w*|wir|uns|notre|nos|mon|nous|nuestr\w*|mis?|nosotr\w*"
    r"|noss[oa]s?|meus?|minhas?|nostr\w*|mi[oa]|miei|noi|onze|ons|mijn|wij|наш\w*|мо[йяеи]\w*|мы)\b"
    r"|我们|我的|咱们|私たち|我々|うちの|僕の|私の|우리|제\s|내\s"
)
"""First-person cues of the languages most asked in ("our", "my", "we"; unser, notre, nuestro, 我们,
私たち, 우리…): the question is about the asker's own facts. "I" is not one: "how do I…" asks how."""


def asks_about_own(question: str) -> bool:
    """Whether ``question`` asks about the asker's own facts ("What timeout does *our* gateway use?").

    Then the asker's own memory that answers (covers at least half of what the best unit covers)
    leads the answer even when a document covers a word more; otherwise it gets ``own_boost`` only.
    """
    return bool(_FIRST_PERSON.search(question))


def _passage_positions(items: Sequence[Evidence]) -> list[int]:
    """Each item's rank, a chunk continuing a better-ranked chunk of its file taking that one's rank.

    A chunk that overlaps or touches a better-ranked chunk of the same file is the same passage,
    split by the chunker: the passage is ranked by its best part.
    """
    positions: list[int] = []
    spans: list[tuple[object, int, int, int]] = []  # (path, first line, last line, position)
    for position, item in enumerate(items):
        meta = item.metadata
        path, start, end = (
            meta.get(EvidenceKey.PATH),
            meta.get(EvidenceKey.LINE_START),
            meta.get(EvidenceKey.LINE_END),
        )
        rank = position
        if path is not None and isinstance(start, int) and isinstance(end, int):
            for other, first, last, other_rank in spans:
                if other == path and start <= last + 1 and end >= first - 1:
                    rank = min(rank, other_rank)
            spans.append((path, start, end, rank))
        positions.append(rank)
    return positions


def _idf(words: list[frozenset[str]], candidates: list[_Candidate]) -> list[float]:
    total = len(candidates)
    df = [sum(1 for c in candidates if i in c.hits) for i in range(len(words))]
    return [math.log(1 + total / d) if d else 0.0 for d in df]


def _reason(number: int, candidate: _Candidate, words: int, score: float) -> str:
    source = f"{candidate.item.provider_name} · {candidate.item.locator}"
    why = ["own memory"] if candidate.own else []
    if candidate.unit.kind == "code":
        why.append("code block" + (" after its introduction" if candidate.unit.intro else ""))
    why.append(f"covers {len(candidate.hits)}/{words} words")
    if candidate.similarity is not None:
        why.append(f"similarity {candidate.similarity:.2f}")
    why.append(f"evidence rank {candidate.position + 1}")
    return f"[{number}] {candidate.unit.kind} from {source}: {', '.join(why)} (score {score:.2f})"


_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def finalize(text: str, ledger: EvidenceLedger) -> tuple[str, list[Citation], list[str]]:
    """Check a model's ``[n]`` markers against ``ledger``: (cleaned text, citations, limitations).

    A number that is not in the ledger is removed from the text and reported; an answer that cites
    nothing although evidence exists is reported too. The cited evidence is renumbered from [1] in
    the order the text first cites it (each citation still names the evidence it cited).
    """
    notes: list[str] = []
    cited: dict[int, Citation] = {}
    renumbered: dict[int, int] = {}  # ledger number → the number the answer shows
    invented: list[int] = []

    def replace(match: re.Match[str]) -> str:
        keep: list[str] = []
        for raw in match.group(1).split(","):
            number = int(raw.strip())
            item = ledger.get(number)
            if item is None:
                invented.append(number)
                continue
            display = renumbered.setdefault(number, len(renumbered) + 1)
            cited.setdefault(display, citation_for(display, item))
            if str(display) not in keep:
                keep.append(str(display))
        return f"[{', '.join(keep)}]" if keep else ""

    cleaned = _MARKER.sub(replace, text).strip()
    if invented:
        shown = ", ".join(f"[{n}]" for n in sorted(set(invented)))
        notes.append(
            f"the model cited {shown}, which match no evidence it was shown; those markers were removed"
        )
    if not cited and len(ledger):
        notes.append("the model's answer cites none of the evidence; treat it as unsupported")
    return cleaned, [cited[n] for n in sorted(cited)], notes
