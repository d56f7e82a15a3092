"""What provider factories hand to the runtime and to each other: typed keys, and tools as data.

A factory publishes objects under :class:`Shared` keys (``OpenedProviders(published={KEY: value})``);
the runtime checks each value against its key's type when the factory returns, and a later factory (or
the runtime's own consumers) reads it back typed with :meth:`Published.get`. A key is defined next to the
type it carries — :data:`EMBEDDING_CHAIN` here, the document index's key in
``simone.providers.documents`` — so nobody recovers an object from a string with ``isinstance``.

A factory's tools are :class:`ProviderTool` values: a name, a description, an argument model, a
result model and ``run(context, args)``; which callers may use one is data on it (:attr:`callers`),
not code in a handler. The agents layer turns them into its registry's tools and checks every call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError
from simone.runtime._chain import EmbeddingChain
from simone.runtime._config import describe_validation_error
from simone.runtime._contracts import SCOPE_KEYS, Caller, TrustedContext
from simone.runtime._errors import ConfigError, InvalidRequest, ScopeViolation
from simone.runtime._json import loads_untrusted

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
ArgsT = TypeVar("ArgsT", bound=BaseModel)
ResultT = TypeVar("ResultT", bound=BaseModel)


class Shared(Generic[T_co]):
    """A typed key for an object a provider factory publishes.

    Keys compare by identity: two keys with the same name are different keys. ``type_`` is what every
    value published under the key must be an instance of (a class, or a ``runtime_checkable``
    protocol) — or a function returning it, called on the first check, for a type whose module is
    costly to import (a factory module stays cheap to import that way).
    """

    __slots__ = ("_load", "_type", "name")

    def __init__(self, name: str, type_: type[T_co] | Callable[[], type[T_co]]) -> None:
        self.name = name
        self._type: type[T_co] | None = type_ if isinstance(type_, type) else None
        self._load = type_

    @property
    def type(self) -> type[T_co]:
        """The type of the key's values."""
        if self._type is None:
            loaded = self._load()
            if not isinstance(loaded, type):
                raise ConfigError(f"the key {self.name!r} names {loaded!r}, not a type")
            self._type = loaded
        return self._type

    def check(self, value: object) -> T_co:
        """``value``, typed; a :class:`ConfigError` when it is not of the key's type."""
        expected = self.type
        if not isinstance(value, expected):
            raise ConfigError(
                f"the object published as {self.name!r} is a {type(value).__name__}, not a {expected.__name__}"
            )
        return value

    def __repr__(self) -> str:
        return f"Shared({self.name!r})"


