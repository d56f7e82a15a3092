"""Two small recipes every package repeats: a lazy package face (PEP 562), and an async resource.

:func:`lazy_face` makes the ``__getattr__`` and ``__dir__`` of a package whose names are imported from
their modules on first use, so importing the package costs nothing until a name is read.
:class:`AsyncResource` turns an ``open()`` / ``close()`` pair into ``async with``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping, MutableMapping
from types import TracebackType
from typing import Any, Self


def lazy_face(
    package: str, homes: Mapping[str, str], exported: Collection[str], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a lazy package face.

    Args:
        package: the package's ``__name__``.
        homes: each exported name → the module it lives in; a sub-package that maps to itself
            (``"text": "simone.runtime.text"``) is the module.
        exported: the package's ``__all__`` (what ``dir()`` lists besides what is loaded).
        namespace: the package's ``globals()``: a name read once is kept there, so ``__getattr__``
            runs once per name.

    Use it as ``__getattr__, __dir__ = lazy_face(__name__, _HOMES, __all__, globals())``.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        value = module if home == f"{package}.{name}" else getattr(module, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exported})

    return __getattr__, __dir__


class AsyncResource:
    """``async with`` for a class with ``async open()`` and ``async close()``.

    Entering opens (and returns the object itself); leaving closes, whatever happened in the block. A
    subclass defines :meth:`open` and :meth:`close`; both default to doing nothing.
    """

    async def open(self) -> None:
        """Acquire what the object needs (connections, files, a model)."""

    async def close(self) -> None:
        """Release it; called once when the ``async with`` block ends."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
