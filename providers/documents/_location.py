"""Where the document index lives: a local folder (the default, ``<data_dir>/index``) or object storage.

``[index] uri = "s3://bucket/prefix"`` puts the LanceDB tables in an S3 bucket (AWS or any
S3-compatible server) so that every host sees the same collections; ``[index] storage_options`` holds
LanceDB's object-store options that are not secrets (``endpoint``, ``region``, ``allow_http``, ...).
Credentials come from the environment only (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``): an option that looks like a secret is refused, so none is ever written into a
settings file, and none is shown by :meth:`IndexLocation.describe`.

The embedding cache and the models stay local, in the data directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from simone.runtime import ConfigError, ProviderError, Settings, redact_url

INDEX_FOLDER = "index"
"""The LanceDB folder inside the data directory (when ``[index] uri`` is not set)."""

REMOTE_SCHEMES = ("s3",)
"""Object stores the index may live on (the writer lock is implemented for S3 only)."""

_SECRET_WORDS = ("secret", "access_key", "session_token", "token", "password", "credential")

ENDPOINT_KEYS = ("endpoint", "aws_endpoint", "aws_endpoint_url", "endpoint_url")
REGION_KEYS = ("region", "aws_region")


@dataclass(frozen=True, slots=True)
class IndexLocation:
    """The LanceDB URI of the index and its object-store options (no secrets).

    Args:
        uri: an absolute local folder, or ``s3://bucket/prefix``.
        storage_options: LanceDB's storage options (lower-case keys).
    """

    uri: str
    storage_options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls, uri: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None
    ) -> IndexLocation:
        """A checked location: a local folder made absolute, or an S3 URI with non-secret options.

        Raises:
            ConfigError: an unsupported scheme, an S3 URI without a bucket, or a secret in the options.
        """
        text = os.fspath(uri)
        options = {str(k).lower(): str(v) for k, v in (storage_options or {}).items()}
        secrets = sorted(k for k in options if any(word in k for word in _SECRET_WORDS))
        if secrets:
            raise ConfigError(
                f"[index] storage_options must not hold credentials ({', '.join(secrets)}): set "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the environment"
            )
        if "://" not in text:
            # Absolute: a relative path starting with "db" would be taken for LanceDB Cloud otherwise.
            return cls(str(Path(text).expanduser().resolve()), options)
        parts = urlsplit(text)
        shown = redact_url(text, bare=True)
        if parts.scheme not in REMOTE_SCHEMES:
            raise ConfigError(
                f"[index] uri {shown!r}: the document index supports a local folder or "
                "s3://bucket/prefix (AWS or an S3-compatible server), not "
                f"{parts.scheme}://"
            )
        if not parts.hostname or parts.username or parts.password or parts.query:
            raise ConfigError(
                f"[index] uri {shown!r}: write s3://bucket/prefix (no credentials or query in "
                "the URI; the endpoint and region go in [index] storage_options)"
            )
        prefix = parts.path.strip("/")
        return cls(f"s3://{parts.hostname}/{prefix}" if prefix else f"s3://{parts.hostname}", options)

    @classmethod
    def from_settings(cls, settings: Settings) -> IndexLocation:
        """``[index] uri`` with its options, or ``<data_dir>/index``."""
        uri = settings.index.uri or Path(settings.data_dir) / INDEX_FOLDER
        return cls.of(uri, settings.index.storage_options)

    @property
    def backend(self) -> str:
        """``local`` or the object store's scheme (``s3``)."""
        return urlsplit(self.uri).scheme if self.remote else "local"

    @property
    def remote(self) -> bool:
        """Whether the index lives on object storage (no local file locking there)."""
        return "://" in self.uri

    @property
    def endpoint(self) -> str | None:
        """The object store's endpoint: the options' one, else ``AWS_ENDPOINT_URL``/``AWS_ENDPOINT``."""
        if not self.remote:
            return None
        for key in ENDPOINT_KEYS:
            if self.storage_options.get(key):
                return self.storage_options[key]
        return os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT") or None

    @property
    def region(self) -> str:
        """The options' region, else ``AWS_REGION``/``AWS_DEFAULT_REGION``, else ``us-east-1``."""
        for key in REGION_KEYS:
            if self.storage_options.get(key):
                return self.storage_options[key]
        return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"

    @property
    def lance_options(self) -> dict[str, str] | None:
        """The storage options LanceDB is opened with (``None`` for a local folder)."""
        if not self.remote:
            return None
        options = dict(self.storage_options)
        endpoint = self.endpoint
        if endpoint and not any(key in options for key in ENDPOINT_KEYS):
            options["endpoint"] = endpoint
        if endpoint and endpoint.startswith("http://"):
            options.setdefault("allow_http", "true")
        return options

    def describe(self) -> dict[str, Any]:
        """What ``simone doctor`` shows: backend, URI, endpoint and region; never a credential."""
        out: dict[str, Any] = {"backend": self.backend, "uri": self.uri}
        if self.remote:
            out["endpoint"] = redact_url(self.endpoint, bare=True) if self.endpoint else "(AWS)"
            out["region"] = self.region
            out["credentials"] = "environment" if os.environ.get("AWS_ACCESS_KEY_ID") else "none set"
        return out


async def index_backend_status(settings: Settings, *, timeout_s: float = 10.0) -> dict[str, Any]:
    """The index backend for ``simone doctor``: backend, uri, endpoint, whether it answers, latency.

    ``answers`` is ``True`` when the store listed its collections within ``timeout_s``; otherwise
    ``error`` says why (an unreachable endpoint, refused credentials, a missing bucket). A local
    folder that does not exist yet answers (it is created by the first index run).
    """
    from simone.providers.documents._store import DocumentStore

    try:
        location = IndexLocation.from_settings(settings)
    except ConfigError as exc:
        return {"backend": "unknown", "answers": False, "error": str(exc)}
    out = location.describe()
    if not location.remote and not await anyio.Path(location.uri).exists():
        out.update(answers=True, collections=0, note="no index yet: run 'simone index PATH'")
        return out
    started = time.perf_counter()
    try:
        with anyio.fail_after(timeout_s):
            async with DocumentStore.at(location) as store:
                names = await store.collection_names()
        out.update(answers=True, collections=len(names), ms=round((time.perf_counter() - started) * 1000, 1))
    except TimeoutError:
        out.update(answers=False, error=f"timeout: no answer within {timeout_s:g} s")
    except ProviderError as exc:
        out.update(answers=False, error=f"{exc.kind}: {exc.message}")
    except Exception as exc:  # noqa: BLE001 - a doctor reports every failure instead of crashing
        out.update(answers=False, error=f"{type(exc).__name__}: {exc}")
    return out
