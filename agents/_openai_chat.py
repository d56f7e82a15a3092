"""An OpenAI-compatible chat client over httpx (OpenAI, Ollama, vLLM, llama.cpp server…).

It speaks ``POST {base_url}/chat/completions`` with ``tools``; retries timeouts, connection errors,
429 and 5xx under the shared :class:`~simone.runtime.RetryPolicy` (exponential backoff, the server's
Retry-After as a floor, no wait longer than ``max_retry_wait_s`` or past the caller's deadline);
translates every failure into the :class:`~simone.runtime.ProviderError` family in one place; and
accounts the usage of every call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
from simone.agents._chat import ChatMessage, ChatResponse, ToolCall, ToolSpec, Usage
from simone.runtime import (
    AccessDenied,
    ConfigError,
    InvalidResponse,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    RetryPolicy,
    loads_untrusted,
    retry_after_from_headers,
)

PROVIDER = "chat"


class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        client: the ``httpx.AsyncClient`` to use (inject a ``MockTransport`` or a loopback server in
            tests); the caller owns and closes it.
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://localhost:11434/v1``.
        model: the model name the server knows.
        api_key: sent as a bearer token when given (never logged, never written anywhere).
        timeout_s: per-attempt timeout.
        max_retries: further attempts after a retryable failure.
        backoff_s: the first backoff; doubled after each retry.
        max_retry_wait_s: the longest pause honoured before a retry. A server's Retry-After is never
            shortened: when it asks for longer (or the caller's cancel scope ends sooner), the call
            stops at once with :class:`~simone.runtime.RateLimited` carrying ``retry_after_s``.
        temperature: sampling temperature (0 keeps answers reproducible where the server allows).
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_retry_wait_s: float = 30.0,
        temperature: float = 0.0,
    ) -> None:
        if not base_url:
            raise ConfigError(
                "the chat model needs a base URL (agents.chat_base_url / SIMONE_AGENTS__CHAT_BASE_URL)"
            )
        if not model:
            raise ConfigError(
                "the chat model needs a model name (agents.chat_model / SIMONE_AGENTS__CHAT_MODEL)"
            )
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or max_retry_wait_s < 0:
            raise ConfigError("timeout_s must be > 0, max_retries, backoff_s and max_retry_wait_s >= 0")
        self._client = client
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_retry_wait_s = max_retry_wait_s
        self.temperature = temperature
        self.usage = Usage()
        self.calls = 0

    @property
    def name(self) -> str:
        """The model name."""
        return self._model

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
    ) -> ChatResponse:
        """One completion, retried on transient failures.

        Raises:
            ProviderTimeout, ProviderUnavailable, RateLimited: after the last retry, or at once when
                the server's Retry-After is longer than ``max_retry_wait_s`` or the time left.
            AccessDenied: 401/403 (a wrong key is not retried).
            InvalidResponse: a body that is not a chat completion.
        """
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [_wire_message(m) for m in messages],
            "temperature": self.temperature,
        }
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        policy = RetryPolicy(
            max_attempts=self.max_retries + 1,
            backoff_s=self.backoff_s,
            max_backoff_s=max(self.backoff_s, self.max_retry_wait_s),
            max_wait_s=self.max_retry_wait_s,
        )
        response = await policy.run(lambda _attempt: self._post(body, headers))
        self.calls += 1
        self.usage = self.usage + response.usage
        return response

    async def _post(self, body: dict[str, Any], headers: dict[str, str]) -> ChatResponse:
        try:
            reply = await self._client.post(self._url, json=body, headers=headers, timeout=self.timeout_s)
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                f"the chat endpoint {self._url} did not answer within {self.timeout_s:g}s", provider=PROVIDER
            ) from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(
                f"cannot reach the chat endpoint {self._url}: {type(exc).__name__}: {exc}; "
                "check agents.chat_base_url and that the server is running",
                provider=PROVIDER,
            ) from exc
        status = reply.status_code
        if status == 429:
            wait = retry_after_from_headers(reply.headers)
            hint = f"; it asks to wait {wait:.1f} s" if wait is not None else ""
            raise RateLimited(
                f"the chat endpoint rate-limited the request (429){hint}: {reply.text[:200]}",
                provider=PROVIDER,
                retry_after_s=wait,
            )
        if status in (401, 403):
            raise AccessDenied(
                f"the chat endpoint refused the credentials ({status}); check SIMONE_AGENTS__CHAT_API_KEY",
                provider=PROVIDER,
            )
        if status >= 500:
            raise ProviderUnavailable(
                f"the chat endpoint failed with {status}: {reply.text[:200]}",
                provider=PROVIDER,
                retry_after_s=retry_after_from_headers(reply.headers) if status == 503 else None,
            )
        if status >= 400:
            raise InvalidResponse(
                f"the chat endpoint refused the request with {status}: {reply.text[:300]}", provider=PROVIDER
            )
        try:
            payload = loads_untrusted(reply.content)
        except ValueError as exc:  # not JSON, not UTF-8, or nested too deep
            raise InvalidResponse(
                f"the chat endpoint answered {reply.headers.get('content-type', 'something')} that is not "
                f"JSON: {reply.text[:120]!r}",
                provider=PROVIDER,
            ) from exc
        return _parse_completion(payload)


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    if message.name is not None and message.role == "tool":
        wire["name"] = message.name
    return wire


def _parse_completion(payload: object) -> ChatResponse:
    def bad(why: str) -> InvalidResponse:
        return InvalidResponse(f"the chat endpoint answered a malformed completion: {why}", provider=PROVIDER)

    if not isinstance(payload, dict):
        raise bad(f"a {type(payload).__name__}, not an object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise bad("no choices")
    raw = choices[0].get("message")
    if not isinstance(raw, dict):
        raise bad("the first choice has no message")
    content = raw.get("content") or ""
    if not isinstance(content, str):
        raise bad("message.content is not text")
    calls: list[ToolCall] = []
    for index, item in enumerate(raw.get("tool_calls") or []):
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise bad(f"tool call {index} has no function name")
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str):  # some servers send an object; keep the loop's contract: text
            arguments = json.dumps(arguments)
        call_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else f"call_{index}"
        calls.append(ToolCall(id=call_id, name=function["name"], arguments=arguments))
    usage_raw = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    assert isinstance(usage_raw, dict)
    usage = Usage(
        prompt_tokens=_count(usage_raw.get("prompt_tokens")),
        completion_tokens=_count(usage_raw.get("completion_tokens")),
    )
    finish = choices[0].get("finish_reason")
    return ChatResponse(
        message=ChatMessage(role="assistant", content=content, tool_calls=tuple(calls)),
        usage=usage,
        finish_reason=finish if isinstance(finish, str) else None,
        model=str(payload.get("model") or ""),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
