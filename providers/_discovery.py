"""Finding the built-in providers: every ``simone.providers`` package with a ``_factory`` module.

A provider package — built in or your own — registers its :class:`~simone.runtime.ProviderFactory`
with :func:`~simone.runtime.register_provider`. A package under ``simone.providers`` defines it as ``FACTORY`` in its
``_factory.py``; :func:`discover_provider_packages` imports each of them and registers their factories (cheaply: the factory modules import their package's heavy parts only when they
open), so adding a built-in provider is its package, one ``pyproject.toml`` line and its tests.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

from simone.runtime import PROVIDER_FACTORIES, ConfigError, ProviderFactory, register_provider

FACTORY_MODULE = "_factory"
"""A package under ``simone.providers`` with a module of this name registers its factory on import."""


def discover_provider_packages() -> list[str]:
    """Import the ``_factory`` module of every ``simone.providers`` package that has one, by name.

    Each module's ``FACTORY`` is registered with the default registry through
    :func:`~simone.runtime.register_provider` — unless its section is registered already (by an earlier
    discovery, or by a factory of your own that replaces the built-in one). Returns the modules imported,
    in name order (the router's provider order). Packages without one are not imported.

    Raises:
        ConfigError: a ``_factory`` module defines no ``FACTORY`` (a ProviderFactory).
    """
    import simone.providers

    imported: list[str] = []
    for info in sorted(pkgutil.iter_modules(simone.providers.__path__), key=lambda found: found.name):
        if not info.ispkg:
            continue
        folders = [Path(path) / info.name for path in simone.providers.__path__]
        if any((folder / f"{FACTORY_MODULE}.py").is_file() for folder in folders):
            name = f"simone.providers.{info.name}.{FACTORY_MODULE}"
            factory = _factory_of(name)
            if PROVIDER_FACTORIES.get(factory.section) is None:
                register_provider(factory)
            imported.append(name)
    return imported


def _factory_of(module: str) -> ProviderFactory[Any]:
    factory = getattr(importlib.import_module(module), "FACTORY", None)
    if not isinstance(factory, ProviderFactory):
        raise ConfigError(f"{module} defines no FACTORY (a ProviderFactory)")
    return factory


def builtin_factories() -> tuple[ProviderFactory[Any], ...]:
    """The factories of the ``simone.providers`` packages (``FACTORY`` of each ``_factory`` module).

    Discovers them (see :func:`discover_provider_packages`) first.
    """
    return tuple(_factory_of(name) for name in discover_provider_packages())
