"""Embedding spaces and the Embedder protocol.

A vector is comparable only with vectors of the same space (provider, model, dimension,
normalisation, and the query/document prefixes when they are not the model's own). Tables record their space; a fallback never changes space.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Annotated, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

EmbeddingKind = Literal["query", "document"]


class EmbeddingSpace(BaseModel):
    """Where vectors live: ``provider:model:dimension`` plus the normalisation applied.

    Attributes:
        provider: the embedder family (``openai``, ``onnx``, ``ollama``, ``hash``…).
        model: the model name as the provider knows it.
        dimension: the vector length.
        normalized: whether vectors are L2-normalised (cosine == dot product).
        prefixes: the ``(query, document)`` texts put before each input when they differ from the
            model's own (e.g. ``("query: ", "passage: ")`` for e5 models); ``None``: the model's own.
            Vectors made with other prefixes are not comparable, so they are part of the identity.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Annotated[str, Field(min_length=1)]
    model: Annotated[str, Field(min_length=1)]
    dimension: Annotated[int, Field(ge=1)]
    normalized: bool = True
    prefixes: tuple[str, str] | None = None

    @model_serializer(mode="wrap")
    def _without_default_prefixes(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, object]:
        # A space with the model's own prefixes is written as before the field existed, so tables and
        # reports stay readable by older versions (which refuse unknown fields).
        data: dict[str, object] = handler(self)
        if self.prefixes is None:
            data.pop("prefixes", None)
        return data

    @property
    def key(self) -> str:
        """``provider:model:dimension`` — the space's identity in tables and caches.

        With ``prefixes`` the model part carries a short digest of them
        (``provider:model+p<8 hex>:dimension``), so another prefix is another space everywhere.
        """
        if self.prefixes is None:
            return f"{self.provider}:{self.model}:{self.dimension}"
        digest = hashlib.sha256(json.dumps(list(self.prefixes)).encode()).hexdigest()[:8]
        return f"{self.provider}:{self.model}+p{digest}:{self.dimension}"


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
