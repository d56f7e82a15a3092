"""Tokens, per-token limits and the serve set-up checks, without a server (real files, real settings)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from simone.agents.serve import (
    FileTokenStore,
    ServeOptions,
    TokenLimits,
    is_loopback,
    parse_expiry,
    tokens_path,
    unshared_stores,
)
from simone.agents.serve._gate import _rpc_method
from simone.runtime import (
    ConfigError,
    IndexSettings,
    InvalidRequest,
    MemorySettings,
    NotFound,
    Settings,
    WebSettings,
)


def test_a_token_is_shown_once_and_only_its_hash_is_stored(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "t" / "tokens.json")
    token, record = store.create("alice", projects=["acme", "beta", "acme"], client="ide", role="researcher")
    assert token.startswith(f"smn_{record.grant.token_id}_")
    text = store.path.read_text()
    assert token not in text and token.split("_", 2)[2] not in text
    assert store.path.stat().st_mode & 0o777 == 0o600
    grant = FileTokenStore(store.path).verify(token)
    assert grant is not None
    assert (grant.actor, grant.projects, grant.client, grant.role) == (
        "alice",
        ("acme", "beta"),
        "ide",
        "researcher",
    )
    assert store.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert store.verify("smn_00000000_" + "A" * 43) is None
    assert store.verify("") is None and store.verify("Bearer " + token) is None


def test_revoked_and_expired_tokens_stop_working(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    now = time.time()
    token, record = store.create("bob", expires=now + 60)
    reader = FileTokenStore(store.path)  # another worker's view of the same file
    assert reader.verify(token) is not None
    assert reader.verify(token, now=now + 61) is None
    store.revoke(record.grant.token_id)
    assert reader.verify(token) is None
    (row,) = [r.public() for r in reader.records()]
    assert row["revoked"] is not None and row["active"] is False and "hash" not in row
    with pytest.raises(NotFound):
        store.revoke("ffffffff")


def test_bad_token_input_and_files_are_refused(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    with pytest.raises(InvalidRequest):
        store.create("  ")
    with pytest.raises(InvalidRequest):
        store.create("carol", projects=["a\nb"])
    with pytest.raises(InvalidRequest):
        store.create("carol", role="admin")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        store.create("carol", expires=time.time() - 1)
    store.create("carol")
    store.path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        FileTokenStore(store.path).records()
    store.path.chmod(0o600)
    store.path.write_text(json.dumps({"tokens": [{"id": "x"}]}))
    with pytest.raises(ConfigError, match="not valid"):
        FileTokenStore(store.path).records()


def test_expiry_accepts_durations_and_dates() -> None:
    now = 1_800_000_000.0
    assert parse_expiry("30d", now=now) == now + 30 * 86_400
    assert parse_expiry("90m", now=now) == now + 5400
    assert parse_expiry("2027-03-01", now=now) > now
    for bad in ("soon", "-1d", "2001-01-01"):
        with pytest.raises(InvalidRequest):
            parse_expiry(bad, now=now)


def test_limits_count_calls_at_once_and_per_minute() -> None:
    clock = {"t": 1000.0}
    limits = TokenLimits(concurrent=2, per_minute=3, clock=lambda: clock["t"])
    assert limits.acquire("a") is None and limits.acquire("a") is None
    assert limits.acquire("a") == 1.0  # two in flight
    assert limits.acquire("b") is None  # another token is not affected
    limits.release("a")
    clock["t"] += 10
    assert limits.acquire("a") is None  # third call in the minute
    limits.release("a")
    limits.release("a")
    wait = limits.acquire("a")
    assert wait is not None and 49.0 <= wait <= 50.0  # the first call leaves the window at t+60
    clock["t"] += wait
    assert limits.acquire("a") is None


def test_the_gate_reads_the_jsonrpc_method_and_tool() -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "retrieve_context"}}
    assert _rpc_method(json.dumps(call).encode()) == ("tools/call", "retrieve_context")
    assert _rpc_method(json.dumps([{"method": "tools/list"}, call]).encode()) == (
        "tools/call",
        "retrieve_context",
    )
    assert _rpc_method(b'{"method": "tools/list"}') == ("tools/list", None)
    assert _rpc_method(b"not json") == (None, None)


def test_workers_need_shared_stores_and_loopback_is_recognised(tmp_path: Path) -> None:
    local = Settings(data_dir=tmp_path)
    problems = unshared_stores(local)
    assert len(problems) == 3 and "PostgreSQL" in problems[0] and "Redis" in problems[1]
    shared = Settings(
        data_dir=tmp_path,
        memory=MemorySettings(url="postgresql://db.internal/simone"),
        web=WebSettings(cache_url="redis://cache.internal:6379/0"),
        index=IndexSettings(uri="s3://bucket/index"),
    )
    assert unshared_stores(shared) == []
    assert tokens_path(local) == tmp_path / "serve-tokens.json"
    assert [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0", "10.1.2.3")] == [
        True,
        True,
        True,
        True,
        False,
        False,
    ]
    options = ServeOptions(config=None, data_dir=str(tmp_path), open_actor="ann", open_projects=("p",))
    assert ServeOptions.from_env(options.to_env()) == options
    grant = options.open_grant()
    assert grant is not None and grant.actor == "ann" and grant.projects == ("p",)
