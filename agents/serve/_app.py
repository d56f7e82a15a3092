"""``simone serve``: simone's MCP tools over the MCP SDK's streamable HTTP transport, for many callers.

One ASGI app per worker process (Starlette): ``/mcp`` is the SDK's
:class:`~mcp.server.streamable_http_manager.StreamableHTTPSessionManager` in **stateless** mode with JSON
responses behind the :class:`~simone.agents.serve.Gate` (bearer token → admitted scope, limits,
request logs); ``/healthz`` answers while the process lives; ``/readyz`` answers 200 while the required
backends (index, memory) answer — a research cache that does not answer shows as ``degraded`` —, with
the same probes as ``simone doctor`` (:func:`~simone.agents.serve.readiness` says which backend is required).

Stateless mode is what lets several workers share one listening socket: no MCP session lives in one
process, so any worker can answer any request, and the caller's scope comes with each request (its
token), never from a session. Workers are uvicorn's own supervisor (``--workers N`` with the import-string
factory :func:`app_from_environment`, the options travelling in ``$SIMONE_SERVE_OPTIONS``); they share
state only through the shared backends, which is why :func:`unshared_stores` must be empty for N > 1.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import math
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import anyio
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from simone.agents._runtime import Runtime
from simone.agents._tools import ORCHESTRATOR, RESEARCHER, AgentProfile
from simone.agents.mcp import Scope, ToolProfile, build_scoped_server, tool_profile
from simone.agents.serve._addresses import AddressScrubber
from simone.agents.serve._gate import SCOPE_KEY, Admitted, Gate, TokenLimits
from simone.agents.serve._http import HeaderDeadlineProtocol
from simone.agents.serve._readiness import readiness
from simone.agents.serve._tokens import Grant, Role, TokenStore, open_token_store
from simone.providers.documents import IndexLocation, index_backend_status
from simone.providers.memory import memory_backend, memory_backend_status
from simone.runtime import (
    Caller,
    ConfigError,
    InvalidRequest,
    Settings,
    TrustedContext,
    load_settings,
    research_cache_health,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

OPTIONS_ENV = "SIMONE_SERVE_OPTIONS"
"""The environment variable that carries :class:`ServeOptions` (JSON) to each worker process."""

MCP_PATH = "/mcp"


@dataclass(frozen=True)
class ServeOptions:
    """What a worker needs besides the settings file: the CLI's global options and the open-mode scope.

    Attributes:
        config: the ``--config`` file, if any.
        data_dir: the ``--data-dir``, if any.
        host: the ``--host`` bound (default: ``[serve] host``); on loopback, DNS-rebinding protection.
        open_actor: serve without tokens, every call as this actor (``--actor``); ``None``: tokens.
        open_projects, open_client, open_role: the rest of the open-mode scope.
        tools: the tool profile (``--tools``) of open mode and of every token that names none;
            ``None``: ``[mcp] tools``.
    """

    config: str | None = None
    data_dir: str | None = None
    host: str | None = None
    open_actor: str | None = None
    open_projects: tuple[str, ...] = ()
    open_client: str | None = None
    open_role: Role = "orchestrator"
    tools: str | None = None

    def to_env(self) -> str:
        """These options as the JSON of :data:`OPTIONS_ENV`."""
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, text: str) -> ServeOptions:
        """Options back from :meth:`to_env`'s JSON."""
        data = json.loads(text)
        data["open_projects"] = tuple(data.get("open_projects") or ())
        return cls(**data)

    def settings(self) -> Settings:
        """The settings these options name (the config file and the environment)."""
        overrides: dict[str, Any] = {}
        if self.data_dir:
            overrides["data_dir"] = self.data_dir
        return load_settings(self.config, **overrides)

    def open_grant(self) -> Grant | None:
        """The grant of open mode, or ``None`` when the server checks tokens."""
        if self.open_actor is None:
            return None
        return Grant(
            token_id="open",
            actor=self.open_actor,
            projects=self.open_projects,
            client=self.open_client,
            role=self.open_role,
            tools=self.tools,
        )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address (``localhost``, ``127.x``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def unshared_stores(settings: Settings) -> list[str]:
    """The stores that live in one process's data directory (each makes ``--workers`` > 1 unsafe)."""
    problems = []
    try:
        if memory_backend(settings) != "postgres":
            problems.append("memory is SQLite: set [memory] url (SIMONE_MEMORY__URL) to a PostgreSQL server")
    except ConfigError as exc:
        problems.append(str(exc))
    if settings.web.cache_url is None:
        problems.append("the research cache is diskcache: set [web] cache_url to a Redis server")
    try:
        if not IndexLocation.from_settings(settings).remote:
            problems.append(
                "the document index is a local folder: set [index] uri to object storage (s3://…)"
            )
    except ConfigError as exc:
        problems.append(str(exc))
    return problems


async def backend_checks(settings: Settings) -> dict[str, dict[str, Any]]:
    """Whether each configured backend answers now (``simone doctor``'s probes), without addresses."""
    timeout_s = settings.serve.ready_timeout_s
    index = await index_backend_status(settings, timeout_s=timeout_s)
    memory = await memory_backend_status(settings, timeout_s=timeout_s)
    web = settings.web
    directory = Path(web.cache_dir or Path(settings.data_dir) / "web-cache")
    if web.cache_url is None and not await anyio.Path(directory).exists():
        cache = {"backend": "diskcache", "answers": True}
    else:
        password = web.cache_password.get_secret_value() if web.cache_password is not None else None
        health = await research_cache_health(directory, url=web.cache_url, password=password)
        cache = {"backend": health.backend, "answers": health.answers}
    return {
        "index": {"backend": index.get("backend"), "answers": bool(index.get("answers"))},
        "memory": {"backend": memory.get("backend"), "answers": bool(memory.get("answers"))},
        "research_cache": cache,
    }


def _profile(role: Role) -> tuple[AgentProfile, Caller]:
    if role == "researcher":
        return RESEARCHER, Caller.RESEARCHER
    return ORCHESTRATOR, Caller.ORCHESTRATOR


_INSTRUCTIONS = (
    "simone tools. Your scope (actor, project, role) comes from your bearer token; "
    "tool arguments never carry scope."
)


Beside = Callable[[Runtime], contextlib.AbstractAsyncContextManager[None]]
"""Work that runs beside the server once its runtime is open (``simone serve``'s index refresh)."""


def create_app(
    settings: Settings, options: ServeOptions | None = None, *, beside: Beside | None = None
) -> Starlette:
    """The ASGI app of one worker: ``/mcp``, ``/healthz`` and ``/readyz`` (see the module docstring).

    The runtime opens in the app's lifespan (uvicorn's start-up) and closes after the last request;
    ``beside`` is entered with the open runtime and left before it closes.

    Raises:
        ConfigError: neither an open-mode actor nor a readable token store, or an unknown tool profile.
        ProviderUnavailable: the PostgreSQL token store cannot be reached.
    """
    options = options or ServeOptions()
    serve = settings.serve
    tools = tool_profile(options.tools or settings.mcp.tools)
    open_grant = options.open_grant()
    tokens = None if open_grant is not None else open_token_store(settings)
    if tokens is not None:
        tokens.records()  # an unsafe or invalid token file, or an unreachable database, stops the start here
    runtime = Runtime.open(settings)
    limits = TokenLimits(serve.max_concurrent_calls, serve.calls_per_minute, streams=serve.max_open_streams)
    server = build_scoped_server(
        runtime,
        _scope_of(runtime, serve.call_timeout_s, tools),
        tools=tools,
        instructions=_INSTRUCTIONS,
        timeout_s=serve.call_timeout_s,
        redact=AddressScrubber.for_settings(settings),
    )
    manager = StreamableHTTPSessionManager(
        server,
        stateless=True,
        json_response=True,
        security_settings=_transport_security(options.host or serve.host),
    )
    gate = Gate(
        manager.handle_request,
        tokens=tokens,
        limits=limits,
        open_grant=open_grant,
        body_timeout_s=serve.body_timeout_s,
    )
    return Starlette(
        routes=[
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/readyz", _readyz(settings, runtime), methods=["GET"]),
            Route(MCP_PATH, gate),
        ],
        lifespan=_lifespan(runtime, manager, tokens, beside),
    )


def _scope_of(runtime: Runtime, timeout_s: float, tools: ToolProfile) -> Scope:
    """The MCP server's scope function: each request's context, profile and tool profile.

    All three come from the request's admitted caller; a token without a tool profile gets ``tools``
    (the server's).
    """

    def scope(ctx: ServerRequestContext[Any]) -> tuple[TrustedContext, AgentProfile, ToolProfile]:
        request = ctx.request
        admitted = request.scope.get(SCOPE_KEY) if isinstance(request, Request) else None
        if not isinstance(admitted, Admitted):
            raise InvalidRequest("the request came without an admitted caller")
        grant = admitted.grant
        profile, role = _profile(grant.role)
        event = {"actor": grant.actor, "project": admitted.project, "client": grant.client}
        listed = tools if grant.tools is None else tool_profile(grant.tools)
        return runtime.admit(event, caller=role, timeout_s=timeout_s), profile, listed

    return scope


def _transport_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for a server on loopback; ``None`` (the SDK's default) elsewhere."""
    if not is_loopback(host):
        return None
    loopback = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=loopback,
        allowed_origins=[f"http://{allowed}" for allowed in loopback],
    )


async def _healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "worker": os.getpid()})


