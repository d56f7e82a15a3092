"""The ``memory`` and ``session-memory`` providers for the router.

Both are lexical: BM25 (inside SQLite FTS5) over the shared analysis's terms, filtered by the trusted
context's scope before ranking, ties by the newest update then the id. An item that shares no term with
the query is not relevant and is never returned. Neither has a semantic leg yet: a request that asks for
``semantic`` only gets lexical results and says so in ``degraded``; ``hybrid`` (the router's usual mode)
is served by the lexical leg, noted in ``details``.
"""

from __future__ import annotations

import time
from typing import Any

from simone.providers.memory._models import RecordKind, SearchQuery, SessionSummary
from simone.providers.memory._records import render
from simone.providers.memory._store import MemoryStore, SessionStore
from simone.runtime import (
    Evidence,
    InvalidRequest,
    ProviderFailure,
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)

MAX_QUERY_CHARS = 8192
"""Longer queries are cut here before analysis (the router already bounds them)."""

_FILTERS = ("kind", "status", "tag")


def _legs(name: str, request: RetrievalRequest) -> tuple[list[str], list[ProviderFailure], dict[str, Any]]:
    details: dict[str, Any] = {"method": "lexical"}
    if request.mode is SearchMode.SEMANTIC:
        message = f"{name} has no semantic leg; lexical only"
        failure = ProviderFailure(provider=name, kind="not_configured", message=message, leg="semantic")
        return [message], [failure], details
    if request.mode is SearchMode.HYBRID:
        details["note"] = "hybrid served by the lexical leg (memory has no semantic leg)"
    return [], [], details


class MemoryProvider:
    """Structured memory as evidence: notes, todos, checklists, current facts and task states.

    Args:
        store: the memory store.
        name: the instance name (default ``memory``).
        kinds: only these kinds (default: all).
        max_limit: the most records one request returns (``memory.max_query_limit``).

    Request filters it understands (exact match): ``kind``, ``status``, ``tag``; others are ignored and
    listed in ``details["ignored_filters"]``.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        name: str = "memory",
        kinds: tuple[RecordKind, ...] | None = None,
        max_limit: int = 200,
    ) -> None:
        self._store = store
        self._name = name
        self._kinds = kinds
        self._max_limit = max_limit

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """Always ``memory``."""
        return ProviderKind.MEMORY

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Search the records visible to ``context``; best first."""
        started = time.perf_counter()
        degraded, failures, details = _legs(self._name, request)
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
            return ProviderResponse(degraded=degraded, leg_failures=failures, details=details)
        query = SearchQuery(
            text=request.query[:MAX_QUERY_CHARS],
            kinds=kinds,
            status=status,
            tags=tags,
            limit=min(request.limit, self._max_limit),
        )
        hits = await self._store.search_records(context, query)
        evidence = [
            Evidence.create(
                provider=ProviderKind.MEMORY,
                provider_name=self._name,
                locator=hit.record.locator,
                title=hit.record.title,
                content=render(hit.record),
                score=hit.score,
                metadata={
                    "search": "lexical",
                    "record_id": hit.record.id,
                    "kind": hit.record.kind.value,
                    "status": hit.record.status,
                    "tags": list(hit.record.tags),
                    "scope": sorted(hit.record.scope) or "global",
                    "created_at": hit.record.created_at.isoformat(),
                    "updated_at": hit.record.updated_at.isoformat(),
                    "revision": hit.record.revision,
                },
            )
            for hit in hits
        ]
        details["lexical_ms"] = round((time.perf_counter() - started) * 1000, 3)
        details["lexical_hits"] = len(evidence)
        return ProviderResponse(evidence=evidence, degraded=degraded, leg_failures=failures, details=details)


class SessionMemoryProvider:
    """The recent turns and the summary of the context's conversation as evidence.

    A context without a conversation has no session: the provider answers with nothing (and says why in
    ``details``), which is "nothing relevant", not a failure.
    """

    def __init__(self, store: SessionStore, *, name: str = "session-memory", max_limit: int = 200) -> None:
        self._store = store
        self._name = name
        self._max_limit = max_limit

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
        degraded, failures, details = _legs(self._name, request)
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
