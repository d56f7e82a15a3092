"""The retrieval workflow: provider selection by policy, then the router."""

from __future__ import annotations

from simone.runtime import Provider, ProviderKind, RetrievalRequest, RetrievalResult, Router, TrustedContext
from simone.workflows.retrieval._policy import SelectionDecision, SelectionPolicy

DEFAULT_POLICY = SelectionPolicy()
"""The policy of DESIGN.md: memory for context, documents for project questions, web for the researcher."""


def select(
    router: Router,
    request: RetrievalRequest,
    context: TrustedContext,
    *,
    policy: SelectionPolicy | None = None,
) -> SelectionDecision:
    """The selection ``policy`` (default :data:`DEFAULT_POLICY`) makes for ``request`` on ``router``.

    A provider whose ``kind`` is not a :class:`ProviderKind` (or cannot be read) is treated as
    ``custom`` here instead of raising; the router then records it as a failure of kind ``error``,
    so it contributes nothing.
    """
    kinds = {name: _kind_of(provider) for name, provider in router.providers.items()}
    return (policy or DEFAULT_POLICY).decide(request.query, context, kinds, explicit=request.providers)


async def retrieve(
    router: Router,
    request: RetrievalRequest,
    context: TrustedContext,
    *,
    policy: SelectionPolicy | None = None,
    decision: SelectionDecision | None = None,
) -> RetrievalResult:
    """Select providers with ``policy``, then fan out, fuse and pack through ``router``.

    ``decision`` replaces the policy's when given (e.g. one a caller adjusted after :func:`select`).

    An explicit ``request.providers`` wins over the rules, but a provider the caller may not use is
    still refused: it is dropped as ``forbidden`` and, when nothing else was named, the result's status
    is ``forbidden``. Every selection and every drop carries its reason in ``result.request``.

    Raises:
        InvalidRequest: the query is too long, or nothing at all could be selected.
        UnknownProvider: an explicit provider name is not registered with the router.
    """
    if decision is None:
        decision = select(router, request, context, policy=policy)
    routed = request.model_copy(update={"providers": None}) if request.providers is not None else request
    if request.providers is not None:
        unknown = [name for name in request.providers if name not in router.providers]
        if unknown:  # let the router raise its UnknownProvider with the list of registered names
            return await router.retrieve(request, context)
    result = await router.retrieve(routed, context, selection=decision.selected, dropped=decision.dropped)
    if not decision.unserved:
        return result
    summary = result.request.model_copy(update={"unserved": list(decision.unserved)})
    return result.model_copy(update={"request": summary})


def _kind_of(provider: Provider) -> ProviderKind:
    try:
        return ProviderKind(provider.kind)
    except Exception:  # noqa: BLE001 -- a malformed provider is the router's to report, as a failure
        return ProviderKind.CUSTOM
