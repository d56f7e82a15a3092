"""The token stores under concurrent writers (real processes), their safety checks and their configuration.

Both stores — the token file and the PostgreSQL table — run the same attack: two processes, each
creating tokens and revoking some of them, interleaved, started at the same moment. Afterwards every
token a process was given must still work and every token it revoked must be refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from simone.agents.cli import main
from simone.agents.serve import (
    FileTokenStore,
    PostgresTokenStore,
    TokenStore,
    UnsafeTokenFile,
    open_token_store,
    tokens_path,
)
from simone.runtime import (
    ConfigError,
    MemorySettings,
    NotFound,
    ProviderUnavailable,
    Settings,
    load_settings,
)
from simone.runtime._config import ServeSettings

ROUNDS = 20
"""Rounds per process: each creates a token to keep, creates one more and revokes it."""

_WORKER = """
import json, sys
kind, where, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "file":
    from simone.agents.serve import FileTokenStore
    store = FileTokenStore(where)
else:
    from simone.agents.serve import PostgresTokenStore
    store = PostgresTokenStore(where)
    store.records()  # connected before the start, like the file store's import
print("ready", flush=True)
sys.stdin.readline()
kept, revoked = [], []
for n in range(rounds):
    kept.append(store.create(f"keep{n}", projects=["p"])[0])
    token, record = store.create(f"drop{n}")
    store.revoke(record.grant.token_id)
    revoked.append(token)
