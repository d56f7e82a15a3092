"""Which backends a host needs to take calls: ``/readyz`` of ``simone serve`` and ``simone doctor``.

**Required**: the document index and the memory — ``retrieve_context`` reads both, and every memory
tool (notes, decisions, facts) reads or writes memory; without one of them most calls fail, so the
host is not ready. **Optional**: the research cache (Redis or diskcache) — it only saves web research
from repeating searches and fetches, research runs uncached without it and retrieval never touches
it, so its outage leaves the host ready but *degraded*. The backends are shared by every host, so a
readiness that counted the cache would make a load balancer pull every host at once over an outage
that retrieval does not need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

REQUIRED_BACKENDS = ("index", "memory")
"""Backends without which a host is not ready (``/readyz`` answers 503)."""

OPTIONAL_BACKENDS = ("research_cache",)
"""Backends whose outage degrades the service (named in ``degraded``) but leaves the host ready."""

ReadyStatus = Literal["ready", "degraded", "unavailable"]


def readiness(checks: Mapping[str, Mapping[str, Any]], *, runtime_open: bool = True) -> dict[str, Any]:
    """The verdict on backend probes: ``ready``, ``status``, and the backends ``down`` and ``degraded``.

    Args:
        checks: each backend's probe, by name, with ``answers`` (as ``backend_checks`` returns them).
        runtime_open: whether the worker's runtime (the router) is open.

    Returns:
        ``{"ready": bool, "status": "ready" | "degraded" | "unavailable", "down": [...],
        "degraded": [...]}``: ``down`` lists the required backends that do not answer, ``degraded`` the
        optional ones; a backend not named in either tuple counts as required.
    """
    silent = [name for name, check in checks.items() if not check.get("answers")]
    degraded = [name for name in silent if name in OPTIONAL_BACKENDS]
    down = [name for name in silent if name not in OPTIONAL_BACKENDS]
    ready = runtime_open and not down
    status: ReadyStatus = "unavailable" if not ready else ("degraded" if degraded else "ready")
    return {"ready": ready, "status": status, "down": down, "degraded": degraded}
