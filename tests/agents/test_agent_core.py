import json

import anyio
import pytest
from hypothesis import given, settings as hsettings, strategies as st
from pydantic import BaseModel, ConfigDict
from simone.agents._admission import AdmissionRefused, Event, admit, derive
from simone.agents._budget import Budget, BudgetLedger
from simone.agents._tools import ORCHESTRATOR, RESEARCHER, Tool, ToolContext, ToolRegistry, UnknownTool
from simone.runtime import AccessDenied, BudgetExceeded, Caller, InvalidRequest, ScopeViolation


class EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    times: int = 1


class EchoResult(BaseModel):
    text: str
    actor: str


async def _echo(tc: ToolContext, args: EchoArgs) -> EchoResult:
    return EchoResult(text=args.text * args.times, actor=tc.context.actor)


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(Tool(name="retrieve_context", description="echo", args=EchoArgs, handler=_echo))
    registry.register(Tool(name="web_research", description="web", args=EchoArgs, handler=_echo))
    registry.register(
        Tool(name="note_add", description="memory", args=EchoArgs, handler=_echo, group="memory")
    )
    return registry


def test_admission_requires_an_actor_and_refuses_forged_trust_fields() -> None:
    with pytest.raises(AdmissionRefused, match="no actor"):
        admit(Event(text="hi"))
    with pytest.raises(AdmissionRefused, match="no actor"):
        admit({"actor": "   ", "text": "hi"})
    with pytest.raises(ScopeViolation, match="caller"):
        admit({"actor": "alice", "caller": "researcher"})
    with pytest.raises(AdmissionRefused, match="planet"):
        admit({"actor": "alice", "planet": "mars"})
    context = admit(
        {"actor": "alice", "project": "p1", "text": "q"}, timeout_s=5, now=100.0, token_budget=900
    )
    assert context.actor == "alice" and context.project == "p1"
    assert context.caller is Caller.ORCHESTRATOR and context.deadline == 105.0 and context.token_budget == 900
    child = derive(context, caller=Caller.RESEARCHER, token_budget=5000, deadline=200.0)
    assert child.caller is Caller.RESEARCHER and child.scope() == context.scope()
    assert child.token_budget == 900 and child.deadline == 105.0  # never wider than the parent


def test_registry_checks_capability_scope_and_arguments() -> None:
    registry = _registry()
    orchestrator = admit({"actor": "alice"})
    researcher = admit({"actor": "alice"}, caller=Caller.RESEARCHER)

    async def main() -> None:
        result = await registry.call(
            ORCHESTRATOR, orchestrator, "retrieve_context", '{"text": "a", "times": 2}'
        )
        assert result == EchoResult(text="aa", actor="alice")
        assert await registry.call(ORCHESTRATOR, orchestrator, "note_add", {"text": "n"})  # via the group
        with pytest.raises(AccessDenied, match="may not call 'web_research'"):
            await registry.call(ORCHESTRATOR, orchestrator, "web_research", {"text": "x"})
        assert await registry.call(RESEARCHER, researcher, "web_research", {"text": "x"})
        with pytest.raises(AccessDenied):
            await registry.call(RESEARCHER, researcher, "note_add", {"text": "x"})
        with pytest.raises(ScopeViolation, match="must run in a researcher context"):
            await registry.call(RESEARCHER, orchestrator, "web_research", {"text": "x"})
        with pytest.raises(UnknownTool, match="no tool named 'rm_rf'"):
            await registry.call(ORCHESTRATOR, orchestrator, "rm_rf", {})
        with pytest.raises(InvalidRequest, match="not valid JSON"):
            await registry.call(ORCHESTRATOR, orchestrator, "retrieve_context", '{"text": ')
        with pytest.raises(InvalidRequest, match="must be a JSON object"):
            await registry.call(ORCHESTRATOR, orchestrator, "retrieve_context", "[1, 2]")
        with pytest.raises(InvalidRequest, match="times"):
            await registry.call(
                ORCHESTRATOR, orchestrator, "retrieve_context", {"text": "a", "times": "many"}
            )
        for forged in ({"text": "a", "actor": "bob"}, {"text": "a", "filters": {"Project": "other"}}):
            with pytest.raises(ScopeViolation, match="scope"):
                await registry.call(ORCHESTRATOR, orchestrator, "retrieve_context", json.dumps(forged))

    anyio.run(main)
    specs = {s.name for s in registry.specs(ORCHESTRATOR)}
    assert specs == {"retrieve_context", "note_add"}
    assert registry.specs(RESEARCHER)[0].parameters["required"] == ["text"]


