"""docs/hosts.md works as pasted: each host's block, started as written, lists and calls the tools.

Every block marked ``<!-- host-test: HOST TRANSPORT -->`` in docs/hosts.md is read here, exactly:

* a **stdio** entry (Claude Desktop's and Cursor's ``mcpServers``, VS Code's ``servers`` with
  ``"type": "stdio"``, Claude Code's ``claude mcp add … -- COMMAND ARGS``) is started as its command,
  arguments and ``env`` say — ``simone`` found where the install put it — with a temporary data
  directory in ``SIMONE_DATA_DIR``, and the official MCP client lists the tools, reads the server's
  instructions (the actor: the entry's ``SIMONE_ACTOR``, else the login name) and calls
  ``retrieve_context``;
* an **HTTP** entry (``url`` and ``headers``; Claude Code's ``--transport http URL --header``; the
  ``mcp-remote`` bridge's URL and ``--header`` for Claude Desktop) is called with the headers it names,
  the token variables filled in, against the server the page's ``serve`` block starts (its
  ``simone token create`` and ``simone serve``, the port moved to a free one with
  ``SIMONE_SERVE__PORT``).
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from simone.agents.mcp.testing import result_text

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "hosts.md"
DOCUMENTED_URL = "http://127.0.0.1:8765/mcp"
"""The URL every HTTP block names: ``simone serve``'s default address."""

TOKEN_PLACEHOLDER = "smn_…"
"""What a block writes where the user pastes the token ``simone token create`` printed."""

START_TIMEOUT_S = 240.0

pytestmark = pytest.mark.timeout(600)

_MARKED = re.compile(
    r"<!-- host-test: (?P<name>[a-z-]+(?: [a-z]+)?) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```", re.S
)
_VARIABLE = re.compile(r"\$\{(?:env:|input:)?(?P<braced>[\w-]+)\}|\$(?P<bare>\w+)")

STDIO = ("claude-desktop stdio", "vscode stdio", "cursor stdio", "claude-code stdio")
HTTP = ("claude-desktop http", "vscode http", "cursor http", "claude-code http")


@dataclass
class StdioEntry:
    """A host's stdio entry: what it starts."""

    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class HttpEntry:
    """A host's HTTP entry: where it connects and what it sends (variables still unexpanded)."""

    url: str
    headers: dict[str, str]
    variables: dict[str, str] = field(default_factory=dict)


def _blocks() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for match in _MARKED.finditer(DOC.read_text(encoding="utf-8")):
        assert match["name"] not in found, f"two blocks are marked {match['name']!r}"
        found[match["name"]] = (match["lang"], match["body"])
    return found


def _entry(name: str) -> StdioEntry | HttpEntry:
    host, transport = name.split()
    lang, body = _blocks()[name]
    if host == "claude-code":
        assert lang == "bash"
        return _claude_mcp_add(body)
    assert lang == "json"
    config = json.loads(body)
    key, other = ("servers", "mcpServers") if host == "vscode" else ("mcpServers", "servers")
    assert other not in config, f"{host} reads {key!r}, not {other!r}"
    entry = config[key]["simone"]
    if host == "vscode":
        assert entry["type"] == transport  # VS Code wants the type on every server
        for used in re.findall(r"\$\{input:([\w-]+)\}", body):
            declared = [i for i in config.get("inputs", []) if i["id"] == used]
            assert declared and declared[0]["type"] == "promptString" and declared[0]["password"] is True
    env = dict(entry.get("env", {}))
    if "url" in entry:
        assert transport == "http" and "command" not in entry
        return HttpEntry(entry["url"], dict(entry.get("headers", {})))
    args = list(entry.get("args", []))
    if "mcp-remote" in args:  # Claude Desktop's bridge: the URL after it, each --header as Name:Value
        assert transport == "http"
        rest = args[args.index("mcp-remote") + 1 :]
        headers = dict(
            _header(value, ":") for flag, value in zip(rest, rest[1:], strict=False) if flag == "--header"
        )
        return HttpEntry(rest[0], headers, variables=env)
    assert transport == "stdio"
    return StdioEntry(entry["command"], args, env)


def _header(text: str, separator: str) -> tuple[str, str]:
    name, _, value = text.partition(separator)
    return name.strip(), value.strip()


def _claude_mcp_add(body: str) -> StdioEntry | HttpEntry:
    """``claude mcp add [OPTIONS] NAME URL | NAME -- COMMAND ARGS…`` as Claude Code reads it."""
    words = shlex.split(body.strip())
    assert words[:3] == ["claude", "mcp", "add"], words
    words, tail = words[3:], []
    if "--" in words:
        cut = words.index("--")
        words, tail = words[:cut], words[cut + 1 :]
    options: dict[str, list[str]] = {}
    positional = []
    taken = iter(words)
    for word in taken:
        if word.startswith("-"):  # each option of `claude mcp add` used here takes a value
            options.setdefault(word, []).append(next(taken))
        else:
            positional.append(word)
    transport = options.get("--transport", ["stdio"])[-1]
    if transport == "stdio":
        assert positional == ["simone"] and tail, "stdio: the name, then -- and the command"
        env = dict(_header(v, "=") for v in options.get("--env", []) + options.get("-e", []))
        return StdioEntry(tail[0], tail[1:], env)
    assert transport == "http" and len(positional) == 2 and positional[0] == "simone" and not tail
    headers = dict(_header(v, ":") for v in options.get("--header", []) + options.get("-H", []))
    return HttpEntry(positional[1], headers)


