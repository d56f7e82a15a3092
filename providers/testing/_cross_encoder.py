"""A tiny cross-encoder for tests and benchmarks: an ONNX graph built here, with the bundled tokenizer.

:func:`write_tiny_cross_encoder` writes a model folder (``model.onnx`` + ``tokenizer.json``, the
all-MiniLM-L6-v2 tokenizer simone ships) that :class:`~simone.providers.rerank.OnnxCrossEncoder` loads
like any exported cross-encoder. The graph takes ``input_ids``, ``attention_mask`` and (by default)
``token_type_ids`` and returns ``logits``: the sum of a weight per token over the *document's* tokens
(type id 1, unmasked), so a test knows the order it must produce — a document with more of the boosted
words ranks higher, and the query's own words count for nothing.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from simone.providers.embeddings.minilm import TOKENIZER_FILE, load_tokenizer

VOCAB_SIZE = 30_522
"""The bundled (BERT uncased) tokenizer's vocabulary size."""


def write_tiny_cross_encoder(
    folder: str | Path,
    boosts: Mapping[str, float],
    *,
    two_logits: bool = False,
    token_types: bool = True,
) -> Path:
    """Write a tiny cross-encoder into ``folder`` and return the folder.

    Args:
        folder: where ``model.onnx`` and ``tokenizer.json`` go (created).
        boosts: word → its weight (each word must be one token of the bundled vocabulary).
        two_logits: return ``[batch, 2]`` logits (``[-s/2, s/2]``, a two-class head) instead of ``[batch, 1]``.
        token_types: take ``token_type_ids`` (off: the graph has only ``input_ids`` and
            ``attention_mask`` and counts the query's words too).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = load_tokenizer()
    weights = np.zeros((VOCAB_SIZE, 1), dtype=np.float32)
    for word, weight in boosts.items():
        token = tokenizer.token_to_id(word)
        if token is None:
            raise ValueError(f"{word!r} is not one token of the bundled vocabulary")
        weights[token, 0] = weight
    batch_dims = ["batch", "tokens"]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, batch_dims),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, batch_dims),
    ]
    nodes = [
        helper.make_node("Gather", ["weights", "input_ids"], ["gathered"]),  # [b, t, 1]
        helper.make_node("Squeeze", ["gathered", "axis2"], ["per_token"]),  # [b, t]
    ]
    if token_types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, batch_dims))
        nodes.append(helper.make_node("Mul", ["attention_mask", "token_type_ids"], ["keep_int"]))
    else:
        nodes.append(helper.make_node("Identity", ["attention_mask"], ["keep_int"]))
    nodes += [
        helper.make_node("Cast", ["keep_int"], ["keep"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["per_token", "keep"], ["kept"]),
        helper.make_node("ReduceSum", ["kept", "axis1"], ["score"], keepdims=1),  # [b, 1]
    ]
    width = 2 if two_logits else 1
    if two_logits:
        nodes.append(helper.make_node("Mul", ["score", "halves"], ["logits"]))  # [b, 2]
    else:
        nodes.append(helper.make_node("Identity", ["score"], ["logits"]))
    initializers = [
        numpy_helper.from_array(weights, "weights"),
        numpy_helper.from_array(np.asarray([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.asarray([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.asarray([[-0.5, 0.5]], dtype=np.float32), "halves"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-cross-encoder",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", width])],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(out / "model.onnx"))
    shutil.copyfile(TOKENIZER_FILE, out / "tokenizer.json")
    return out
