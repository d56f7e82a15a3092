"""Budget packing: greedy in fused order, one sentence-boundary truncation, every exclusion listed."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

MIN_TRUNCATION_TOKENS = 32
"""Below this much room a truncated passage says too little to be worth its tokens."""


class TokenEstimator(Protocol):
    """Counts tokens of a text; ``label`` says how (shown in every budget report)."""

    label: str

    def count(self, text: str) -> int:
        """The number of tokens of ``text``."""
        ...


class CharEstimator:
    """ceil(chars / 4): the usual rule of thumb for English with BPE tokenizers. Only an estimate."""

    label = "chars/4 ESTIMATED"

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if chars_per_token <= 0:
            raise ValueError("chars_per_token must be > 0")
        self.chars_per_token = chars_per_token
        if chars_per_token != 4.0:
            self.label = f"chars/{chars_per_token:g} ESTIMATED"

    def count(self, text: str) -> int:
        """ceil(len(text) / chars_per_token)."""
        return math.ceil(len(text) / self.chars_per_token)


class FunctionEstimator:
    """Wraps any counting function (a real tokenizer) as an estimator with a label."""

    def __init__(self, count: Callable[[str], int], label: str) -> None:
        self._count = count
        self.label = label

    def count(self, text: str) -> int:
        """Tokens by the wrapped function."""
        return int(self._count(text))


_SENTENCE_END = re.compile(r"(?<=[.!?;:。！？；…])[\"'”’)\]]*\s+|(?<=[。！？])|\n+")


def truncate_to_tokens(text: str, max_tokens: int, estimator: TokenEstimator) -> str | None:
    """The longest prefix of ``text`` ending at a sentence boundary that fits ``max_tokens``.

    Falls back to a word boundary when even the first sentence is too long; ``None`` when nothing fits.
    """
    if max_tokens <= 0:
        return None
    if estimator.count(text) <= max_tokens:
        return text
    ends = [m.start() for m in _SENTENCE_END.finditer(text) if m.start() > 0]
    best: str | None = None
    lo, hi = 0, len(ends) - 1
    while lo <= hi:  # token counts grow with the prefix, so binary search the boundary
        mid = (lo + hi) // 2
        candidate = text[: ends[mid]].rstrip()
        if candidate and estimator.count(candidate) <= max_tokens:
            best = candidate
            lo = mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return best
    words = [m.start() for m in re.finditer(r"\s+", text)]
    lo, hi = 0, len(words) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = text[: words[mid]].rstrip()
        if candidate and estimator.count(candidate + " …") <= max_tokens:
            best = candidate + " …"
            lo = mid + 1
        else:
            hi = mid - 1
    return best


@dataclass(slots=True)
class PackItem:
    """An item offered to the packer: its id, text and how to describe it in an exclusion."""

    id: str
    text: str
    provider: str = ""
    locator: str = ""


@dataclass(slots=True)
class Packed:
    """The packer's decision: kept items (with truncated text where cut) and the rest with reasons."""

    kept: list[tuple[int, str, bool, int]] = field(default_factory=list)
    """(index into the input, text to use, truncated?, tokens)."""
    over_budget: list[tuple[int, int]] = field(default_factory=list)
    """(index into the input, tokens it would have needed)."""
    used_tokens: int = 0


def pack(
    items: Sequence[PackItem],
    max_tokens: int,
    estimator: TokenEstimator,
    *,
    min_truncation_tokens: int = MIN_TRUNCATION_TOKENS,
) -> Packed:
    """Greedy packing in the given order.

    An item that fits is kept whole. The first item that does not fit is cut at a sentence boundary
    when at least ``min_truncation_tokens`` are left; later items that still fit are kept; everything
    else is listed as over budget. ``used_tokens`` never exceeds ``max_tokens``.
    """
    result = Packed()
    remaining = max(0, max_tokens)
    truncation_used = False
    for index, item in enumerate(items):
        tokens = estimator.count(item.text)
        if tokens <= remaining:
            result.kept.append((index, item.text, False, tokens))
            remaining -= tokens
            continue
        if not truncation_used:
            truncation_used = True
            if remaining >= min_truncation_tokens:
                cut = truncate_to_tokens(item.text, remaining, estimator)
                if cut:
                    cut_tokens = estimator.count(cut)
                    if cut_tokens <= remaining:
                        result.kept.append((index, cut, True, cut_tokens))
                        remaining -= cut_tokens
                        continue
        result.over_budget.append((index, tokens))
    result.used_tokens = max(0, max_tokens) - remaining
    return result
