"""The document index as a router provider: lexical, semantic or hybrid search over one collection.

* **lexical** — BM25 inside LanceDB over the analysed-terms column (the query analysed by the same
  :class:`~simone.runtime.text.Analyzer` as the rows);
* **semantic** — one leg per embedding space the collection carries (``semantic`` for its own,
  ``semantic:<provider>`` for each extra space): the query embedded in that space, nearest chunks by
  cosine similarity (exact below the ANN threshold, the IVF index above: ``nprobes`` partitions at
  least, and at least ``ann_probe_share`` of them; refined by exact distance for IVF_HNSW_SQ);
* **hybrid** — all legs at once, fused by RRF here, each leg weighted by its confidence (the router
  fuses again across providers).

**Confidence-weighted fusion.** Each leg votes with the odds that its best candidate is the answer,
read off how far that candidate stands out (:class:`~simone.runtime.ranking.VoteCurve`: a semantic leg's
margin on its space's curve — shipped for the bundled models, fitted from the collection's own chunks
by calibration for any other space, so a model is read on its own scale —, the lexical leg's term
coverage and BM25 standout), raised to
:data:`~simone.runtime.ranking.VOTE_SHARPNESS` (:data:`~simone.runtime.ranking.SHIFTED_VOTE_SHARPNESS`
when a leg votes on a curve shifted onto the lexical leg's footing) and relative to the most confident leg. A leg whose best
candidate does not stand out (an absent topic, a question it half understands) hardly moves the
ranking; a lexical hit holding most of the question's words is not reordered by a semantic leg that
merely likes its neighbour. When the lexical leg is sure of its best hit (log-odds at least
:data:`~simone.runtime.ranking.LEXICAL_PIN`) that hit stays first: RRF's flat head would otherwise let a
candidate both legs rank second or third overtake it. Weights, confidences and the pinned hit are in
``details["votes"]``.

Every semantic leg is judged by the relevance rule of its model (:class:`~simone.runtime.ranking.RelevanceRule`):
a fused candidate is kept when it shares words with the question (hybrid) or is relevant by meaning;
the rest are dropped, and the best semantic candidates judged not relevant are reported as
``not_relevant`` exclusions. In hybrid mode a question whose words or meaning found something keeps
every semantic candidate too (``kept_by: topic``): the answer is not empty either way, and the fused
order — confidence-weighted for the first :data:`~simone.runtime.ranking.FUSION_HEAD`, plain RRF after
(:class:`~simone.runtime.ranking.HeadThenConsensus`) — keeps the recall of a plain RRF. A leg whose model does not cover the question (its script, or its
language as its letters tell: the bundled MiniLM is English-only, USE lacks e.g. Vietnamese) is
skipped on purpose: named in ``skipped_legs`` (and ``details["skipped_legs"]``), a note in the result's
trace and limitations that leaves the status ``complete`` — not a degradation.

When a semantic leg cannot run (no embedder of its space answers), the other legs answer, the
provider says so in ``degraded`` and reports the leg's :class:`~simone.runtime.ProviderFailure` in
``leg_failures``; the chain's health window records the fallback of the own space. Chunks still
pending embedding in a space are found by the other legs only, and that is said too.

Scope: rows carry the project they were indexed for; a request sees the rows of its trusted
context's project plus the rows indexed without a project, never another project's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from simone.providers.documents._calibration import relevance_rule, vote_curve
from simone.providers.documents._chunker import chunk_locator
from simone.providers.documents._index import DocumentIndex
from simone.providers.documents._store import Collection, Hit, build_where, project_of, unpack_row
from simone.runtime import (
    Evidence,
    EvidenceKey,
    Exclusion,
    ProviderKind,
    ProviderNotConfigured,
    ProviderResponse,
    ProviderUnavailable,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)
from simone.runtime.ranking import (
    LEXICAL_PIN,
    LEXICAL_VOTE,
    RELEVANCE_WORD_SHARE,
    SHIFTED_VOTE_SHARPNESS,
    VOTE_SHARPNESS,
    FunctionLeg,
    FusedLegs,
    FusionRule,
    HeadThenConsensus,
    Judgement,
    Leg,
    LegRank,
    LegResults,
    Pinned,
    VoteCurve,
    WeightedRRF,
    error_for_failure,
    first_of_each,
    fuse_legs,
    lexical_standout,
    run_legs,
)
from simone.runtime.text import uncovered_language

MAX_PAGES = 2
"""Row reads per search after fusion (each of ``2 × limit`` candidates, at least 10)."""

REJECTED_SHOWN = 5
"""Per semantic leg, the best candidates judged not relevant that are reported as exclusions."""

LEXICAL = "lexical"
"""The name of the BM25 leg (the semantic legs are ``semantic`` and ``semantic:<provider>``)."""


@dataclass(slots=True)
class _Search:
    """One request's plan and what its legs found out on the way."""

    request: RetrievalRequest
    collection: Collection
    mode: SearchMode
    projects: list[str]
    where: str
    unscoped: str
    candidates: int
    query_terms: list[str]
    semantic: list[tuple[str, Collection]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    top_terms: set[str] = field(default_factory=set)
    versions: dict[int, int] = field(default_factory=dict)
    """Each searched table's version (by ``id``), taken once before any leg's search starts."""
    versions_lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def take_versions(self) -> None:
        """Take the version of every table the legs search (see ``Collection.version``), once.

        The first leg to need them takes them all, before its search: in hybrid mode the lexical leg
        while the semantic legs embed the query, so the call (~0.5 ms at 100k rows) is off the
        semantic leg's path; a leg coming later waits for them, so no search starts before they are
        taken (a version call queues behind a running search).
        """
        async with self.versions_lock:
            for table in (self.collection, *(table for _, table in self.semantic)):
                if id(table) not in self.versions:
                    self.versions[id(table)] = await table.version()

    async def leg_where(self, table: Collection) -> str:
        """The legs leave out a project test every row passes; rows are checked for it when read."""
        await self.take_versions()
        only = await table.only_projects(self.projects, self.versions.get(id(table)))
        return self.unscoped if only else self.where


@dataclass(slots=True)
class _Judged:
    """Every semantic leg's relevance verdicts (leg → chunk id → verdict) and the fusion rule."""

    verdicts: dict[str, dict[str, Judgement]]
    rule: FusionRule
    votes: dict[str, dict[str, Any]]


class DocumentIndexProvider:
    """A :class:`~simone.runtime.Provider` over a :class:`DocumentIndex`.

    Args:
        index: the open document index.
        name: the instance name in the router.
    """

    def __init__(self, index: DocumentIndex, *, name: str = "documents") -> None:
        self._index = index
        self._name = name

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """Always ``document-index``."""
        return ProviderKind.DOCUMENT_INDEX

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Search the collection for ``request`` within the scope of ``context``.

        Raises:
            ProviderNotConfigured: nothing has been indexed into the collection yet.
            InvalidRequest: an unknown or scope-widening filter.
            ProviderUnavailable: LanceDB failed (and no leg could answer).
        """
        search = self._plan(request, context)
        results = await self._run(search, context)
        judged = self._judge(search, results.hits)
        started = time.perf_counter()
        evidence, excluded = await self._evidence(search, results.hits, judged)
        search.timings["evidence_ms"] = (time.perf_counter() - started) * 1000
        details = self._details(search, results, judged, len(excluded))
        return ProviderResponse(
            evidence=evidence,
            degraded=search.degraded,
            leg_failures=results.failures,
            details=details,
            excluded=excluded,
            skipped_legs=search.skipped,
        )

    def _plan(self, request: RetrievalRequest, context: TrustedContext) -> _Search:
        """The collection, scope, mode and the semantic legs that cover the question."""
        index = self._index
        collection = index.collection
        if collection is None:
            raise ProviderNotConfigured(
                f"the document collection {index.name!r} is empty; run 'simone index PATH' first",
                provider=self._name,
            )
        projects = [""] if not context.project else ["", context.project]
        search = _Search(
            request=request,
            collection=collection,
            mode=request.mode or SearchMode(index.settings.default_mode),
            projects=projects,
            where=build_where(projects, request.filters),
            unscoped=build_where(projects, request.filters, scoped=False),
            candidates=max(request.limit, index.settings.leg_candidates),
            query_terms=index.analyzer.terms(request.query),
        )
        if search.mode is not SearchMode.LEXICAL:
            for leg, table in index.semantic_collections():
                uncovered = uncovered_language(request.query, table.space.key)
                if uncovered is None:
                    search.semantic.append((leg, table))
                else:
                    search.skipped[leg] = f"{table.space.model} does not cover {uncovered}"
        return search

    def _lexical_leg(self, search: _Search, *, with_top: bool) -> Leg[Hit]:
        async def lexical(request: RetrievalRequest, context: TrustedContext) -> list[Hit]:
            collection = search.collection
            hits = await collection.search_terms(
                " ".join(search.query_terms), await search.leg_where(collection), search.candidates, read=True
            )
            top = hits[0].columns if hits else None
            if with_top and top is not None and project_of(top) in search.projects:
                # The best hit's terms give the leg's confidence in the fusion (its coverage of the
                # question); the search read them with the rows (a row out of scope counts for nothing,
                # as a read with the project test would have found nothing).
                search.top_terms.update(str(top["terms"]).split())
            return hits

        return FunctionLeg(LEXICAL, lexical)

    def _semantic_leg(self, search: _Search, leg: str, table: Collection) -> Leg[Hit]:
        index = self._index

        async def semantic(request: RetrievalRequest, context: TrustedContext) -> list[Hit]:
            started = time.perf_counter()
            vectors = await index.chain.embed([request.query], space=table.space, kind="query")
            table.check_vectors(vectors, 1)
            search.timings[f"{leg}_embed_ms"] = (time.perf_counter() - started) * 1000
            return await table.search_vector(
                vectors[0],
                await search.leg_where(table),
                search.candidates,
                nprobes=index.settings.ann_nprobes,
                refine_factor=index.settings.ann_refine_factor or None,
                probe_share=index.settings.ann_probe_share,
                # the rows are read from the main collection: a leg searching it reads them at once
                read=table is search.collection,
                version=search.versions.get(id(table)),
            )

        return FunctionLeg(leg, semantic)

    async def _run(self, search: _Search, context: TrustedContext) -> LegResults[Hit]:
        """Run the legs (lexical after them when semantic-only cannot run) and say what degraded."""
        legs = [self._semantic_leg(search, leg, table) for leg, table in search.semantic]
        if search.mode is not SearchMode.SEMANTIC or not search.semantic:
            legs.insert(0, self._lexical_leg(search, with_top=bool(search.semantic)))
        results = await run_legs(legs, search.request, context, provider=self._name)
        semantic_failures = [f for f in results.failures if f.leg != LEXICAL]
        if search.semantic:
            self._index.chain.record_search(fell_back=results.failed("semantic"))
        for failure in semantic_failures:
            search.degraded.append(f"{failure.leg} leg unavailable ({failure.kind}: {failure.message})")
        semantic_answered = [leg for leg, _ in search.semantic if leg in results.hits]
        if search.semantic and not semantic_answered:
            if LEXICAL not in results.hits and not results.failed(LEXICAL):
                # semantic-only was asked for and cannot run: lexical carries on
                lexical = self._lexical_leg(search, with_top=False)
                await run_legs([lexical], search.request, context, provider=self._name, into=results)
            search.degraded.append("no semantic leg answered; lexical results only")
        if results.failed(LEXICAL) and semantic_answered:
            search.degraded.append("lexical leg unavailable; semantic results only")
        if not results.hits:
            first = results.failures[0]
            raise error_for_failure(
                first,
                f"{first.leg or 'search'} leg failed: {first.message}",
                provider=self._name,
                default=ProviderUnavailable,
                kinds=("timeout", "rate_limited", "invalid_response", "not_configured"),
            )
        for leg, elapsed in results.elapsed_ms.items():
            search.timings[f"{leg}_ms"] = elapsed
        for leg, table in search.semantic:
            if leg in results.hits and (pending := await table.pending_count(search.versions.get(id(table)))):
                search.degraded.append(
                    f"{pending:,} chunk(s) wait for embedding in {leg} ({table.space.key}) and are found "
                    "by the other legs only; run 'simone index --embed-pending'"
                )
        return results

    def _judge(self, search: _Search, legs: dict[str, list[Hit]]) -> _Judged:
        """Each semantic leg's verdicts by its model's relevance rule, and each leg's vote."""
        settings = self._index.settings
        tables = dict(search.semantic)
        verdicts = {
            leg: dict(
                zip(
                    (hit.id for hit in hits),
                    relevance_rule(
                        tables[leg].space.key,
                        tables[leg].calibration,
                        margin=settings.relevance_margin,
                        band=settings.relevance_band,
                    ).judge([hit.score for hit in hits], min_similarity=search.request.min_similarity),
                    strict=True,
                )
            )
            for leg, hits in legs.items()
            if leg != LEXICAL
        }
        query_set = set(search.query_terms)
        coverage = len(query_set & search.top_terms) / len(query_set) if query_set else 0.0
        curves = {leg: vote_curve(table.space.key, table.calibration) for leg, table in search.semantic}
        rule, votes = _votes(legs, verdicts, curves, coverage)
        return _Judged(verdicts, rule, votes)

    async def _evidence(
        self, search: _Search, legs: dict[str, list[Hit]], judged: _Judged
    ) -> tuple[list[Evidence], list[Exclusion]]:
        """Fuse the legs, keep the relevant candidates in fused order, read their rows.

        Every leg takes part in the fusion with all its candidates, weighted by its confidence (see
        :func:`_votes`): a leg whose best candidate does not stand out (a topic the knowledge does not
        hold, a question its model half understands) votes with a small weight instead of being cut
        off at its relevance verdicts; the lexical leg's best hit, when that leg is sure of it, stays
        first. A fused candidate is kept when it shares enough terms with the question (the word
        share; lexical legs only) or is relevant by meaning; the lexical candidates dropped for too
        small a word share and the best semantic candidates judged not relevant are reported as
        ``not_relevant``. In hybrid mode the question is decided as a whole first (:func:`_on_topic`):
        when its words or its meaning found something, every semantic candidate counts too (kept by
        ``topic``) — the answer is not empty either way, so recall costs no ``no_results``. Returns
        the evidence and the exclusions.
        """
        # A chunk id is unique by construction; a table damaged by two writers at once holds some
        # twice, and each copy must not count (or be read) twice: the best copy stands for both.
        legs = {leg: first_of_each(hits, _hit_id) for leg, hits in legs.items()}
        fused = fuse_legs({leg: [(h.id, h.score) for h in hits] for leg, hits in legs.items()}, judged.rule)
        lexical_ids = {hit.id for hit in legs.get(LEXICAL, ())}
        word_share = self._word_share()
        on_topic = _on_topic(search, legs, judged.verdicts, word_share)
        rejected = list(
            dict.fromkeys(
                hit.id
                for leg, verdicts in judged.verdicts.items()
                for hit in legs[leg][:REJECTED_SHOWN]
                if not verdicts[hit.id].relevant and hit.id not in lexical_ids and not on_topic
            )
        )
        tables = dict(search.semantic)
        # Rows and row ids serve only where the leg searched the table rows are read from.
        own = [hits for leg, hits in legs.items() if leg == LEXICAL or tables.get(leg) is search.collection]
        reader = _RowReader(
            provider=self,
            search=search,
            verdicts=judged.verdicts,
            lexical_ids=lexical_ids,
            has_lexical=LEXICAL in legs,
            row_hints={hit.id: hit.row for hits in own for hit in hits if hit.row is not None},
            read_rows={hit.id: hit.columns for hits in own for hit in hits if hit.columns is not None},
            lexical_only=not judged.verdicts,
            word_share=word_share,
            on_topic=on_topic,
        )
        return await reader.read(fused, rejected)

    def _word_share(self) -> float:
        """The share of the question's terms a row must hold to be kept by its words."""
        configured = self._index.settings.relevance_word_share
        return RELEVANCE_WORD_SHARE if configured is None else configured

    def _details(
        self, search: _Search, results: LegResults[Hit], judged: _Judged, dropped: int
    ) -> dict[str, Any]:
        return {
            "mode": search.mode.value,
            "legs": {name: len(hits) for name, hits in results.hits.items()},
            "spaces": {leg: table.space.key for leg, table in search.semantic},
            "collection": search.collection.name,
            "dropped_not_relevant": dropped,
            "skipped_legs": search.skipped,
            "votes": judged.votes,
            "relevance": {
                leg: {
                    "margin": round(next(iter(verdicts.values())).margin, 4) if verdicts else None,
                    "relevant": sum(1 for v in verdicts.values() if v.relevant),
                }
                for leg, verdicts in judged.verdicts.items()
            },
            **{key: round(value, 3) for key, value in search.timings.items()},
        }

    def _one(
        self,
        row: dict[str, Any],
        item: LegRank,
        method: str,
        kept_by: list[str],
        matched: list[str],
        meaning: dict[str, Judgement],
    ) -> Evidence:
        title = str(row["title"])
        if row["heading"] and row["heading"] != title:
            title = f"{title} — {str(row['heading']).split(' › ')[-1]}"
        return Evidence.create(
            provider=ProviderKind.DOCUMENT_INDEX,
            provider_name=self._name,
            locator=_locator(row),
            content=str(row["text"]),
            title=title,
            score=float(item.score),
            metadata={
                EvidenceKey.METHOD: method,
                EvidenceKey.SPACE: self._index.space.key if self._index.space is not None else None,
                EvidenceKey.CHUNK_ID: item.id,
                EvidenceKey.PATH: row["path"],
                EvidenceKey.LINE_START: row["line_start"],
                EvidenceKey.LINE_END: row["line_end"],
                EvidenceKey.HEADING: row["heading"],
                EvidenceKey.KIND: row["kind"],
                EvidenceKey.LANGUAGE: row["language"],
                EvidenceKey.PROJECT: row["project"] or None,
                EvidenceKey.LEG_RANKS: item.ranks,
                EvidenceKey.LEG_SCORES: {k: round(v, 6) for k, v in item.scores.items()},
                EvidenceKey.RELEVANCE: {
                    "kept_by": kept_by,
                    "matched_terms": matched[:20],
                    "similarity": {leg: round(v.similarity, 4) for leg, v in meaning.items()},
                    "margin": {leg: round(v.margin, 4) for leg, v in meaning.items()},
                },
            },
        )


@dataclass(slots=True)
class _RowReader:
    """Reads the rows of fused candidates page by page and keeps the relevant ones, in fused order."""

    provider: DocumentIndexProvider
    search: _Search
    verdicts: dict[str, dict[str, Judgement]]
    lexical_ids: set[str]
    has_lexical: bool
    row_hints: dict[str, int]
    read_rows: dict[str, Mapping[str, Any]]
    lexical_only: bool
    word_share: float
    on_topic: bool
    out: list[Evidence] = field(default_factory=list)
    dropped: list[Exclusion] = field(default_factory=list)

    async def read(self, fused: FusedLegs, rejected: list[str]) -> tuple[list[Evidence], list[Exclusion]]:
        """The kept evidence and the exclusions, reading at most :data:`MAX_PAGES` pages of rows.

        When the best ``4 × limit`` fused candidates hold too few relevant ones, the rest (ranked lower
        by every leg) are not read — they count as beyond the limit.
        """
        limit = self.search.request.limit
        order = fused.items
        position = 0
        page = limit if self.lexical_only else max(2 * limit, 10)  # nothing is dropped lexically
        for read in range(MAX_PAGES):
            if read and (len(self.out) >= limit or position >= len(order)):
                break
            window = order[position : position + page]
            position += len(window)
            wanted = [item.id for item in window] + (rejected if read == 0 else [])
            rows = await self._fetch(wanted)
            if read == 0:
                for chunk_id in rejected:
                    if (row := rows.get(chunk_id)) is not None:
                        self.dropped.append(self._not_relevant(chunk_id, row))
            for item in window:
                row = rows.get(item.id)
                if row is not None:  # else deleted since the search ran
                    self._keep(row, item, fused.method)
        return self.out, self.dropped

    async def _fetch(self, wanted: list[str]) -> dict[str, dict[str, Any]]:
        """The rows of ``wanted``: those the legs read with their search, the rest read now."""
        search = self.search
        # A leg may leave its project test out (every row passed it when the search began); a row
        # written meanwhile for another project is not used (a read with the test finds nothing).
        visible = set(search.projects)
        found = {
            chunk_id: unpack_row(columns)
            for chunk_id in wanted
            if (columns := self.read_rows.get(chunk_id)) is not None and project_of(columns) in visible
        }
        rest = [chunk_id for chunk_id in wanted if chunk_id not in found]
        if rest:
            found.update(
                await search.collection.fetch(
                    rest, search.where, rows=self.row_hints, projects=search.projects
                )
            )
        return found

    def _meaning(self, chunk_id: str) -> dict[str, Judgement]:
        return {leg: v[chunk_id] for leg, v in self.verdicts.items() if chunk_id in v}

    def _not_relevant(self, chunk_id: str, row: dict[str, Any]) -> Exclusion:
        return _not_relevant(self.provider.name, chunk_id, row, self._meaning(chunk_id))

    def _keep(self, row: dict[str, Any], item: LegRank, method: str) -> None:
        query_terms = set(self.search.query_terms)
        matched = sorted(query_terms.intersection(str(row.pop("terms", "")).split()))
        meaning = self._meaning(item.id)
        share = len(matched) / len(query_terms) if query_terms else 0.0
        by_words = self.lexical_only or (bool(matched) and self.has_lexical and share >= self.word_share)
        by_meaning = any(v.relevant for v in meaning.values())
        kept_by = ["lexical"] * by_words + ["meaning"] * by_meaning
        if not kept_by and self.on_topic and meaning:
            kept_by = ["topic"]  # a semantic candidate of a question the legs found (see _on_topic)
        if not kept_by:
            if item.id in self.lexical_ids:  # shares words, but too few (word_share)
                self.dropped.append(_not_relevant(self.provider.name, item.id, row, meaning))
            return
        if len(self.out) < self.search.request.limit:
            self.out.append(self.provider._one(row, item, method, kept_by, matched, meaning))


def _on_topic(
    search: _Search, legs: dict[str, list[Hit]], verdicts: dict[str, dict[str, Judgement]], word_share: float
) -> bool:
    """Whether a hybrid question is about a topic the collection holds, decided for the question.

    It is when a semantic leg stands out (the relevance rule kept anything), or when the lexical
    leg's best hit holds at least one of the question's terms and at least ``word_share`` of them —
    then that hit is kept by its words and the answer is not empty anyway. Only in hybrid mode (a
    lexical leg beside semantic ones); semantic mode keeps each leg's own verdicts.
    """
    if not verdicts or not legs.get(LEXICAL):
        return False
    if any(v.relevant for leg_verdicts in verdicts.values() for v in leg_verdicts.values()):
        return True
    query = set(search.query_terms)
    coverage = len(query & search.top_terms) / len(query) if query else 0.0
    return coverage > 0 and coverage >= word_share


def _votes(
    legs: dict[str, list[Hit]],
    judged: dict[str, dict[str, Judgement]],
    curves: Mapping[str, tuple[VoteCurve, str]],
    coverage: float,
) -> tuple[FusionRule, dict[str, dict[str, Any]]]:
    """The fusion rule and each leg's confidence and weight for the trace.

    Each answering leg is weighted by its confidence, and the lexical leg's sure best hit is pinned.

    The confidence is the probability that the leg's best candidate is the answer: for the lexical
    leg from ``coverage`` (the share of the question's terms its best hit holds) and its BM25
    standout, for a semantic leg from its relevance margin on its space's curve (``curves``: shipped
    for the bundled models, fitted with the space's calibration, or the default; the trace names
    which as ``curve``). With a single
    answering leg there is nothing to weigh and the trace is empty. The lexical leg's best hit is
    pinned (kept first in the fused order) when its log-odds reach :data:`~simone.runtime.ranking.LEXICAL_PIN`,
    unless a semantic leg whose curve is ``shifted`` onto the lexical leg's footing (calibrated on this
    collection, and found the own chunk first at least as often as the lexical leg did) is surer: then
    the weights decide the head (pinned regardless, multilingual-e5's Arabic hybrid stayed 0.8746, below
    its semantic leg's 0.8993; with the yield 0.9125). Beside the shipped curves the pin never yields:
    on the tuning split yielding lowered the chance that every language's hybrid >= lexical from
    0.473 to 0.222 (``benchmarks/fusion_tuning.py --label recheck``, ``pin_rule``). Beside a shifted
    curve the weights are also gentler (:data:`~simone.runtime.ranking.SHIFTED_VOTE_SHARPNESS`): one
    offset moved from pseudo-questions is a weaker footing than a curve fitted on real questions
    (``benchmarks/shifted_sharpness.py``).
    """
    log_odds: dict[str, float] = {}
    for leg, hits in legs.items():
        if not hits:
            continue
        if leg == LEXICAL:
            log_odds[leg] = LEXICAL_VOTE.log_odds(*lexical_standout([hit.score for hit in hits], coverage))
        else:
            log_odds[leg] = curves[leg][0].log_odds(judged[leg][hits[0].id].margin)
    if len(log_odds) < 2:
        return WeightedRRF({}), {}
    # a curve shifted onto the lexical leg's footing is read with the gentler sharpness
    shifted = any(curves[leg][1] == "shifted" for leg in log_odds if leg in curves)
    sharpness = SHIFTED_VOTE_SHARPNESS if shifted else VOTE_SHARPNESS
    weighted = WeightedRRF.from_confidence(log_odds, sharpness=sharpness)
    trace: dict[str, dict[str, Any]] = {
        leg: {"confidence": round(_sigmoid(z), 4), "weight": round(weighted.weights[leg], 6)}
        | ({"curve": curves[leg][1]} if leg in curves else {})
        for leg, z in log_odds.items()
    }
    pinned = None
    lexical = log_odds.get(LEXICAL, -math.inf)
    # a leg read on the lexical leg's footing (its curve shifted) that is surer takes the head
    surer = [
        z for leg, z in log_odds.items() if leg in curves and curves[leg][1] == "shifted" and z > lexical
    ]
    if LEXICAL_PIN is not None and lexical >= LEXICAL_PIN and not surer:
        pinned = legs[LEXICAL][0].id
        trace[LEXICAL]["pinned"] = pinned
    return HeadThenConsensus(Pinned(weighted, pinned)), trace


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _hit_id(hit: Hit) -> str:
    return hit.id


def _locator(row: dict[str, Any]) -> str:
    return chunk_locator(row["path"], row["kind"], row["heading"], row["line_start"], row["line_end"])


def _not_relevant(
    provider: str, chunk_id: str, row: dict[str, Any], meaning: dict[str, Judgement]
) -> Exclusion:
    why = "; ".join(
        f"{leg}: similarity {v.similarity:.3f}, best stands {v.margin:.3f} above the median ({v.rule} rule)"
        for leg, v in meaning.items()
    )
    return Exclusion(
        id=chunk_id,
        provider=provider,
        locator=_locator(row),
        reason="not_relevant",
        detail=f"no word shared with the question and not relevant by meaning ({why or 'no semantic leg'})",
    )
