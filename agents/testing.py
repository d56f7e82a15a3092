"""Test doubles for agents: a scripted chat model. Reuse it instead of writing a new fake per test.

The lower layers have their own faces: :mod:`simone.runtime.testing` (providers, an embedder, a clock)
and :mod:`simone.providers.testing` (those, plus the loopback web, its fixture site, a loopback
embedding server, memory's clock and ids).

Example::

    model = ScriptedChatModel(
        [
            tool_call("retrieve_context", {"query": "deploy"}),
            text_reply("Deploys are blue-green [1]."),
        ]
    )
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from simone.agents._chat import ChatMessage, ChatResponse, ToolCall, ToolSpec, Usage
from simone.runtime import InvalidResponse

ScriptStep = (
    ChatResponse
    | Exception
    | Callable[[Sequence[ChatMessage], Sequence[ToolSpec]], ChatResponse | Awaitable[ChatResponse]]
)


def text_reply(text: str, *, prompt_tokens: int = 10, completion_tokens: int | None = None) -> ChatResponse:
    """An assistant message with ``text`` and no tool call."""
    completion = max(1, len(text) // 4) if completion_tokens is None else completion_tokens
    return ChatResponse(
        message=ChatMessage(role="assistant", content=text),
        usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion),
        finish_reason="stop",
        model="scripted",
    )


def tool_call(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    *,
    call_id: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> ChatResponse:
    """An assistant message calling ``name``; ``arguments`` as a dict, or raw (possibly malformed) text."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ChatResponse(
        message=ChatMessage(
            role="assistant", tool_calls=(ToolCall(id=call_id or f"call_{name}", name=name, arguments=raw),)
        ),
        usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        finish_reason="tool_calls",
        model="scripted",
    )


class ScriptedChatModel:
    """A chat model that plays a script: each step is a response, an exception to raise, or a function.

    Args:
        script: the steps, in order.
        repeat_last: keep replaying the last step once the script runs out (for endless-loop tests);
            otherwise running out raises :class:`InvalidResponse`.
    """

    def __init__(
        self, script: Sequence[ScriptStep], *, repeat_last: bool = False, name: str = "scripted"
    ) -> None:
        self._script = list(script)
        self._repeat_last = repeat_last
        self._name = name
        self.calls: list[tuple[list[ChatMessage], list[ToolSpec]]] = []

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
    ) -> ChatResponse:
        """The next step of the script."""
        index = len(self.calls)
        self.calls.append((list(messages), list(tools)))
        if index >= len(self._script):
            if not self._repeat_last or not self._script:
                raise InvalidResponse(
                    f"the scripted model has only {len(self._script)} step(s)", provider="chat"
                )
            index = len(self._script) - 1
        step = self._script[index]
        if isinstance(step, Exception):
            raise step
        if isinstance(step, ChatResponse):
            return step
        value = step(messages, tools)
        if inspect.isawaitable(value):
            value = await value
        return value


__all__ = ("ScriptStep", "ScriptedChatModel", "text_reply", "tool_call")
