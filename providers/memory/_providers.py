"""The ``memory`` and ``session-memory`` providers for the router.

Both rank lexically with BM25 (inside SQLite FTS5) over the shared analysis's terms, filtered by the
trusted context's scope before ranking, ties by the newest update then the id. An item that shares no
term with the query is not relevant and is never returned. ``memory`` can add a semantic leg through the
embedding chain, fused by RRF; ``session-memory`` is lexical only. A request for ``semantic`` that no
semantic leg can serve gets lexical results and says so in ``degraded``.
"""

from __future__ import annotations

import time
from typing import Any

from simone.providers.memory._models import RecordKind, SearchHit, SearchQuery, SessionSummary
from simone.providers.memory._records import render
from simone.providers.memory._store import MemoryStore, SessionStore, VectorStore
from simone.runtime import (
    ConfigError,
    EmbeddingChain,
    EmbeddingSpace,
    Evidence,
    InvalidRequest,
    MemorySettings,
    ProviderError,
    ProviderFailure,
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
    rrf,
)

DEFAULT_MIN_SIMILARITY = 0.25
"""The semantic leg's default floor: below it a record is not relevant (never "the nearest of all")."""

MAX_QUERY_CHARS = 8192
"""Longer queries are cut here before analysis (the router already bounds them)."""

_FILTERS = ("kind", "status", "tag")


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
        failures: list[ProviderFailure] = []
        query = self._query(request, details)
        mode = request.mode or (SearchMode.HYBRID if self._chain is not None else SearchMode.LEXICAL)
        details["mode"] = mode.value
        if query is None:
            return ProviderResponse(details=details)
        rankings: dict[str, list[SearchHit]] = {}
        if mode is not SearchMode.LEXICAL:
            if self._chain is None:
                if mode is SearchMode.SEMANTIC:
                    message = f"{self._name} has no semantic leg (no embedding chain); lexical only"
                    degraded.append(message)
                    failures.append(
                        ProviderFailure(
                            provider=self._name, kind="not_configured", message=message, leg="semantic"
                        )
                    )
                else:
                    details["note"] = "hybrid served by the lexical leg (no embedding chain configured)"
            else:
                started = time.perf_counter()
                try:
                    rankings["semantic"] = await self._semantic(self._chain, request, context, query, details)
                except ProviderError as exc:
                    self._chain.record_search(fell_back=True)
                    message = f"semantic leg unavailable ({exc}); lexical only"
                    degraded.append(message)
                    failures.append(
                        ProviderFailure(
                            provider=self._name,
                            kind=exc.kind,
                            message=str(exc),
                            retryable=exc.retryable,
                            retry_after_s=exc.retry_after_s,
                            leg="semantic",
                            elapsed_ms=(time.perf_counter() - started) * 1000,
                        )
                    )
                else:
                    self._chain.record_search(fell_back=False)
                    pending = details.get("pending_embedding", 0)
                    if pending and mode is SearchMode.SEMANTIC:
                        degraded.append(
                            f"{pending} records are still waiting for embeddings; the semantic answer does "
                            "not cover them (hybrid or lexical search does)"
                        )
                details["semantic_ms"] = round((time.perf_counter() - started) * 1000, 3)
        if mode is not SearchMode.SEMANTIC or "semantic" not in rankings:
            started = time.perf_counter()
            rankings["lexical"] = await self._store.search_records(context, query)
            details["lexical_ms"] = round((time.perf_counter() - started) * 1000, 3)
        for leg, hits in rankings.items():
            details[f"{leg}_hits"] = len(hits)
        evidence = self._fuse(rankings, query.limit)
        return ProviderResponse(evidence=evidence, degraded=degraded, leg_failures=failures, details=details)

    async def _semantic(
        self,
        chain: EmbeddingChain,
        request: RetrievalRequest,
        context: TrustedContext,
        query: SearchQuery,
        details: dict[str, Any],
    ) -> list[SearchHit]:
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
        for start in range(0, len(pending), self._embed_batch):
            batch = pending[start : start + self._embed_batch]
            vectors = await chain.embed([text for _, text in batch], space=space, kind="document")
            await store.put_vectors(space.key, [(rid, vectors[i]) for i, (rid, _) in enumerate(batch)])
        details["embedded_now"] = len(pending)
        if missing > len(pending):
            details["pending_embedding"] = missing - len(pending)
        probe = await chain.embed([query.text], space=space, kind="query")
        floor = request.min_similarity if request.min_similarity is not None else self._min_similarity
        return await store.nearest(context, space.key, probe[0], query, min_similarity=floor)

    def _fuse(self, rankings: dict[str, list[SearchHit]], limit: int) -> list[Evidence]:
        records = {hit.record.id: hit.record for hits in rankings.values() for hit in hits}
        scores = {leg: {hit.record.id: hit.score for hit in hits} for leg, hits in rankings.items()}
        if len(rankings) == 1:
            leg, hits = next(iter(rankings.items()))
            order = [(hit.record.id, hit.score, {leg: rank}) for rank, hit in enumerate(hits, start=1)]
            method = leg
        else:
            fused = rrf({leg: [hit.record.id for hit in hits] for leg, hits in rankings.items()})
            order = [
                (item.id, item.score, {leg: rank for leg, rank, _ in item.contributions}) for item in fused
            ]
            method = "hybrid"
        evidence = []
        for record_id, score, ranks in order[:limit]:
            record = records[record_id]
            metadata: dict[str, Any] = {
                "search": method,
                "ranks": ranks,
                "record_id": record.id,
                "kind": record.kind.value,
                "status": record.status,
                "tags": list(record.tags),
                "scope": sorted(record.scope) or "global",
                "created_at": record.created_at.isoformat(),
                "updated_at": record.updated_at.isoformat(),
                "revision": record.revision,
            }
            if "lexical" in scores and record_id in scores["lexical"]:
                metadata["bm25"] = scores["lexical"][record_id]
            if "semantic" in scores and record_id in scores["semantic"]:
                metadata["similarity"] = scores["semantic"][record_id]
                if self._space is not None:
                    metadata["embedding_space"] = self._space.key
            evidence.append(
                Evidence.create(
                    provider=ProviderKind.MEMORY,
                    provider_name=self._name,
                    locator=record.locator,
                    title=record.title,
                    content=render(record),
                    score=score,
                    metadata=metadata,
                )
            )
        return evidence


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
                metadata: dict[str, Any] = {"role": "summary", "through_seq": item.through_seq}
                moment = item.updated_at
            else:
                title = f"{item.role.value} turn {item.seq}"
                metadata = {"role": item.role.value, "seq": item.seq}
                moment = item.created_at
            metadata |= {"search": "lexical", "at": moment.isoformat()}
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
