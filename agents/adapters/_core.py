"""The one mechanism behind every framework adapter: scoped retrieval, its status rules, its metadata.

Each adapter (``simone.agents.adapters.langchain``, ``.llamaindex``, ``.haystack``, ``.pydantic_ai``)
only turns what :class:`SimoneSource` returns into its framework's types; the rules live here once:

* **Scope comes from the builder.** A source holds the trusted context (or the event it admits on
  every call, so each call gets a fresh deadline) that the builder passed at construction; a model's
  tool arguments carry the query and nothing else.
* **Statuses are never an empty list.** ``failed`` raises :class:`RetrievalFailed` (a
  :class:`~simone.runtime.ProviderError`), ``forbidden`` raises :class:`RetrievalForbidden` (an
  :class:`~simone.runtime.AccessDenied`), ``partial`` warns with :class:`PartialRetrievalWarning`
  (``warnings.warn``; or raises :class:`PartialRetrieval` with ``partial="raise"``) and returns the
  evidence it has. ``no_results`` returns nothing: every provider answered and none had anything.
* **Sync at the edge only.** The core is async; the sync entry points reach the runtime's event loop
  through an anyio blocking portal (:func:`open_blocking`) or, inside an anyio worker thread, through
  ``anyio.from_thread``.

Error tree (all carry the whole :class:`~simone.runtime.RetrievalResult` as ``result``)::

    ProviderError
    ├── RetrievalFailed        status failed: every selected provider failed (kind: theirs, or error)
    ├── PartialRetrieval       status partial, with partial="raise"
    └── AccessDenied
        └── RetrievalForbidden status forbidden: the caller may not use what it asked for
    UserWarning
    └── PartialRetrievalWarning status partial (the default): evidence returned, limitations attached
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

import anyio.from_thread
from anyio.from_thread import BlockingPortal, start_blocking_portal
from pydantic import BaseModel, ConfigDict, Field, model_validator
from simone.runtime import (
    SCOPE_KEYS,
    AccessDenied,
    ConfigError,
    Evidence,
    InvalidRequest,
    ProviderError,
    RetrievalResult,
    SearchMode,
    Settings,
    Status,
    TrustedContext,
)

if TYPE_CHECKING:
    from simone.agents import Event, Runtime

T = TypeVar("T")

PartialPolicy = Literal["warn", "raise"]
"""What a ``partial`` result does: warn (:class:`PartialRetrievalWarning`) or raise (:class:`PartialRetrieval`)."""


class SourceOptions(TypedDict, total=False):
    """The retrieval options every adapter accepts next to ``runtime`` and ``context`` (all builder-set).

    Attributes:
        limit: how many fused items to consider (``RetrievalRequest.limit``; default 10).
        max_tokens: the evidence budget (default: the context's token budget).
        providers: an explicit provider list (wins over the selection policy), e.g. ``("documents",)``.
        mode: lexical / semantic / hybrid for providers with several legs.
        filters: exact-match metadata filters for providers that support them.
        partial: ``"warn"`` (default) or ``"raise"`` for a ``partial`` result.
        portal: the anyio blocking portal the runtime runs in, for the sync entry points
            (:func:`open_blocking` gives one).
    """

    limit: int
    max_tokens: int
    providers: tuple[str, ...]
    mode: SearchMode | str
    filters: Mapping[str, str | int | float | bool]
    partial: PartialPolicy
    portal: BlockingPortal


def _describe(result: RetrievalResult) -> str:
    """One line saying why ``result`` is not complete: its limitations and what selection refused."""
    notes = list(result.limitations)
    if not notes:
        notes = [f"{f.provider} failed ({f.kind}): {f.message}" for f in result.failures]
    notes += [f"{d.provider} not asked: {d.reason}" for d in result.request.dropped]
    detail = "; ".join(notes) if notes else "no provider answered"
    return f"simone retrieval {result.status.value} for {result.request.query!r}: {detail}"


class RetrievalFailed(ProviderError):
    """Every selected provider failed: there is no evidence, and this is not "nothing found".

    Attributes:
        result: the whole retrieval result (failures, trace, limitations).
    """

    def __init__(self, result: RetrievalResult) -> None:
        kinds = {failure.kind for failure in result.failures}
        super().__init__(
            _describe(result),
            provider=",".join(failure.provider for failure in result.failures),
            retryable=bool(result.failures) and all(failure.retryable for failure in result.failures),
        )
        self.kind = kinds.pop() if len(kinds) == 1 else "error"
        self.result = result


class RetrievalForbidden(AccessDenied):
    """The caller asked for a provider it may not use, and nothing else was selected.

    Attributes:
        result: the whole retrieval result (the refused providers are in ``request.dropped`` or
            ``failures``).
    """

    def __init__(self, result: RetrievalResult) -> None:
        super().__init__(
            _describe(result), provider=",".join(failure.provider for failure in result.failures)
        )
        self.result = result


class PartialRetrieval(ProviderError):
    """A ``partial`` result under ``partial="raise"``: some provider failed or was degraded.

    Attributes:
        result: the whole retrieval result, evidence included.
    """

    def __init__(self, result: RetrievalResult) -> None:
        super().__init__(_describe(result), provider=",".join(f.provider for f in result.failures))
        self.result = result


class PartialRetrievalWarning(UserWarning):
    """A ``partial`` result: the evidence is returned, and the warning says what is missing.

    Attributes:
        result: the whole retrieval result.
    """

    def __init__(self, result: RetrievalResult) -> None:
        super().__init__(_describe(result))
        self.result = result


def check_result(result: RetrievalResult, *, partial: PartialPolicy = "warn") -> RetrievalResult:
    """``result`` when its evidence can be used as is; otherwise raise or warn by its status.

    Raises:
        RetrievalForbidden: status ``forbidden``.
        RetrievalFailed: status ``failed``.
        PartialRetrieval: status ``partial`` and ``partial="raise"`` (otherwise a
            :class:`PartialRetrievalWarning` is issued and the result returned).
    """
    if result.status is Status.FORBIDDEN:
        raise RetrievalForbidden(result)
    if result.status is Status.FAILED:
        raise RetrievalFailed(result)
    if result.status is Status.PARTIAL:
        if partial == "raise":
            raise PartialRetrieval(result)
        warnings.warn(PartialRetrievalWarning(result), stacklevel=3)
    return result


def evidence_metadata(item: Evidence, result: RetrievalResult | None = None) -> dict[str, Any]:
    """The metadata a framework document carries for ``item`` (JSON-serialisable).

    Keys: ``id``, ``title``, ``locator`` (also as ``source``, the key LangChain and Haystack loaders
    use), ``provider`` (kind), ``provider_name``, ``score`` (the provider's own), ``rank``,
    ``fused_score`` (RRF), ``trust`` (``trusted``/``untrusted``), ``digest``, ``details`` (the
    provider's metadata: search method, leg scores, line range…) and, with ``result``,
    ``retrieval_status`` and ``limitations``.
    """
    meta: dict[str, Any] = {
        "id": item.id,
        "title": item.title,
        "locator": item.locator,
        "source": item.locator,
        "provider": item.provider.value,
        "provider_name": item.provider_name,
        "score": item.score,
        "rank": item.rank,
        "fused_score": item.fused_score,
        "trust": item.trust.value,
        "digest": item.digest,
        "details": dict(item.metadata),
    }
    if result is not None:
        meta["retrieval_status"] = result.status.value
        meta["limitations"] = list(result.limitations)
    return meta


def ranking_score(item: Evidence) -> float:
    """The score a framework ranks by: the fused (RRF) score, else the provider's own."""
    return item.fused_score if item.fused_score is not None else item.score


TOOL_DESCRIPTION = (
    "Search the user's own memory and documents: routed retrieval, fused by rank and packed into a token "
    "budget. Returns numbered evidence blocks with source, locator and trust, and says plainly what failed "
    "or was left out. Ask one question per call; who is asking comes from the application, not from "
    "arguments."
)
"""The default description of the retrieval tool the LangChain and PydanticAI adapters give a model."""

_SCOPE_FIELDS = frozenset({*SCOPE_KEYS, "caller", "deadline", "token_budget", "role", "scope", "permissions"})


class RetrieveArgs(BaseModel):
    """The arguments a model may give the retrieval tool: the query, and nothing that carries scope.

    A call that names a scope field (actor, project, caller…) is refused with a validation error that
    says so: scope is what the builder passed, never a tool argument. Any other unknown field is refused too.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(
        min_length=1,
        description="What to look for, in the user's words (one question; a few words up to a sentence).",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_scope(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            forged = sorted(_SCOPE_FIELDS.intersection(data))
            if forged:
                raise ValueError(
                    f"the tool call carries scope fields {forged}: scope comes from the application "
                    "that built the tool, never from tool arguments (ScopeViolation)"
                )
        return data


async def _noop() -> None:
    return None


def missing_extra(extra: str, package: str, error: ImportError) -> ImportError:
    """The ImportError an adapter module raises when its framework is not installed."""
    return ImportError(
        f"simone.agents.adapters.{extra.replace('-', '_')} needs {package}: "
        f"pip install 'simone[{extra}]' ({error})"
    )


class SimoneSource:
    """Routed retrieval for one trusted scope, as every adapter calls it.

    Args:
        runtime: an open :class:`~simone.agents.Runtime`.
        context: the trusted context (from ``runtime.admit``), or the event (a mapping such as
            ``{"actor": "alice", "project": "docs"}``) to admit on each call, so that each call gets a
            fresh deadline. Either way it is the builder's, never a model's.
        **options: :class:`SourceOptions`.
    """

    def __init__(
        self,
        runtime: Runtime,
        context: TrustedContext | Event | Mapping[str, Any],
        *,
        limit: int | None = None,
        max_tokens: int | None = None,
        providers: tuple[str, ...] | None = None,
        mode: SearchMode | str | None = None,
        filters: Mapping[str, str | int | float | bool] | None = None,
        partial: PartialPolicy = "warn",
        portal: BlockingPortal | None = None,
    ) -> None:
        if partial not in ("warn", "raise"):
            raise ConfigError(f"partial must be 'warn' or 'raise', not {partial!r}")
        if not isinstance(context, TrustedContext):
            runtime.admit(context)  # an event that cannot be admitted is refused now, not at the first call
        self.runtime = runtime
        self.context = context
        self.partial: PartialPolicy = partial
        self.portal = portal
        fields: dict[str, Any] = {}
        if limit is not None:
            fields["limit"] = limit
        if max_tokens is not None:
            fields["max_tokens"] = max_tokens
        if providers is not None:
            fields["providers"] = tuple(providers)
        if mode is not None:
            try:
                fields["mode"] = SearchMode(mode)
            except ValueError:
                choices = ", ".join(m.value for m in SearchMode)
                raise InvalidRequest(f"mode must be one of {choices}, not {mode!r}") from None
        if filters:
            fields["filters"] = dict(filters)
        self.fields = fields

    def admitted(self) -> TrustedContext:
        """The trusted context of a call: the one given, or the event admitted now."""
        if isinstance(self.context, TrustedContext):
            return self.context
        return self.runtime.admit(self.context)

    async def raw(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        """The retrieval result for ``query``, whatever its status (``limit`` overrides the source's)."""
        fields = dict(self.fields)
        if limit is not None:
            fields["limit"] = limit
        return await self.runtime.retrieve(self.admitted(), query, **fields)

    async def aretrieve(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        """The checked result for ``query`` (see :func:`check_result`)."""
        return check_result(await self.raw(query, limit=limit), partial=self.partial)

    def retrieve(self, query: str, *, limit: int | None = None) -> RetrievalResult:
        """:meth:`aretrieve` from synchronous code (see :meth:`blocking`)."""

        async def run() -> RetrievalResult:
            return await self.raw(query, limit=limit)

        return check_result(self.blocking(run), partial=self.partial)

    def blocking(self, function: Callable[[], Awaitable[T]]) -> T:
        """Run ``function`` in the runtime's event loop from synchronous code.

        Through the source's ``portal`` when it has one; otherwise only from an anyio worker thread of
        the runtime's loop (``anyio.to_thread.run_sync``).

        Raises:
            ConfigError: no portal, and not in a worker thread (for example a sync call made in the
                event loop's own thread): use the framework's async method, or open the runtime with
                :func:`open_blocking` and pass its portal.
        """

        async def call() -> T:
            return await function()

        if self.portal is not None:
            return self.portal.call(call)
        try:
            anyio.from_thread.run(_noop)
        except RuntimeError:
            raise ConfigError(
                "a synchronous simone adapter call needs the runtime's event loop: use the framework's "
                "async method (ainvoke, aretrieve, run_async), or open the runtime with "
                "simone.agents.adapters.open_blocking() and pass portal=portal"
            ) from None
        return anyio.from_thread.run(call)


@contextmanager
def open_blocking(
    settings: Settings | None = None, **options: Any
) -> Iterator[tuple[Runtime, BlockingPortal]]:
    """Open a :class:`~simone.agents.Runtime` in a blocking portal, for synchronous frameworks' code.

    ::

        with open_blocking(load_settings()) as (runtime, portal):
            retriever = SimoneRetriever(runtime, {"actor": "alice"}, portal=portal)
            docs = retriever.invoke("how are rankings fused?")

    ``options`` are :class:`~simone.agents.Runtime`'s keyword arguments.
    """
    from simone.agents import Runtime

    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Runtime.open(settings, **options)) as runtime,
    ):
        yield runtime, portal
