"""The ``memory`` and ``session-memory`` providers for the router.

Both rank lexically with BM25 (inside SQLite FTS5) over the shared analysis's terms, filtered by the
trusted context's scope before ranking, ties by the newest update then the id. An item that shares no
term with the query is not relevant and is never returned. ``memory`` can add a semantic leg through the
embedding chain, fused by RRF; ``session-memory`` is lexical only. A request for ``semantic`` that no
semantic leg can serve gets lexical results and says so in ``degraded``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
from simone.providers.memory._models import MemoryRecord, RecordHit, RecordKind, SearchQuery, SessionSummary
from simone.providers.memory._records import render
from simone.providers.memory._store import MemoryStore, SessionStore, VectorStore
from simone.runtime import (
    MAX_QUERY_CHARS,
    ConfigError,
    EmbeddingChain,
    EmbeddingSpace,
    Evidence,
    EvidenceKey,
    InvalidRequest,
    MemorySettings,
    ProviderFailure,
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)
from simone.runtime.ranking import (
    FunctionLeg,
    Leg,
    LegRank,
    LegResults,
    fuse_legs,
    run_legs,
    seconds_left,
)

DEFAULT_MIN_SIMILARITY = 0.25
"""The semantic leg's default floor: below it a record is not relevant (never "the nearest of all")."""


_FILTERS = ("kind", "status", "tag")

LEXICAL = "lexical"
SEMANTIC = "semantic"


def _max_limit(store: object, explicit: int | None) -> int:
    """The explicit cap, else the store's ``memory.max_query_limit``, else 200."""
    if explicit is not None:
        return explicit
    settings = getattr(store, "settings", None)
    return int(getattr(settings, "max_query_limit", 200))


def _session_legs(
    name: str, request: RetrievalRequest
) -> tuple[list[str], list[ProviderFailure], dict[str, Any]]:
    details: dict[str, Any] = {"method": "lexical"}
    if request.mode is SearchMode.SEMANTIC:
        message = f"{name} has no semantic leg; lexical only"
        failure = ProviderFailure(provider=name, kind="not_configured", message=message, leg="semantic")
        return [message], [failure], details
    if request.mode is SearchMode.HYBRID:
        details["note"] = f"hybrid served by the lexical leg ({name} has no semantic leg)"
    return [], [], details


