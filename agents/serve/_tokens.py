"""Bearer tokens for ``simone serve``: each one carries its caller's scope, and only its hash is kept.

A token is ``smn_<id>_<secret>``: ``id`` (8 hex digits) names the record, ``secret`` (32 random bytes,
URL-safe base64) is the credential. :meth:`TokenStore.create` returns the token once; the store keeps
the record — actor, the projects it may read, client, role, tool profile, expiry — with the SHA-256 of the whole token
(a random 256-bit secret needs no slow hash). :meth:`TokenStore.verify` maps a presented token to its
:class:`Grant` or ``None`` (unknown, wrong secret, expired, revoked), comparing hashes in constant time.

:class:`TokenStore` is the one interface the CLI and the server use; two stores implement it, chosen by
``[serve] tokens`` (:func:`open_token_store`):

- ``file`` (default): :class:`~simone.agents.serve.FileTokenStore`, a JSON file only its owner may
  read (``0600``), changed under an exclusive ``flock`` and replaced atomically, so concurrent creates
  and revokes never lose one another; a server re-reads it when it changes;
- ``postgres``: :class:`~simone.agents.serve.PostgresTokenStore`, a table in memory's
  PostgreSQL database, shared by every host; a server re-reads it at most ``[serve] tokens_refresh_s``
  after its last read.

Errors::

    ConfigError
    └── UnsafeTokenFile     the token file may be read or replaced by others (mode or owner)
    ProviderUnavailable     the PostgreSQL token store cannot be reached (provider "tokens")
"""

from __future__ import annotations

import abc
import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from simone.agents.mcp import TOOL_PROFILE_NAMES
from simone.runtime import ConfigError, InvalidRequest, NotFound

if TYPE_CHECKING:
    from simone.runtime import Settings

Role = Literal["orchestrator", "researcher"]
ROLES: tuple[Role, ...] = ("orchestrator", "researcher")

TOKEN_FILE = "serve-tokens.json"
"""The token file's name under the data directory (``[serve] tokens_file`` overrides the path)."""

TOKEN_ID = re.compile(r"[0-9a-f]{8}")
"""A token's public id."""

_TOKEN = re.compile(r"smn_([0-9a-f]{8})_([A-Za-z0-9_-]{43})")
_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,256}")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


@dataclass(frozen=True)
class Grant:
    """What one token admits: who calls, which projects it may read, its client and role.

    Attributes:
        token_id: the token's public id (for logs and limits; never the secret).
        actor: the actor every call runs as.
        projects: the projects it may read, the first being the default (empty: global documents only).
        client: the client scope key, if any.
        role: ``orchestrator`` or ``researcher`` (only a researcher gets ``web_research``).
        tools: the tool profile its ``tools/list`` shows (``core``, ``full``…; see
            :data:`simone.agents.mcp.TOOL_PROFILES`); ``None``: the server's (``--tools``, ``[mcp] tools``).
    """

    token_id: str
    actor: str
    projects: tuple[str, ...] = ()
    client: str | None = None
    role: Role = "orchestrator"
    tools: str | None = None


