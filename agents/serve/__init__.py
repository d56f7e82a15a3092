"""simone.agents.serve — ``simone serve``: simone's MCP tools over streamable HTTP, for many callers.

:func:`create_app` is one worker's ASGI app: ``/mcp`` (the tools of :mod:`simone.agents.mcp`, stateless)
behind the :class:`Gate` (bearer token → admitted scope, per-token limits, request logs), ``/healthz`` and
``/readyz`` (:func:`readiness`: the index and memory are required, the research cache optional).
:func:`serve_one` and :func:`serve_workers` run it under uvicorn (:class:`HeaderDeadlineProtocol` bounds
a request's headers). Tokens live in a :class:`TokenStore` (:func:`open_token_store`: the owner-only
:class:`FileTokenStore` or memory's :class:`PostgresTokenStore`); only their hashes are kept. Every text
a token holder reads passes through an :class:`AddressScrubber`, so no backend address leaves the server.

Importing the package is cheap: each name is imported from its module the first time it is used
(PEP 562), so ``simone token`` and ``simone doctor`` pay for neither Starlette nor the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.agents.serve._addresses import AddressScrubber as AddressScrubber
    from simone.agents.serve._app import (
        MCP_PATH as MCP_PATH,
        OPTIONS_ENV as OPTIONS_ENV,
        ServeOptions as ServeOptions,
        app_from_environment as app_from_environment,
        backend_checks as backend_checks,
        bind as bind,
        create_app as create_app,
        is_loopback as is_loopback,
        log_config as log_config,
        serve_one as serve_one,
        serve_workers as serve_workers,
        unshared_stores as unshared_stores,
    )
    from simone.agents.serve._gate import (
        PROJECT_HEADER as PROJECT_HEADER,
        SCOPE_KEY as SCOPE_KEY,
        Admitted as Admitted,
        Gate as Gate,
        TokenLimits as TokenLimits,
        log_request as log_request,
    )
    from simone.agents.serve._http import HeaderDeadlineProtocol as HeaderDeadlineProtocol
    from simone.agents.serve._readiness import (
        OPTIONAL_BACKENDS as OPTIONAL_BACKENDS,
        REQUIRED_BACKENDS as REQUIRED_BACKENDS,
        ReadyStatus as ReadyStatus,
        readiness as readiness,
    )
    from simone.agents.serve._token_file import FileTokenStore as FileTokenStore
    from simone.agents.serve._token_postgres import PostgresTokenStore as PostgresTokenStore
    from simone.agents.serve._tokens import (
        TOKEN_FILE as TOKEN_FILE,
        Grant as Grant,
        Role as Role,
        TokenRecord as TokenRecord,
        TokenStore as TokenStore,
        UnsafeTokenFile as UnsafeTokenFile,
        open_token_store as open_token_store,
        parse_expiry as parse_expiry,
        token_hash as token_hash,
        tokens_path as tokens_path,
    )

__all__ = (
    "AddressScrubber",
    "Admitted",
    "FileTokenStore",
    "Gate",
    "Grant",
    "HeaderDeadlineProtocol",
    "MCP_PATH",
    "OPTIONAL_BACKENDS",
    "OPTIONS_ENV",
    "PROJECT_HEADER",
    "PostgresTokenStore",
    "REQUIRED_BACKENDS",
    "ReadyStatus",
    "Role",
    "SCOPE_KEY",
    "ServeOptions",
    "TOKEN_FILE",
    "TokenLimits",
    "TokenRecord",
    "TokenStore",
    "UnsafeTokenFile",
    "app_from_environment",
    "backend_checks",
    "bind",
    "create_app",
    "is_loopback",
    "log_config",
    "log_request",
    "open_token_store",
    "parse_expiry",
    "readiness",
    "serve_one",
    "serve_workers",
    "token_hash",
    "tokens_path",
    "unshared_stores",
)

_HOMES: dict[str, str] = {
    "AddressScrubber": "simone.agents.serve._addresses",
    "MCP_PATH": "simone.agents.serve._app",
    "OPTIONS_ENV": "simone.agents.serve._app",
    "ServeOptions": "simone.agents.serve._app",
    "app_from_environment": "simone.agents.serve._app",
    "backend_checks": "simone.agents.serve._app",
    "bind": "simone.agents.serve._app",
    "create_app": "simone.agents.serve._app",
    "is_loopback": "simone.agents.serve._app",
    "log_config": "simone.agents.serve._app",
    "serve_one": "simone.agents.serve._app",
    "serve_workers": "simone.agents.serve._app",
    "unshared_stores": "simone.agents.serve._app",
    "Admitted": "simone.agents.serve._gate",
    "Gate": "simone.agents.serve._gate",
    "PROJECT_HEADER": "simone.agents.serve._gate",
    "SCOPE_KEY": "simone.agents.serve._gate",
    "TokenLimits": "simone.agents.serve._gate",
    "log_request": "simone.agents.serve._gate",
    "HeaderDeadlineProtocol": "simone.agents.serve._http",
    "OPTIONAL_BACKENDS": "simone.agents.serve._readiness",
    "REQUIRED_BACKENDS": "simone.agents.serve._readiness",
    "ReadyStatus": "simone.agents.serve._readiness",
    "readiness": "simone.agents.serve._readiness",
    "FileTokenStore": "simone.agents.serve._token_file",
    "PostgresTokenStore": "simone.agents.serve._token_postgres",
    "Grant": "simone.agents.serve._tokens",
    "Role": "simone.agents.serve._tokens",
    "TOKEN_FILE": "simone.agents.serve._tokens",
    "TokenRecord": "simone.agents.serve._tokens",
    "TokenStore": "simone.agents.serve._tokens",
    "UnsafeTokenFile": "simone.agents.serve._tokens",
    "open_token_store": "simone.agents.serve._tokens",
    "parse_expiry": "simone.agents.serve._tokens",
    "token_hash": "simone.agents.serve._tokens",
    "tokens_path": "simone.agents.serve._tokens",
}
"""Where each exported name lives (imported on first use by ``__getattr__``)."""

__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