def _expand(text: str, variables: dict[str, str]) -> str:
    """``${NAME}``, ``${env:NAME}``, ``${input:NAME}`` and ``$NAME`` replaced (every one must be known)."""
    return _VARIABLE.sub(lambda m: variables[m["braced"] or m["bare"]], text)


def _simone() -> str:
    """The ``simone`` command an install puts beside this interpreter (or on PATH)."""
    beside = Path(sys.executable).with_name("simone")
    found = str(beside) if beside.exists() else shutil.which("simone")
    if found is None:
        pytest.fail("no 'simone' command beside this Python or on PATH: install simone (pip install -e .)")
    return found


def _command(word: str) -> str:
    assert word == "simone", f"the page starts {word!r}; a host entry should start simone"
    return _simone()


def _base_env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env["SIMONE_DATA_DIR"] = str(data)
    return env


NOTE = "Deploys happen on Tuesdays"
QUESTION = "When do deploys happen?"


def _remember(env: dict[str, str], cwd: Path, *scope: str) -> None:
    """``simone memory add note NOTE`` in ``env`` (the actor: ``scope``, else the command's default)."""
    done = subprocess.run(
        [_simone(), "memory", "add", "note", NOTE, *scope], env=env, cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_every_host_has_a_stdio_and_an_http_block() -> None:
    assert set(_blocks()) == {"serve", *STDIO, *HTTP}


def test_the_claude_code_command_lines_parse_as_claude_reads_them() -> None:
    stdio = _claude_mcp_add(
        "claude mcp add --transport stdio --env SIMONE_ACTOR=bo simone -- simone mcp --x y"
    )
    assert stdio == StdioEntry("simone", ["mcp", "--x", "y"], {"SIMONE_ACTOR": "bo"})
    http = _claude_mcp_add('claude mcp add --transport http simone http://h/mcp --header "A: b c"')
    assert http == HttpEntry("http://h/mcp", {"A": "b c"})


@pytest.mark.parametrize("name", STDIO)
def test_a_stdio_entry_starts_simone_and_its_tools_answer(name: str, tmp_path: Path) -> None:
    entry = _entry(name)
    assert isinstance(entry, StdioEntry)
    env = {**_base_env(tmp_path / "data"), **entry.env}
    _remember(env, tmp_path)  # on the command line, as the same default actor
    parameters = StdioServerParameters(
        command=_command(entry.command), args=entry.args, env=env, cwd=str(tmp_path)
    )
    actor = entry.env.get("SIMONE_ACTOR") or getpass.getuser()

    async def main() -> tuple[list[str], str, str]:
        with (tmp_path / "mcp.log").open("a", encoding="utf-8") as log:
            async with Client(stdio_client(parameters, errlog=log)) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                result = await client.call_tool("retrieve_context", {"query": QUESTION})
                assert not result.is_error, result_text(result)
                return names, client.instructions or "", result_text(result)

    names, instructions, text = anyio.run(main)
    assert "retrieve_context" in names
    assert f"(actor {actor!r})" in instructions, instructions  # $SIMONE_ACTOR, else the login name
    assert text.startswith("retrieve_context: ") and NOTE in text and "memory:note/" in text, text
    print(f"{name}: {len(names)} tools; {instructions}; {text.splitlines()[0]}")


@dataclass
class Served:
    """The page's ``simone serve``, running, and the token its ``simone token create`` printed."""

    base: str
    token: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("hosts")
    lang, body = _blocks()["serve"]
    assert lang == "bash"
    lines = [shlex.split(line, comments=True) for line in body.splitlines()]
    create, serve = (words for words in lines if words)
    assert create[:3] == ["simone", "token", "create"] and serve == ["simone", "serve"]
    port = _free_port()
    env = {**_base_env(root / "data"), "SIMONE_SERVE__PORT": str(port)}  # the documented 8765 may be taken
    done = subprocess.run(
        [_command(create[0]), *create[1:]], env=env, cwd=root, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("smn_"), done.stdout
    _remember(env, root, "--actor", create[create.index("--actor") + 1])  # the token's actor's note
    log = root / "serve.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [_command(serve[0]), *serve[1:]], env=env, cwd=root, stdout=handle, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"simone serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"simone serve was not ready within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield Served(base, token)
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.parametrize("name", HTTP)
def test_an_http_entry_reaches_simone_serve_with_its_token(name: str, served: Served) -> None:
    entry = _entry(name)
    assert isinstance(entry, HttpEntry)
    assert entry.url == DOCUMENTED_URL
    variables = {
        key: value.replace(TOKEN_PLACEHOLDER, served.token) for key, value in entry.variables.items()
    }
    variables |= {"SIMONE_TOKEN": served.token, "simone-token": served.token}  # what the user supplies
    headers = {key: _expand(value, variables) for key, value in entry.headers.items()}
    assert headers == {"Authorization": f"Bearer {served.token}"}
    url = entry.url.replace("http://127.0.0.1:8765", served.base)

    async def main() -> tuple[list[str], str]:
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                result = await client.call_tool("retrieve_context", {"query": QUESTION})
                assert not result.is_error, result_text(result)
                return names, result_text(result)

    names, text = anyio.run(main)
    assert "retrieve_context" in names and text.startswith("retrieve_context: ")
    assert NOTE in text and "memory:note/" in text, text  # the token's actor's memory
    print(f"{name}: {len(names)} tools; {text.splitlines()[0]}")


def test_an_http_entry_without_the_token_is_refused(served: Served) -> None:
    response = httpx.post(
        f"{served.base}/mcp",
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        timeout=30,
    )
    assert response.status_code == 401
