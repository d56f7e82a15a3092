"""The memory and session-memory providers, alone and behind the real router."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from simone.providers.memory import (
    FactCreate,
    MemoryProvider,
    NoteCreate,
    RecordKind,
    SessionMemoryProvider,
    SQLiteMemoryStore,
    TodoCreate,
    TurnRole,
)
from simone.runtime import (
    InvalidRequest,
    MemorySettings,
    Provider,
    ProviderKind,
    RetrievalRequest,
    Router,
    SearchMode,
    Status,
    TrustedContext,
)

pytestmark = pytest.mark.anyio


async def test_memory_provider_evidence(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    note = await store.create(
        alice, NoteCreate(title="Backup policy", body="Backups run nightly at 02:00", tags=["ops"])
    )
    todo = await store.create(alice, TodoCreate(title="Test the backups restore", priority="high"))
    await store.create(alice, NoteCreate(title="Lunch", body="pizza"))
    provider = MemoryProvider(store)
    assert isinstance(provider, Provider) and provider.kind is ProviderKind.MEMORY
    response = await provider.retrieve(RetrievalRequest.create("when do backups run?"), alice)
    assert [e.locator for e in response.evidence] == [f"memory:note/{note.id}", f"memory:todo/{todo.id}"]
    first = response.evidence[0]
    assert first.provider is ProviderKind.MEMORY and first.provider_name == "memory"
    assert first.title == "Backup policy" and "nightly" in first.content and first.trust.value == "trusted"
    assert first.metadata["kind"] == "note" and first.metadata["method"] == "lexical"
    assert first.score > response.evidence[1].score
    assert "[pending, high priority]" in response.evidence[1].content
    assert response.degraded == [] and response.details["lexical_hits"] == 2


async def test_memory_provider_filters_limit_and_modes(
    store: SQLiteMemoryStore, alice: TrustedContext
) -> None:
    for index in range(5):
        await store.create(alice, NoteCreate(title=f"deploy note {index}", tags=["ops"] if index % 2 else []))
    fact = await store.create(alice, FactCreate(subject="deploy", predicate="happens on", object="tuesdays"))
    provider = MemoryProvider(store, max_limit=3)
    assert len((await provider.retrieve(RetrievalRequest.create("deploy", limit=50), alice)).evidence) == 3
    only_facts = await provider.retrieve(RetrievalRequest.create("deploy", filters={"kind": "fact"}), alice)
    assert [e.metadata["record_id"] for e in only_facts.evidence] == [fact.id]
    tagged = await provider.retrieve(
        RetrievalRequest.create("deploy", filters={"tag": "ops", "path": "x"}), alice
    )
    assert len(tagged.evidence) == 2 and tagged.details["ignored_filters"] == ["path"]
    with pytest.raises(InvalidRequest, match="not a memory kind"):
        await provider.retrieve(RetrievalRequest.create("deploy", filters={"kind": "email"}), alice)
    semantic = await provider.retrieve(RetrievalRequest.create("deploy", mode=SearchMode.SEMANTIC), alice)
    assert semantic.degraded and semantic.leg_failures[0].kind == "not_configured" and semantic.evidence
    notes_only = MemoryProvider(store, kinds=(RecordKind.NOTE,))
    assert (
        await notes_only.retrieve(RetrievalRequest.create("deploy", filters={"kind": "fact"}), alice)
    ).evidence == []
    assert {
        e.metadata["kind"]
        for e in (await notes_only.retrieve(RetrievalRequest.create("deploy"), alice)).evidence
    } == {"note"}


async def test_nothing_relevant_is_empty_not_everything(
    store: SQLiteMemoryStore, alice: TrustedContext
) -> None:
    await store.create(alice, NoteCreate(title="Backup policy", body="nightly"))
    response = await MemoryProvider(store).retrieve(RetrievalRequest.create("quantum chromodynamics"), alice)
    assert response.evidence == []


async def test_session_memory_window_summary_and_provider(
    make_any_store: Callable[..., Any], alice: TrustedContext, bob: TrustedContext
) -> None:
    async with make_any_store(settings=MemorySettings(session_window_turns=3)) as store:
        evicted_all = []
        for index, text in enumerate(
            [
                "we talked about the garden",
                "roses need pruning",
                "the weather is dry",
                "water the roses daily",
            ]
        ):
            role = TurnRole.USER if index % 2 == 0 else TurnRole.ASSISTANT
            turn, evicted = await store.append_turn(alice, role, text)
            assert turn.seq == index + 1
            evicted_all.extend(evicted)
        assert [t.content for t in evicted_all] == ["we talked about the garden"]
        recent = await store.recent_turns(alice)
        assert [t.seq for t in recent] == [2, 3, 4]
        assert [t.seq for t in await store.recent_turns(alice, limit=2)] == [3, 4]

        summary = await store.set_summary(alice, "Alice is planning her garden")
        assert summary.through_seq == 4 and (await store.get_summary(alice)) == summary
        replaced = await store.set_summary(alice, "Alice grows roses in her garden", through_seq=1)
        assert replaced.id == summary.id and replaced.through_seq == 1

        provider = SessionMemoryProvider(store)
        assert provider.kind is ProviderKind.SESSION_MEMORY
        response = await provider.retrieve(RetrievalRequest.create("roses"), alice)
        locators = [e.locator for e in response.evidence]
        assert len(locators) == 3 and f"memory:summary/{summary.id}" in locators
        assert all(e.provider is ProviderKind.SESSION_MEMORY for e in response.evidence)
        garden = await provider.retrieve(RetrievalRequest.create("garden"), alice)
        assert [e.title for e in garden.evidence] == ["Conversation summary"], "evicted turns are gone"

        assert (await provider.retrieve(RetrievalRequest.create("roses"), bob)).evidence == []
        other = alice.model_copy(update={"conversation": "c-other"})
        assert (await provider.retrieve(RetrievalRequest.create("roses"), other)).evidence == []
        no_conversation = await provider.retrieve(
            RetrievalRequest.create("roses"), TrustedContext(actor="alice")
        )
        assert no_conversation.evidence == [] and "no conversation" in no_conversation.details["note"]
        with pytest.raises(InvalidRequest, match="needs a conversation"):
            await store.append_turn(TrustedContext(actor="alice"), TurnRole.USER, "hi")
        with pytest.raises(InvalidRequest, match="max_body_chars"):
            await store.append_turn(alice, TurnRole.USER, "x" * 1_000_000)

        assert await store.clear_session(alice) == 4
        assert await store.recent_turns(alice) == [] and await store.get_summary(alice) is None


async def test_router_fuses_memory_and_session(
    store: SQLiteMemoryStore, alice: TrustedContext, bob: TrustedContext
) -> None:
    note = await store.create(
        alice, NoteCreate(title="Release train", body="The release train leaves every second Monday")
    )
    await store.create(bob, NoteCreate(title="Release train (bob)", body="bob's release notes"))
    await store.append_turn(alice, TurnRole.USER, "When is the next release train?")
    router = Router([MemoryProvider(store), SessionMemoryProvider(store)])
    result = await router.retrieve(router.request("release train"), alice)
    assert result.status is Status.COMPLETE
    locators = {e.locator for e in result.evidence}
    assert f"memory:note/{note.id}" in locators
    assert any(loc.startswith("memory:turn/") for loc in locators)
    assert all("bob" not in e.content for e in result.evidence)
    empty = await router.retrieve(router.request("photosynthesis"), alice)
    assert empty.status is Status.NO_RESULTS


async def test_provider_cap_follows_store_settings(
    make_any_store: Callable[..., Any], alice: TrustedContext
) -> None:
    async with make_any_store(settings=MemorySettings(max_query_limit=2)) as store:
        for index in range(4):
            await store.create(alice, NoteCreate(title=f"capped {index}"))
            await store.append_turn(alice, TurnRole.USER, f"capped turn {index}")
        request = RetrievalRequest.create("capped", limit=100)
        assert len((await MemoryProvider(store).retrieve(request, alice)).evidence) == 2
        assert len((await SessionMemoryProvider(store).retrieve(request, alice)).evidence) == 2
