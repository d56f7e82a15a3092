"""The HTTP protocol of ``simone serve``: uvicorn's, with a deadline on a request's headers.

uvicorn closes a keep-alive connection idle between requests (``timeout_keep_alive``) but has no
deadline for the headers themselves: a client that connects and sends nothing, or drips one header byte
a second, holds its socket (a file descriptor, a protocol object) for as long as it likes, and a few
thousand such clients exhaust the worker. :class:`HeaderDeadlineProtocol` closes the connection when a
request's headers are not complete ``header_timeout_s`` after the connection opened or after the first
byte of the request arrived — once, not per byte, so dripping does not extend it. The request body has
its own deadline in the gate (``[serve] body_timeout_s``, answered 408).

It wraps whichever protocol uvicorn's ``auto`` picks (httptools when installed, else h11); both keep the
request in progress in ``cycle``, created when the headers are complete.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

_Base: Any = AutoHTTPProtocol


class HeaderDeadlineProtocol(_Base):  # type: ignore[misc]
    """uvicorn's HTTP protocol, closing a connection whose request headers take too long.

    Args:
        header_timeout_s: how long a request's headers may take, from the connection or the first byte.
        *args, **kwargs: uvicorn's protocol arguments (``config``, ``server_state``, …).

    Give it to uvicorn as ``http=functools.partial(HeaderDeadlineProtocol, header_timeout_s=10.0)``.
    """

    def __init__(self, *args: Any, header_timeout_s: float = 10.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        """Accept the connection; its first request's headers are due within the deadline."""
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Feed uvicorn; the first byte of a request starts its deadline, complete headers end it."""
        super().data_received(data)
        if self._awaiting_headers():
            self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the deadline with the connection."""
        self._disarm()
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        cycle = getattr(self, "cycle", None)
        return cycle is None or bool(cycle.response_complete)

    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _expire(self) -> None:
        self._header_deadline = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self._awaiting_headers() and not self._idle_between_requests():
            transport.close()

    def _idle_between_requests(self) -> bool:
        """A keep-alive connection waiting for its next request: uvicorn's own timer closes it."""
        return getattr(self, "timeout_keep_alive_task", None) is not None
