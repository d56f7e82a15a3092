"""The Provider protocol, and the registry of provider factories (keyed by settings section).

A provider has one async method, taking the request and the trusted context. A
:class:`ProviderFactory` opens the providers of one settings section; the runtime opens every factory
of a :class:`ProviderRegistry` that the settings enable.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Generic, Protocol, TypeVar, Union, get_args, get_origin, runtime_checkable

from pydantic import BaseModel, ValidationError
from simone.runtime._config import Settings, describe_validation_error
from simone.runtime._contracts import ProviderKind, ProviderResponse, RetrievalRequest, TrustedContext
from simone.runtime._errors import ConfigError
from simone.runtime._handoff import Prepare, ProviderTool, Published, Shared


@runtime_checkable
class Provider(Protocol):
    """An evidence source the router can fan out to.

    ``name`` is the instance name the router and the result use; ``kind`` says what it is.
    ``retrieve`` returns the provider's evidence best first, or raises a
    :class:`~simone.runtime.ProviderError` (any other exception is recorded as kind ``error``).
    A provider must check the caller in ``context`` itself when it is restricted.

    The router runs each provider in a task of its own and cancels it at its deadline; one that does
    not stop (it waits on a thread, shields itself) is left to finish on its own, and one that blocks
    the event loop is timed when it yields: either is recorded as a ``timeout`` and its evidence is
    dropped. Run blocking calls with :func:`~simone.runtime.run_blocking`. An answer that is not a
    valid :class:`ProviderResponse` (including one built with ``model_construct``) is recorded as
    ``invalid_response``.
    """

    @property
    def name(self) -> str:
        """The instance name (unique within a router)."""
        ...

    @property
    def kind(self) -> ProviderKind:
        """The kind of evidence it returns."""
        ...

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Find evidence for ``request`` within the scope of ``context``."""
        ...


# -- the registry of provider factories, keyed by settings section ------------------------------------

SectionT = TypeVar("SectionT", bound=BaseModel)


@dataclass
class ProviderSetup(Generic[SectionT]):
    """What a provider factory is given when the runtime opens it.

    Attributes:
        settings: all of the settings.
        section: the factory's settings section, validated by its model.
        stack: the runtime's exit stack: enter whatever must be closed with the runtime.
        options: the caller's options for this section (``Runtime(provider_options={section: {...}})``).
        published: what the factories opened before this one published, read typed by key (e.g.
            ``setup.published.get(EMBEDDING_CHAIN)``: the document index's embedding chain).
    """

    settings: Settings
    section: SectionT
    stack: AsyncExitStack
    options: Mapping[str, Any] = field(default_factory=dict)
    published: Published = field(default_factory=Published)


@dataclass
class OpenedProviders:
    """What a factory opened.

    Attributes:
        providers: providers for the router.
        published: objects for the runtime and later factories, under typed keys the factory declares
            in :attr:`ProviderFactory.publishes` (checked against each key's type).
        tools: tools for agents (the memory tools, say).
        prepare: awaited before every tool call, outside any provider's deadline (a lazily opened
            index opens on the first one).
    """

    providers: list[Provider] = field(default_factory=list)
    published: Mapping[Shared[object], object] = field(default_factory=dict)
    tools: list[ProviderTool[Any, Any]] = field(default_factory=list)
    prepare: list[Prepare] = field(default_factory=list)


@dataclass(frozen=True)
class ProviderFactory(Generic[SectionT]):
    """How to open the providers of one settings section.

    Attributes:
        section: the settings section (a built-in one such as ``memory``, else ``[providers.<section>]``).
        settings: the section's model (its defaults apply when the section is absent).
        open: ``async (setup) -> OpenedProviders``.
        enabled: whether the settings ask for it at all (e.g. web only with a search backend).
        rules: provider-selection rules as data (``simone.workflows.retrieval.SelectionRule`` fields),
            added after the configured rules and before the built-in ones.
        publishes: the keys its :class:`OpenedProviders` may publish (another key is refused).
        reads: the keys it reads from :attr:`ProviderSetup.published`; a factory that publishes one of
            them is opened first (see :meth:`ProviderRegistry.ordered`).
        order: where it stands in the opening order, and so its providers in the router's provider
            order (lower first; equal orders keep registration order): the built-ins are 10 (index),
            20 (memory) and 30 (web); a factory of your own defaults to 100, after them.
    """

    section: str
    settings: type[SectionT]
    open: Callable[[ProviderSetup[SectionT]], Awaitable[OpenedProviders]]
    enabled: Callable[[Settings, SectionT], bool] | None = None
    rules: tuple[Mapping[str, Any], ...] = ()
    publishes: tuple[Shared[object], ...] = ()
    reads: tuple[Shared[object], ...] = ()
    order: int = 100

    def section_of(self, settings: Settings) -> SectionT:
        """The section of ``settings`` this factory reads, validated by :attr:`settings`.

        Raises:
            ConfigError: the section does not validate (naming the key), or a built-in section of
                that name has another model.
        """
        if self.section in Settings.model_fields:
            value = getattr(settings, self.section)
            if not isinstance(value, self.settings):
                raise ConfigError(
                    f"the provider section {self.section!r} is a built-in section of type "
                    f"{type(value).__name__}, not {self.settings.__name__} — register it under another name"
                )
            return value
        raw = _decode_env_values(self.settings, settings.providers.get(self.section, {}))
        try:
            return self.settings.model_validate(raw)
        except ValidationError as exc:
            where = f"providers.{self.section}"
            raise ConfigError(
                f"invalid configuration: {where}.{describe_validation_error(exc)} — fix [{where}] in the "
                f"config file or the SIMONE_PROVIDERS__{self.section.upper()}__* variables"
            ) from exc

    def wanted(self, settings: Settings) -> bool:
        """Whether ``settings`` enable this factory."""
        return self.enabled is None or self.enabled(settings, self.section_of(settings))


