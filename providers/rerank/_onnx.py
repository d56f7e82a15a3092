"""A local cross-encoder: an ONNX sequence-classification graph and its ``tokenizer.json``, on onnxruntime.

The model is wherever the user put it (:func:`locate_model`): a folder with ``model.onnx`` (or
``onnx/model.onnx``) and ``tokenizer.json``, the ``.onnx`` file itself, or a Hugging Face cache folder
(``models--org--name``, whose ``refs/main`` snapshot is used). Nothing is downloaded.

Each (query, document) pair is tokenised as a pair (the tokenizer's own template: ``[CLS] q [SEP] d
[SEP]`` with type ids for BERT-style models), truncated to ``max_tokens`` (longest first), sorted by
length and run in batches padded to their longest pair. The graph reads ``input_ids``,
``attention_mask`` and, when it has it, ``token_type_ids``; its first output is the logits: one per pair
(``[batch, 1]`` or ``[batch]``: the score), or two (``[batch, 2]``: the score is ``logit1 - logit0``, the
log-odds of "relevant"). Inference runs in a worker thread (:func:`~simone.runtime.run_blocking`), one
run at a time per model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import numpy as np
import numpy.typing as npt
from simone.providers.embeddings.minilm import CPU_PROVIDER, open_session
from simone.runtime import (
    AsyncResource,
    InvalidResponse,
    ProviderError,
    ProviderNotConfigured,
    ProviderUnavailable,
    run_blocking,
)
from tokenizers import Tokenizer

if TYPE_CHECKING:
    import onnxruntime

MODEL_FILES = ("model.onnx", "onnx/model.onnx")
"""Where a model folder keeps its graph, in the order they are looked for."""

TOKENIZER_NAME = "tokenizer.json"


def locate_model(path: str | Path) -> tuple[Path, Path]:
    """The ``(model.onnx, tokenizer.json)`` pair at ``path``.

    ``path`` is a model folder, the ``.onnx`` file (its tokenizer sits beside it or one folder up), or a
    Hugging Face cache folder (``models--org--name``: the snapshot ``refs/main`` names, else the newest).

    Raises:
        ProviderNotConfigured: no graph or no tokenizer there (the message says what was looked for).
    """
    where = Path(path).expanduser()
    if where.is_dir() and (where / "snapshots").is_dir():
        where = _snapshot(where)
    if where.is_file():
        model = where
        tokenizers = [where.parent / TOKENIZER_NAME, where.parent.parent / TOKENIZER_NAME]
    elif where.is_dir():
        found = [where / name for name in MODEL_FILES if (where / name).is_file()]
        if not found:
            raise ProviderNotConfigured(
                f"no ONNX graph in {where} (looked for {', '.join(MODEL_FILES)}); export the cross-encoder "
                "to ONNX there or point [rerank] model_path at the .onnx file",
                provider="rerank:onnx",
            )
        model = found[0]
        tokenizers = [where / TOKENIZER_NAME]
    else:
        raise ProviderNotConfigured(
            f"[rerank] model_path {where} does not exist; give the folder of a cross-encoder "
            "(model.onnx and tokenizer.json)",
            provider="rerank:onnx",
        )
    tokenizer = next((t for t in tokenizers if t.is_file()), None)
    if tokenizer is None:
        raise ProviderNotConfigured(
            f"no {TOKENIZER_NAME} beside {model}; copy the model's tokenizer.json into {model.parent}",
            provider="rerank:onnx",
        )
    return model, tokenizer


def _snapshot(cache: Path) -> Path:
    ref = cache / "refs" / "main"
    if ref.is_file():
        named = cache / "snapshots" / ref.read_text(encoding="utf-8").strip()
        if named.is_dir():
            return named
    snapshots = sorted(
        (p for p in (cache / "snapshots").iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime
    )
    if not snapshots:
        raise ProviderNotConfigured(
            f"the Hugging Face cache folder {cache} has no snapshot", provider="rerank:onnx"
        )
    return snapshots[-1]


def pair_tokenizer(path: Path, max_tokens: int) -> Tokenizer:
    """The tokenizer at ``path``, truncating pairs at ``max_tokens`` (longest first) and padding to the longest."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=max_tokens, strategy="longest_first")
    padding = tokenizer.padding
    if padding is not None:
        pad_id, pad_token = int(padding["pad_id"]), str(padding["pad_token"])
    else:
        pad_token = next((t for t in ("[PAD]", "<pad>") if tokenizer.token_to_id(t) is not None), "[PAD]")
        pad_id = tokenizer.token_to_id(pad_token) or 0
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token, pad_type_id=0, length=None)
    return tokenizer


