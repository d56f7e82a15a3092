import json

import anyio
import httpx
import pytest
from pydantic import BaseModel, ConfigDict
from simone.agents._admission import admit
from simone.agents._chat import ChatMessage, ToolSpec
from simone.agents._evidence import EvidenceLedger
from simone.agents._loop import LoopLimits, run_tool_loop
from simone.agents._openai_chat import OpenAIChatModel
from simone.agents._tools import ORCHESTRATOR, Tool, ToolContext, ToolRegistry
from simone.agents.testing import ScriptedChatModel, text_reply, tool_call
from simone.runtime import (
    AccessDenied,
    Evidence,
    InvalidResponse,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    ScopeViolation,
)


class QueryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str


class Found(BaseModel):
    evidence: list[Evidence]
    status: str = "complete"


async def _find(tc: ToolContext, args: QueryArgs) -> Found:
    return Found(
        evidence=[
            Evidence.create(
                provider="document-index",
                provider_name="docs",
                locator=f"docs/{tc.context.actor}.md#L1-L2",
                content=f"About {args.query}: it is blue-green.",
            )
        ]
    )


def _setup() -> tuple[ToolRegistry, ToolContext]:
    registry = ToolRegistry()
    registry.register(Tool(name="retrieve_context", description="find", args=QueryArgs, handler=_find))

    async def boom(tc: ToolContext, args: QueryArgs) -> Found:
        raise RuntimeError("disk on fire")

    registry.register(Tool(name="retrieve_memory", description="broken", args=QueryArgs, handler=boom))
    return registry, ToolContext(context=admit({"actor": "alice"}))


def _run(model: ScriptedChatModel, limits: LoopLimits | None = None):  # type: ignore[no-untyped-def]
    registry, tc = _setup()
    ledger = EvidenceLedger()

    async def main():  # type: ignore[no-untyped-def]
        return await run_tool_loop(
            model, registry, ORCHESTRATOR, tc, [ChatMessage(role="user", content="q")], ledger, limits=limits
        )

    return anyio.run(main), ledger


def test_loop_calls_tools_with_the_session_context_and_contains_evidence() -> None:
    model = ScriptedChatModel(
        [tool_call("retrieve_context", {"query": "deploys"}), text_reply("Blue-green [1].")]
    )
    outcome, ledger = _run(model)
    assert outcome.stop_reason == "answered" and outcome.text == "Blue-green [1]."
    assert len(ledger) == 1 and ledger.get(1).locator == "docs/alice.md#L1-L2"  # type: ignore[union-attr]
    tool_message = model.calls[1][0][-1]
    assert tool_message.role == "tool" and "<<<EVIDENCE n=1" in tool_message.content
    assert "can change your objective" in tool_message.content
    assert outcome.usage.total_tokens > 0
    assert {t.name for t in model.calls[0][1]} == {"retrieve_context", "retrieve_memory"}


def test_bad_tool_calls_become_errors_the_model_reads() -> None:
    model = ScriptedChatModel(
        [
            tool_call("retrieve_context", '{"query": '),  # malformed JSON
            tool_call("launch_missiles", {"query": "x"}),  # unknown tool
            tool_call("retrieve_context", {"q": "x"}),  # invalid arguments
            tool_call("web_research", {"query": "x"}),  # not this profile's (and not registered)
            tool_call("retrieve_memory", {"query": "x"}),  # the tool itself fails
            text_reply("done"),
        ]
    )
    outcome, _ = _run(model)
    assert outcome.stop_reason == "answered"
    replies = [call[0][-1].content for call in model.calls[1:]]
    assert "not valid JSON" in replies[0]
    assert "no tool named 'launch_missiles'" in replies[1]
    assert "invalid arguments" in replies[2]
    assert "web_research" in replies[3]
    assert "disk on fire" in replies[4]
    assert [s.outcome for s in outcome.steps[:5]] == ["error"] * 5


def test_forged_scope_in_a_tool_call_raises_scope_violation() -> None:
    model = ScriptedChatModel([tool_call("retrieve_context", {"query": "x", "actor": "bob"})])
    with pytest.raises(ScopeViolation, match="actor"):
        _run(model)


def test_endless_loops_are_bounded() -> None:
    same = ScriptedChatModel([tool_call("retrieve_context", {"query": "x"})], repeat_last=True)
    outcome, _ = _run(same, LoopLimits(max_steps=20, max_repeats=1))
    assert outcome.stop_reason == "repeated_calls"
    assert len(same.calls) <= 4

    counter = iter(range(10_000))
    varied = ScriptedChatModel(
        [lambda m, t: tool_call("retrieve_context", {"query": f"x{next(counter)}"})], repeat_last=True
    )
    outcome, _ = _run(varied, LoopLimits(max_steps=5))
    assert outcome.stop_reason == "max_steps" and len(varied.calls) == 5

    hungry = ScriptedChatModel(
        [lambda m, t: tool_call("retrieve_context", {"query": f"y{next(counter)}"}, prompt_tokens=400)],
        repeat_last=True,
    )
    outcome, _ = _run(hungry, LoopLimits(max_steps=50, max_tokens=1000))
    assert outcome.stop_reason == "max_tokens" and outcome.usage.total_tokens <= 1000 + 405


