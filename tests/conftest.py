"""Suite-wide settings.

The bundled embedder's default (``onnx_variant = "auto"``) builds a quantised int8 graph into each data
directory at first start-up. Tests open many fresh data directories, so they run the packaged reference
graph instead; ``tests/providers/embeddings/test_quantize.py`` exercises the build and its quality gate
explicitly.
"""

from __future__ import annotations

import os

os.environ.setdefault("SIMONE_EMBEDDINGS__ONNX_VARIANT", "reference")
# Haystack (the adapters' extra) reads this when first imported, by whichever test imports it first; its
# telemetry would try to reach the internet
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

pytest_plugins = [
    "tests.network_guard",
    "tests.providers.web.hostile",
    "tests.servers_embedding",
    "tests.servers_postgres",
    "tests.servers_redis",
    "tests.servers_s3",
    "tests.spans",
]