class Published:
    """The objects the factories opened so far published, by key (read-only for a reader)."""

    def __init__(self, values: Mapping[Shared[object], object] | None = None) -> None:
        self._values: dict[Shared[object], object] = {}
        self._names: dict[str, Shared[object]] = {}
        for key, value in (values or {}).items():
            self.put(key, value)

    def put(self, key: Shared[T], value: T) -> None:
        """Publish ``value`` under ``key`` (checked against the key's type).

        Raises:
            ConfigError: the value is not of the key's type, or another key of the same name (from
                another factory) was published already — two factories would shadow each other.
        """
        key.check(value)
        other = self._names.get(key.name)
        if other is not None and other is not key:
            raise ConfigError(f"two different keys named {key.name!r} were published; give one another name")
        self._names[key.name] = key
        self._values[key] = value

    def get(self, key: Shared[T]) -> T | None:
        """The value published under ``key``, or ``None`` when no factory published it."""
        value = self._values.get(key)
        return None if value is None else key.check(value)

    def require(self, key: Shared[T]) -> T:
        """The value published under ``key``.

        Raises:
            ConfigError: no factory published it.
        """
        value = self.get(key)
        if value is None:
            raise ConfigError(f"no provider factory published {key.name!r}; is its section enabled?")
        return value

    def names(self) -> list[str]:
        """The names of the published keys, in publication order."""
        return list(self._names)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[Shared[object]]:
        return iter(list(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def copy(self) -> Published:
        """An independent view with the same values (what one factory is given)."""
        return Published(self._values)


EMBEDDING_CHAIN: Shared[EmbeddingChain] = Shared("embedding_chain", EmbeddingChain)
"""The embedding chain a factory opened (the document index's); memory's semantic leg reuses it."""


@dataclass(frozen=True)
class ProviderTool(Generic[ArgsT, ResultT]):
    """A tool a provider factory offers to agents.

    Attributes:
        name: the name models call it by (unique in a runtime).
        description: one sentence for the model.
        args: the pydantic model of its arguments (its JSON schema is the tool's parameters).
        result: the pydantic model it returns; the runtime refuses any other result.
        run: ``async (context, args) -> result``; ``context`` is the calling session's trusted context.
        group: a group (``memory``) that an agent profile can grant as a whole.
        callers: the callers that may use it; empty: any caller whose profile grants it.
    """

    name: str
    description: str
    args: type[ArgsT]
    result: type[ResultT]
    run: Callable[[TrustedContext, ArgsT], Awaitable[ResultT]]
    group: str | None = None
    callers: frozenset[Caller] = frozenset()

    def parse(self, raw: str | Mapping[str, Any] | None, *, forbidden: Collection[str] = SCOPE_KEYS) -> ArgsT:
        """Model-supplied arguments, validated (see :func:`parse_tool_arguments`)."""
        return parse_tool_arguments(self.name, self.args, raw, forbidden=forbidden)


def parse_tool_arguments(
    tool: str,
    model: type[ArgsT],
    raw: str | Mapping[str, Any] | BaseModel | None,
    *,
    forbidden: Collection[str] = SCOPE_KEYS,
) -> ArgsT:
    """Parse and validate the arguments a model (or any caller) sent to the tool ``tool``.

    ``raw`` is JSON object text (empty or ``None``: no arguments), a mapping, or already an instance of
    ``model`` (returned as it is). The order of the checks: JSON (decoded with the untrusted-input
    limits), an object, no key in ``forbidden`` at any depth (compared case-insensitively), then the
    model.

    Raises:
        InvalidRequest: not JSON, not an object, or not valid for the model (every problem named).
        ScopeViolation: the arguments carry a forbidden key — scope comes only from the trusted context.
    """
    if isinstance(raw, model):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        data: object = {}
    elif isinstance(raw, str):
        try:
            data = loads_untrusted(raw)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(
                f"the arguments of {tool!r} are not valid JSON ({exc.msg} at {exc.pos}); send a JSON object"
            ) from exc
    elif isinstance(raw, Mapping):
        data = dict(raw)
    else:
        data = raw
    if not isinstance(data, dict):
        raise InvalidRequest(f"the arguments of {tool!r} must be a JSON object, not {type(data).__name__}")
    forged = sorted(_forbidden_keys(data, frozenset(key.casefold() for key in forbidden)))
    if forged:
        raise ScopeViolation(
            f"the call to {tool!r} carries scope of its own ({', '.join(forged)}); scope comes only from the "
            "admitted context and is never taken from tool arguments"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        reasons = describe_validation_error(exc, limit=None, root="arguments")
        raise InvalidRequest(f"invalid arguments for {tool!r}: {reasons}") from exc


def _forbidden_keys(value: object, forbidden: frozenset[str], depth: int = 0) -> set[str]:
    if depth > 32:
        return set()
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.casefold() in forbidden:
                found.add(key)
            found |= _forbidden_keys(item, forbidden, depth + 1)
    elif isinstance(value, list):
        for item in value:
            found |= _forbidden_keys(item, forbidden, depth + 1)
    return found


Prepare = Callable[[], Awaitable[object]]
"""``async () -> …``: awaited before each tool call (e.g. open an index on its first use)."""