class MemoryProvider:
    """Structured memory as evidence: notes, todos, checklists, current facts and task states.

    Lexical BM25 always; with an embedding ``chain``, also a semantic leg (cosine similarity over record
    vectors in the database's pinned space), fused with the lexical ranking by RRF inside the provider.
    Records get their vectors lazily, newest first, at most ``max_embeddings_per_query`` per request;
    the rest wait as "pending embedding" and are still found lexically. If the space's embedders fail,
    the answer is lexical only and says so (``degraded`` and a leg failure) — never another space.

    Args:
        store: the memory store (a :class:`VectorStore` too when ``chain`` is given).
        name: the instance name (default ``memory``).
        kinds: only these kinds (default: all).
        max_limit: the most records one request returns (default: the store's ``memory.max_query_limit``).
        chain: the embedding chain (the document index's); ``None`` for lexical only.
        min_similarity: the semantic leg's floor when the request sets none.
        max_embeddings_per_query: records embedded while serving one request.
        embed_batch: texts per embedding call.

    Request filters it understands (exact match): ``kind``, ``status``, ``tag``; others are ignored and
    listed in ``details["ignored_filters"]``.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        name: str = "memory",
        kinds: tuple[RecordKind, ...] | None = None,
        max_limit: int | None = None,
        chain: EmbeddingChain | None = None,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        max_embeddings_per_query: int = 256,
        embed_batch: int = 64,
    ) -> None:
        if chain is not None and not isinstance(store, VectorStore):
            raise ConfigError(f"{type(store).__name__} keeps no vectors; use lexical memory (no chain)")
        self._store = store
        self._name = name
        self._kinds = kinds
        self._max_limit = _max_limit(store, max_limit)
        self._chain = chain
        self._min_similarity = min_similarity
        self._max_embeddings = max_embeddings_per_query
        self._embed_batch = max(1, embed_batch)
        self._space: EmbeddingSpace | None = None

    @classmethod
    def from_settings(
        cls,
        store: MemoryStore,
        settings: MemorySettings,
        *,
        chain: EmbeddingChain | None = None,
        name: str = "memory",
    ) -> MemoryProvider:
        """A provider with the limits of the ``[memory]`` settings (semantic leg only with ``chain``)."""
        return cls(
            store,
            name=name,
            max_limit=settings.max_query_limit,
            chain=chain,
            min_similarity=settings.semantic_min_similarity,
            max_embeddings_per_query=settings.max_embeddings_per_query,
        )

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """Always ``memory``."""
        return ProviderKind.MEMORY

    def _query(self, request: RetrievalRequest, details: dict[str, Any]) -> SearchQuery | None:
        kinds = list(self._kinds) if self._kinds is not None else None
        status: list[str] | None = None
        tags: list[str] | None = None
        if "kind" in request.filters:
            value = str(request.filters["kind"])
            try:
                wanted = RecordKind(value)
            except ValueError as exc:
                raise InvalidRequest(
                    f"filter kind={value!r} is not a memory kind; use one of "
                    f"{', '.join(k.value for k in RecordKind)}"
                ) from exc
            kinds = [wanted] if kinds is None or wanted in kinds else []
        if "status" in request.filters:
            status = [str(request.filters["status"])]
        if "tag" in request.filters:
            tags = [str(request.filters["tag"])]
        ignored = sorted(key for key in request.filters if key not in _FILTERS)
        if ignored:
            details["ignored_filters"] = ignored
        if kinds == []:
            return None
        return SearchQuery(
            text=request.query[:MAX_QUERY_CHARS],
            kinds=kinds,
            status=status,
            tags=tags,
            limit=min(request.limit, self._max_limit),
        )

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Search the records visible to ``context``; best first."""
        details: dict[str, Any] = {}
        degraded: list[str] = []
        query = self._query(request, details)
        mode = request.mode or (SearchMode.HYBRID if self._chain is not None else SearchMode.LEXICAL)
        details["mode"] = mode.value
        if query is None:
            return ProviderResponse(details=details)
        lexical = FunctionLeg(LEXICAL, partial(self._lexical, query=query))
        results: LegResults[RecordHit] = LegResults()
        if mode is not SearchMode.LEXICAL and self._chain is None:
            if mode is SearchMode.SEMANTIC:
                message = f"{self._name} has no semantic leg (no embedding chain); lexical only"
                degraded.append(message)
                results.failures.append(
                    ProviderFailure(provider=self._name, kind="not_configured", message=message, leg=SEMANTIC)
                )
            else:
                details["note"] = "hybrid served by the lexical leg (no embedding chain configured)"
        legs: list[Leg[RecordHit]] = []
        if mode is not SearchMode.LEXICAL and self._chain is not None:
            legs.append(
                FunctionLeg(SEMANTIC, partial(self._semantic, self._chain, query=query, details=details))
            )
        if mode is not SearchMode.SEMANTIC or not legs:
            legs.append(lexical)
        await run_legs(legs, request, context, provider=self._name, into=results)
        if self._chain is not None and SEMANTIC in results.elapsed_ms:
            degraded += self._semantic_notes(self._chain, results, mode, details)
            if results.failed(SEMANTIC) and LEXICAL not in results.elapsed_ms:
                await run_legs([lexical], request, context, provider=self._name, into=results)
        if results.failed(LEXICAL):
            raise results.errors[LEXICAL]
        for leg, elapsed in results.elapsed_ms.items():
            details[f"{leg}_ms"] = round(elapsed, 3)
        for leg, hits in results.hits.items():
            details[f"{leg}_hits"] = len(hits)
        evidence = self._evidence(results.hits, query.limit)
        return ProviderResponse(
            evidence=evidence, degraded=degraded, leg_failures=results.failures, details=details
        )

    def _semantic_notes(
        self, chain: EmbeddingChain, results: LegResults[RecordHit], mode: SearchMode, details: dict[str, Any]
    ) -> list[str]:
        """Record the semantic leg's outcome in the chain's health window and say what it lacked."""
        chain.record_search(fell_back=results.failed(SEMANTIC))
        if results.failed(SEMANTIC):
            failure = next(f for f in results.failures if f.leg == SEMANTIC)
            return [f"semantic leg unavailable ({failure.message}); lexical only"]
        pending = details.get("pending_embedding", 0)
        if pending and mode is SearchMode.SEMANTIC:
            return [
                f"{pending} records are still waiting for embeddings; the semantic answer does "
                "not cover them (hybrid or lexical search does)"
            ]
        return []

    async def _lexical(
        self, request: RetrievalRequest, context: TrustedContext, *, query: SearchQuery
    ) -> list[RecordHit]:
        return await self._store.search_records(context, query)

    async def _semantic(
        self,
        chain: EmbeddingChain,
        request: RetrievalRequest,
        context: TrustedContext,
        *,
        query: SearchQuery,
        details: dict[str, Any],
    ) -> list[RecordHit]:
        store = self._store
        assert isinstance(store, VectorStore)
        if self._space is None:
            pinned = await store.vector_space()
            self._space = (
                pinned if pinned is not None else await store.pin_vector_space(await chain.select_space())
            )
        space = self._space
        details["embedding_space"] = space.key
        pending, missing = await store.missing_vectors(context, space.key, self._max_embeddings)
        embedded = await self._embed_backlog(chain, space, pending, context)
        details["embedded_now"] = embedded
        if missing > embedded:
            details["pending_embedding"] = missing - embedded
        probe = await chain.embed([query.text], space=space, kind="query")
        floor = request.min_similarity if request.min_similarity is not None else self._min_similarity
        return await store.nearest(context, space.key, probe[0], query, min_similarity=floor)

    async def _embed_backlog(
        self,
        chain: EmbeddingChain,
        space: EmbeddingSpace,
        pending: list[tuple[str, str]],
        context: TrustedContext,
    ) -> int:
        """Embed records still without a vector, batch by batch, while the request can afford it.

        Backlog embedding is optional work: it stops once half of the time the request had left when it
        began is spent, so a large import never turns the first search into a timeout; the rest waits
        for later requests (and hybrid search still finds it lexically).
        """
        store = self._store
        assert isinstance(store, VectorStore)
        left = seconds_left(context)
        stop_at = None if left is None else anyio.current_time() + left / 2
        done = 0
        for start in range(0, len(pending), self._embed_batch):
            if stop_at is not None and anyio.current_time() >= stop_at:
                break
            batch = pending[start : start + self._embed_batch]
            vectors = await chain.embed([text for _, text in batch], space=space, kind="document")
            await store.put_vectors(space.key, [(rid, vectors[i]) for i, (rid, _) in enumerate(batch)])
            done += len(batch)
        return done

    def _evidence(self, legs: dict[str, list[RecordHit]], limit: int) -> list[Evidence]:
        """The records of the fused order (plain RRF of the answering legs), up to ``limit``."""
        records = {hit.record.id: hit.record for hits in legs.values() for hit in hits}
        fused = fuse_legs({leg: [(hit.record.id, hit.score) for hit in hits] for leg, hits in legs.items()})
        return [self._one(records[item.id], item, fused.method) for item in fused.items[:limit]]

    def _one(self, record: MemoryRecord, item: LegRank, method: str) -> Evidence:
        metadata: dict[str, Any] = {
            EvidenceKey.METHOD: method,
            EvidenceKey.LEG_RANKS: item.ranks,
            EvidenceKey.LEG_SCORES: {leg: round(score, 6) for leg, score in item.scores.items()},
            EvidenceKey.RECORD_ID: record.id,
            EvidenceKey.KIND: record.kind.value,
            EvidenceKey.STATUS: record.status,
            EvidenceKey.TAGS: list(record.tags),
            EvidenceKey.SCOPE: sorted(record.scope) or "global",
            EvidenceKey.CREATED_AT: record.created_at.isoformat(),
            EvidenceKey.UPDATED_AT: record.updated_at.isoformat(),
            EvidenceKey.REVISION: record.revision,
        }
        if SEMANTIC in item.scores and self._space is not None:
            metadata[EvidenceKey.SPACE] = self._space.key
        return Evidence.create(
            provider=ProviderKind.MEMORY,
            provider_name=self._name,
            locator=record.locator,
            title=record.title,
            content=render(record),
            score=item.score,
            metadata=metadata,
        )


