"""What the loopback test servers share: a scripted mode, recorded headers, a free port, a thread."""

from __future__ import annotations

import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Generic, Self, TypeVar

M = TypeVar("M", bound=str)


class ScriptedLoopbackServer(Generic[M]):
    """An HTTP server on ``127.0.0.1:<free port>`` for a ``with`` block, answering by mode.

    A subclass gives the handler class (:meth:`handler`) and the thread's name; requests take the
    next scripted mode (:attr:`script`), else :attr:`mode`.

    Attributes:
        mode: how requests are answered when :attr:`script` is empty.
        script: modes for the next requests, consumed one per request.
        headers: each request's headers (lower-cased names), in arrival order.
    """

    thread_name = "loopback-http"

    def __init__(self, mode: M) -> None:
        self.mode: M = mode
        self.script: deque[M] = deque()
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this server."""
        raise NotImplementedError

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._server is None:
            raise RuntimeError("the server is not running; use it in a 'with' block")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def next_mode(self) -> M:
        """The mode for the request being answered (scripted first, else :attr:`mode`)."""
        with self._lock:
            return self.script.popleft() if self.script else self.mode

    def start(self) -> None:
        """Bind a free port and serve in a daemon thread."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        server.daemon_threads = True
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and free the port (a later :meth:`start` binds a new one)."""
        self._stopping.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def wait(self, seconds: float) -> None:
        """Sleep in a handler, cut short when the server stops."""
        self._stopping.wait(seconds)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
