"""An Ollama ``/api/embed`` client (a local embedding server)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np
import numpy.typing as npt
from simone.providers.embeddings._http import HttpEmbedderBase, batches, to_vectors
from simone.runtime import ConfigError, EmbeddingKind, EmbeddingSpace, InvalidResponse

#: Native sizes of common Ollama embedding models, so a space is known before the first call.
KNOWN_DIMENSIONS: dict[str, int] = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "snowflake-arctic-embed": 1024,
    "bge-m3": 1024,
}

#: Task prefixes some models were trained with (query, document).
KNOWN_PREFIXES: dict[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_query: ", "search_document: "),
}


def _base_model(model: str) -> str:
    return model.split(":", 1)[0]


class OllamaEmbedder(HttpEmbedderBase):
    """Embeds with a local Ollama server's ``POST {base_url}/api/embed``.

    Args:
        model: the Ollama model (``nomic-embed-text``, ``mxbai-embed-large:latest``…).
        base_url: the server, e.g. ``http://127.0.0.1:11434``.
        dimensions: the vector size; needed for models not in :data:`KNOWN_DIMENSIONS`.
        query_prefix: prepended to queries (defaults to the model's known task prefix, if any).
        document_prefix: prepended to documents (likewise). Prefixes other than the model's known
            ones make another embedding space.
        client: an ``httpx.AsyncClient`` to use (never closed here); one is opened otherwise.
        batch_size: inputs per request.
        timeout_s: the deadline of one request (a cold model load can take a while).
        max_retries: retries after 429 or a retryable status.
        max_retry_wait_s: the longest ``Retry-After`` honoured by sleeping.
        retry_backoff_s: the first pause before retrying a 5xx (doubling each time).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "http://127.0.0.1:11434",
        dimensions: int | None = None,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
        client: httpx.AsyncClient | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        max_retry_wait_s: float = 30.0,
        retry_backoff_s: float = 0.5,
    ) -> None:
        super().__init__(
            client=client,
            timeout_s=timeout_s,
            max_retries=max_retries,
            max_retry_wait_s=max_retry_wait_s,
            retry_backoff_s=retry_backoff_s,
        )
        if not model:
            raise ConfigError("the Ollama embedder needs a model name")
        if batch_size < 1:
            raise ConfigError("batch_size must be at least 1")
        dimension = dimensions or KNOWN_DIMENSIONS.get(_base_model(model))
        if dimension is None:
            raise ConfigError(
                f"the size of the Ollama model {model!r} is not known; set "
                "SIMONE_EMBEDDINGS__OLLAMA_DIMENSIONS (or ollama_dimensions in [embeddings])"
            )
        known_query, known_document = KNOWN_PREFIXES.get(_base_model(model), ("", ""))
        self._query_prefix = known_query if query_prefix is None else query_prefix
        self._document_prefix = known_document if document_prefix is None else document_prefix
        self._model = model
        self._url = base_url.rstrip("/") + "/api/embed"
        prefixes = (self._query_prefix, self._document_prefix)
        self._space = EmbeddingSpace(
            provider="ollama",
            model=_base_model(model),
            dimension=dimension,
            normalized=True,
            # the model's own prefixes are its space; others make another one
            prefixes=None if prefixes == (known_query, known_document) else prefixes,
        )
        self._batch_size = batch_size
        self._who = f"ollama embedder at {base_url.rstrip('/')}"

    @property
    def space(self) -> EmbeddingSpace:
        """``ollama:<model>:<dimension>``, normalised (the tag, e.g. ``:latest``, is not part of it).

        Prefixes other than the model's known ones are part of the space (see
        :attr:`~simone.runtime.EmbeddingSpace.prefixes`).
        """
        return self._space

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` with the model's query or document prefix, batch by batch.

        Raises:
            ProviderError: the typed failure (timeout, unavailable, model not pulled, invalid response…).
        """
        texts = list(texts)
        if not texts:
            return np.empty((0, self._space.dimension), dtype=np.float32)
        prefix = self._query_prefix if kind == "query" else self._document_prefix
        parts: list[npt.NDArray[np.float32]] = []
        for batch in batches(texts, self._batch_size):
            payload = {"model": self._model, "input": [prefix + text for text in batch], "truncate": True}
            body = await self.post_json(self._url, payload, {"Accept": "application/json"})
            rows = body.get("embeddings") if isinstance(body, dict) else None
            if not isinstance(rows, list):
                raise InvalidResponse(
                    f"{self._who} answered JSON without an 'embeddings' list; is it Ollama 0.3 or later?",
                    provider=self._who,
                )
            parts.append(to_vectors(rows, count=len(batch), space=self._space, who=self._who))
        return np.concatenate(parts)
