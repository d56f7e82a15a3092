"""``simone mcp`` answers the handshake while its runtime opens, and a runtime that cannot open is said.

Both tests speak newline-delimited JSON-RPC to a real child process over its stdin and stdout, as an
MCP client does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _receive(proc: subprocess.Popen[bytes], want_id: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == want_id:
            return message


def _handshake(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    _send(proc, INITIALIZE)
    answer = _receive(proc, 1)
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


# A server whose tools open only once the test lets them (a file appears): the handshake cannot wait.
GATED_SERVER = textwrap.dedent(
    """
    import sys, time
    from contextlib import asynccontextmanager
    from pathlib import Path
    import anyio
    import mcp.types as types
    from simone.agents.mcp import ToolHandlers, serve_stdio_opening

    gate = Path(sys.argv[1])

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(name="opened", input_schema={"type": "object"})])

    async def call_tool(ctx, params):
        return types.CallToolResult(content=[types.TextContent(type="text", text="called")])

    @asynccontextmanager
    async def open_tools():
        while not gate.exists():
            await anyio.sleep(0.02)
        yield ToolHandlers(list_tools=list_tools, call_tool=call_tool)

    failure = anyio.run(
        lambda: serve_stdio_opening(open_tools, name="gated", version="1", instructions="i", report=print)
    )
    sys.exit(0 if failure is None else 1)
    """
)


def test_the_handshake_is_answered_before_the_tools_open(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    proc = subprocess.Popen(
        [sys.executable, "-c", GATED_SERVER, str(gate)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        answer = _handshake(proc)
        assert answer["result"]["serverInfo"]["name"] == "gated"
        assert answer["result"]["instructions"] == "i"
        assert not gate.exists()  # answered while the tools were still closed
        _send(proc, LIST)  # waits for the tools …
        time.sleep(0.2)
        gate.touch()  # … which open now
        tools = _receive(proc, 2)["result"]["tools"]
        assert [tool["name"] for tool in tools] == ["opened"]
        _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "opened"}})
        assert _receive(proc, 3)["result"]["content"][0]["text"] == "called"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        code = proc.wait(timeout=30)
    assert code == 0


def test_a_runtime_that_cannot_open_is_reported_and_answered_not_hung(tmp_path: Path) -> None:
    """Memory on an unreachable PostgreSQL: the handshake works, every tool request gets the reason."""
    env = {
        "SIMONE_DATA_DIR": str(tmp_path / "data"),
        "SIMONE_MEMORY__URL": "postgresql://simone@127.0.0.1:9/simone?connect_timeout=2",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "simone.agents.cli", "mcp", "--actor", "alice"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert "result" in _handshake(proc)
        _send(proc, LIST)
        error = _receive(proc, 2)["error"]
        assert error["message"].startswith("simone could not start its tools: ProviderUnavailable")
        _send(
            proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "retrieve_context"}}
        )
        assert "could not start" in _receive(proc, 3)["error"]["message"]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the client leaves: the server ends
        code = proc.wait(timeout=30)
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode()
    assert code == 1
    assert stderr.count("simone: error:") == 1 and "PostgreSQL" in stderr, stderr
