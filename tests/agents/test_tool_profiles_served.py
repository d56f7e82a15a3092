"""Tool profiles where they are chosen: ``simone mcp --tools``, ``[mcp] tools``, and per token on ``simone serve``.

Real servers started by the tests: ``simone mcp`` over stdio and ``simone serve`` over HTTP on a loopback
port, reached with the official MCP client; tokens made with ``simone token create --tools``; the
token stores (file and PostgreSQL) keep each token's profile.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest
from simone.agents.mcp import MEMORY_TOOL
from simone.agents.mcp.testing import http_mcp_client, result_text, stdio_mcp_client
from simone.agents.serve import FileTokenStore, PostgresTokenStore, TokenRecord
from simone.runtime import InvalidRequest

CORE = {"retrieve_context", "retrieve_memory", "delegate_research", MEMORY_TOOL}
START_TIMEOUT_S = 240.0

pytestmark = pytest.mark.timeout(600)


def _names(listed: object) -> set[str]:
    return {tool.name for tool in listed.tools}  # type: ignore[attr-defined]


def test_simone_mcp_lists_the_flags_profile_else_the_settings(isolated_env: Path) -> None:
    data = isolated_env / "data"
    errlog = isolated_env / "mcp.log"
    (isolated_env / "simone.toml").write_text('[mcp]\ntools = "retrieval"\n')

    async def main() -> dict[str, set[str]]:
        seen: dict[str, set[str]] = {}
        async with stdio_mcp_client(data, actor="alice", cwd=isolated_env, errlog=errlog) as client:
            seen["setting"] = _names(await client.list_tools())
            refused = await client.call_tool("memory", {"action": "list", "kind": "note"})
            assert refused.is_error and "'retrieval' tool profile" in result_text(refused)
        async with stdio_mcp_client(
            data, actor="alice", args=["--tools", "full"], cwd=isolated_env, errlog=errlog
        ) as client:
            seen["flag"] = _names(await client.list_tools())
            called = await client.call_tool("create_note", {"title": "Listed", "body": "under full"})
            assert not called.is_error and "deprecated" not in result_text(called)
        (isolated_env / "simone.toml").unlink()
        async with stdio_mcp_client(data, actor="alice", cwd=isolated_env, errlog=errlog) as client:
            seen["default"] = _names(await client.list_tools())
            old = await client.call_tool("list_notes", {})
            assert not old.is_error and "Listed" in result_text(old)
            assert "deprecated: list_notes is an old tool name" in result_text(old)
        return seen

    seen = anyio.run(main)
    assert seen["setting"] == {"retrieve_context", "retrieve_memory"}
    assert {"create_note", "list_todos", MEMORY_TOOL, "retrieve_context"} <= seen["flag"]
    assert len(seen["flag"]) > 30
    assert seen["default"] == CORE


def test_an_unknown_profile_stops_simone_mcp_with_the_list(isolated_env: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env["SIMONE_MCP__TOOLS"] = "everything"
    done = subprocess.run(
        [sys.executable, "-m", "simone.agents.cli", "--data-dir", str(isolated_env / "d"), "mcp"],
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "no tool profile 'everything'" in done.stderr and "core, retrieval, memory, full" in done.stderr
    flag = subprocess.run(
        [sys.executable, "-m", "simone.agents.cli", "mcp", "--tools", "everything"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert flag.returncode == 2 and "invalid choice: 'everything'" in flag.stderr


def test_token_records_keep_their_profile_in_the_file(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    token, record = store.create("alice", tools="full")
    plain, _ = store.create("bob")
    assert FileTokenStore(store.path).verify(token).tools == "full"  # type: ignore[union-attr]
    assert FileTokenStore(store.path).verify(plain).tools is None  # type: ignore[union-attr]
    assert record.public()["tools"] == "full"
    with pytest.raises(InvalidRequest, match="core, retrieval, memory, full"):
        store.create("carol", tools="everything")
    old = {"id": "0123abcd", "hash": "0" * 64, "actor": "dan", "created": 1.0}  # a token file before profiles
    assert TokenRecord.from_json(old).grant.tools is None


def test_token_records_keep_their_profile_in_postgres_and_old_tables_gain_the_column(
    postgres_url: str,
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS simone_serve_tokens")
        db.execute(  # the table as simone 0.1.0 created it
            "CREATE TABLE simone_serve_tokens (id text PRIMARY KEY, hash text NOT NULL, actor text NOT NULL, "
            "projects text[] NOT NULL DEFAULT '{}', client text, role text NOT NULL, "
            "created double precision NOT NULL, expires double precision, revoked double precision)"
        )
        db.execute(
            "INSERT INTO simone_serve_tokens (id, hash, actor, role, created) "
            "VALUES ('0123abcd', %s, 'old', 'orchestrator', 1)",
            ("0" * 64,),
        )
    store = PostgresTokenStore(postgres_url, refresh_s=0)
    try:
        token, _ = store.create("alice", tools="memory")
        by_actor = {r.grant.actor: r.grant.tools for r in store.records()}
        assert by_actor == {"old": None, "alice": "memory"}
        assert store.verify(token).tools == "memory"  # type: ignore[union-attr]
    finally:
        store.close()


# -- simone serve: a profile per token ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    tokens: dict[str, str]
    listed: str


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simone.agents.cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``simone serve`` (one worker, SQLite memory) whose tokens carry different tool profiles."""
    root = tmp_path_factory.mktemp("profiles")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env.update(SIMONE_DATA_DIR=str(root / "data"), SIMONE_MCP__TOOLS="memory")  # the server's default
    tokens = {}
    for name, extra in (("full", ["--tools", "full"]), ("core", ["--tools", "core"]), ("plain", [])):
        made = _cli(env, "token", "create", "--actor", "alice", *extra)
        assert made.returncode == 0, made.stderr
        tokens[name] = made.stdout.strip()
    listed = _cli(env, "token", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    port = _free_port()
    log = root / "serve.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "simone.agents.cli", "serve", "--port", str(port)],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"simone serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"simone serve did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield Served(f"{base}/mcp", tokens, listed.stdout)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_each_token_lists_its_own_profile(served: Served) -> None:
    rows = {json.loads(line)["id"]: json.loads(line) for line in served.listed.splitlines()}
    assert sorted(str(row["tools"]) for row in rows.values()) == ["None", "core", "full"]

    async def main() -> dict[str, set[str]]:
        seen = {}
        for name, token in served.tokens.items():
            async with http_mcp_client(served.url, token) as client:
                seen[name] = _names(await client.list_tools())
        return seen

    seen = anyio.run(main)
    assert seen["core"] == CORE
    assert seen["plain"] == {MEMORY_TOOL, "retrieve_memory"}  # [mcp] tools, the server's default
    assert {"create_note", "delete_memory", MEMORY_TOOL, "delegate_research"} <= seen["full"]
    assert "web_research" not in seen["full"]  # a profile never widens the role


def test_old_names_and_the_memory_tool_over_http(served: Served) -> None:
    async def main() -> None:
        async with http_mcp_client(served.url, served.tokens["core"]) as core:
            made = await core.call_tool(
                "memory",
                {
                    "action": "create",
                    "kind": "fact",
                    "subject": "alice",
                    "predicate": "prefers",
                    "object": "tea",
                },
            )
            assert not made.is_error, result_text(made)
            assert result_text(made).startswith("memory create fact: 1 record")
            old = await core.call_tool("search_facts", {"query": "tea"})
            assert not old.is_error and "prefers" in result_text(old)
            assert "deprecated: search_facts is an old tool name" in result_text(old)
            assert old.meta is not None and old.meta["simone/deprecated"]["tool"] == "search_facts"
        async with http_mcp_client(served.url, served.tokens["full"]) as full:
            listed = await full.call_tool("list_facts", {})
            assert not listed.is_error and "tea" in result_text(listed)
            assert "deprecated" not in result_text(listed)
        async with http_mcp_client(served.url, served.tokens["plain"]) as plain:
            refused = await plain.call_tool("retrieve_context", {"query": "tea"})
            assert refused.is_error and "'memory' tool profile" in result_text(refused)

    anyio.run(main)
