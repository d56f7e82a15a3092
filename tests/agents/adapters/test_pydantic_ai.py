"""The PydanticAI toolset against pydantic-ai itself, driven by its TestModel and FunctionModel (no network)."""

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from simone.agents import Runtime
from simone.agents.adapters import PartialRetrievalWarning, RetrievalFailed
from simone.providers.testing import FailingProvider
from simone.runtime import RetrievalResult, Settings

pytest.importorskip("pydantic_ai")
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from simone.agents.adapters.pydantic_ai import simone_toolset, to_sources

pytestmark = pytest.mark.slow

QUESTION = "How are the rankings of several providers fused?"


def _scripted(*calls: dict[str, Any]) -> FunctionModel:
    """A model that makes each tool call in turn, then answers with what the last tool result said."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(message, ModelResponse) for message in messages)
        if turn < len(calls):
            return ModelResponse(
                parts=[ToolCallPart("retrieve_context", calls[turn], tool_call_id=f"c{turn}")]
            )
        last = messages[-1].parts[-1]
        return ModelResponse(parts=[TextPart(f"seen: {getattr(last, 'content', '')}")])

    return FunctionModel(respond)


def _returns(messages: list[ModelMessage]) -> list[Any]:
    return [
        part
        for message in messages
        for part in message.parts
        if getattr(part, "tool_name", None) == "retrieve_context" and not isinstance(part, ToolCallPart)
    ]


def _run(settings: Settings, body: Callable[[Runtime], Any], **options: Any) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False, **options) as runtime:
            await body(runtime)

    anyio.run(main)


def test_the_toolset_retrieves_for_an_agent(settings: Settings) -> None:
    async def body(runtime: Runtime) -> None:
        toolset = simone_toolset(runtime, {"actor": "alice"}, providers=("documents",))
        agent = Agent(_scripted({"query": QUESTION}), toolsets=[toolset])
        result = await agent.run("How does simone fuse rankings?")
        [returned] = _returns(result.all_messages())
        assert returned.content.startswith("retrieve_context: complete")
        assert "retrieval.md#L" in returned.content and "trust" in returned.content
        assert isinstance(returned.metadata, RetrievalResult)
        sources = to_sources(returned.metadata)
        assert sources[0]["provider"] == "document-index" and sources[0]["fused_score"] > 0
        assert "retrieval.md" in sources[0]["locator"] and sources[0]["content"]
        assert result.output.startswith("seen: retrieve_context: complete")

        # pydantic-ai's own TestModel calls every tool with generated arguments
        test_model = TestModel()
        checked = await Agent(test_model, toolsets=[toolset]).run("anything")
        assert _returns(checked.all_messages())
        params = test_model.last_model_request_parameters
        assert params is not None
        [definition] = params.function_tools
        assert definition.name == "retrieve_context"
        assert set(definition.parameters_json_schema["properties"]) == {"query"}

    _run(settings, body)


def test_scope_comes_from_the_builder_not_the_model(settings: Settings) -> None:
    async def body(runtime: Runtime) -> None:
        toolset = simone_toolset(runtime, runtime.admit({"actor": "alice"}), providers=("memory",))
        model = _scripted({"query": "deploy window", "actor": "bob"}, {"query": "deploy window"})
        result = await Agent(model, toolsets=[toolset]).run("When is the deploy window?")
        refused, answered = _returns(result.all_messages())
        assert "ScopeViolation" in str(refused.content) and "Friday" not in str(refused.content)
        assert "Tuesday" in answered.content and "Friday" not in answered.content

    _run(settings, body)


def test_failures_are_told_to_the_model_or_raised(settings: Settings, wiki_down: FailingProvider) -> None:
    async def body(runtime: Runtime) -> None:
        told = simone_toolset(runtime, {"actor": "alice"}, providers=("wiki",))
        result = await Agent(_scripted({"query": QUESTION}), toolsets=[told]).run("q")
        [failed] = _returns(result.all_messages())
        assert getattr(failed, "outcome", "failed") != "success"
        assert "retrieve_context: failed" in str(failed.content) and "the wiki is down" in str(failed.content)

        raised = simone_toolset(runtime, {"actor": "alice"}, providers=("wiki",), on_failure="raise")
        with pytest.raises(RetrievalFailed, match="the wiki is down"):
            await Agent(_scripted({"query": QUESTION}), toolsets=[raised]).run("q")

        partial = simone_toolset(runtime, {"actor": "alice"}, providers=("documents", "wiki"))
        with pytest.warns(PartialRetrievalWarning):
            result = await Agent(_scripted({"query": QUESTION}), toolsets=[partial]).run("q")
        [returned] = _returns(result.all_messages())
        assert returned.content.startswith("retrieve_context: partial") and "wiki" in returned.content
        assert returned.metadata.evidence

    _run(settings, body, providers=[wiki_down])