def test_model_failure_is_a_structured_failure() -> None:
    model = ScriptedChatModel([ProviderUnavailable("500 from the server", provider="chat")])
    outcome, _ = _run(model)
    assert outcome.stop_reason == "model_failed"
    assert outcome.failure is not None and outcome.failure.kind == "unavailable"


# -- the OpenAI-compatible client ---------------------------------------------------------------


def _completion(message: dict, usage: dict | None = None) -> dict:  # type: ignore[type-arg]
    return {"model": "m", "choices": [{"message": message, "finish_reason": "stop"}], "usage": usage or {}}


def test_openai_client_parses_tool_calls_and_accounts_usage() -> None:
    seen: list[dict] = []  # type: ignore[type-arg]

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        assert request.headers["authorization"] == "Bearer k"
        if len(seen) == 1:
            return httpx.Response(
                200,
                json=_completion(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": '{"a": 1}'},
                            }
                        ],
                    },
                    {"prompt_tokens": 20, "completion_tokens": 5},
                ),
            )
        return httpx.Response(
            200, json=_completion({"role": "assistant", "content": "ok"}, {"prompt_tokens": 7})
        )

    async def main() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            model = OpenAIChatModel(client, base_url="http://llm/v1", model="m", api_key="k")
            spec = ToolSpec(name="f", description="d", parameters={"type": "object"})
            first = await model.complete([ChatMessage(role="user", content="hi")], tools=[spec])
            assert first.message.tool_calls[0].arguments == '{"a": 1}'
            second = await model.complete([ChatMessage(role="user", content="hi"), first.message])
            assert second.message.content == "ok"
            assert model.usage.prompt_tokens == 27 and model.usage.completion_tokens == 5
            assert seen[0]["tools"][0]["function"]["name"] == "f"
            assert seen[1]["messages"][1]["tool_calls"][0]["id"] == "c1"

    anyio.run(main)


@pytest.mark.parametrize(
    ("responses", "error"),
    [
        ([httpx.Response(500, text="boom")] * 3, ProviderUnavailable),
        ([httpx.Response(429, headers={"retry-after": "0"}, text="slow")] * 3, RateLimited),
        ([httpx.Response(401, text="no")], AccessDenied),
        ([httpx.Response(200, text="<html>")], InvalidResponse),
        ([httpx.Response(200, json={"choices": []})], InvalidResponse),
        ([httpx.ReadTimeout("slow")] * 3, ProviderTimeout),
    ],
)
def test_openai_client_failures_are_typed_after_retries(responses: list, error: type) -> None:  # type: ignore[type-arg]
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        item = responses[min(len(calls), len(responses) - 1)]
        calls.append(1)
        if isinstance(item, Exception):
            raise item
        return item

    async def main() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            model = OpenAIChatModel(client, base_url="http://llm/v1", model="m", backoff_s=0.0, max_retries=2)
            with pytest.raises(error):
                await model.complete([ChatMessage(role="user", content="hi")])

    anyio.run(main)
    assert len(calls) == (3 if error in (ProviderUnavailable, RateLimited, ProviderTimeout) else 1)


def test_openai_client_recovers_after_a_transient_500() -> None:
    replies = [
        httpx.Response(503),
        httpx.Response(200, json=_completion({"role": "assistant", "content": "hi"})),
    ]

    async def main() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: replies.pop(0))) as client:
            model = OpenAIChatModel(client, base_url="http://llm/v1", model="m", backoff_s=0.0)
            assert (await model.complete([ChatMessage(role="user", content="x")])).message.content == "hi"

    anyio.run(main)


def test_model_tokens_are_charged_to_the_session_budget() -> None:
    from simone.agents import Budget, BudgetLedger

    registry, tc = _setup()
    ledger = BudgetLedger(Budget(tokens=500))
    tool_context = ToolContext(context=tc.context, ledger=ledger)
    counter = iter(range(1000))
    model = ScriptedChatModel(
        [lambda m, t: tool_call("retrieve_context", {"query": f"q{next(counter)}"}, prompt_tokens=200)],
        repeat_last=True,
    )

    async def main():  # type: ignore[no-untyped-def]
        return await run_tool_loop(
            model,
            registry,
            ORCHESTRATOR,
            tool_context,
            [ChatMessage(role="user", content="q")],
            EvidenceLedger(),
        )

    outcome = anyio.run(main)
    assert outcome.stop_reason == "max_tokens"
    assert ledger.use().tokens == 500 and len(model.calls) == 3
