"""simone.agents.adapters — simone's retrieval inside the frameworks builders already use.

One module per framework, each an optional extra; importing one whose framework is missing raises an
ImportError that names the extra:

=====================================  ==========================  ===================================
module                                 extra                       gives
=====================================  ==========================  ===================================
``simone.agents.adapters.langchain``   ``simone[langchain]``       ``SimoneRetriever`` (a
                                                                   ``BaseRetriever``), ``simone_tool``
``simone.agents.adapters.llamaindex``  ``simone[llamaindex]``      ``SimoneRetriever`` (a
                                                                   ``BaseRetriever``)
``simone.agents.adapters.haystack``    ``simone[haystack]``        ``SimoneRetriever`` (a component)
``simone.agents.adapters.pydantic_ai`` ``simone[pydantic-ai]``     ``simone_toolset`` (a
                                                                   ``FunctionToolset``)
=====================================  ==========================  ===================================

This face holds what they share (:class:`SimoneSource`, the errors, the metadata mapping,
:func:`open_blocking`) and imports none of the frameworks. See ``docs/adapters.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.agents.adapters._core import (
        TOOL_DESCRIPTION as TOOL_DESCRIPTION,
        PartialPolicy as PartialPolicy,
        PartialRetrieval as PartialRetrieval,
        PartialRetrievalWarning as PartialRetrievalWarning,
        RetrievalFailed as RetrievalFailed,
        RetrievalForbidden as RetrievalForbidden,
        RetrieveArgs as RetrieveArgs,
        SimoneSource as SimoneSource,
        SourceOptions as SourceOptions,
        check_result as check_result,
        evidence_metadata as evidence_metadata,
        open_blocking as open_blocking,
        ranking_score as ranking_score,
    )

__all__ = (
    "PartialPolicy",
    "PartialRetrieval",
    "PartialRetrievalWarning",
    "RetrievalFailed",
    "RetrievalForbidden",
    "RetrieveArgs",
    "SimoneSource",
    "SourceOptions",
    "TOOL_DESCRIPTION",
    "check_result",
    "evidence_metadata",
    "open_blocking",
    "ranking_score",
)

_HOMES: dict[str, str] = {name: "simone.agents.adapters._core" for name in __all__}
"""Where each exported name lives (imported on first use by ``__getattr__``)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
