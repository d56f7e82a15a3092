"""simone.providers.rerank — the rerankers of the rerank stage after fusion (see docs/rerank.md).

* :class:`HttpReranker`: a rerank server — the Cohere-style ``POST /v1/rerank`` of Cohere, Jina, vLLM,
  Infinity and llama.cpp's server, Voyage's and Mixedbread's variants, and TEI's ``/rerank``
  (:data:`RerankApi`); :func:`request_body` and :func:`read_scores` are its two shapes.
* :class:`OnnxCrossEncoder`: a local cross-encoder (``model.onnx`` + ``tokenizer.json``, or a Hugging
  Face cache folder: :func:`locate_model`), run by onnxruntime; nothing is downloaded.
* :func:`build_reranker` and ``FACTORY`` (``[rerank]``): the one the settings name, published under
  :data:`~simone.runtime.RERANKER` for the router.

The stage itself (candidates, deadline, failures as values, the trace) is
:func:`simone.runtime.rerank_stage`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.providers.rerank._factory import (
        build_reranker as build_reranker,
        open_reranker as open_reranker,
    )
    from simone.providers.rerank._http import (
        HttpReranker as HttpReranker,
        RerankApi as RerankApi,
        read_scores as read_scores,
        request_body as request_body,
    )
    from simone.providers.rerank._onnx import (
        OnnxCrossEncoder as OnnxCrossEncoder,
        locate_model as locate_model,
        pair_tokenizer as pair_tokenizer,
    )

__all__ = (
    "HttpReranker",
    "OnnxCrossEncoder",
    "RerankApi",
    "build_reranker",
    "locate_model",
    "open_reranker",
    "pair_tokenizer",
    "read_scores",
    "request_body",
)

_HOMES: dict[str, str] = {
    "HttpReranker": "simone.providers.rerank._http",
    "OnnxCrossEncoder": "simone.providers.rerank._onnx",
    "RerankApi": "simone.providers.rerank._http",
    "build_reranker": "simone.providers.rerank._factory",
    "locate_model": "simone.providers.rerank._onnx",
    "open_reranker": "simone.providers.rerank._factory",
    "pair_tokenizer": "simone.providers.rerank._onnx",
    "read_scores": "simone.providers.rerank._http",
    "request_body": "simone.providers.rerank._http",
}
"""Where each exported name lives (imported on first use)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
