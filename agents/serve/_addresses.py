"""Backend addresses a served caller never sees: every configured address in a tool's answer becomes its kind.

A token holder of ``simone serve`` is not the operator: an error or a failure in a tool's result that
names the memory database, the research cache, an embedding or chat server, a search backend, the
index's object-store endpoint or the server's data folder tells them where the team's backends live
(``/readyz`` names backend kinds only for the same reason). :class:`AddressScrubber` replaces each such
address — as written in the configuration, without its password, as ``host:port``, as its host
(loopback excepted) — by the backend's
kind in angle brackets (``<memory backend postgresql>``); the server's own log keeps the detail.
Public services at their public addresses (Brave's and Tavily's APIs) are not secrets and stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from simone.runtime import Settings, redact_url

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
"""Hosts that say nothing about where a team's backends live (replaced only with their port)."""


class AddressScrubber:
    """Replaces configured backend addresses in text by their kinds (see the module docstring).

    Args:
        addresses: ``(kind, address)`` pairs; empty addresses are ignored.
    """

    def __init__(self, addresses: Iterable[tuple[str, str | None]]) -> None:
        forms: dict[str, str] = {}
        for kind, address in addresses:
            if not address:
                continue
            for form in _forms(address):
                forms.setdefault(form, f"<{kind}>")
        self._forms = forms
        self._pattern = (
            re.compile("|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True)))
            if forms
            else None
        )

    @classmethod
    def for_settings(cls, settings: Settings) -> AddressScrubber:
        """The addresses ``settings`` configures (memory, cache, embedders, chat, search, index, data)."""
        web = settings.web
        index = settings.index
        remote_index = index.uri if index.uri and "://" in index.uri else None
        memory_kind = "memory backend postgresql" if settings.memory.url else "memory backend sqlite"
        return cls(
            [
                (memory_kind, settings.memory.url),
                (memory_kind, str(settings.memory.path) if settings.memory.path else None),
                ("research cache", web.cache_url),
                ("research cache", str(web.cache_dir) if web.cache_dir else None),
                ("embedding server", settings.embeddings.openai_base_url),
                ("embedding server", settings.embeddings.ollama_base_url),
                ("chat server", settings.agents.chat_base_url),
                ("search backend searxng", web.searxng_url),
                ("index", remote_index),
                ("index", index.storage_options.get("endpoint") or index.storage_options.get("aws_endpoint")),
                ("index", str(index.uri) if index.uri and remote_index is None else None),
                ("data directory", str(settings.data_dir)),
            ]
        )

    def __call__(self, text: str) -> str:
        """``text`` with every configured address replaced by its kind."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda match: self._forms[match.group(0)], text)


def _forms(address: str) -> set[str]:
    """The ways ``address`` may appear in a message: as given, without its password, as ``host:port``."""
    forms = {address.rstrip("/")}
    if "://" not in address:  # a path
        forms.add(str(Path(address)))
        return {form for form in forms if len(form) > 1}
    parts = urlsplit(address)
    forms.add(redact_url(address).rstrip("/"))
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    if host:
        bare = urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")
        forms.add(bare)
        if parts.username:  # the style of the memory store's own redaction
            forms.add(urlunsplit((parts.scheme, f"{parts.username}:***@{netloc}", parts.path, "", "")))
            forms.add(urlunsplit((parts.scheme, f"{parts.username}@{netloc}", parts.path, "", "")))
        if parts.port:
            forms.add(netloc)
        if host not in _LOOPBACK:  # a driver's own message names the host alone ('server at "db.internal"')
            forms.add(host)
    return {form for form in forms if len(form) > 3}
