"""Grounded synthesis: numbered citations with source and locator, every limitation stated, abstention.

Two paths produce an :class:`Answer`:

* :class:`ExtractiveModel` — the offline default. It picks the evidence sentences that best cover the
  question's terms (the shared lexical analysis, IDF-weighted, greedy on new coverage) and cites each.
* :func:`finalize` — for a chat model's text: ``[n]`` markers are checked against the evidence that was
  really shown; unknown numbers are removed and reported, never turned into a source.

Without evidence both abstain: the answer says nothing was found and lists why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from simone.agents._chat import Usage
from simone.agents._evidence import EvidenceLedger
from simone.runtime import (
    Evidence,
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
_MARKUP = re.compile(r"^\s*(?:#{1,6}|[-*+>]|\d+\.)\s+|\s*\|\s*")
_EMPHASIS = re.compile(r"(?<!\w)[*_]{1,3}(?=\S)|(?<=\S)[*_]{1,3}(?!\w)|`+")
_HEADING_LINE = re.compile(r"(?m)^\s*#{1,6}\s.*$|^\s*(?:[=-]{3,}|```.*)\s*$")
_TABLE_RULE = re.compile(r"(?m)^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-{0,}:?\s*$")
_TABLE_HEAD = re.compile(r"(?m)^\s*\|.*\|\s*\n\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-{0,}:?\s*$")
_TABLE_ROW = re.compile(r"(?m)^\s*(\|.*\|)\s*$")
_MIN_SENTENCE_CHARS = 12


def _table_row(match: re.Match[str]) -> str:
    cells = [cell.strip() for cell in match.group(1).strip("|").split("|")]
    return "\n\n" + " — ".join(cell for cell in cells if cell) + "\n\n"


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (markdown markers removed, whitespace collapsed)."""
    out: list[str] = []
    text = _HEADING_LINE.sub("\n\n", text)  # headings label sections; they are not statements
    text = _TABLE_HEAD.sub("\n\n", text)  # a header row names columns; it states nothing
    text = _TABLE_RULE.sub("\n\n", text)
    text = _TABLE_ROW.sub(_table_row, text)  # a table row is one statement: "cell — cell"
    for piece in _SENTENCE.split(text):
        cleaned = " ".join(_MARKUP.sub(" ", _EMPHASIS.sub("", line)) for line in piece.splitlines())
        cleaned = " ".join(cleaned.split())
        if len(cleaned) >= _MIN_SENTENCE_CHARS:
            out.append(cleaned)
    return out


class ExtractiveModel:
    """Offline answers: the evidence sentences that best cover the question, each cited.

    Scoring: every word of the question (stop words aside) carries an IDF weight computed over all
    candidate sentences (ln(1 + N/df)); a sentence covers a word when it shares any of the word's
    terms. Sentences are picked greedily by the weight of words they cover that no picked sentence
    covered yet, plus a quarter of the weight of words already covered, with a small preference for
    better-ranked evidence (1 / (1 + 0.05·rank)). Untrusted sentences flagged as instruction-like are
    never quoted.

    Args:
        analyzer: the shared lexical analysis (default: :func:`~simone.runtime.text.default_analyzer`).
        max_sentences: the most sentences in an answer.
    """

    name = "extractive"

    def __init__(self, analyzer: Analyzer | None = None, *, max_sentences: int = 3) -> None:
        self.analyzer = analyzer or default_analyzer()
        self.max_sentences = max_sentences

    def compose(
        self, question: str, numbered: Sequence[tuple[int, Evidence]]
    ) -> tuple[str, list[Citation], float]:
        """(text, citations, coverage) from the best sentences; empty text when nothing is relevant.

        ``coverage`` is the share of the question's words (stop words aside) that the picked sentences
        cover; a word counts as covered when any of its terms (the word, its prefix, its synonym group)
        is in a picked sentence.
        """
        words = [frozenset(terms) for _, terms in self.analyzer.word_terms(question) if terms]
        if not words or not numbered:
            return "", [], 0.0
        wanted = frozenset().union(*words)
        candidates: list[tuple[int, Evidence, str, frozenset[int], int]] = []
        for position, (number, item) in enumerate(numbered):
            content = item.content
            if item.trust is Trust.UNTRUSTED:
                content = contain_untrusted(content).text
            for sentence in split_sentences(content):
                if sentence.endswith(":"):  # a lead-in to a list says nothing by itself
                    continue
                if item.trust is Trust.UNTRUSTED and contain_untrusted(sentence).flags:
                    continue
                terms = frozenset(self.analyzer.terms(sentence)) & wanted
                covered_words = frozenset(i for i, word in enumerate(words) if word & terms)
                if covered_words:
                    candidates.append((number, item, sentence, covered_words, position))
        if not candidates:
            return "", [], 0.0
        total = len(candidates)
        df = [sum(1 for c in candidates if i in c[3]) for i in range(len(words))]
        idf = [math.log(1 + total / d) if d else 0.0 for d in df]
        covered: set[int] = set()
        picked: list[tuple[int, Evidence, str]] = []
        used: set[int] = set()
        for _ in range(self.max_sentences):
            best: tuple[float, int] | None = None
            for index, (_, _, _, hits, position) in enumerate(candidates):
                if index in used:
                    continue
                gain = sum(idf[i] for i in hits - covered) + 0.25 * sum(idf[i] for i in hits & covered)
                gain /= 1 + 0.05 * position
                if best is None or gain > best[0] + 1e-12:
                    best = (gain, index)
            if best is None:
                break
            _, index = best
            hits = candidates[index][3]
            if picked and not (hits - covered):  # nothing new: stop rather than pad the answer
                break
            used.add(index)
            covered |= hits
            picked.append(candidates[index][:3])
        citations: dict[int, Citation] = {}
        parts: list[str] = []
        for number, item, sentence in picked:
            parts.append(f"{sentence} [{number}]")
            if number in citations:
                old = citations[number]
                citations[number] = old.model_copy(update={"quote": f"{old.quote} … {sentence}"})
            else:
                citations[number] = citation_for(number, item, sentence)
        coverage = len(covered) / len(words)
        return " ".join(parts), [citations[n] for n in sorted(citations)], round(coverage, 4)


_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def finalize(text: str, ledger: EvidenceLedger) -> tuple[str, list[Citation], list[str]]:
    """Check a model's ``[n]`` markers against ``ledger``: (cleaned text, citations, limitations).

    A number that is not in the ledger is removed from the text and reported; an answer that cites
    nothing although evidence exists is reported too.
    """
    notes: list[str] = []
    cited: dict[int, Citation] = {}
    invented: list[int] = []

    def replace(match: re.Match[str]) -> str:
        keep: list[str] = []
        for raw in match.group(1).split(","):
            number = int(raw.strip())
            item = ledger.get(number)
            if item is None:
                invented.append(number)
                continue
            cited.setdefault(number, citation_for(number, item))
            keep.append(str(number))
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
