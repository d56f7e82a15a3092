"""Reciprocal rank fusion: score(d) = Σ_p w_p / (k + rank_p(d)), 1-based ranks, ties by id."""

from __future__ import annotations

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
    if k < 1:
        raise ValueError("the RRF constant k must be >= 1")
    fused: dict[str, Fused] = {}
    for name in sorted(rankings):
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        if weight < 0:
            raise ValueError(f"RRF weight of {name!r} must be >= 0")
        for position, item_id in enumerate(rankings[name]):
            rank = position + 1
            contribution = weight / (k + rank)
            item = fused.get(item_id)
            if item is None:
                item = fused[item_id] = Fused(item_id)
            item.score += contribution
            item.contributions.append((name, rank, contribution))
    return sorted(fused.values(), key=lambda item: (-item.score, item.id))