def _is_complex(annotation: object) -> bool:
    """Whether a field of this type is written as JSON in the environment (as pydantic-settings does)."""
    origin = get_origin(annotation)
    if origin in (Union, UnionType) or origin is Annotated:
        return any(_is_complex(arg) for arg in get_args(annotation))
    if origin in (dict, list, tuple, set, frozenset) or annotation in (dict, list, tuple, set, frozenset):
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _decode_env_values(model: type[BaseModel], raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with the JSON text of complex fields decoded (``SIMONE_PROVIDERS__X__TERMS='{"a": "b"}'``)."""
    decoded = dict(raw)
    for key, value in raw.items():
        field = model.model_fields.get(key)
        if isinstance(value, str) and field is not None and _is_complex(field.annotation):
            try:
                decoded[key] = json.loads(value)
            except ValueError:
                pass  # left as text: the model's validation says what is wrong
    return decoded


class ProviderRegistry:
    """Provider factories by settings section, in registration order (the router's provider order)."""

    def __init__(self, factories: Iterable[ProviderFactory[Any]] = ()) -> None:
        self._factories: dict[str, ProviderFactory[Any]] = {}
        for factory in factories:
            self.register(factory)

    def register(
        self, factory: ProviderFactory[SectionT], *, replace: bool = False
    ) -> ProviderFactory[SectionT]:
        """Add ``factory`` (returned, so it can decorate a module constant).

        Raises:
            ConfigError: another factory has the section and ``replace`` is not set.
        """
        if factory.section in self._factories and not replace:
            raise ConfigError(f"a provider factory for the section {factory.section!r} is already registered")
        self._factories[factory.section] = factory
        return factory

    def unregister(self, section: str) -> None:
        """Remove the factory of ``section`` (nothing happens when there is none)."""
        self._factories.pop(section, None)

    def get(self, section: str) -> ProviderFactory[Any] | None:
        """The factory of ``section``, if any."""
        return self._factories.get(section)

    def sections(self) -> list[str]:
        """The registered sections, in order."""
        return list(self._factories)

    def copy(self) -> ProviderRegistry:
        """An independent registry with the same factories."""
        return ProviderRegistry(self._factories.values())

    def ordered(self) -> list[ProviderFactory[Any]]:
        """The factories in a stable topological order: registration order, readers after publishers.

        Registration order sorted by :attr:`ProviderFactory.order`; a factory comes after every factory
        that publishes a key it reads.

        Raises:
            ConfigError: factories read each other's keys in a circle.
        """
        pending = sorted(self._factories.values(), key=lambda factory: factory.order)
        done: list[ProviderFactory[Any]] = []
        while pending:
            for factory in pending:
                waits = [
                    other
                    for other in pending
                    if other is not factory and any(key in other.publishes for key in factory.reads)
                ]
                if not waits:
                    done.append(factory)
                    pending.remove(factory)
                    break
            else:
                circle = ", ".join(f.section for f in pending)
                raise ConfigError(
                    f"the provider factories {circle} read each other's published keys in a circle"
                )
        return done

    def __iter__(self) -> Iterator[ProviderFactory[Any]]:
        return iter(list(self._factories.values()))

    def __len__(self) -> int:
        return len(self._factories)


PROVIDER_FACTORIES = ProviderRegistry()
"""The default registry the runtime opens. Every provider registers here the same way, with
:func:`register_provider`: the built-in packages (``simone.providers.documents``, ``memory``, ``web``)
from their ``_factory`` modules, which ``simone.providers.discover_provider_packages`` imports, and a
package of your own when it is imported."""


def register_provider(
    factory: ProviderFactory[SectionT], *, replace: bool = False
) -> ProviderFactory[SectionT]:
    """Register ``factory`` with the default registry (see :class:`ProviderRegistry.register`)."""
    return PROVIDER_FACTORIES.register(factory, replace=replace)