class OnnxCrossEncoder(AsyncResource):
    """A cross-encoder reranker run locally by onnxruntime (see the module).

    Construction is cheap; :meth:`open` (or ``async with``, or the first :meth:`rerank`) locates the
    files and opens the session.

    Args:
        path: the model (see :func:`locate_model`).
        max_tokens: each pair's truncation length (512 for the MiniLM and BGE rerankers).
        batch_size: pairs per inference run.
        threads: onnxruntime's intra-op threads.
        providers: onnxruntime execution providers (the CPU by default).
        name: the name in traces and failures.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_tokens: int = 512,
        batch_size: int = 16,
        threads: int = 2,
        providers: Sequence[str] = (CPU_PROVIDER,),
        name: str = "rerank:onnx",
    ) -> None:
        if max_tokens < 8 or batch_size < 1 or threads < 1:
            raise ValueError("max_tokens must be >= 8, batch_size and threads >= 1")
        self.path = Path(path)
        self._max_tokens = max_tokens
        self._batch_size = batch_size
        self._threads = threads
        self._providers = list(providers)
        self._name = name
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._inputs: dict[str, Any] = {}
        self._limiter = anyio.CapacityLimiter(1)
        self._start_lock: anyio.Lock | None = None

    @property
    def name(self) -> str:
        """The reranker's name (``rerank:onnx``)."""
        return self._name

    async def open(self) -> None:
        """Locate the files and open the session (in a worker thread). Safe to call more than once.

        Raises:
            ProviderNotConfigured: no graph or tokenizer at the path.
            ProviderUnavailable: onnxruntime cannot load the graph, or it is not a cross-encoder.
        """
        if self._session is not None:
            return
        if self._start_lock is None:
            self._start_lock = anyio.Lock()
        async with self._start_lock:
            if self._session is None:
                await anyio.to_thread.run_sync(self._open, limiter=self._limiter)

    async def close(self) -> None:
        """Drop the session."""
        self._session = None

    async def rerank(self, query: str, documents: Sequence[str]) -> list[float | None]:
        """One score per document (the model's logit for the pair; higher is more relevant).

        Raises:
            ProviderNotConfigured, ProviderUnavailable: the model cannot be loaded.
            ProviderError: onnxruntime failed while running it; InvalidResponse: odd logits.
        """
        if not documents:
            return []
        await self.open()
        scores = await run_blocking(self.score_sync, query, list(documents), limiter=self._limiter)
        return [float(s) for s in scores]

    def score_sync(self, query: str, documents: Sequence[str]) -> npt.NDArray[np.float32]:
        """The blocking core of :meth:`rerank` (the model must be open); for benchmarks and threads."""
        session, tokenizer = self._session, self._tokenizer
        if session is None or tokenizer is None:
            raise ProviderUnavailable(f"{self._name} is not open; await open() first", provider=self._name)
        encodings = tokenizer.encode_batch([(query, document) for document in documents])
        lengths = np.asarray([sum(e.attention_mask) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        out = np.empty(len(documents), dtype=np.float32)
        for begin in range(0, len(documents), self._batch_size):
            rows = order[begin : begin + self._batch_size]
            longest = int(lengths[rows].max())
            columns = {
                "input_ids": [encodings[r].ids[:longest] for r in rows],
                "attention_mask": [encodings[r].attention_mask[:longest] for r in rows],
                "token_type_ids": [encodings[r].type_ids[:longest] for r in rows],
            }
            feeds = {name: np.asarray(columns[name], dtype=dtype) for name, dtype in self._inputs.items()}
            try:
                logits = np.asarray(session.run(None, feeds)[0], dtype=np.float32)
            except Exception as exc:
                raise ProviderError(
                    f"onnxruntime failed to run {self.path}: {type(exc).__name__}: {exc}", provider=self._name
                ) from exc
            out[rows] = _pair_scores(self._name, logits, len(rows))
        if not np.isfinite(out).all():
            raise InvalidResponse(f"{self._name} produced NaN or infinite logits", provider=self._name)
        return out

    def _open(self) -> None:
        model, tokenizer_file = locate_model(self.path)
        try:
            session = cast(
                "onnxruntime.InferenceSession", open_session(model, self._threads, self._providers)
            )
        except Exception as exc:
            raise ProviderUnavailable(
                f"onnxruntime cannot load {model}: {type(exc).__name__}: {exc}",
                provider=self._name,
                retryable=False,
            ) from exc
        inputs = {i.name: i.type for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= set(inputs) or not set(inputs) <= {
            "input_ids",
            "attention_mask",
            "token_type_ids",
        }:
            raise ProviderUnavailable(
                f"{model} does not look like a cross-encoder (inputs {sorted(inputs)}; expected input_ids, "
                "attention_mask and optionally token_type_ids)",
                provider=self._name,
                retryable=False,
            )
        self._inputs = {
            name: (np.int32 if kind == "tensor(int32)" else np.int64) for name, kind in inputs.items()
        }
        self._tokenizer = pair_tokenizer(tokenizer_file, self._max_tokens)
        self._session = session


def _pair_scores(who: str, logits: npt.NDArray[np.float32], rows: int) -> npt.NDArray[np.float32]:
    """One score per pair from a batch's logits (``[b]``, ``[b, 1]`` or ``[b, 2]``)."""
    if logits.shape == (rows,):
        return logits
    if logits.ndim == 2 and logits.shape[0] == rows and logits.shape[1] == 1:
        return logits[:, 0]
    if logits.ndim == 2 and logits.shape[0] == rows and logits.shape[1] == 2:
        return logits[:, 1] - logits[:, 0]
    raise InvalidResponse(
        f"{who} returned logits of shape {logits.shape} for {rows} pair(s); expected [{rows}], [{rows}, 1] "
        f"or [{rows}, 2]: is it a sequence-classification (cross-encoder) export?",
        provider=who,
    )
