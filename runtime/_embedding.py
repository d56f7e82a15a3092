"""Embedding spaces and the Embedder protocol.

A vector is comparable only with vectors of the same space (provider, model, dimension,
normalisation). Tables record their space; a fallback never changes space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

EmbeddingKind = Literal["query", "document"]


class EmbeddingSpace(BaseModel):
    """Where vectors live: ``provider:model:dimension`` plus the normalisation applied.

    Attributes:
        provider: the embedder family (``openai``, ``onnx``, ``ollama``, ``hash``…).
        model: the model name as the provider knows it.
        dimension: the vector length.
        normalized: whether vectors are L2-normalised (cosine == dot product).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Annotated[str, Field(min_length=1)]
    model: Annotated[str, Field(min_length=1)]
    dimension: Annotated[int, Field(ge=1)]
    normalized: bool = True

    @property
    def key(self) -> str:
        """``provider:model:dimension`` — the space's identity in tables and caches."""
        return f"{self.provider}:{self.model}:{self.dimension}"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed space.

    ``embed`` returns a float32 array of shape ``(len(texts), space.dimension)`` with finite values,
    or raises a :class:`~simone.runtime.ProviderError` (unavailable, rate limited, invalid response…).
    It never returns zero vectors in place of a failure.
    """

    @property
    def space(self) -> EmbeddingSpace:
        """The space every vector of this embedder belongs to."""
        ...

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` (queries and documents may be embedded differently by some models)."""
        ...
