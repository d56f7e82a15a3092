"""simone.agents.cli — the ``simone`` command line.

:func:`console` is the ``simone`` script (:func:`main` with the process's arguments, then a quick exit);
:func:`main` runs one command line and returns its exit status (:data:`EXIT_OK`, :data:`EXIT_ERROR`,
:data:`EXIT_USAGE`, :data:`EXIT_INTERRUPTED`); :func:`build_parser` is its argparse parser, one
sub-command per name in :data:`COMMANDS`. ``python -m simone.agents.cli`` is the same as ``simone``.

Importing the package is cheap: each name is imported from its module the first time it is used
(PEP 562), and a command's own module only when that command runs, so ``simone --help`` imports none
of pydantic, anyio, LanceDB, onnxruntime or the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.agents.cli._main import (
        COMMANDS as COMMANDS,
        EXIT_ERROR as EXIT_ERROR,
        EXIT_INTERRUPTED as EXIT_INTERRUPTED,
        EXIT_OK as EXIT_OK,
        EXIT_USAGE as EXIT_USAGE,
        build_parser as build_parser,
        console as console,
        main as main,
    )

__all__ = (
    "COMMANDS",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "console",
    "main",
)

_HOMES: dict[str, str] = {name: "simone.agents.cli._main" for name in __all__}
"""Where each exported name lives (imported on first use by ``__getattr__``)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
