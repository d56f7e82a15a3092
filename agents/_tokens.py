"""Bearer tokens for ``simone serve``: each one carries its caller's scope, and only its hash is kept.

A token is ``smn_<id>_<secret>``: ``id`` (8 hex digits) names the record, ``secret`` (32 random bytes,
URL-safe base64) is the credential. :meth:`TokenStore.create` returns the token once; the store keeps
the record — actor, the projects it may read, client, role, expiry — with the SHA-256 of the whole token
(a random 256-bit secret needs no slow hash), in a JSON file that only its owner may read or write
(``0600``, written atomically). :meth:`TokenStore.verify` maps a presented token to its :class:`Grant`
or ``None`` (unknown, wrong secret, expired, revoked), comparing hashes in constant time; a server
re-reads the file when it changes, so a revoked token stops working at once in every worker.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from simone.runtime import ConfigError, InvalidRequest, NotFound

Role = Literal["orchestrator", "researcher"]
ROLES: tuple[Role, ...] = ("orchestrator", "researcher")

TOKEN_FILE = "serve-tokens.json"
"""The token file's name under the data directory (``[serve] tokens_file`` overrides the path)."""

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
    """

    token_id: str
    actor: str
    projects: tuple[str, ...] = ()
    client: str | None = None
    role: Role = "orchestrator"


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


@dataclass
class TokenStore:
    """The token file: create, list, revoke and verify tokens.

    Reads are cached and refreshed when the file's modification time or size changes, so verifying a
    token costs a ``stat`` unless someone created or revoked one.

    Args:
        path: the JSON file (created on the first :meth:`create`, owner-only permissions).
    """

    path: Path
    _records: dict[str, TokenRecord] = field(default_factory=dict, init=False, repr=False)
    _stamp: tuple[int, int, int] | None = field(default=None, init=False, repr=False)

    # -- reading --------------------------------------------------------------------------------
    def _load(self) -> dict[str, TokenRecord]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._records, self._stamp = {}, None
            return self._records
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {self.path}: {exc.strerror or exc}") from exc
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if stamp == self._stamp:
            return self._records
        if stat.st_mode & 0o077:
            raise ConfigError(
                f"the token file {self.path} may be read by others (mode {stat.st_mode & 0o777:o}); "
                f"run 'chmod 600 {self.path}'"
            )
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            records = {r["id"]: TokenRecord.from_json(r) for r in data.get("tokens", [])}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"the token file {self.path} is not valid: {exc}") from exc
        self._records, self._stamp = records, stamp
        return records

    def records(self) -> list[TokenRecord]:
        """Every stored token, oldest first."""
        return sorted(self._load().values(), key=lambda r: r.created)

    def active(self, now: float | None = None) -> list[TokenRecord]:
        """The tokens that work now."""
        return [r for r in self.records() if r.active(now)]

    def verify(self, token: str, *, now: float | None = None) -> Grant | None:
        """The grant of ``token``, or ``None`` when it is malformed, unknown, wrong, expired or revoked."""
        match = _TOKEN.fullmatch(token.strip())
        if match is None:
            return None
        record = self._load().get(match.group(1))
        if record is None:
            return None
        if not hmac.compare_digest(record.hash, token_hash(match.group(0))):
            return None
        return record.grant if record.active(now) else None

    # -- writing --------------------------------------------------------------------------------
    def _save(self, records: dict[str, TokenRecord]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"version": 1, "tokens": [r.to_json() for r in records.values()]}, indent=2)
        fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._stamp = None

    def create(
        self,
        actor: str,
        *,
        projects: tuple[str, ...] | list[str] = (),
        client: str | None = None,
        role: Role = "orchestrator",
        expires: float | None = None,
        now: float | None = None,
    ) -> tuple[str, TokenRecord]:
        """A new token for ``actor``: returns ``(token, record)``; the token is never stored.

        Raises:
            InvalidRequest: a blank actor, project or client, an unknown role, or a past expiry.
        """
        moment = time.time() if now is None else now
        _check_name("actor", actor)
        for project in projects:
            _check_name("project", project)
        if client is not None:
            _check_name("client", client)
        if role not in ROLES:
            raise InvalidRequest(f"the role must be one of {', '.join(ROLES)}, not {role!r}")
        if expires is not None and expires <= moment:
            raise InvalidRequest("the expiry must be in the future")
        records = dict(self._load())
        token_id = secrets.token_hex(4)
        while token_id in records:
            token_id = secrets.token_hex(4)
        secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
        token = f"smn_{token_id}_{secret}"
        grant = Grant(
            token_id=token_id, actor=actor, projects=tuple(dict.fromkeys(projects)), client=client, role=role
        )
        record = TokenRecord(grant=grant, hash=token_hash(token), created=moment, expires=expires)
        records[token_id] = record
        self._save(records)
        return token, record

    def revoke(self, token_id: str, *, now: float | None = None) -> TokenRecord:
        """Revoke the token ``token_id`` (its record stays, marked revoked).

        Raises:
            NotFound: no token has that id.
        """
        records = dict(self._load())
        record = records.get(token_id)
        if record is None:
            raise NotFound(f"no token has the id {token_id!r}; 'simone token list' shows them")
        if record.revoked is None:
            record = TokenRecord(
                grant=record.grant,
                hash=record.hash,
                created=record.created,
                expires=record.expires,
                revoked=time.time() if now is None else now,
            )
            records[token_id] = record
            self._save(records)
        return record
