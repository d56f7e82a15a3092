"""Determinism: a log of 1,000 random operations, replayed twice on fresh stores, gives identical state.

Hypothesis draws the seed of the log; the log mixes every operation of every kind for two actors and the
system, including invalid ones (which must fail with a typed error, the same way both times).
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.providers.memory import (
    ChecklistCreate,
    FactCreate,
    FactUpdate,
    ItemAdd,
    ItemMove,
    ItemRemove,
    ItemUpdate,
    ListQuery,
    ManualClock,
    NoteCreate,
    NoteUpdate,
    SearchQuery,
    SequentialIds,
    SQLiteMemoryStore,
    TaskStateCreate,
    TaskStateUpdate,
    TodoCreate,
    TodoUpdate,
    TurnRole,
)
from simone.runtime import (
    Caller,
    MemorySettings,
    SimoneError,
    TrustedContext,
)
from simone.runtime.text import default_analyzer

OPERATIONS = 1000
WORDS = "alpha beta gamma delta release deploy garden roses paris lisbon budget report 営業 時間 casa".split()
CONTEXTS = [
    TrustedContext(actor="alice", conversation="c1", project="p"),
    TrustedContext(actor="alice", conversation="c2"),
    TrustedContext(actor="bob", conversation="c1", project="p"),
    TrustedContext(actor="owner", caller=Caller.SYSTEM),
]


def _text(rng: random.Random, low: int = 1, high: int = 6) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


KIND_OF = {
    "update_note": "note",
    "update_todo": "todo",
    "update_fact": "fact",
    "supersede": "fact",
    "update_task": "task_state",
    "add_item": "checklist",
    "update_item": "checklist",
    "move_item": "checklist",
    "remove_item": "checklist",
    "complete": "any",
    "delete": "any",
    "restore": "any",
    "hard_delete": "any",
}


def make_log(seed: int) -> list[tuple[str, int, dict[str, Any]]]:
    """The operation log: (operation, context index, parameters) drawn from ``seed``."""
    rng = random.Random(seed)
    names = [
        "create_note", "create_todo", "create_checklist", "create_fact", "create_task",
        "update_note", "update_todo", "update_fact", "update_task", "complete", "delete", "restore",
        "hard_delete", "add_item", "update_item", "move_item", "remove_item", "supersede",
        "append_turn", "set_summary", "search", "list", "advance", "purge",
    ]  # fmt: skip
    log = []
    for _ in range(OPERATIONS):
        name = rng.choice(names)
        params = {
            "pick": rng.randrange(1 << 30),
            "item": rng.randrange(1 << 30),
            "other": rng.randrange(1 << 30),
            "text": _text(rng),
            "status": rng.choice(["pending", "in_progress", "completed", "blocked", "cancelled", "skipped"]),
            "position": rng.choice([None, 0, 1, 2, 7]),
            "number": rng.random(),
            "global": rng.random() < 0.1,
            "hours": rng.choice([0, 1, 24, 24 * 40]),
        }
        log.append((name, rng.randrange(len(CONTEXTS)), params))
    return log


def _item_ids(items: Any) -> list[str]:
    out: list[str] = []
    for item in items:
        out.append(item.id)
        out.extend(_item_ids(item.children))
    return out


async def replay(path: Path, log: list[tuple[str, int, dict[str, Any]]]) -> tuple[list[Any], dict[str, Any]]:
    clock = ManualClock(tick=timedelta(milliseconds=3))
    outcomes: list[Any] = []
    ids: list[str] = []
    own: dict[tuple[int, str], list[str]] = {}
    settings_ = MemorySettings(checklist_max_depth=3, max_checklist_items=30, soft_delete_retention_days=1)
    async with SQLiteMemoryStore(
        path, settings=settings_, clock=clock, ids=SequentialIds(), analyzer=default_analyzer()
    ) as store:

        async def run(name: str, index: int, p: dict[str, Any]) -> Any:
            context = CONTEXTS[index]
            kind = KIND_OF.get(name)
            # mostly the caller's own records of the right kind; sometimes anyone's (must be refused)
            pool = own.get((index, kind), []) if p["other"] % 7 and kind else ids
            pick = pool[p["pick"] % len(pool)] if pool else "none"
            global_ = p["global"] and context.caller is Caller.SYSTEM
            if name == "create_note":
                return await store.create(
                    context, NoteCreate(title=p["text"], body=_tail(p)), global_=global_
                )
            if name == "create_todo":
                return await store.create(
                    context, TodoCreate(title=p["text"], priority="high"), global_=global_
                )
            if name == "create_checklist":
                items = [{"text": word, "children": [{"text": p["text"]}]} for word in p["text"].split()[:3]]
                return await store.create(context, ChecklistCreate(title=p["text"], items=items))
            if name == "create_fact":
                return await store.create(
                    context,
                    FactCreate(subject=p["text"], predicate="is", object=_tail(p), confidence=p["number"]),
                )
            if name == "create_task":
                return await store.create(
                    context, TaskStateCreate(name=p["text"], checkpoint={"n": p["other"]})
                )
            if name == "update_note":
                return await store.update(
                    context, NoteUpdate(id=pick, body=p["text"], tags=p["text"].split()[:2])
                )
            if name == "update_todo":
                status = p["status"] if p["status"] != "skipped" else "pending"
                return await store.update(context, TodoUpdate(id=pick, status=status))
            if name == "update_fact":
                return await store.update(context, FactUpdate(id=pick, confidence=p["number"]))
            if name == "update_task":
                return await store.update(
                    context, TaskStateUpdate(id=pick, progress=p["number"], phase=p["text"][:20])
                )
            if name == "complete":
                return await store.complete(context, pick)
            if name == "delete":
                return await store.delete(context, pick)
            if name == "restore":
                return await store.restore(context, pick)
            if name == "hard_delete":
                return await store.hard_delete(context, pick)
            if name == "supersede":
                return await store.create(
                    context, FactCreate(subject="s", predicate="p", object=p["text"], supersedes=pick)
                )
            if name in ("add_item", "update_item", "move_item", "remove_item"):
                record = await store.get(context, pick)
                item_ids = _item_ids(record.items) or ["missing"]
                item = item_ids[p["item"] % len(item_ids)]
                parent = item_ids[p["other"] % len(item_ids)] if p["other"] % 3 else None
                if name == "add_item":
                    args: Any = ItemAdd(
                        checklist_id=pick, text=p["text"], parent_id=parent, position=p["position"]
                    )
                    return await store.add_item(context, args)
                if name == "update_item":
                    status = p["status"] if p["status"] != "cancelled" else "skipped"
                    return await store.update_item(
                        context, ItemUpdate(checklist_id=pick, item_id=item, status=status)
                    )
                if name == "move_item":
                    args = ItemMove(checklist_id=pick, item_id=item, parent_id=parent, position=p["position"])
                    return await store.move_item(context, args)
                return await store.remove_item(context, ItemRemove(checklist_id=pick, item_id=item))
            if name == "append_turn":
                return await store.append_turn(context, TurnRole.USER, p["text"])
            if name == "set_summary":
                return await store.set_summary(context, p["text"])
            if name == "search":
                return await store.search_records(context, SearchQuery(text=p["text"], limit=20))
            if name == "list":
                return await store.list_records(context, ListQuery(limit=20, include_deleted=p["global"]))
            if name == "advance":
                clock.advance(timedelta(hours=p["hours"]))
                return p["hours"]
            return await store.purge_deleted()

        for name, context_index, params in log:
            try:
                result = await run(name, context_index, params)
            except SimoneError as exc:  # invalid operations must fail typed, and the same way each time
                outcomes.append(("error", type(exc).__name__, str(exc)))
                continue
            if hasattr(result, "id") and name.startswith(("create", "supersede")):
                ids.append(result.id)
                own.setdefault((context_index, result.kind.value), []).append(result.id)
                own.setdefault((context_index, "any"), []).append(result.id)
            outcomes.append(("ok", _plain(result)))
        state = await store.export(CONTEXTS[3], all_scopes=True)
        searches = [
            [hit.record.id for hit in await store.search_records(context, SearchQuery(text=word, limit=50))]
            for context in CONTEXTS
            for word in WORDS
        ]
    return outcomes, {"state": state.model_dump(mode="json", exclude={"exported_at"}), "searches": searches}


def _tail(p: dict[str, Any]) -> str:
    return str(p["text"][::-1])


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_replaying_1000_operations_twice_gives_identical_state(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    log = make_log(seed)
    folder = tmp_path_factory.mktemp("replay")
    first = anyio.run(replay, folder / "first.sqlite3", log)
    second = anyio.run(replay, folder / "second.sqlite3", log)
    assert first[0] == second[0], "every operation had the same outcome"
    assert first[1] == second[1], "same final state and same query order"
    succeeded = sum(1 for outcome in first[0] if outcome[0] == "ok")
    assert succeeded > OPERATIONS // 2, "the log exercises the store, not only its error paths"
    assert first[1]["state"]["records"], "the log left records behind"