def _readyz(settings: Settings, runtime: Runtime) -> Callable[[Request], Awaitable[JSONResponse]]:
    """The ``/readyz`` endpoint: the backends' checks and the verdict, each kept for 2 s."""
    ready: dict[str, Any] = {"at": 0.0, "body": None}

    async def readyz(request: Request) -> JSONResponse:
        now = time.monotonic()
        if ready["body"] is None or now - ready["at"] > 2.0:
            checks = await backend_checks(settings)
            verdict = readiness(checks, runtime_open=runtime.router is not None)
            ready.update(at=now, body={**verdict, "backends": checks})
        body = ready["body"]
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    return readyz


def _lifespan(
    runtime: Runtime,
    manager: StreamableHTTPSessionManager,
    tokens: TokenStore | None,
    beside: Beside | None = None,
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: the runtime and the session manager open, the token store closed at the end."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with runtime, manager.run():
            try:
                async with beside(runtime) if beside is not None else contextlib.nullcontext():
                    yield
            finally:
                if tokens is not None:
                    tokens.close()

    return lifespan


def app_from_environment() -> Starlette:
    """Uvicorn's factory for each worker: :func:`create_app` with the options of :data:`OPTIONS_ENV`."""
    options = ServeOptions.from_env(os.environ.get(OPTIONS_ENV, "{}"))
    return create_app(options.settings(), options)


def log_config(level: str = "info") -> dict[str, Any]:
    """Uvicorn's logging: its own lines plain on stderr, the request log as bare JSON lines on stderr."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(message)s"},
            "server": {"format": "simone serve: %(message)s"},
        },
        "handlers": {
            "server": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "server"},
            "requests": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "plain",
            },
        },
        "loggers": {
            "uvicorn": {"handlers": ["server"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "simone.serve.requests": {"handlers": ["requests"], "level": "INFO", "propagate": False},
        },
    }


def _config(app: Any, settings: Settings, host: str, port: int, workers: int) -> Any:
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        workers=workers,
        factory=isinstance(app, str),
        lifespan="on",
        access_log=False,
        log_config=log_config(),
        timeout_graceful_shutdown=math.ceil(settings.serve.shutdown_grace_s),
        server_header=False,
        timeout_keep_alive=75,  # MCP clients pause between calls; do not make them reconnect each time
        # uvicorn only calls its protocol class, so a partial with the deadline stands in for one
        http=cast(
            Any, functools.partial(HeaderDeadlineProtocol, header_timeout_s=settings.serve.header_timeout_s)
        ),
    )


async def serve_one(
    settings: Settings, options: ServeOptions, *, host: str, port: int, beside: Beside | None = None
) -> None:
    """Serve in this process until SIGINT/SIGTERM, then stop gracefully (in-flight calls get the grace).

    ``beside`` runs with the open runtime (see :func:`create_app`).
    """
    import signal
    import threading

    import uvicorn

    class _Server(uvicorn.Server):
        # uvicorn re-raises the signal after its graceful shutdown; the CLI exits 0 instead.
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    sock = bind(host, port)
    server = _Server(_config(create_app(settings, options, beside=beside), settings, host, port, 1))
    try:
        await server.serve(sockets=[sock])
    except SystemExit:  # uvicorn's way of saying the start-up failed (it logged why)
        server.started = False
    finally:
        sock.close()
    if not server.started:
        raise ConfigError(f"simone serve could not start on {host}:{port} (see the lines above)")


def serve_workers(settings: Settings, options: ServeOptions, *, host: str, port: int, workers: int) -> None:
    """Serve with ``workers`` processes on one socket (uvicorn's supervisor) until SIGINT/SIGTERM.

    Blocking; call it from the main thread (the supervisor handles the signals there).
    """
    from uvicorn.supervisors import Multiprocess

    os.environ[OPTIONS_ENV] = options.to_env()
    config = _config(f"{__name__}:app_from_environment", settings, host, port, workers)
    sock = bind(host, port)
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything slow starts (every worker inherits it).

    Raises:
        ConfigError: the address cannot be bound (in use, not this host's, no permission).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only when the listening
    # socket says TCP; without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} — choose another --host or --port"
        ) from exc
    sock.set_inheritable(True)
    return sock
