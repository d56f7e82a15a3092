"""Reciprocal rank fusion: score(d) = Σ_p w_p / (k + rank_p(d)), 1-based ranks, ties by id."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

RRF_K = 60
"""The RRF constant from Cormack et al. (2009); 60 damps the head without flattening the tail."""


@dataclass(slots=True)
class Fused:
    """One fused item: its id, score and each ranking's (name, rank, contribution)."""

    id: str
    score: float = 0.0
    contributions: list[tuple[str, int, float]] = field(default_factory=list)


def dedupe_ranking(ids: Sequence[str], keys: Sequence[Sequence[str]] | None = None) -> tuple[list[int], int]:
    """Indices of the first occurrence of each item (by id and by every extra key), and the drop count.

    Args:
        ids: the ranking, best first.
        keys: optional extra identity keys per item (e.g. a content digest); an item whose id or any
            key was seen before is a duplicate.
    """
    seen: set[str] = set()
    kept: list[int] = []
    for index, item_id in enumerate(ids):
        extra = keys[index] if keys is not None else ()
        if item_id in seen or any(key in seen for key in extra):
            continue
        seen.add(item_id)
        seen.update(extra)
        kept.append(index)
    return kept, len(ids) - len(kept)


def rrf_scores(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The fused score of every id, unsorted (the router's hot path; see :func:`contributions_of`).

    Rankings are visited in name order, and IEEE addition of two terms commutes, so the sums do not
    depend on the mapping's order.
    """
    if k < 1:
        raise ValueError("the RRF constant k must be >= 1")
    scores: dict[str, float] = {}
    for name in sorted(rankings):
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        if weight < 0:
            raise ValueError(f"RRF weight of {name!r} must be >= 0")
        ids = rankings[name]
        fresh = dict(zip(ids, [weight / (k + rank) for rank in range(1, len(ids) + 1)], strict=True))
        for item_id in fresh.keys() & scores.keys():
            fresh[item_id] += scores[item_id]
        scores.update(fresh)
    return scores


def contributions_of(
    item_id: str,
    positions: Mapping[str, Mapping[str, int]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, int, float]]:
    """Each ranking's (name, 1-based rank, contribution) for one item; ``positions`` maps name → id → rank."""
    out = []
    for name in sorted(positions):
        rank = positions[name].get(item_id)
        if rank is not None:
            weight = 1.0 if weights is None else float(weights.get(name, 1.0))
            out.append((name, rank, weight / (k + rank)))
    return out


def rank_positions(rankings: Mapping[str, Sequence[str]]) -> dict[str, dict[str, int]]:
    """Name → id → 1-based rank, for :func:`contributions_of`."""
    return {name: dict(zip(ids, range(1, len(ids) + 1), strict=True)) for name, ids in rankings.items()}


def rrf(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse rankings (name → ids, best first, already free of duplicates) by reciprocal rank fusion.

    Returns the fused items sorted by score (descending), ties broken by id (ascending), so the
    result does not depend on the order of ``rankings``.
    """
    scores = rrf_scores(rankings, k=k, weights=weights)
    order = sorted(sorted(scores), key=scores.__getitem__, reverse=True)
    positions = rank_positions(rankings)
    return [
        Fused(item_id, scores[item_id], contributions_of(item_id, positions, k=k, weights=weights))
        for item_id in order
    ]


def confidence_weights(log_odds: Mapping[str, float], *, sharpness: float) -> dict[str, float]:
    """RRF weights from each ranking's confidence: ``exp(sharpness × (z − max z))``.

    Each ranking votes with its odds of being right raised to ``sharpness``, relative to the most
    confident ranking (which gets weight 1). With RRF's flat head (k = 60: rank 1 and rank 2 differ by
    1.6 % of a vote) equal weights let any second ranking reorder a first one; weighting by confidence
    lets the ranking whose best candidate stands out decide, and rankings that agree still add up.

    Args:
        log_odds: ranking name → log-odds that its best candidate is right (``-inf`` allowed: weight 0).
        sharpness: how strongly a confidence gap separates the weights (``0``: equal weights).

    Raises:
        ValueError: a negative or non-finite ``sharpness``, or a NaN / ``+inf`` log-odds.
    """
    if not (math.isfinite(sharpness) and sharpness >= 0):
        raise ValueError(f"sharpness must be a finite number >= 0, got {sharpness}")
    if any(math.isnan(z) or z == math.inf for z in log_odds.values()):
        raise ValueError("log-odds must be finite numbers or -inf")
    finite = [z for z in log_odds.values() if z > -math.inf]
    if not finite:
        return dict.fromkeys(log_odds, 1.0)
    top = max(finite)
    return {name: math.exp(sharpness * (z - top)) if z > -math.inf else 0.0 for name, z in log_odds.items()}
