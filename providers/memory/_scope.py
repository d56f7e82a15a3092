"""Scope: what a record carries, and which records a trusted context may see.

A record carries the scope keys that were set in the :class:`~simone.runtime.TrustedContext` it was
written under (or none at all: explicitly global). A context sees a record only if every key the record
carries is present in the context with the same value; a global record is seen by every context.

Seeing is not changing: a context may change (update, complete, delete, restore, edit items of,
supersede) a record only if it may see it *and* the record names the context's own actor — the scope
that wrote it. Global records (and shared records without an actor, which an import made before imports
checked scopes may have left) are read-only except for a ``system`` caller. See :func:`may_change`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from simone.runtime import SCOPE_KEYS, Caller, InvalidRequest, ScopeViolation, TrustedContext

SCOPE_COLUMNS: tuple[str, ...] = tuple(f"s_{key}" for key in SCOPE_KEYS)
"""One nullable column per scope key, in the fixed order of ``SCOPE_KEYS``."""


def write_scope(
    context: TrustedContext, *, keys: Sequence[str] | None = None, global_: bool = False
) -> dict[str, str]:
    """The scope a new record carries.

    Args:
        context: the trusted context of the write.
        keys: carry only these of the context's keys (narrowing; ``actor`` is always kept). ``None``
            carries every key the context sets.
        global_: write an explicitly global record (no keys), visible to every context. Only a
            ``system`` caller (the owner at the CLI, the runtime itself) may do this.

    Raises:
        ScopeViolation: a key the context does not set, or a global write by a non-system caller.
    """
    scope = context.scope()
    if global_:
        if context.caller is not Caller.SYSTEM:
            raise ScopeViolation(
                f"only a system caller may write global memory; {context.caller.value} writes are kept "
                "in its own scope. Write without global, or ask the owner to add it from the CLI."
            )
        return {}
    if keys is None:
        return scope
    unknown = [key for key in keys if key not in SCOPE_KEYS]
    if unknown:
        raise ScopeViolation(f"unknown scope keys {unknown}; the keys are {', '.join(SCOPE_KEYS)}")
    missing = [key for key in keys if key not in scope]
    if missing:
        raise ScopeViolation(
            f"the trusted context does not set {missing}; a record can only carry keys of its own context"
        )
    wanted = {"actor", *keys}
    return {key: value for key, value in scope.items() if key in wanted}


def visible(record_scope: Mapping[str, str], context: TrustedContext) -> bool:
    """Whether a record with ``record_scope`` is visible to ``context`` (the matching rule, in Python)."""
    scope = context.scope()
    return all(scope.get(key) == value for key, value in record_scope.items())


def may_change(record_scope: Mapping[str, str], context: TrustedContext) -> bool:
    """Whether ``context`` may change a record with ``record_scope`` (reading is :func:`visible`).

    A ``system`` caller may change what it sees. Anyone else only a record that it sees and that carries
    its own actor: never a global record, never a shared one without an actor, never another actor's.
    """
    if not visible(record_scope, context):
        return False
    if context.caller is Caller.SYSTEM:
        return True
    return record_scope.get("actor") == context.actor


def scope_problems(scope: Any) -> list[str]:
    """What is wrong with a scope taken from outside (an import): empty when it is a valid scope.

    A scope is a mapping of exactly the keys of :data:`~simone.runtime.SCOPE_KEYS` (spelled exactly:
    ``"Actor"`` or ``"actor "`` are not keys) to strings. Anything else would be dropped when stored and
    turn the record into a wider (even global) one.
    """
    if not isinstance(scope, Mapping):
        return [f"scope must be an object of {', '.join(SCOPE_KEYS)}, not {type(scope).__name__}"]
    problems: list[str] = []
    unknown = [key for key in scope if key not in SCOPE_KEYS]
    if unknown:
        problems.append(
            f"unknown scope keys {unknown} (the keys are {', '.join(SCOPE_KEYS)}, spelled exactly)"
        )
    wrong = [key for key, value in scope.items() if key in SCOPE_KEYS and not isinstance(value, str)]
    if wrong:
        problems.append(f"scope values of {wrong} are not strings")
    return problems


def check_scope(scope: Mapping[str, str], what: str = "a scope") -> None:
    """Raise :class:`~simone.runtime.InvalidRequest` unless ``scope`` is valid (see :func:`scope_problems`).

    Storing a scope goes through this: an unknown key is refused, never silently dropped.
    """
    problems = scope_problems(scope)
    if problems:
        raise InvalidRequest(f"{what}: {'; '.join(problems)}; nothing was written")


def scope_signature(scope: Mapping[str, str]) -> str:
    """A canonical text of a scope (keys in fixed order), for equality lookups and unique keys.

    Raises:
        InvalidRequest: a key that is not a scope key (it would be dropped, widening the scope).
    """
    check_scope(scope)
    return json.dumps([[key, scope[key]] for key in SCOPE_KEYS if key in scope], ensure_ascii=False)


def scope_values(scope: Mapping[str, str]) -> tuple[str | None, ...]:
    """The values of the scope columns, in column order (``None`` where the record carries no key).

    Raises:
        InvalidRequest: a key that is not a scope key (it would be dropped, widening the scope).
    """
    check_scope(scope)
    return tuple(scope.get(key) for key in SCOPE_KEYS)


def scope_from_row(values: Sequence[str | None]) -> dict[str, str]:
    """The scope dict back from the scope columns."""
    return {key: value for key, value in zip(SCOPE_KEYS, values, strict=True) if value is not None}


def scope_sql(context: TrustedContext, alias: str) -> tuple[str, list[str]]:
    """The SQL condition (and its parameters) for "visible to ``context``" on table ``alias``.

    For each key the context sets: the record carries no value or the same value; for each key it does
    not set: the record carries no value.
    """
    scope = context.scope()
    parts: list[str] = []
    params: list[str] = []
    for key, column in zip(SCOPE_KEYS, SCOPE_COLUMNS, strict=True):
        if key in scope:
            parts.append(f"({alias}.{column} IS NULL OR {alias}.{column} = ?)")
            params.append(scope[key])
        else:
            parts.append(f"{alias}.{column} IS NULL")
    return " AND ".join(parts), params


def visible_signatures(context: TrustedContext) -> list[str]:
    """The signature of every scope a record may carry and still be visible to ``context``.

    Those are the subsets of the context's own keys and values (the empty one is global): at most
    2^6 = 64.
    """
    items = list(context.scope().items())
    return [
        scope_signature(dict(subset))
        for size in range(len(items) + 1)
        for subset in itertools.combinations(items, size)
    ]
