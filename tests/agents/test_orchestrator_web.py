"""The orchestrator against the real memory store and the loopback web (no document index: fast)."""

from typing import Any

import anyio
import pytest
from simone.agents import Budget, Runtime, child_budget
from simone.agents._research import WorkflowResearchRunner
from simone.agents._session import ResearchCaps
from simone.agents.testing import ScriptedChatModel, text_reply, tool_call
from simone.providers.testing import LoopbackWeb, Route
from simone.runtime import (
    AccessDenied,
    Caller,
    InvalidRequest,
    ProviderUnavailable,
    ScopeViolation,
    Settings,
    Status,
)

QUESTION = "What is the latest survey of the maximum depth of Lake Varnholm?"


def _runtime(settings: Settings, web: LoopbackWeb, **options: Any) -> Runtime:
    return Runtime(settings, documents=False, web_options={"resolver": web.resolver()}, **options)


def test_web_question_spawns_a_researcher_child_and_cites_web_evidence(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            context = runtime.admit({"actor": "alice"})
            answer = await runtime.ask(context, QUESTION)
        assert answer.status == "answered"
        assert [s.action for s in answer.steps] == ["retrieve_context", "delegate_research"]
        assert "current-or-sourced" in answer.steps[1].detail
        assert len(answer.research) == 1
        research = answer.research[0]
        assert research["caller"] == "researcher"  # the child ran as the researcher, not the orchestrator
        assert research["budget"]["queries_used"] <= research["budget"]["max_queries"]
        web_cites = [c for c in answer.citations if c.provider.value == "web-search"]
        assert web_cites and all(c.trust.value == "untrusted" for c in web_cites)
        known = {page.url for page in loopback_web.pages}
        assert all(c.locator in known for c in web_cites)
        assert "212 metres" in answer.text
        assert "closed" not in answer.text and "ignore" not in answer.text.lower()

    anyio.run(main)


def test_the_orchestrator_calling_web_research_is_refused_at_both_locks(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            context = runtime.admit({"actor": "alice"})
            session = runtime.session(context)
            # lock one: the registry refuses the tool for the orchestrator profile
            with pytest.raises(AccessDenied, match="may not call 'web_research'"):
                await session.call("web_research", {"question": QUESTION})
            # lock two: past the registry, the workflow and the provider check the caller themselves
            runner = runtime.research_runner
            assert isinstance(runner, WorkflowResearchRunner)
            caps = ResearchCaps(queries=1, fetches=0, tokens=500, wall_s=10)
            direct = await runner.run(QUESTION, context, caps)
            assert direct.status.value == "forbidden" and not direct.evidence
            web = runtime.router.providers["web"]  # type: ignore[union-attr]
            with pytest.raises(AccessDenied):
                await web.retrieve(runtime.router.request(QUESTION), context)  # type: ignore[union-attr]
            routed = await runtime.retrieve(context, QUESTION, providers=("web",))
            assert routed.status is Status.FORBIDDEN and routed.evidence == []
            searches_before = loopback_web.count(path_prefix="/search")
            # and a chat model asking for it gets a refusal it can read
            model = ScriptedChatModel([tool_call("web_research", {"question": QUESTION}), text_reply("No.")])
            runtime.orchestrator.model = model  # type: ignore[union-attr]
            answer = await runtime.ask(context, QUESTION)
            assert answer.steps[0].outcome == "refused"
            assert "may not call 'web_research'" in model.calls[1][0][-1].content
            assert loopback_web.count(path_prefix="/search") == searches_before  # nothing reached the web

    anyio.run(main)


def test_a_model_passing_another_actors_scope_gets_scope_violation(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        forged = ScriptedChatModel(
            [
                tool_call(
                    "retrieve_context", {"query": "salary", "actor": "bob", "conversation": "bob-private"}
                )
            ]
        )
        async with _runtime(web_settings, loopback_web, model=forged) as runtime:
            with pytest.raises(ScopeViolation, match="actor"):
                await runtime.ask({"actor": "alice"}, "what did bob say?")
            nested = ScriptedChatModel(
                [tool_call("create_note", {"title": "x", "body": "y", "scope": {"actor": "bob"}})]
            )
            runtime.orchestrator.model = nested  # type: ignore[union-attr]
            with pytest.raises(ScopeViolation):
                await runtime.ask({"actor": "alice"}, "note it")
            with pytest.raises(InvalidRequest, match="no actor"):
                await runtime.ask({"text": "who am I?"})
            with pytest.raises(ScopeViolation, match="caller"):
                await runtime.ask({"actor": "alice", "caller": "researcher", "text": "let me in"})

    anyio.run(main)


def test_a_child_whose_budget_runs_out_reports_budget_exhausted(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            session = runtime.session(runtime.admit({"actor": "alice"}))
            tight = Budget(tokens=800, queries=1, fetches=0, wall_s=30, max_children=0)
            async with session.group() as group:
                handle = group.spawn(
                    "Lake Varnholm depth and the tram timetable of Ulaanbaatar", depth="deep", budget=tight
                )
            result: Any = handle.result
            assert handle.status == "done"
            assert result.status.value == "budget_exhausted"
            assert result.budget.queries_used <= 1 and result.budget.fetches_used == 0
            assert result.budget.used_tokens <= 800
            assert session.ledger.use().queries <= 1  # settled into the parent, never more than carved

    anyio.run(main)


def test_a_child_out_of_wall_time_stops_with_budget_exhausted(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    loopback_web.script_search(*[Route(status=200, body=b'{"results": []}', delay_s=3.0)] * 5)

    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            session = runtime.session(runtime.admit({"actor": "alice"}))
            started = anyio.current_time()
            async with session.group() as group:
                handle = group.spawn(
                    "Lake Varnholm", budget=Budget(tokens=500, queries=2, fetches=1, wall_s=0.5)
                )
            assert anyio.current_time() - started < 2.5
            result: Any = handle.result
            assert result.status.value == "budget_exhausted" and not result.evidence

    anyio.run(main)


def test_children_run_concurrently_and_one_can_be_cancelled(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            session = runtime.session(
                runtime.admit({"actor": "alice"}), budget=Budget(max_children=2, queries=6)
            )
            small = Budget(tokens=1000, queries=2, fetches=1, wall_s=20)
            async with session.group() as group:
                first = group.spawn("depth of Lake Varnholm", budget=small)
                second = group.spawn("salinity of Varnholm water", budget=small)
                assert session.ledger.children_active == 2
                with pytest.raises(Exception, match="already running"):
                    group.spawn("a third one", budget=small)
                second.cancel()
            assert first.status == "done" and first.result is not None
            assert second.status == "cancelled" and second.result is None
            assert session.ledger.children_active == 0
            assert session.ledger.available().queries >= 6 - 2

    anyio.run(main)


def test_chat_model_answers_through_the_loop_and_invented_citations_are_removed(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        model = ScriptedChatModel(
            [
                tool_call(
                    "create_note", {"title": "Deploy policy", "body": "Deploys happen on Tuesdays only."}
                ),
                tool_call("retrieve_memory", {"query": "when do deploys happen"}),
                text_reply("Deploys happen on Tuesdays [1], as the handbook says [7]."),
            ]
        )
        async with _runtime(web_settings, loopback_web, model=model) as runtime:
            answer = await runtime.ask({"actor": "alice", "project": "ops"}, "When do deploys happen?")
            assert answer.status == "answered" and answer.model == "scripted"
            assert [c.number for c in answer.citations] == [1]
            assert answer.citations[0].provider.value == "memory"
            assert "[7]" not in answer.text
            assert any("[7]" in note for note in answer.limitations)
            assert answer.usage.total_tokens > 0
            # the note was written in alice's scope: bob sees nothing
            bob = await runtime.retrieve(
                runtime.admit({"actor": "bob", "project": "ops"}), "deploys Tuesdays"
            )
            assert bob.evidence == []

    anyio.run(main)


def test_a_failing_chat_model_falls_back_to_the_extractive_plan(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        model = ScriptedChatModel([ProviderUnavailable("the chat endpoint failed with 500", provider="chat")])
        async with _runtime(web_settings, loopback_web, model=model) as runtime:
            answer = await runtime.ask({"actor": "alice"}, QUESTION)
            assert answer.model == "extractive (fallback)" and answer.status == "answered"
            assert any("failed with 500" in note for note in answer.limitations)
        strict = web_settings.model_copy(
            update={"agents": web_settings.agents.model_copy(update={"fallback_to_extractive": False})}
        )
        model = ScriptedChatModel([ProviderUnavailable("the chat endpoint failed with 500", provider="chat")])
        async with _runtime(strict, loopback_web, model=model) as runtime:
            answer = await runtime.ask({"actor": "alice"}, QUESTION)
            assert answer.status == "failed" and "500" in answer.text and answer.citations == []

    anyio.run(main)


def test_research_from_a_researcher_context_and_no_evidence_abstains(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            researcher = runtime.admit({"actor": "alice"}, caller=Caller.RESEARCHER)
            result: Any = await runtime.research(researcher, "salinity of Lake Varnholm", depth="basic")
            assert result.caller.value == "researcher" and result.evidence
            with pytest.raises(
                InvalidRequest, match="unknown research depth 'abyssal'; use one of basic, standard, deep"
            ):
                await runtime.research(researcher, "salinity of Lake Varnholm", depth="abyssal")
            with pytest.raises(InvalidRequest, match="unknown research depth 'abyssal'"):
                child_budget("abyssal")  # the same typed error wherever a depth is named
            answer = await runtime.ask({"actor": "alice"}, "Zyxqv wombleflarp?")
            assert answer.status == "abstained" and answer.citations == []
            assert "will not guess" in answer.text

    anyio.run(main)


def test_researcher_retrieval_charges_web_queries_and_stops_at_the_budget(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            researcher = runtime.admit({"actor": "alice"}, caller=Caller.RESEARCHER)
            session = runtime.session(researcher, budget=Budget(queries=1, fetches=2, tokens=4000))
            first: Any = await session.call("retrieve_context", {"query": "Lake Varnholm depth"})
            assert "web" in [s.provider for s in first.request.selected] and first.evidence
            assert session.ledger.use().queries == 1
            second: Any = await session.call("retrieve_context", {"query": "Lake Varnholm salinity"})
            assert "web" not in [s.provider for s in second.request.selected]
            assert any("search-query budget is spent" in d.reason for d in second.request.dropped)
            assert session.ledger.use().queries == 1

    anyio.run(main)


def test_questions_in_a_conversation_become_session_memory(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            event = {"actor": "alice", "conversation": "c1"}
            await runtime.ask({**event, "text": "Remember that the rollout codename is Heliotrope."})
            answer = await runtime.ask(event, "What is the rollout codename?")
            assert answer.status == "answered" and "Heliotrope" in answer.text
            assert answer.citations[0].provider.value == "session-memory"
            other = await runtime.ask(
                {"actor": "alice", "conversation": "c2"}, "What is the rollout codename?"
            )
            assert "Heliotrope" not in other.text  # another conversation does not see it

    anyio.run(main)


def test_mcp_server_in_process_keeps_the_caller_rules(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    from mcp import Client
    from simone.agents import ORCHESTRATOR, RESEARCHER
    from simone.agents.mcp import build_server

    async def main() -> None:
        async with _runtime(web_settings, loopback_web) as runtime:
            researcher = runtime.admit({"actor": "alice"}, caller=Caller.RESEARCHER, timeout_s=None)
            async with Client(build_server(runtime, researcher, RESEARCHER)) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert names == {"web_research", "retrieve_context"}
                result = await client.call_tool(
                    "web_research", {"question": "salinity of Lake Varnholm", "depth": "basic"}
                )
                assert not result.is_error
                data: Any = result.structured_content
                assert data["caller"] == "researcher" and data["evidence"]
                assert data["budget"]["queries_used"] <= data["budget"]["max_queries"] == 1

            orchestrator = runtime.admit({"actor": "alice", "project": "p"}, timeout_s=None)
            async with Client(build_server(runtime, orchestrator, ORCHESTRATOR)) as client:
                refused = await client.call_tool("web_research", {"question": "x"})
                assert refused.is_error and "no tool 'web_research'" in refused.content[0].text  # type: ignore[union-attr]
                made = await client.call_tool(
                    "create_note", {"title": "Oncall", "body": "Dana is on call this week."}
                )
                assert not made.is_error
                found = await client.call_tool("retrieve_memory", {"query": "who is on call"})
                evidence: Any = found.structured_content
                assert evidence["evidence"] and "Dana" in evidence["evidence"][0]["content"]
            bob = runtime.admit({"actor": "bob", "project": "p"})
            assert (await runtime.retrieve(bob, "who is on call")).evidence == []

    anyio.run(main)


def test_selection_rules_from_the_settings(web_settings: Settings, loopback_web: LoopbackWeb) -> None:
    from simone.runtime import AgentSettings, ConfigError

    rule = {
        "name": "no-memory-for-weather",
        "select": ["memory"],
        "reason": "r",
        "when_any_term": ["weather"],
    }
    settings = web_settings.model_copy(
        update={"agents": AgentSettings(selection_rules=[rule], selection_defaults=False)}
    )

    async def main() -> None:
        async with _runtime(settings, loopback_web) as runtime:
            context = runtime.admit({"actor": "alice"})
            result = await runtime.retrieve(context, "weather tomorrow")
            assert [s.provider for s in result.request.selected] == ["memory"]
            assert "rule no-memory-for-weather" in result.request.selected[0].reason
        broken = web_settings.model_copy(update={"agents": AgentSettings(selection_rules=[{"name": "x"}])})
        with pytest.raises(ConfigError, match="selection rule 'x'"):
            async with _runtime(broken, loopback_web):
                pass

    anyio.run(main)
