"""Creating and changing records: create, update and complete, with fact supersession.

``create`` builds notes, todos, checklists, facts and task states from their ``*Create`` inputs; a fact
may supersede the current one in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from simone.providers.memory import _records as trees
from simone.providers.memory._access import changed, check_tree, editable, insert_record, save_record
from simone.providers.memory._backend import Db
from simone.providers.memory._core import Core
from simone.providers.memory._models import (
    STATUSES,
    ChecklistCreate,
    ChecklistStatus,
    CreateSpec,
    FactCreate,
    FactStatus,
    ItemStatus,
    MemoryRecord,
    NoteCreate,
    NoteStatus,
    RecordKind,
    TaskStateCreate,
    TodoCreate,
    TodoStatus,
    UpdateSpec,
)
from simone.providers.memory._rows import canonical_json
from simone.providers.memory._scope import write_scope
from simone.runtime import InvalidRequest, TrustedContext

_OPEN_ITEM = {ItemStatus.PENDING.value, ItemStatus.IN_PROGRESS.value, ItemStatus.BLOCKED.value}
"""Item statuses that completing a checklist turns into ``completed``."""


def create(
    core: Core, db: Db, context: TrustedContext, spec: CreateSpec, keys: Sequence[str] | None, global_: bool
) -> MemoryRecord:
    """Create a record of any kind (a fact may supersede the current one in the same transaction)."""
    scope = write_scope(context, keys=keys, global_=global_)
    now = core.now()
    kind = RecordKind(spec.kind)
    base: dict[str, Any] = {
        "id": core.ids(kind.value),
        "kind": kind,
        "scope": scope,
        "tags": tuple(spec.tags),
        "created_at": now,
        "updated_at": now,
        "revision": 1,
    }
    if isinstance(spec, NoteCreate):
        core.check_body(spec.body, "note body")
        base |= {"title": spec.title, "body": spec.body, "status": NoteStatus.ACTIVE.value}
    elif isinstance(spec, TodoCreate):
        core.check_body(spec.body, "todo body")
        base |= {
            "title": spec.title,
            "body": spec.body,
            "status": spec.status.value,
            "priority": spec.priority,
            "due_at": spec.due_at,
            "completed_at": now if spec.status is TodoStatus.COMPLETED else None,
        }
    elif isinstance(spec, ChecklistCreate):
        core.check_body(spec.body, "checklist body")
        nodes = trees.nodes_from_specs(spec.items, lambda: core.ids("item"))
        check_tree(core.settings, nodes, spec.title)
        base |= {
            "title": spec.title,
            "body": spec.body,
            "status": ChecklistStatus.OPEN.value,
            "items": trees.from_nodes(nodes),
        }
    elif isinstance(spec, FactCreate):
        core.check_body(spec.object, "fact object")
        valid_from = spec.valid_from or now
        if spec.valid_until is not None and spec.valid_until <= valid_from:
            raise InvalidRequest(
                f"valid_until ({spec.valid_until.isoformat()}) is not after valid_from "
                f"({valid_from.isoformat()}); a fact must be valid for some time"
            )
        base |= {
            "title": f"{spec.subject} {spec.predicate}",
            "body": "",
            "status": FactStatus.ACTIVE.value,
            "fact": {
                "subject": spec.subject,
                "predicate": spec.predicate,
                "object": spec.object,
                "source": spec.source,
                "confidence": spec.confidence,
                "valid_from": valid_from,
                "valid_until": spec.valid_until,
                "supersedes": spec.supersedes,
            },
        }
    elif isinstance(spec, TaskStateCreate):
        core.check_body(spec.body, "task state body")
        core.check_body(canonical_json(spec.checkpoint), "task checkpoint")
        base |= {
            "title": spec.name,
            "body": spec.body,
            "status": spec.status.value,
            "completed_at": now if spec.status is TodoStatus.COMPLETED else None,
            "task_state": {"phase": spec.phase, "progress": spec.progress, "checkpoint": spec.checkpoint},
        }
    record = MemoryRecord.model_validate(base)

    def transaction(tx: Db) -> MemoryRecord:
        if isinstance(spec, FactCreate) and spec.supersedes is not None:
            _supersede(core, tx, context, spec.supersedes, record, now)
        insert_record(core, tx, record)
        return record

    return db.write(transaction)


def _supersede(
    core: Core, db: Db, context: TrustedContext, old_id: str, new: MemoryRecord, now: datetime
) -> None:
    rowid, old = editable(db, context, old_id, RecordKind.FACT)
    assert old.fact is not None and new.fact is not None
    if old.status != FactStatus.ACTIVE.value:
        later = f" by {old.fact.superseded_by}" if old.fact.superseded_by else ""
        raise InvalidRequest(
            f"fact {old_id!r} is already {old.status}{later}; supersede the current fact instead"
        )
    if new.fact.valid_from <= old.fact.valid_from:
        raise InvalidRequest(
            f"the new fact must start after the fact it supersedes ({old.fact.valid_from.isoformat()})"
        )
    until = old.fact.valid_until
    if until is None or until > new.fact.valid_from:
        until = new.fact.valid_from
    fact = old.fact.model_copy(update={"valid_until": until, "superseded_by": new.id})
    updated = changed(old, {"status": FactStatus.SUPERSEDED.value, "fact": fact.model_dump()}, now)
    save_record(core, db, rowid, old, updated)


def update(core: Core, db: Db, context: TrustedContext, patch: UpdateSpec) -> MemoryRecord:
    """Apply a partial update (fields that are set change; an explicit ``None`` clears)."""
    changes = patch.model_dump(exclude_unset=True, exclude={"id", "kind"})
    now = core.now()
    kind = RecordKind(patch.kind)

    def transaction(tx: Db) -> MemoryRecord:
        rowid, old = editable(tx, context, patch.id, kind)
        fields: dict[str, Any] = {}
        for key in ("title", "body", "tags", "priority", "due_at"):
            if key in changes:
                if changes[key] is None and key in ("title", "body", "tags"):
                    continue
                fields[key] = changes[key]
        if "body" in fields:
            core.check_body(fields["body"], f"{kind.value} body")
        if changes.get("status") is not None:
            fields |= _status_fields(old, str(changes["status"]), now)
        if kind is RecordKind.FACT:
            assert old.fact is not None
            fact = old.fact.model_dump()
            for key in ("source", "confidence", "valid_until"):
                if key in changes and not (key == "confidence" and changes[key] is None):
                    fact[key] = changes[key]
            if fact["valid_until"] is not None and fact["valid_until"] <= fact["valid_from"]:
                raise InvalidRequest(
                    f"valid_until ({fact['valid_until'].isoformat()}) is not after valid_from "
                    f"({old.fact.valid_from.isoformat()}) of fact {patch.id!r}"
                )
            fields["fact"] = fact
        elif kind is RecordKind.TASK_STATE:
            assert old.task_state is not None
            state = old.task_state.model_dump()
            if changes.get("name") is not None:
                fields["title"] = changes["name"]
            for key in ("phase", "progress", "checkpoint"):
                if changes.get(key) is not None:
                    state[key] = changes[key]
            core.check_body(canonical_json(state["checkpoint"]), "task checkpoint")
            fields["task_state"] = state
        new = changed(old, fields, now)
        if new is not old:
            save_record(core, tx, rowid, old, new)
        return new

    return db.write(transaction)


def _status_fields(record: MemoryRecord, status: str, now: datetime) -> dict[str, Any]:
    vocabulary = STATUSES[record.kind]
    if status not in {member.value for member in vocabulary}:
        raise InvalidRequest(
            f"{status!r} is not a {record.kind.value} status; use one of "
            f"{', '.join(member.value for member in vocabulary)}"
        )
    done = status in ("completed", "archived", "retired")
    completed_at = (record.completed_at or now) if done else None
    return {"status": status, "completed_at": completed_at}


def complete(
    core: Core, db: Db, context: TrustedContext, record_id: str, kind: RecordKind | None
) -> MemoryRecord:
    """Archive a note, complete a todo / checklist (and its open items) / task state, retire a fact."""
    now = core.now()

    def transaction(tx: Db) -> MemoryRecord:
        rowid, old = editable(tx, context, record_id, kind)
        fields: dict[str, Any]
        if old.kind is RecordKind.NOTE:
            fields = _status_fields(old, NoteStatus.ARCHIVED.value, now)
        elif old.kind is RecordKind.TODO:
            fields = _status_fields(old, TodoStatus.COMPLETED.value, now)
        elif old.kind is RecordKind.CHECKLIST:
            nodes = trees.to_nodes(old.items)
            for node, _depth in trees.walk(nodes):
                if node["status"] in _OPEN_ITEM:
                    node["status"] = ItemStatus.COMPLETED.value
            fields = _status_fields(old, ChecklistStatus.COMPLETED.value, now)
            fields["items"] = trees.from_nodes(nodes)
        elif old.kind is RecordKind.FACT:
            assert old.fact is not None
            if old.status != FactStatus.ACTIVE.value:
                return old
            until = max(old.fact.valid_from, now)
            if old.fact.valid_until is not None and old.fact.valid_until < until:
                until = old.fact.valid_until
            fields = _status_fields(old, FactStatus.RETIRED.value, now)
            fields["fact"] = old.fact.model_copy(update={"valid_until": until}).model_dump()
        else:
            assert old.task_state is not None
            fields = _status_fields(old, TodoStatus.COMPLETED.value, now)
            fields["task_state"] = old.task_state.model_copy(update={"progress": 1.0}).model_dump()
        new = changed(old, fields, now)
        if new is not old:
            save_record(core, tx, rowid, old, new)
        return new

    return db.write(transaction)
