"""The rerank stage's factory (``[rerank]``): ``FACTORY``, which discovery registers.

It opens no provider: it builds the reranker the settings name (``http``: :class:`HttpReranker`;
``onnx``: :class:`OnnxCrossEncoder`), opens it with the runtime and publishes it under
:data:`~simone.runtime.RERANKER`, which the runtime hands to its router (with
:meth:`RerankOptions.from_settings <simone.runtime.RerankOptions.from_settings>`). With ``backend =
"none"`` (the default) the factory is not opened at all.

``Runtime(provider_options={"rerank": {"client": httpx.AsyncClient(...)}})`` hands the HTTP reranker a
client of the caller's (tests use it for a transport of their own). This module imports nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simone.runtime import (
    RERANKER,
    ConfigError,
    OpenedProviders,
    ProviderError,
    ProviderFactory,
    ProviderSetup,
    RerankSettings,
)

if TYPE_CHECKING:
    from simone.providers.rerank._http import HttpReranker
    from simone.providers.rerank._onnx import OnnxCrossEncoder


def build_reranker(settings: RerankSettings, **options: object) -> HttpReranker | OnnxCrossEncoder | None:
    """The reranker ``settings`` describe (not opened yet), or ``None`` for ``backend = "none"``.

    ``options``: ``client`` (an ``httpx.AsyncClient`` for the HTTP reranker).

    Raises:
        ConfigError: ``http`` without a ``url``, ``onnx`` without a ``model_path``.
    """
    if settings.backend == "none":
        return None
    if settings.backend == "http":
        from simone.providers.rerank._http import HttpReranker

        if not settings.url:
            raise ConfigError(
                "[rerank] backend = 'http' needs url (the full endpoint, e.g. http://host/v1/rerank)"
            )
        key = settings.api_key.get_secret_value() if settings.api_key is not None else None
        try:
            return HttpReranker(
                settings.url,
                api=settings.api,
                model=settings.model,
                api_key=key,
                client=options.get("client"),  # type: ignore[arg-type]
                timeout_s=settings.timeout_s,
                max_retry_wait_s=settings.max_retry_wait_s,
            )
        except ValueError as exc:
            raise ConfigError(f"[rerank] url: {exc}") from exc
    from simone.providers.rerank._onnx import OnnxCrossEncoder

    if settings.model_path is None:
        raise ConfigError(
            "[rerank] backend = 'onnx' needs model_path (a folder with model.onnx and tokenizer.json)"
        )
    return OnnxCrossEncoder(
        settings.model_path,
        max_tokens=settings.max_tokens,
        batch_size=settings.batch_size,
        threads=settings.onnx_threads,
    )


async def open_reranker(setup: ProviderSetup[RerankSettings]) -> OpenedProviders:
    """Open the configured reranker with the runtime and publish it (:data:`~simone.runtime.RERANKER`).

    Raises:
        ConfigError: the section is incomplete, or the local model cannot be found or loaded.
    """
    reranker = build_reranker(setup.section, **setup.options)
    if reranker is None:
        return OpenedProviders()
    try:
        await setup.stack.enter_async_context(reranker)
    except ProviderError as exc:
        raise ConfigError(f"the reranker could not be opened: {exc.message}") from exc
    return OpenedProviders(published={RERANKER: reranker})


FACTORY: ProviderFactory[RerankSettings] = ProviderFactory(
    section="rerank",
    settings=RerankSettings,
    open=open_reranker,
    enabled=lambda settings, section: section.backend != "none",
    order=40,
    publishes=(RERANKER,),
)
"""The rerank stage (``[rerank]``, only with a backend): publishes the reranker; no provider."""
