"""The document index as a router provider: lexical, semantic or hybrid search over one collection.

* **lexical** — BM25 inside LanceDB over the analysed-terms column (the query analysed by the same
  :class:`~simone.runtime.Analyzer` as the rows);
* **semantic** — one leg per embedding space the collection carries (``semantic`` for its own,
  ``semantic:<provider>`` for each extra space): the query embedded in that space, nearest chunks by
  cosine similarity (exact below the ANN threshold, the IVF index above: ``nprobes`` partitions at
  least, and at least ``ann_probe_share`` of them; refined by exact distance for IVF_HNSW_SQ);
* **hybrid** — all legs at once, fused by RRF here, each leg weighted by its confidence (the router
  fuses again across providers).

**Confidence-weighted fusion.** Each leg votes with the odds that its best candidate is the answer,
read off how far that candidate stands out (:class:`~simone.runtime.VoteCurve`: a semantic leg's
margin, the lexical leg's term coverage and BM25 standout), raised to
:data:`~simone.runtime.VOTE_SHARPNESS` and relative to the most confident leg. A leg whose best
candidate does not stand out (an absent topic, a question it half understands) hardly moves the
ranking; a lexical hit holding most of the question's words is not reordered by a semantic leg that
merely likes its neighbour. When the lexical leg is sure of its best hit (log-odds at least
:data:`~simone.runtime.LEXICAL_PIN`) that hit stays first: RRF's flat head would otherwise let a
candidate both legs rank second or third overtake it. Weights, confidences and the pinned hit are in
``details["votes"]``.

Every semantic leg is judged by the relevance rule of its model (:class:`~simone.runtime.RelevanceRule`):
a fused candidate is kept when it shares words with the question (hybrid) or is relevant by meaning;
the rest are dropped, and the best semantic candidates judged not relevant are reported as
``not_relevant`` exclusions. A leg whose model does not cover the question (its script, or its
language as its letters tell: the bundled MiniLM is English-only, USE lacks e.g. Vietnamese) is
skipped and named in ``details["skipped_legs"]``.

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
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from simone.providers.documents._store import Collection, Hit, build_where
from simone.runtime import (
    LEXICAL_PIN,
    LEXICAL_VOTE,
    RELEVANCE_WORD_SHARE,
    VOTE_SHARPNESS,
    Evidence,
    Exclusion,
    Judgement,
    ProviderError,
    ProviderFailure,
    ProviderKind,
    ProviderNotConfigured,
    ProviderResponse,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
    confidence_weights,
    lexical_standout,
    rrf,
    rule_for,
    uncovered_language,
    vote_for,
)

if TYPE_CHECKING:
    from simone.providers.documents._index import DocumentIndex


MAX_PAGES = 2
"""Row reads per search after fusion (each of ``2 × limit`` candidates, at least 10)."""

REJECTED_SHOWN = 5
"""Per semantic leg, the best candidates judged not relevant that are reported as exclusions."""


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
        index = self._index
        collection = index.collection
        if collection is None:
            raise ProviderNotConfigured(
                f"the document collection {index.name!r} is empty; run 'simone index PATH' first",
                provider=self._name,
            )
        mode = request.mode or SearchMode(index.settings.default_mode)
        projects = [""] if not context.project else ["", context.project]
        where = build_where(projects, request.filters)
        unscoped = build_where(projects, request.filters, scoped=False)

        async def leg_where(table: Collection) -> str:
            # The legs leave out a project test every row passes; rows are read with ``where``.
            return unscoped if await table.only_projects(projects) else where

        candidates = max(request.limit, index.settings.leg_candidates)
        query_terms = index.analyzer.terms(request.query)
        legs: dict[str, list[Hit]] = {}
        failures: list[ProviderFailure] = []
        timings: dict[str, float] = {}
        degraded: list[str] = []

        top_terms: set[str] = set()

        async def lexical(*, with_top: bool = False) -> None:
            started = time.perf_counter()
            try:
                hits = legs["lexical"] = await collection.search_terms(
                    " ".join(query_terms), await leg_where(collection), candidates
                )
                if with_top and hits:
                    # The best hit's terms give the leg's confidence in the fusion (its coverage of
                    # the question); read here, beside the semantic legs, not after them.
                    terms = (await collection.terms_of([hits[0].id], where)).get(hits[0].id)
                    top_terms.update(terms.split() if terms is not None else ())
            except Exception as exc:  # noqa: BLE001 - LanceDB raises untyped errors; translated here
                failures.append(self._failure("lexical", exc, started))
            timings["lexical_ms"] = (time.perf_counter() - started) * 1000

        async def semantic(leg: str, table: Collection) -> None:
            started = time.perf_counter()
            try:
                vectors = await index.chain.embed([request.query], space=table.space, kind="query")
                table.check_vectors(vectors, 1)
                timings[f"{leg}_embed_ms"] = (time.perf_counter() - started) * 1000
                legs[leg] = await table.search_vector(
                    vectors[0],
                    await leg_where(table),
                    candidates,
                    nprobes=index.settings.ann_nprobes,
                    refine_factor=index.settings.ann_refine_factor or None,
                    probe_share=index.settings.ann_probe_share,
                )
            except Exception as exc:  # noqa: BLE001 - embedder and LanceDB errors become a leg failure
                failures.append(self._failure(leg, exc, started))
            finally:
                timings[f"{leg}_ms"] = (time.perf_counter() - started) * 1000

        semantic_legs: list[tuple[str, Collection]] = []
        skipped: dict[str, str] = {}
        if mode is not SearchMode.LEXICAL:
            for leg, table in index.semantic_collections():
                uncovered = uncovered_language(request.query, table.space.key)
                if uncovered is None:
                    semantic_legs.append((leg, table))
                else:
                    skipped[leg] = f"{table.space.model} does not cover {uncovered}"
            if skipped and not semantic_legs:
                degraded.append(
                    f"no semantic leg covers the question ({'; '.join(skipped.values())}); lexical results only"
                )
        async with anyio.create_task_group() as group:
            if mode is not SearchMode.SEMANTIC or not semantic_legs:
                group.start_soon(partial(lexical, with_top=bool(semantic_legs)))
            for leg, table in semantic_legs:
                group.start_soon(semantic, leg, table)

        semantic_failures = [f for f in failures if f.leg != "lexical"]
        if semantic_legs:
            index.chain.record_search(fell_back=any(f.leg == "semantic" for f in semantic_failures))
        for failure in semantic_failures:
            degraded.append(f"{failure.leg} leg unavailable ({failure.kind}: {failure.message})")
        semantic_answered = [leg for leg, _ in semantic_legs if leg in legs]
        if semantic_legs and not semantic_answered:
            if "lexical" not in legs and not any(f.leg == "lexical" for f in failures):
                await lexical()  # semantic-only was asked for and cannot run: lexical carries on
            degraded.append("no semantic leg answered; lexical results only")
        if any(f.leg == "lexical" for f in failures) and semantic_answered:
            degraded.append("lexical leg unavailable; semantic results only")
        if not legs:
            raise _as_error(failures[0], self._name)
        for leg, table in semantic_legs:
            if leg in legs and (pending := await table.pending_count()):
                degraded.append(
                    f"{pending:,} chunk(s) wait for embedding in {leg} ({table.space.key}) and are found "
                    "by the other legs only; run 'simone index --embed-pending'"
                )
        tables = dict(semantic_legs)
        judged = {
            leg: dict(
                zip(
                    (hit.id for hit in hits),
                    rule_for(
                        tables[leg].space.key,
                        margin=index.settings.relevance_margin,
                        band=index.settings.relevance_band,
                    ).judge([hit.score for hit in hits], min_similarity=request.min_similarity),
                    strict=True,
                )
            )
            for leg, hits in legs.items()
            if leg != "lexical"
        }
        query_set = set(query_terms)
        weights, votes, pinned = _votes(
            legs,
            judged,
            {leg: table.space.key for leg, table in semantic_legs},
            len(query_set & top_terms) / len(query_set) if query_set else 0.0,
        )
        started = time.perf_counter()
        evidence, excluded = await self._evidence(
            collection,
            where,
            legs,
            judged,
            query_set,
            request.limit,
            weights=weights,
            pinned=pinned,
            # Row ids are a read hint only where the leg searched the table rows are read from.
            row_hints={
                hit.id: hit.row
                for leg, hits in legs.items()
                if leg == "lexical" or tables.get(leg) is collection
                for hit in hits
                if hit.row is not None
            },
            projects=projects,
            lexical_only=not judged,
            word_share=RELEVANCE_WORD_SHARE
            if index.settings.relevance_word_share is None
            else index.settings.relevance_word_share,
        )
        timings["fetch_ms"] = (time.perf_counter() - started) * 1000
        details: dict[str, Any] = {
            "mode": mode.value,
            "legs": {name: len(hits) for name, hits in legs.items()},
            "spaces": {leg: table.space.key for leg, table in semantic_legs},
            "collection": collection.name,
            "dropped_not_relevant": len(excluded),
            "skipped_legs": skipped,
            "votes": votes,
            "relevance": {
                leg: {
                    "margin": round(next(iter(verdicts.values())).margin, 4) if verdicts else None,
                    "relevant": sum(1 for v in verdicts.values() if v.relevant),
                }
                for leg, verdicts in judged.items()
            },
            **{key: round(value, 3) for key, value in timings.items()},
        }
        return ProviderResponse(
            evidence=evidence, degraded=degraded, leg_failures=failures, details=details, excluded=excluded
        )

    def _failure(self, leg: str, exc: Exception, started: float) -> ProviderFailure:
        elapsed = (time.perf_counter() - started) * 1000
        if isinstance(exc, ProviderError):
            return ProviderFailure(
                provider=self._name,
                kind=exc.kind,
                message=exc.message,
                retryable=exc.retryable,
                retry_after_s=exc.retry_after_s,
                leg=leg,
                elapsed_ms=elapsed,
            )
        return ProviderFailure(
            provider=self._name,
            kind="error",
            message=f"{type(exc).__name__}: {exc}",
            leg=leg,
            elapsed_ms=elapsed,
        )

    async def _evidence(
        self,
        collection: Collection,
        where: str,
        legs: dict[str, list[Hit]],
        judged: dict[str, dict[str, Judgement]],
        query_terms: set[str],
        limit: int,
        *,
        weights: dict[str, float],
        pinned: str | None = None,
        row_hints: dict[str, int],
        projects: list[str],
        lexical_only: bool,
        word_share: float,
    ) -> tuple[list[Evidence], list[Exclusion]]:
        """Fuse the legs, keep the relevant candidates in fused order, read their rows.

        Every leg takes part in the fusion with all its candidates, weighted by its confidence
        (``weights``, see :func:`_votes`): a leg whose best candidate does not stand out (a topic the
        knowledge does not hold, a question its model half understands) votes with a small weight
        instead of being cut off at its relevance verdicts; ``pinned`` (the lexical leg's best hit,
        when that leg is sure of it) stays first. A fused candidate is kept when it shares
        enough terms with the question (``word_share``; lexical legs only) or is relevant by meaning;
        the lexical candidates dropped for too small a word share and the best semantic candidates
        judged not relevant are reported as ``not_relevant``. Returns the evidence and the exclusions.
        """
        # A chunk id is unique by construction; a table damaged by two writers at once holds some
        # twice, and each copy must not count (or be read) twice: the best copy stands for both.
        legs = {leg: _first_of_each(hits) for leg, hits in legs.items()}
        scores: dict[str, dict[str, float]] = {}
        ranks: dict[str, dict[str, int]] = {}
        for leg, hits in legs.items():
            for rank, hit in enumerate(hits, start=1):
                scores.setdefault(hit.id, {})[leg] = hit.score
                ranks.setdefault(hit.id, {})[leg] = rank
        fusing = {leg: hits for leg, hits in legs.items() if hits}
        lexical_ids = {hit.id for hit in legs.get("lexical", ())}
        rejected = list(
            dict.fromkeys(
                hit.id
                for leg in judged
                for hit in legs[leg][:REJECTED_SHOWN]
                if not judged[leg][hit.id].relevant and hit.id not in lexical_ids
            )
        )
        if not fusing:
            order: list[tuple[str, float]] = []
            method = next(iter(legs))
        elif len(fusing) == 1:
            ((method, hits),) = fusing.items()
            order = [(hit.id, hit.score) for hit in hits]
        else:
            fused = rrf({leg: [hit.id for hit in hits] for leg, hits in fusing.items()}, weights=weights)
            order = [(item.id, item.score) for item in fused]
            if pinned is not None and order and order[0][0] != pinned:
                # The lexical leg is sure of its best hit: it stays first, tied with the fused head.
                order = [(pinned, order[0][1])] + [item for item in order if item[0] != pinned]
            method = "hybrid"
        out: list[Evidence] = []
        dropped: list[Exclusion] = []
        position = 0
        page = limit if lexical_only else max(2 * limit, 10)  # nothing is dropped lexically
        # At most MAX_PAGES reads: when the best 4 × limit fused candidates hold too few relevant
        # ones, the rest (ranked lower by every leg) are not read — they count as beyond the limit.
        for read in range(MAX_PAGES):
            if read and (len(out) >= limit or position >= len(order)):
                break
            window = order[position : position + page]
            position += len(window)
            wanted = [chunk_id for chunk_id, _ in window] + (rejected if read == 0 else [])
            rows = await collection.fetch(wanted, where, rows=row_hints, projects=projects) if wanted else {}
            if read == 0:
                for chunk_id in rejected:
                    if (row := rows.get(chunk_id)) is not None:
                        meaning = {leg: v[chunk_id] for leg, v in judged.items() if chunk_id in v}
                        dropped.append(_not_relevant(self._name, chunk_id, row, meaning))
            for chunk_id, score in window:
                row = rows.get(chunk_id)
                if row is None:
                    continue  # deleted since the search ran
                matched = sorted(query_terms.intersection(str(row.pop("terms", "")).split()))
                meaning = {leg: v[chunk_id] for leg, v in judged.items() if chunk_id in v}
                share = len(matched) / len(query_terms) if query_terms else 0.0
                by_words = lexical_only or (bool(matched) and "lexical" in legs and share >= word_share)
                by_meaning = any(v.relevant for v in meaning.values())
                kept_by = ["lexical"] * by_words + ["meaning"] * by_meaning
                if not kept_by:
                    if chunk_id in lexical_ids:  # shares words, but too few (word_share)
                        dropped.append(_not_relevant(self._name, chunk_id, row, meaning))
                    continue
                if len(out) < limit:
                    out.append(
                        self._one(
                            row,
                            chunk_id,
                            score,
                            method,
                            ranks[chunk_id],
                            scores[chunk_id],
                            kept_by,
                            matched,
                            meaning,
                        )
                    )
        return out, dropped

    def _one(
        self,
        row: dict[str, Any],
        chunk_id: str,
        score: float,
        method: str,
        ranks: dict[str, int],
        scores: dict[str, float],
        kept_by: list[str],
        matched: list[str],
        meaning: dict[str, Judgement],
    ) -> Evidence:
        locator = _locator(row)
        title = str(row["title"])
        if row["heading"] and row["heading"] != title:
            title = f"{title} — {str(row['heading']).split(' › ')[-1]}"
        return Evidence.create(
            provider=ProviderKind.DOCUMENT_INDEX,
            provider_name=self._name,
            locator=locator,
            content=str(row["text"]),
            title=title,
            score=float(score),
            metadata={
                "method": method,
                "space": self._index.space.key if self._index.space is not None else None,
                "chunk_id": chunk_id,
                "path": row["path"],
                "line_start": row["line_start"],
                "line_end": row["line_end"],
                "heading": row["heading"],
                "kind": row["kind"],
                "language": row["language"],
                "project": row["project"] or None,
                "leg_ranks": ranks,
                "leg_scores": {k: round(v, 6) for k, v in scores.items()},
                "relevance": {
                    "kept_by": kept_by,
                    "matched_terms": matched[:20],
                    "similarity": {leg: round(v.similarity, 4) for leg, v in meaning.items()},
                    "margin": {leg: round(v.margin, 4) for leg, v in meaning.items()},
                },
            },
        )


def _votes(
    legs: dict[str, list[Hit]],
    judged: dict[str, dict[str, Judgement]],
    spaces: dict[str, str],
    coverage: float,
) -> tuple[dict[str, float], dict[str, dict[str, Any]], str | None]:
    """Each answering leg's fusion weight, its confidence and weight for the trace, and the pinned hit.

    The confidence is the probability that the leg's best candidate is the answer: for the lexical
    leg from ``coverage`` (the share of the question's terms its best hit holds) and its BM25
    standout, for a semantic leg from its relevance margin on its model's curve. With a single
    answering leg there is nothing to weigh and the trace is empty. The lexical leg's best hit is
    pinned (kept first in the fused order) when its log-odds reach :data:`~simone.runtime.LEXICAL_PIN`.
    """
    log_odds: dict[str, float] = {}
    for leg, hits in legs.items():
        if not hits:
            continue
        if leg == "lexical":
            log_odds[leg] = LEXICAL_VOTE.log_odds(*lexical_standout([hit.score for hit in hits], coverage))
        else:
            log_odds[leg] = vote_for(spaces[leg]).log_odds(judged[leg][hits[0].id].margin)
    if len(log_odds) < 2:
        return {}, {}, None
    weights = confidence_weights(log_odds, sharpness=VOTE_SHARPNESS)
    trace: dict[str, dict[str, Any]] = {
        leg: {"confidence": round(_sigmoid(z), 4), "weight": round(weights[leg], 6)}
        for leg, z in log_odds.items()
    }
    pinned = None
    if LEXICAL_PIN is not None and log_odds.get("lexical", -math.inf) >= LEXICAL_PIN:
        pinned = legs["lexical"][0].id
        trace["lexical"]["pinned"] = pinned
    return weights, trace, pinned


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _locator(row: dict[str, Any]) -> str:
    return f"{row['path']}#L{row['line_start']}-L{row['line_end']}"


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


def _as_error(failure: ProviderFailure, provider: str) -> ProviderError:
    from simone.runtime import InvalidResponse, ProviderTimeout, ProviderUnavailable, RateLimited

    classes: dict[str, type[ProviderError]] = {
        "timeout": ProviderTimeout,
        "rate_limited": RateLimited,
        "invalid_response": InvalidResponse,
        "not_configured": ProviderNotConfigured,
    }
    cls = classes.get(failure.kind, ProviderUnavailable)
    return cls(
        f"{failure.leg or 'search'} leg failed: {failure.message}",
        provider=provider,
        retryable=failure.retryable,
        retry_after_s=failure.retry_after_s,
    )


def _first_of_each(hits: list[Hit]) -> list[Hit]:
    """``hits`` in order, each chunk id once (its best-ranked copy)."""
    unique: dict[str, Hit] = {}
    for hit in hits:
        unique.setdefault(hit.id, hit)
    return list(unique.values())