@dataclass(frozen=True)
class TokenRecord:
    """One stored token: its grant, its hash and its life (times are UNIX seconds)."""

    grant: Grant
    hash: str
    created: float
    expires: float | None = None
    revoked: float | None = None

    def active(self, now: float | None = None) -> bool:
        """Neither revoked nor expired at ``now``."""
        moment = time.time() if now is None else now
        return self.revoked is None and (self.expires is None or moment < self.expires)

    def public(self) -> dict[str, Any]:
        """The record without its hash, for ``simone token list``."""
        grant = self.grant
        return {
            "id": grant.token_id,
            "actor": grant.actor,
            "projects": list(grant.projects),
            "client": grant.client,
            "role": grant.role,
            "tools": grant.tools,
            "created": _iso(self.created),
            "expires": _iso(self.expires),
            "revoked": _iso(self.revoked),
            "active": self.active(),
        }

    def to_json(self) -> dict[str, Any]:
        grant = self.grant
        return {
            "id": grant.token_id,
            "hash": self.hash,
            "actor": grant.actor,
            "projects": list(grant.projects),
            "client": grant.client,
            "role": grant.role,
            "tools": grant.tools,
            "created": self.created,
            "expires": self.expires,
            "revoked": self.revoked,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TokenRecord:
        role = data.get("role", "orchestrator")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        grant = Grant(
            token_id=str(data["id"]),
            actor=str(data["actor"]),
            projects=tuple(str(p) for p in data.get("projects") or ()),
            client=data.get("client"),
            role=role,
            # kept as stored: a profile this version does not know refuses that token's calls, not the file
            tools=None if data.get("tools") is None else str(data["tools"]),
        )
        return cls(
            grant=grant,
            hash=str(data["hash"]),
            created=float(data["created"]),
            expires=None if data.get("expires") is None else float(data["expires"]),
            revoked=None if data.get("revoked") is None else float(data["revoked"]),
        )


def _iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of a token, as the store keeps it."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def parse_expiry(text: str, *, now: float | None = None) -> float:
    """``30d``, ``12h``, ``90m``, ``2w`` (from now) or an ISO date/time (UTC unless it says otherwise).

    Raises:
        InvalidRequest: neither form, or a moment that is not in the future.
    """
    moment = time.time() if now is None else now
    value = text.strip()
    duration = _DURATION.fullmatch(value.lower())
    if duration is not None:
        expires = moment + float(duration.group(1)) * _UNITS[duration.group(2)]
    else:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidRequest(
                f"--expires {text!r} is neither a duration (30d, 12h, 90m, 2w) nor an ISO date "
                "(2027-01-31 or 2027-01-31T12:00:00+00:00)"
            ) from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        expires = parsed.timestamp()
    if expires <= moment:
        raise InvalidRequest(f"--expires {text!r} is not in the future")
    return expires


def _check_name(what: str, value: str) -> str:
    if not value.strip() or not _NAME.fullmatch(value):
        raise InvalidRequest(f"the {what} {value!r} must be 1 to 256 characters without control characters")
    return value


class UnsafeTokenFile(ConfigError):
    """The token file may be read or replaced by someone else: its mode or its owner is wrong.

    Raised by every read of a :class:`~simone.agents.serve.FileTokenStore` (``verify`` included)
    until the file is fixed; the message names the file and the command that fixes it.

    Attributes:
        path: the token file.
    """

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


class TokenStore(abc.ABC):
    """Where tokens live: create, list, revoke and verify them (the file and PostgreSQL stores).

    A store implements three primitives — a snapshot of the records, an insert that refuses a taken
    id, and a revocation that is atomic in the store itself — and inherits everything else. A
    revocation is never lost: it is one atomic change of one record (an ``UPDATE`` of one row, or a
    change of the file under its lock), so no concurrent create or revoke can write an older copy of
    that record back.
    """

    blocking: bool = False
    """Whether :meth:`verify` may wait on a network (a server then calls it in a worker thread)."""

    @property
    @abc.abstractmethod
    def where(self) -> str:
        """Where the tokens are, for messages (a path, or a URL without its password)."""

    @abc.abstractmethod
    def _snapshot(self, *, fresh: bool) -> Mapping[str, TokenRecord]:
        """The records by id; ``fresh=False`` may answer from the store's cache (see each store)."""

    @abc.abstractmethod
    def _insert(self, record: TokenRecord) -> bool:
        """Store ``record``; ``False`` (nothing stored) when its id is taken already."""

    @abc.abstractmethod
    def _revoke(self, token_id: str, moment: float) -> TokenRecord | None:
        """Mark ``token_id`` revoked at ``moment`` unless it is already; its record, or ``None``."""

    def close(self) -> None:  # noqa: B027 - a store without connections has nothing to close
        """Let go of connections (the file store holds none)."""

    # -- reading --------------------------------------------------------------------------------
    def records(self) -> list[TokenRecord]:
        """Every stored token, oldest first (read from the store now)."""
        return sorted(self._snapshot(fresh=True).values(), key=lambda r: r.created)

    def active(self, now: float | None = None) -> list[TokenRecord]:
        """The tokens that work now."""
        return [r for r in self.records() if r.active(now)]

    def verify(self, token: str, *, now: float | None = None) -> Grant | None:
        """The grant of ``token``, or ``None`` when it is malformed, unknown, wrong, expired or revoked.

        Raises:
            UnsafeTokenFile: the token file may be read or replaced by others (checked at every call).
            ConfigError: the token file is not valid.
            ProviderUnavailable: the PostgreSQL store cannot be reached and its cache is out of date.
        """
        match = _TOKEN.fullmatch(token.strip())
        if match is None:
            return None
        record = self._snapshot(fresh=False).get(match.group(1))
        if record is None:
            return None
        if not hmac.compare_digest(record.hash, token_hash(match.group(0))):
            return None
        return record.grant if record.active(now) else None

    # -- writing --------------------------------------------------------------------------------
    def create(
        self,
        actor: str,
        *,
        projects: tuple[str, ...] | list[str] = (),
        client: str | None = None,
        role: Role = "orchestrator",
        tools: str | None = None,
        expires: float | None = None,
        now: float | None = None,
    ) -> tuple[str, TokenRecord]:
        """A new token for ``actor``: returns ``(token, record)``; the token is never stored.

        ``tools`` is the token's tool profile (``None``: the server's). The record is stored before
        this returns; a token printed to its user is never lost to a concurrent create or revoke.

        Raises:
            InvalidRequest: a blank actor, project or client, an unknown role or tool profile, or a
                past expiry.
        """
        moment = time.time() if now is None else now
        _check_name("actor", actor)
        for project in projects:
            _check_name("project", project)
        if client is not None:
            _check_name("client", client)
        if role not in ROLES:
            raise InvalidRequest(f"the role must be one of {', '.join(ROLES)}, not {role!r}")
        if tools is not None and tools not in TOOL_PROFILE_NAMES:
            raise InvalidRequest(
                f"the tool profile must be one of {', '.join(TOOL_PROFILE_NAMES)}, not {tools!r}"
            )
        if expires is not None and expires <= moment:
            raise InvalidRequest("the expiry must be in the future")
        while True:
            token_id = secrets.token_hex(4)
            secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
            token = f"smn_{token_id}_{secret}"
            grant = Grant(
                token_id=token_id,
                actor=actor,
                projects=tuple(dict.fromkeys(projects)),
                client=client,
                role=role,
                tools=tools,
            )
            record = TokenRecord(grant=grant, hash=token_hash(token), created=moment, expires=expires)
            if self._insert(record):
                return token, record

    def revoke(self, token_id: str, *, now: float | None = None) -> TokenRecord:
        """Revoke the token ``token_id`` (its record stays, marked revoked); revoking twice keeps the first time.

        Raises:
            NotFound: no token has that id.
        """
        record = None
        if TOKEN_ID.fullmatch(token_id):
            record = self._revoke(token_id, time.time() if now is None else now)
        if record is None:
            raise NotFound(f"no token has the id {token_id!r}; 'simone token list' shows them")
        return record


def tokens_path(settings: Settings) -> Path:
    """The token file of the file store: ``[serve] tokens_file``, else ``<data_dir>/serve-tokens.json``."""
    return Path(settings.serve.tokens_file or Path(settings.data_dir) / TOKEN_FILE)


def open_token_store(settings: Settings) -> TokenStore:
    """The token store ``[serve] tokens`` names: the token file (default) or memory's PostgreSQL database.

    Raises:
        ConfigError: ``tokens = "postgres"`` without a ``postgresql://`` memory URL, or with a
            ``tokens_file`` (which only the file store reads).
    """
    serve = settings.serve
    if serve.tokens == "postgres":
        url = settings.memory.url
        if not url or not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(
                '[serve] tokens = "postgres" keeps the tokens in memory\'s PostgreSQL database, but '
                "[memory] url is not a postgresql:// URL; set SIMONE_MEMORY__URL, or use "
                'tokens = "file"'
            )
        if serve.tokens_file is not None:
            raise ConfigError(
                '[serve] tokens_file is the file store\'s; with tokens = "postgres" the tokens live in '
                'PostgreSQL — remove tokens_file, or set tokens = "file"'
            )
        from simone.agents.serve._token_postgres import PostgresTokenStore

        return PostgresTokenStore(url, refresh_s=serve.tokens_refresh_s)
    from simone.agents.serve._token_file import FileTokenStore

    return FileTokenStore(tokens_path(settings))
