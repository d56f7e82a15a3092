"""The document index as a router provider: lexical, semantic or hybrid search over one collection.

* **lexical** — BM25 inside LanceDB over the analysed-terms column (the query analysed by the same
  :class:`~simone.runtime.Analyzer` as the rows);
* **semantic** — the query embedded by an embedder of the collection's own space, nearest chunks
  by cosine similarity (exact below the ANN threshold, ANN with refinement above);
* **hybrid** — both legs at once, fused by RRF here (the router fuses again across providers).

When the semantic leg cannot run (no embedder of the space answers), the provider answers with the
lexical leg, says so in ``degraded`` and reports the leg's :class:`~simone.runtime.ProviderFailure`
in ``leg_failures``; the chain's health window records the fallback. Chunks still pending embedding
are found only lexically, and that is said too.

Scope: rows carry the project they were indexed for; a request sees the rows of its trusted
context's project plus the rows indexed without a project, never another project's.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import anyio
from simone.providers.documents._store import Hit, build_where
from simone.runtime import (
    Evidence,
    ProviderError,
    ProviderFailure,
    ProviderKind,
    ProviderNotConfigured,
    ProviderResponse,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
    rrf,
)

if TYPE_CHECKING:
    from simone.providers.documents._index import DocumentIndex


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
        candidates = max(request.limit, index.settings.leg_candidates)
        legs: dict[str, list[Hit]] = {}
        failures: list[ProviderFailure] = []
        timings: dict[str, float] = {}

        async def lexical() -> None:
            started = time.perf_counter()
            terms = " ".join(index.analyzer.terms(request.query))
            try:
                legs["lexical"] = await collection.search_terms(terms, where, candidates)
            except Exception as exc:  # noqa: BLE001 - LanceDB raises untyped errors; translated here
                failures.append(self._failure("lexical", exc, started))
            timings["lexical_ms"] = (time.perf_counter() - started) * 1000

        async def semantic() -> None:
            started = time.perf_counter()
            try:
                vectors = await index.chain.embed([request.query], space=collection.space, kind="query")
                collection.check_vectors(vectors, 1)
                timings["embed_ms"] = (time.perf_counter() - started) * 1000
                hits = await collection.search_vector(
                    vectors[0],
                    where,
                    candidates,
                    nprobes=index.settings.ann_nprobes,
                    refine_factor=index.settings.ann_refine_factor or None,
                )
            except Exception as exc:  # noqa: BLE001 - embedder and LanceDB errors become a leg failure
                failures.append(self._failure("semantic", exc, started))
                return
            finally:
                timings["semantic_ms"] = (time.perf_counter() - started) * 1000
            if request.min_similarity is not None:
                hits = [hit for hit in hits if hit.score >= request.min_similarity]
            legs["semantic"] = hits

        wanted = ["lexical", "semantic"] if mode is SearchMode.HYBRID else [mode.value]
        async with anyio.create_task_group() as group:
            if "lexical" in wanted:
                group.start_soon(lexical)
            if "semantic" in wanted:
                group.start_soon(semantic)

        degraded: list[str] = []
        semantic_failed = any(f.leg == "semantic" for f in failures)
        if "semantic" in wanted:
            index.chain.record_search(fell_back=semantic_failed)
        if semantic_failed:
            failure = next(f for f in failures if f.leg == "semantic")
            degraded.append(
                f"semantic leg unavailable ({failure.kind}: {failure.message}); lexical results only"
            )
            if "lexical" not in legs and not any(f.leg == "lexical" for f in failures):
                # Semantic-only was asked for and cannot run: lexical carries on.
                await lexical()
        if "lexical" in wanted and any(f.leg == "lexical" for f in failures) and "semantic" in legs:
            degraded.append("lexical leg unavailable; semantic results only")
        if not legs:
            raise _as_error(failures[0], self._name)
        if "semantic" in legs:
            pending = await index.pending_count()
            if pending:
                degraded.append(
                    f"{pending:,} chunk(s) wait for embedding and are found by lexical search only; "
                    "run 'simone index --embed-pending'"
                )
        evidence = self._evidence(legs, request.limit, collection.space.key)
        details: dict[str, Any] = {
            "mode": mode.value,
            "legs": {name: len(hits) for name, hits in legs.items()},
            "space": collection.space.key,
            "collection": collection.name,
            **{key: round(value, 3) for key, value in timings.items()},
        }
        return ProviderResponse(
            evidence=evidence,
            degraded=degraded,
            leg_failures=[f for f in failures if f.leg in wanted or f.leg == "lexical"],
            details=details,
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

    def _evidence(self, legs: dict[str, list[Hit]], limit: int, space: str) -> list[Evidence]:
        rows: dict[str, dict[str, Any]] = {}
        scores: dict[str, dict[str, float]] = {}
        ranks: dict[str, dict[str, int]] = {}
        for leg, hits in legs.items():
            for rank, hit in enumerate(hits, start=1):
                chunk_id = str(hit.row["id"])
                rows.setdefault(chunk_id, hit.row)
                scores.setdefault(chunk_id, {})[leg] = hit.score
                ranks.setdefault(chunk_id, {})[leg] = rank
        if len(legs) == 1:
            (leg,) = legs
            order = [(str(hit.row["id"]), hit.score) for hit in legs[leg]]
            method = leg
        else:
            fused = rrf({leg: [str(hit.row["id"]) for hit in hits] for leg, hits in legs.items()})
            order = [(item.id, item.score) for item in fused]
            method = "hybrid"
        out: list[Evidence] = []
        for chunk_id, score in order[:limit]:
            row = rows[chunk_id]
            locator = f"{row['path']}#L{row['line_start']}-L{row['line_end']}"
            title = str(row["title"])
            if row["heading"] and row["heading"] != title:
                title = f"{title} — {str(row['heading']).split(' › ')[-1]}"
            out.append(
                Evidence.create(
                    provider=ProviderKind.DOCUMENT_INDEX,
                    provider_name=self._name,
                    locator=locator,
                    content=str(row["text"]),
                    title=title,
                    score=float(score),
                    metadata={
                        "method": method,
                        "space": space,
                        "chunk_id": chunk_id,
                        "path": row["path"],
                        "line_start": row["line_start"],
                        "line_end": row["line_end"],
                        "heading": row["heading"],
                        "kind": row["kind"],
                        "language": row["language"],
                        "project": row["project"] or None,
                        "leg_ranks": ranks[chunk_id],
                        "leg_scores": {k: round(v, 6) for k, v in scores[chunk_id].items()},
                    },
                )
            )
        return out


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