class SessionMemoryProvider:
    """The recent turns and the summary of the context's conversation as evidence.

    A context without a conversation has no session: the provider answers with nothing (and says why in
    ``details``), which is "nothing relevant", not a failure.
    """

    def __init__(
        self, store: SessionStore, *, name: str = "session-memory", max_limit: int | None = None
    ) -> None:
        self._store = store
        self._name = name
        self._max_limit = _max_limit(store, max_limit)

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """Always ``session-memory``."""
        return ProviderKind.SESSION_MEMORY

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Search the conversation's window and summary; best first."""
        degraded, failures, details = _session_legs(self._name, request)
        if context.conversation is None:
            details["note"] = "the trusted context has no conversation, so there is no session to search"
            return ProviderResponse(degraded=degraded, leg_failures=failures, details=details)
        hits = await self._store.search_session(
            context, request.query[:MAX_QUERY_CHARS], min(request.limit, self._max_limit)
        )
        evidence: list[Evidence] = []
        for hit in hits:
            item = hit.item
            if isinstance(item, SessionSummary):
                title = "Conversation summary"
                metadata: dict[str, Any] = {
                    EvidenceKey.ROLE: "summary",
                    EvidenceKey.THROUGH_SEQ: item.through_seq,
                }
                moment = item.updated_at
            else:
                title = f"{item.role.value} turn {item.seq}"
                metadata = {EvidenceKey.ROLE: item.role.value, EvidenceKey.SEQ: item.seq}
                moment = item.created_at
            metadata |= {EvidenceKey.METHOD: LEXICAL, EvidenceKey.AT: moment.isoformat()}
            evidence.append(
                Evidence.create(
                    provider=ProviderKind.SESSION_MEMORY,
                    provider_name=self._name,
                    locator=item.locator,
                    title=title,
                    content=item.content,
                    score=hit.score,
                    metadata=metadata,
                )
            )
        details["lexical_hits"] = len(evidence)
        return ProviderResponse(evidence=evidence, degraded=degraded, leg_failures=failures, details=details)
