"""One writer per collection on S3: a lock object with a lease, taken by a conditional put.

LanceDB's commit protocol on S3 (a manifest per version, put with ``If-None-Match: *``) keeps two
concurrent commits from overwriting each other, but it does not stop two indexers from both
*inserting* the chunks neither has seen yet: measured against moto's S3 server, two processes
upserting the same 50,000 chunk ids at once both commit (``num_attempts=1`` each) and the table holds
100,000 rows. So, as with the local ``flock`` (:mod:`._lock`), every write holds the collection's lock:
the object ``<prefix>/<collection>.lock`` in the bucket.

- **Taking it**: ``PUT`` with ``If-None-Match: *`` — exactly one of two racing writers gets ``200``,
  the other ``412`` and is refused with :class:`CollectionBusy` naming the holder (host, pid, and
  when its lease ends).
- **Holding it**: the holder renews its lease every third of ``[index] lock_lease_s`` by a ``PUT``
  with ``If-Match: <its etag>``; a writer that lost the lock (paused past its lease and taken over)
  finds out at the next renewal and stops with :class:`CollectionBusy`.
- **A crashed holder**: its lock stays until the lease runs out; then the next writer deletes that
  exact object (``DELETE`` with ``If-Match: <the stale etag>``, so it never removes a fresh lock) and
  takes it. Leases compare wall clocks: hosts must keep their clocks roughly in time (NTP).
- **Releasing**: ``DELETE`` with ``If-Match: <its etag>``.

Requests are signed with AWS Signature V4 from the environment's credentials (the same variables
LanceDB reads); the lock needs a server that honours conditional writes (AWS S3 since 2024, MinIO,
moto).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import httpx
from simone.providers.documents._location import IndexLocation
from simone.providers.documents._lock import LOCK_SUFFIX, CollectionBusy
from simone.runtime import ConfigError, ProviderUnavailable, redact_url

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_ATTEMPTS = 5


def sign_v4(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    region: str,
    access_key: str,
    secret_key: str,
    session_token: str | None = None,
    when: dt.datetime | None = None,
    service: str = "s3",
) -> dict[str, str]:
    """``headers`` plus the AWS Signature V4 ones (``x-amz-date``, ``x-amz-content-sha256``, ``Authorization``)."""
    moment = (when or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    parts = urlsplit(url)
    host = parts.netloc
    out = {k.lower(): v for k, v in headers.items()}
    out["host"] = host
    out["x-amz-date"] = amz_date
    out["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256
    if session_token:
        out["x-amz-security-token"] = session_token
    signed = sorted(out)
    canonical_headers = "".join(f"{name}:{' '.join(out[name].strip().split())}\n" for name in signed)
    query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(
            pair.split("=", 1) if "=" in pair else (pair, "") for pair in parts.query.split("&") if pair
        )
    )
    canonical = "\n".join(
        [
            method,
            quote(parts.path or "/", safe="/-_.~"),
            query,
            canonical_headers,
            ";".join(signed),
            out["x-amz-content-sha256"],
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret_key).encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(signed)}, "
        f"Signature={signature}"
    )
    return out


class S3Objects:
    """The few S3 object calls the lock needs (put, get, delete, with conditions), over httpx."""

    def __init__(self, location: IndexLocation, *, timeout_s: float = 10.0) -> None:
        parts = urlsplit(location.uri)
        self.bucket = parts.hostname or ""
        self.prefix = parts.path.strip("/")
        self.region = location.region
        endpoint = location.endpoint
        virtual = location.storage_options.get("virtual_hosted_style_request", "").lower() == "true"
        if endpoint is None:
            self.base = f"https://{self.bucket}.s3.{self.region}.amazonaws.com"
        elif virtual:
            split = urlsplit(endpoint)
            self.base = f"{split.scheme}://{self.bucket}.{split.netloc}"
        else:
            self.base = f"{endpoint.rstrip('/')}/{self.bucket}"
        self.timeout_s = timeout_s

    def key(self, name: str) -> str:
        """The object key of ``name`` under the index prefix."""
        return f"{self.prefix}/{name}" if self.prefix else name

    async def request(
        self, method: str, name: str, *, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """One signed request on the object ``name`` (under the prefix)."""
        access_key = os.environ.get("AWS_ACCESS_KEY_ID")
        secret_key = os.environ.get("AWS_SECRET_ACCESS_KEY")
        if not access_key or not secret_key:
            raise ConfigError(
                "the document index is on S3 but AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not set "
                "in the environment (the writer lock and LanceDB read them there)"
            )
        url = f"{self.base}/{quote(self.key(name), safe='/-_.~')}"
        signed = sign_v4(
            method,
            url,
            dict(headers or {}),
            body,
            region=self.region,
            access_key=access_key,
            secret_key=secret_key,
            session_token=os.environ.get("AWS_SESSION_TOKEN"),
        )
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                return await client.request(method, url, content=body, headers=signed)
        except httpx.HTTPError as exc:
            where = redact_url(self.base, bare=True)
            raise ProviderUnavailable(
                f"the object store at {where} did not answer: {type(exc).__name__}: {exc}",
                provider="document-index",
            ) from exc


class ObjectStoreLock:
    """The exclusive writer lock of one collection on S3, with a renewed lease (see the module)."""

    def __init__(self, location: IndexLocation, collection: str, *, lease_s: float = 60.0) -> None:
        self.collection = collection
        self.name = f"{collection}{LOCK_SUFFIX}"
        self.lease_s = lease_s
        self.objects = S3Objects(location)
        self.owner = uuid.uuid4().hex
        self.etag: str | None = None

    def _body(self) -> bytes:
        now = time.time()
        record = {
            "owner": self.owner,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "renewed_at": now,
            "expires_at": now + self.lease_s,
        }
        return json.dumps(record).encode()

    async def acquire(self) -> None:
        """Take the lock now, or raise :class:`CollectionBusy` naming the holder."""
        for _ in range(_ATTEMPTS):
            response = await self.objects.request(
                "PUT", self.name, body=self._body(), headers={"If-None-Match": "*"}
            )
            if response.status_code == 200:
                self.etag = response.headers.get("etag")
                return
            if response.status_code not in (409, 412):
                raise self._failure("take", response)
            current = await self.objects.request("GET", self.name)
            if current.status_code == 404:
                continue  # released meanwhile: try again
            if current.status_code != 200:
                raise self._failure("read", current)
            holder = _holder(current.content)
            expires = float(holder.get("expires_at", 0) or 0)
            if expires > time.time():
                raise CollectionBusy(
                    f"collection {self.collection!r} is being written by another process "
                    f"({_who(holder)}; lease until {_stamp(expires)}); only one writer per collection "
                    "is allowed (two would store chunks twice). Wait for it to finish, then run again",
                    provider="document-index",
                )
            # The holder's lease ran out (it crashed): remove exactly that lock, then race for it.
            etag = current.headers.get("etag", "")
            gone = await self.objects.request("DELETE", self.name, headers={"If-Match": etag} if etag else {})
            if gone.status_code not in (200, 204, 404, 412):
                raise self._failure("take over the expired", gone)
        raise CollectionBusy(
            f"collection {self.collection!r}: the writer lock changed hands {_ATTEMPTS} times while "
            "this process tried to take it; another writer is starting. Run again",
            provider="document-index",
        )

    async def renew(self) -> None:
        """Extend the lease; :class:`CollectionBusy` when the lock is no longer this process's."""
        if self.etag is None:
            raise CollectionBusy(
                f"collection {self.collection!r}: the writer lock is not held", provider="document-index"
            )
        response = await self.objects.request(
            "PUT", self.name, body=self._body(), headers={"If-Match": self.etag}
        )
        if response.status_code == 200:
            self.etag = response.headers.get("etag")
            return
        if response.status_code in (404, 409, 412):
            self.etag = None
            raise CollectionBusy(
                f"collection {self.collection!r}: this writer lost its lock (its lease of {self.lease_s:g} s "
                "ran out and another writer took it); stopped before writing more. Run again",
                provider="document-index",
            )
        raise self._failure("renew", response)

    async def release(self) -> None:
        """Remove the lock object if it is still this process's (never another writer's)."""
        if self.etag is None:
            return
        etag, self.etag = self.etag, None
        try:
            await self.objects.request("DELETE", self.name, headers={"If-Match": etag})
        except ProviderUnavailable:
            pass  # the lease runs out on its own

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Hold the lock for the body, renewing the lease; the body is cancelled if the lock is lost."""
        await self.acquire()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._keep)
                try:
                    yield
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as exc:  # one failure (the body's, or a lost lock): raised as itself
            if len(exc.exceptions) == 1:
                raise exc.exceptions[0] from None
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self.release()

    async def _keep(self) -> None:
        """Renew every third of the lease; an unanswered renewal is retried until the lease is near its end."""
        renewed = time.monotonic()
        while True:
            await anyio.sleep(self.lease_s / 3 if time.monotonic() - renewed < self.lease_s / 3 else 1.0)
            try:
                await self.renew()
            except ProviderUnavailable as exc:
                if isinstance(exc, CollectionBusy) or time.monotonic() - renewed > self.lease_s * 0.8:
                    raise
                continue  # the store did not answer this time: try again shortly
            renewed = time.monotonic()

    def _failure(self, what: str, response: httpx.Response) -> ProviderUnavailable:
        where = redact_url(self.objects.base, bare=True)
        return ProviderUnavailable(
            f"could not {what} the writer lock of collection {self.collection!r} at "
            f"{where}/{self.objects.key(self.name)}: HTTP {response.status_code} "
            f"{response.text[:200]}",
            provider="document-index",
        )


def _holder(content: bytes) -> dict[str, Any]:
    try:
        record = json.loads(content)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _who(holder: Mapping[str, Any]) -> str:
    return f"host {holder.get('host', '?')}, pid {holder.get('pid', '?')}"


def _stamp(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%H:%M:%S UTC")
