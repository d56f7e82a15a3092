"""An OpenAI-compatible ``/embeddings`` client (OpenAI, vLLM, llama.cpp server, LocalAI, TEI…)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np
import numpy.typing as npt
from pydantic import SecretStr
from simone.providers.embeddings._http import HttpEmbedderBase, batches, to_vectors
from simone.runtime import ConfigError, EmbeddingKind, EmbeddingSpace, InvalidResponse

#: The public API's base URL, used when only a key is configured.
OPENAI_BASE_URL = "https://api.openai.com/v1"

#: Native sizes of well-known models, so a space is known before the first call.
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

#: Models that accept the ``dimensions`` request field (to shorten vectors).
SHORTENABLE_PREFIX = "text-embedding-3"


class OpenAIEmbedder(HttpEmbedderBase):
    """Embeds with an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Texts are sent in batches of ``batch_size``, up to ``concurrency`` requests at once; a 429 or a
    5xx is retried up to ``max_retries`` times under the shared :class:`~simone.runtime.RetryPolicy`: after an exponential pause, or after the
    server's ``Retry-After`` when that is longer (never sooner); a wait longer than
    ``max_retry_wait_s`` or past the caller's cancel-scope deadline is not taken (``RateLimited`` with
    ``retry_after_s`` at once). Each answer is checked (JSON, count, order, dimension, finite, non-zero)
    and the vectors are L2-normalised, so the space is always ``normalized``.

    Args:
        model: the model name the server knows.
        base_url: the API root, e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``.
        api_key: sent as a bearer token when given.
        dimensions: the vector size; needed for models not in :data:`KNOWN_DIMENSIONS`. For
            ``text-embedding-3-*`` a size other than the native one is also requested from the server.
        query_prefix: put before every query (e5 models: ``"query: "``); part of the space.
        document_prefix: put before every document (e5 models: ``"passage: "``); part of the space.
        client: an ``httpx.AsyncClient`` to use (never closed here); one is opened otherwise.
        batch_size: inputs per request.
        concurrency: requests sent at once at most when a call spans several batches (their
            order is kept; each is retried on its own).
        timeout_s: the deadline of one request.
        max_retries: retries after 429 or a retryable status.
        max_retry_wait_s: the longest ``Retry-After`` honoured by sleeping; longer ones raise at once.
        retry_backoff_s: the first pause before retrying a 5xx (doubling each time).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OPENAI_BASE_URL,
        api_key: SecretStr | str | None = None,
        dimensions: int | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        client: httpx.AsyncClient | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        max_retry_wait_s: float = 30.0,
        retry_backoff_s: float = 0.5,
        concurrency: int = 1,
    ) -> None:
        if concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        super().__init__(
            client=client,
            timeout_s=timeout_s,
            max_retries=max_retries,
            max_retry_wait_s=max_retry_wait_s,
            retry_backoff_s=retry_backoff_s,
            concurrency=concurrency,
        )
        if not model:
            raise ConfigError("the OpenAI-compatible embedder needs a model name")
        if batch_size < 1:
            raise ConfigError("batch_size must be at least 1")
        native = KNOWN_DIMENSIONS.get(model)
        dimension = dimensions or native
        if dimension is None:
            raise ConfigError(
                f"the size of the embedding model {model!r} is not known; set "
                "SIMONE_EMBEDDINGS__OPENAI_DIMENSIONS (or openai_dimensions in [embeddings]) to its dimension"
            )
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self._send_dimensions = (
            dimensions is not None and dimensions != native and model.startswith(SHORTENABLE_PREFIX)
        )
        self._prefixes = {"query": query_prefix, "document": document_prefix}
        self._space = EmbeddingSpace(
            provider="openai",
            model=model,
            dimension=dimension,
            normalized=True,
            prefixes=(query_prefix, document_prefix) if query_prefix or document_prefix else None,
        )
        self._batch_size = batch_size
        self._who = f"openai-compatible embedder at {base_url.rstrip('/')}"

    @property
    def space(self) -> EmbeddingSpace:
        """``openai:<model>:<dimension>``, normalised; with prefixes ``openai:<model>+p<digest>:<dimension>``."""
        return self._space

    @property
    def url(self) -> str:
        """The ``/embeddings`` endpoint this embedder posts to."""
        return self._url

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` batch by batch, each after the query or document prefix (if configured).

        Raises:
            ProviderError: the typed failure (timeout, unavailable, rate limited, invalid response…).
        """
        prefix = self._prefixes[kind]
        texts = [prefix + text for text in texts] if prefix else list(texts)
        if not texts:
            return np.empty((0, self._space.dimension), dtype=np.float32)
        headers = {"Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"

        async def one(batch: list[str]) -> npt.NDArray[np.float32]:
            # An empty string is refused by some servers; a single space embeds the same "nothing".
            inputs = [text if text.strip() else " " for text in batch]
            payload: dict[str, object] = {"model": self._model, "input": inputs, "encoding_format": "float"}
            if self._send_dimensions:
                payload["dimensions"] = self._space.dimension
            body = await self.post_json(self._url, payload, headers)
            rows = self._rows(body, len(batch))
            return to_vectors(rows, count=len(batch), space=self._space, who=self._who)

        # up to `concurrency` batches in flight; the answers are put back in the texts' order
        return np.concatenate(await self.in_parallel(batches(texts, self._batch_size), one))

    def _rows(self, body: object, count: int) -> list[object]:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise InvalidResponse(
                f"{self._who} answered JSON without a 'data' list; is it an OpenAI-compatible /embeddings?",
                provider=self._who,
            )
        if len(data) != count:
            raise InvalidResponse(
                f"{self._who} returned {len(data)} embeddings for {count} inputs; the server is misbehaving",
                provider=self._who,
            )
        ordered: list[object] = [None] * count
        seen: set[int] = set()
        for position, item in enumerate(data):
            if not isinstance(item, dict) or "embedding" not in item:
                raise InvalidResponse(
                    f"{self._who} returned item {position} without an 'embedding'", provider=self._who
                )
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
                raise InvalidResponse(
                    f"{self._who} returned an embedding with index {index!r} outside 0..{count - 1}",
                    provider=self._who,
                )
            if index in seen:
                raise InvalidResponse(
                    f"{self._who} returned index {index} twice; the server is misbehaving", provider=self._who
                )
            seen.add(index)
            ordered[index] = item["embedding"]
        return ordered
