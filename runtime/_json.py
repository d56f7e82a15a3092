"""Decoding JSON that came from outside: a request body, a search backend's answer, a model's arguments.

:func:`loads_untrusted` is :func:`json.loads` with one more rule: nothing nested deeper than
``max_depth`` arrays and objects. The standard decoder recurses once per level, so a body of 100,000
``[`` raises :class:`RecursionError` — not a :class:`ValueError`, so the usual ``except ValueError``
lets it escape as a crash — and a value that decodes at depth 900 still overflows whatever walks it
next (validation, scope checks, re-encoding). Every refusal is a :class:`json.JSONDecodeError` (a
``ValueError``): too deep is :class:`JSONTooDeep`, bytes that are not UTF-8 a plain ``JSONDecodeError``,
so callers keep one ``except ValueError`` for every way the text can be bad.
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 100
"""The deepest nesting accepted by default: far past any protocol simone speaks (JSON-RPC, SearXNG,
OpenAI's APIs nest under 10), far below where recursion would overflow."""


class JSONTooDeep(json.JSONDecodeError):
    """The JSON nests arrays and objects deeper than allowed (``msg`` says how deep the limit is)."""


def loads_untrusted(data: str | bytes | bytearray, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Decode JSON from an untrusted source, refusing more than ``max_depth`` levels of nesting.

    Args:
        data: the JSON text (bytes are decoded as UTF-8, as :func:`json.loads` detects them).
        max_depth: the most levels of arrays and objects (a scalar is depth 0, ``[]`` depth 1).

    Raises:
        JSONTooDeep: nested deeper than ``max_depth``.
        json.JSONDecodeError: not JSON, or bytes that are not UTF-8.
    """
    text = _text(data)
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONTooDeep(_too_deep(max_depth), text, 0) from None
    if _deeper_than(value, max_depth):
        raise JSONTooDeep(_too_deep(max_depth), text, 0)
    return value


def _text(data: str | bytes | bytearray) -> str:
    if isinstance(data, str):
        return data
    raw = bytes(data)
    try:
        return raw.decode(json.detect_encoding(raw), "strict")
    except (UnicodeDecodeError, LookupError) as exc:
        raise json.JSONDecodeError(f"the body is not UTF-8 text ({exc})", "", 0) from None


def _too_deep(max_depth: int) -> str:
    return f"nested deeper than {max_depth} levels of arrays and objects"


def _deeper_than(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests more than ``max_depth`` containers (an explicit stack: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
