"""The chat-model contract: messages, tool calls, usage, and the :class:`ChatModel` protocol.

Every model client (the OpenAI-compatible one, the scripted test model) speaks these types, so the
tool-calling loop never sees a vendor's wire format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolSpec(_Frozen):
    """A tool as a model sees it: name, description and the JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCall(_Frozen):
    """A tool call as the model emitted it. ``arguments`` is the raw JSON text, unparsed and untrusted."""

    id: str
    name: str
    arguments: str = "{}"


Role = Literal["system", "user", "assistant", "tool"]


class ChatMessage(_Frozen):
    """One message of a conversation with a model.

    Attributes:
        role: system, user, assistant or tool.
        content: the text (for a tool message: the rendered tool result).
        tool_calls: the calls an assistant message asks for.
        tool_call_id: which call a tool message answers.
        name: the tool's name on a tool message.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


class Usage(_Frozen):
    """Tokens a model reported for one call (or a sum of calls)."""

    prompt_tokens: Annotated[int, Field(ge=0)] = 0
    completion_tokens: Annotated[int, Field(ge=0)] = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class ChatResponse(_Frozen):
    """What a model answered: one assistant message, its usage, and why it stopped."""

    message: ChatMessage
    usage: Usage = Usage()
    finish_reason: str | None = None
    model: str = ""


@runtime_checkable
class ChatModel(Protocol):
    """A chat model with tool calling.

    ``complete`` returns the next assistant message, or raises a
    :class:`~simone.runtime.ProviderError` (timeout, unavailable, rate limited, invalid response).
    """

    @property
    def name(self) -> str:
        """The model's name, as shown in answers."""
        ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
    ) -> ChatResponse:
        """The next assistant message for ``messages``, possibly with tool calls."""
        ...
