"""The OpenAI-compatible client through the runtime, against a chat server on 127.0.0.1."""

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.agents import Runtime
from simone.runtime import AgentSettings, Settings

# (status, JSON body, delay before answering) or the same with extra response headers
Reply = Callable[[dict[str, Any]], tuple[Any, ...]]


@pytest.fixture
def arrivals() -> list[float]:
    """``time.monotonic()`` of each request the chat server received, in order."""
    return []


@pytest.fixture
def chat_server(arrivals: list[float]) -> Iterator[tuple[str, list[dict[str, Any]], list[Reply]]]:
    requests: list[dict[str, Any]] = []
    script: list[Reply] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            arrivals.append(time.monotonic())
            reply = script[min(len(requests), len(script)) - 1](body)
            status, payload, delay = reply[:3]
            extra: dict[str, str] = reply[3] if len(reply) > 3 else {}
            time.sleep(delay)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests, script
    finally:
        server.shutdown()
        server.server_close()


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "loopback-chat",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    }


def _settings(data: Path, url: str, **agents: Any) -> Settings:
    return Settings(
        data_dir=data,
        agents=AgentSettings(chat_base_url=url, chat_model="loopback-chat", chat_max_retries=1, **agents),
    )


def test_the_configured_chat_model_runs_the_tool_loop(isolated_env: Path, chat_server: Any) -> None:
    url, requests, script = chat_server
    script += [
        lambda body: (
            200,
            _completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "create_note",
                                "arguments": json.dumps(
                                    {"title": "Standup", "body": "Standup is at 9:15 every day."}
                                ),
                            },
                        }
                    ],
                }
            ),
            0.0,
        ),
        lambda body: (
            200,
            _completion(
                {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {
                                "name": "retrieve_context",
                                "arguments": json.dumps({"query": "standup time"}),
                            },
                        }
                    ],
                }
            ),
            0.0,
        ),
        lambda body: (200, _completion({"content": "Standup is at 9:15 [1]."}), 0.0),
    ]

    async def main() -> None:
        async with Runtime(_settings(isolated_env / "data", url), documents=False, web=False) as runtime:
            answer = await runtime.ask({"actor": "alice"}, "When is standup?")
        assert answer.status == "answered" and answer.model == "loopback-chat"
        assert answer.citations[0].provider.value == "memory"
        assert answer.usage.prompt_tokens == 300 and answer.usage.completion_tokens == 60
        tools = {t["function"]["name"] for t in requests[0]["tools"]}
        assert "web_research" not in tools and {"retrieve_context", "delegate_research"} <= tools
        last = requests[-1]["messages"][-1]
        assert (
            last["role"] == "tool" and last["tool_call_id"] == "c2" and "<<<EVIDENCE n=1" in last["content"]
        )

    anyio.run(main)


def test_a_chat_endpoint_that_fails_or_times_out_falls_back_or_fails_structurally(
    isolated_env: Path, chat_server: Any
) -> None:
    url, requests, script = chat_server
    script.append(lambda body: (500, {"error": "boom"}, 0.0))

    async def main() -> None:
        settings = _settings(isolated_env / "data", url)
        async with Runtime(settings, documents=False, web=False) as runtime:
            answer = await runtime.ask({"actor": "alice"}, "When is standup?")
        assert answer.model == "extractive (fallback)"
        assert any("500" in note and "answered extractively" in note for note in answer.limitations)
        assert len(requests) == 2  # one retry, then the fallback

        script[0] = lambda body: (200, _completion({"content": "late"}), 2.0)
        strict = _settings(isolated_env / "data", url, fallback_to_extractive=False, chat_timeout_s=0.3)
        async with Runtime(strict, documents=False, web=False) as runtime:
            answer = await runtime.ask({"actor": "alice"}, "When is standup?")
        # the late answer ("late", after 2 s) was not waited for: the client gave up at its timeout
        assert answer.status == "failed" and "timeout" in answer.limitations[-1]

    anyio.run(main)


def test_a_rate_limit_longer_than_the_client_may_wait_falls_back_at_once(
    isolated_env: Path, chat_server: Any
) -> None:
    """Retry-After 120 used to block the answer for 124 s (two waits of min(120, timeout) and retries)."""
    url, requests, script = chat_server
    script.append(lambda body: (429, {"error": "slow down"}, 0.0, {"Retry-After": "120"}))

    async def main() -> None:
        async with Runtime(_settings(isolated_env / "data", url), documents=False, web=False) as runtime:
            with anyio.fail_after(60):  # only ends a hang; a sleep of 120 s would end here
                answer = await runtime.ask({"actor": "alice"}, "When is standup?")
        assert answer.model == "extractive (fallback)"
        assert any("429" in note and "120" in note for note in answer.limitations), answer.limitations
        assert len(requests) == 1, "no retry before the server allows one"

    anyio.run(main)


def test_retry_after_is_a_floor_for_the_chat_retry(
    isolated_env: Path, chat_server: Any, arrivals: list[float]
) -> None:
    """The wait used to be cut to the per-request timeout, so the retry came before the server allowed."""
    url, requests, script = chat_server
    script += [
        lambda body: (429, {"error": "slow down"}, 0.0, {"Retry-After": "1"}),
        lambda body: (200, _completion({"content": "Standup is at 9:15."}), 0.0),
    ]

    async def main() -> None:
        settings = _settings(isolated_env / "data", url, chat_timeout_s=0.4, fallback_to_extractive=False)
        async with Runtime(settings, documents=False, web=False) as runtime:
            with anyio.fail_after(20):
                answer = await runtime.ask({"actor": "alice"}, "When is standup?")
        assert answer.status != "failed" and answer.model == "loopback-chat"

    anyio.run(main)
    assert len(arrivals) == 2
    assert arrivals[1] - arrivals[0] >= 1.0, "the retry came before Retry-After allowed it"