print(json.dumps({"kept": kept, "revoked": revoked}), flush=True)
"""


def _race(kind: str, where: str, processes: int = 2) -> tuple[list[str], list[str]]:
    """Run ``processes`` workers against one store, released at once; their kept and revoked tokens."""
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, kind, where, str(ROUNDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready", (
                worker.stderr.read() if worker.stderr else ""
            )
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        kept: list[str] = []
        revoked: list[str] = []
        for worker in workers:
            out, err = worker.communicate(timeout=300)
            assert worker.returncode == 0, err
            result = json.loads(out.strip().splitlines()[-1])
            kept += result["kept"]
            revoked += result["revoked"]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    return kept, revoked


def _nothing_lost(store: TokenStore, kept: list[str], revoked: list[str], processes: int = 2) -> None:
    assert len(kept) == len(revoked) == processes * ROUNDS
    assert len(store.records()) == 2 * processes * ROUNDS, "a created token's record was lost"
    lost = [token for token in kept if store.verify(token) is None]
    assert lost == [], f"{len(lost)} created token(s) no longer verify"
    undone = [token for token in revoked if store.verify(token) is not None]
    assert undone == [], f"{len(undone)} revoked token(s) still verify"


def test_concurrent_creates_and_revokes_lose_nothing_in_the_token_file(tmp_path: Path) -> None:
    path = tmp_path / "serve-tokens.json"
    kept, revoked = _race("file", str(path))
    _nothing_lost(FileTokenStore(path), kept, revoked)
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tokens-")] == []  # no scratch left


def test_concurrent_creates_and_revokes_lose_nothing_in_postgres(postgres_url: str) -> None:
    kept, revoked = _race("postgres", postgres_url)
    store = PostgresTokenStore(postgres_url)
    try:
        _nothing_lost(store, kept, revoked)
    finally:
        store.close()


def test_a_chmod_of_the_token_file_is_caught_at_the_next_verify(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "serve-tokens.json")
    token, _ = store.create("alice", projects=["acme"])
    past = time.time_ns() - 60 * 10**9
    os.utime(store.path, ns=(past, past))  # an old file: the server answers from its cache
    server = FileTokenStore(store.path)
    assert server.verify(token) is not None and server.verify(token) is not None
    mtime = store.path.stat().st_mtime_ns
    store.path.chmod(0o644)
    assert store.path.stat().st_mtime_ns == mtime  # a chmod leaves the modification time alone
    with pytest.raises(UnsafeTokenFile, match="chmod 600") as caught:
        server.verify(token)
    assert isinstance(caught.value, ConfigError) and caught.value.path == store.path
    with pytest.raises(UnsafeTokenFile):
        server.verify("smn_00000000_" + "A" * 43)  # every call, not only a known token's
    store.path.chmod(0o600)
    assert server.verify(token) is not None
    store.path.chmod(0o620)  # group-writable is as bad: anyone in the group could add a token
    with pytest.raises(UnsafeTokenFile, match="620"):
        server.verify(token)


def test_a_token_file_of_another_owner_is_refused(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "serve-tokens.json")
    token, record = store.create("alice")
    other = FileTokenStore(store.path, uid=store.path.stat().st_uid + 1)  # as if served by another user
    with pytest.raises(UnsafeTokenFile, match="chown"):
        other.verify(token)
    with pytest.raises(UnsafeTokenFile):
        other.revoke(record.grant.token_id)
    assert store.verify(token) is not None


def test_a_revocation_reaches_every_postgres_reader(postgres_url: str) -> None:
    writer = PostgresTokenStore(postgres_url, refresh_s=3600)
    reader = PostgresTokenStore(postgres_url, refresh_s=0)
    try:
        token, record = writer.create("bob", projects=["acme", "beta"], client="ide", role="researcher")
        grant = reader.verify(token)
        assert grant is not None and (grant.projects, grant.client, grant.role) == (
            ("acme", "beta"),
            "ide",
            "researcher",
        )
        assert writer.verify(token) is not None  # cached now, for an hour
        first = writer.revoke(record.grant.token_id, now=1_900_000_000.0)
        assert writer.revoke(record.grant.token_id).revoked == first.revoked == 1_900_000_000.0
        assert writer.verify(token) is None  # the revoking process reads again at once
        assert reader.verify(token) is None
        assert reader.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
        (row,) = [r.public() for r in reader.records()]
        assert row["active"] is False and "hash" not in row
        with pytest.raises(NotFound):
            writer.revoke("ffffffff")
        with pytest.raises(NotFound):
            writer.revoke("not-an-id; DROP TABLE simone_serve_tokens")
    finally:
        writer.close()
        reader.close()


def test_an_unreachable_postgres_store_admits_nobody() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = PostgresTokenStore(f"postgresql://simone:secret@127.0.0.1:{port}/simone", connect_timeout_s=1)
    with pytest.raises(ProviderUnavailable, match="127.0.0.1") as caught:
        store.verify("smn_00000000_" + "A" * 43)
    assert caught.value.provider == "tokens" and "secret" not in str(caught.value)


def test_the_token_store_is_chosen_by_configuration(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    local = Settings(data_dir=tmp_path)
    store = open_token_store(local)
    assert (
        isinstance(store, FileTokenStore)
        and store.path == tokens_path(local) == tmp_path / "serve-tokens.json"
    )
    with pytest.raises(ConfigError, match="memory\\] url"):
        open_token_store(Settings(data_dir=tmp_path, serve=ServeSettings(tokens="postgres")))
    with pytest.raises(ConfigError, match="remove tokens_file"):
        open_token_store(
            Settings(
                data_dir=tmp_path,
                memory=MemorySettings(url=postgres_url),
                serve=ServeSettings(tokens="postgres", tokens_file=tmp_path / "t.json"),
            )
        )
    (tmp_path / "bad.toml").write_text('[serve]\ntokens = "redis"\n')
    with pytest.raises(ConfigError, match="serve.tokens"):
        load_settings(tmp_path / "bad.toml")
    for key in list(os.environ):
        if key.startswith("SIMONE_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMONE_MEMORY__URL", postgres_url)
    monkeypatch.setenv("SIMONE_SERVE__TOKENS", "postgres")
    assert main(["--data-dir", str(tmp_path / "data"), "token", "create", "--actor", "carol"]) == 0
    out = capsys.readouterr()
    token = out.out.strip()
    assert "table simone_serve_tokens" in out.err and token not in out.err
    assert not (tmp_path / "data" / "serve-tokens.json").exists()
    shared = PostgresTokenStore(postgres_url)
    try:
        grant = shared.verify(token)
        assert grant is not None and grant.actor == "carol"
        assert main(["--data-dir", str(tmp_path / "data"), "token", "revoke", grant.token_id]) == 0
        assert shared.records()[0].revoked is not None
        assert shared.verify(token) is None  # records() read the table again
    finally:
        shared.close()