def test_budget_ledger_carves_settles_and_never_overspends() -> None:
    now = [0.0]
    ledger = BudgetLedger(
        Budget(tokens=1000, queries=5, fetches=2, wall_s=10, max_children=2), clock=lambda: now[0]
    )
    ledger.charge(tokens=100, queries=1)
    child = ledger.carve(Budget(tokens=800, queries=10, fetches=1, wall_s=30))
    assert (child.tokens, child.queries, child.fetches, child.wall_s) == (800, 4, 1, 10)
    second = ledger.carve(Budget(tokens=800, queries=1, fetches=1, wall_s=1))
    assert second.tokens == 100 and second.fetches == 1  # only what was left after the first
    with pytest.raises(BudgetExceeded, match="already running"):
        ledger.carve(Budget())
    with pytest.raises(BudgetExceeded, match="tokens"):
        ledger.charge(tokens=1)
    child_ledger = BudgetLedger(child, clock=lambda: now[0])
    child_ledger.charge(tokens=300, queries=2)
    with pytest.raises(BudgetExceeded):
        child_ledger.charge(queries=3)
    ledger.settle(child, child_ledger)
    assert ledger.available().tokens == 1000 - 100 - 300 - 100
    assert ledger.use().queries == 3 and ledger.children_active == 1
    now[0] = 11.0
    with pytest.raises(BudgetExceeded, match="wall time"):
        ledger.charge(tokens=1)


_op = st.one_of(
    st.tuples(st.just("charge"), st.integers(0, 400), st.integers(0, 4), st.integers(0, 4)),
    st.tuples(st.just("carve"), st.integers(0, 900), st.integers(0, 8), st.integers(0, 8)),
    st.tuples(st.just("child"), st.integers(0, 900), st.integers(0, 8), st.integers(0, 8)),
    st.tuples(st.just("settle"), st.integers(0, 9), st.integers(0, 0), st.integers(0, 0)),
)


@hsettings(max_examples=200, deadline=None)
@given(st.lists(_op, max_size=40))
def test_no_sequence_of_charges_and_carves_overspends(ops: list[tuple[str, int, int, int]]) -> None:
    total = Budget(tokens=1000, queries=6, fetches=5, wall_s=100, max_children=3)
    parent = BudgetLedger(total, clock=lambda: 0.0)
    children: list[tuple[Budget, BudgetLedger]] = []
    for op, tokens, queries, fetches in ops:
        try:
            if op == "charge":
                parent.charge(tokens=tokens, queries=queries, fetches=fetches)
            elif op == "carve":
                carved = parent.carve(Budget(tokens=tokens, queries=queries, fetches=fetches, wall_s=10))
                children.append((carved, BudgetLedger(carved, clock=lambda: 0.0)))
            elif op == "child" and children:
                carved, ledger = children[-1]
                ledger.charge(tokens=tokens, queries=queries, fetches=fetches)
            elif op == "settle" and children:
                carved, ledger = children.pop(tokens % len(children))
                parent.settle(carved, ledger)
        except BudgetExceeded:
            pass
        for carved, ledger in children:  # a child never spends past what it was given
            use = ledger.use()
            assert (
                use.tokens <= carved.tokens
                and use.queries <= carved.queries
                and use.fetches <= carved.fetches
            )
        use = parent.use()
        assert use.tokens + use.reserved.tokens <= total.tokens
        assert use.queries + use.reserved.queries <= total.queries
        assert use.fetches + use.reserved.fetches <= total.fetches
        assert parent.children_active == len(children) <= total.max_children
